"""A transcript too large for its page shows head and tail, and the whole file is published beside it."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import RACE, mkdocs_build, record_set


def test_a_large_transcript_links_the_whole_file_published_beside_the_page(demo_repo: Path):
    big = RACE + "".join(f"========= filler line {i:06d} of a long run\n" for i in range(12_000))
    assert len(big.encode()) > 256 * 1024
    record_set(demo_repo, "demo", {"race": big, "bare": (demo_repo / "evidence/demo/bare.txt").read_text()})
    done = mkdocs_build(demo_repo)
    assert done.returncode == 0, done.stderr
    page = (demo_repo / "site/index.html").read_text(encoding="utf-8")
    links = re.findall(r'href="(evidence/demo/[^"]+)"', page)
    assert links == ["evidence/demo/race.txt"]
    published = demo_repo / "site" / links[0]
    assert published.read_bytes() == (demo_repo / "evidence/demo/race.txt").read_bytes()
    assert "filler line 011999" in page and "filler line 006000" not in page  # the tail shown, the middle cut
