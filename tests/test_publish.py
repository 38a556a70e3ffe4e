"""Recordings as files of the site: every recording a transcript box cites, or a page links, is
published byte for byte at evidence/SET/FILE under the site's root and linked relative to the page;
a page's link to a recording the evidence lacks is refused at its line; verify-site holds the
published files to the evidence's manifests."""

from __future__ import annotations

import re
from pathlib import Path

import markdown
import pytest
from conftest import BARE, RACE, errs, mkdocs_build, mkdocs_yml, record_set, run_page, write_tree

from lessonkit.evidence.manifest import read_manifest, sha256_file
from lessonkit.site.verify import verify_site

RACES = [RACE, RACE.replace("[120 hazards]", "[125 hazards]"), RACE.replace("[120 hazards]", "[118 hazards]")]


def three_races(repo: Path) -> None:
    """Record race three times (runs.toml asks for it), the demo page's claim a range over them."""
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"', 'name = "race"\nrepeat = 3'))
    record_set(repo, "demo", {"race": RACES, "bare": BARE})
    page = repo / "docs/index.md"
    page.write_text(page.read_text().replace("{{ 120 @", "{{ 118\u2013125 @"))


def built(repo: Path, *args: str) -> Path:
    done = mkdocs_build(repo, *args)
    assert done.returncode == 0, done.stderr
    return repo / "site"


def links(html: str) -> list[str]:
    return re.findall(r'<a class="lk-evidence" href="([^"]+)"', html)


def test_every_recording_a_box_cites_is_published_once_at_the_site_root(demo_repo: Path):
    three_races(demo_repo)
    write_tree(demo_repo, {"docs/more/deep.md": "# Deep\n\n{{ transcript demo/race }}\n"})
    site = built(demo_repo)
    for k in (1, 2, 3):
        assert (site / f"evidence/demo/s1/race.r{k}.txt").read_bytes() == \
            (demo_repo / f"evidence/demo/s1/race.r{k}.txt").read_bytes()
    assert sorted(p.relative_to(site).as_posix() for p in (site / "evidence").rglob("*.txt")) == [
        "evidence/demo/s1/race.r1.txt", "evidence/demo/s1/race.r2.txt", "evidence/demo/s1/race.r3.txt"]
    # Linked relative to each page, so the site works under any sub-path.
    assert links((site / "index.html").read_text()) == [
        f"evidence/demo/s1/race.r{k}.txt" for k in (1, 2, 3)]
    assert links((site / "more/deep/index.html").read_text()) == [
        f"../../evidence/demo/s1/race.r{k}.txt" for k in (1, 2, 3)]
    assert verify_site(site, demo_repo) == []


def test_links_hold_without_directory_urls(demo_repo: Path):
    three_races(demo_repo)
    write_tree(demo_repo, {"docs/more/deep.md": "# Deep\n\n{{ transcript demo/race }}\n",
                           "mkdocs.yml": mkdocs_yml("use_directory_urls: false\n")})
    site = built(demo_repo)
    assert links((site / "more/deep.html").read_text()) == [
        f"../evidence/demo/s1/race.r{k}.txt" for k in (1, 2, 3)]
    assert (site / "evidence/demo/s1/race.r2.txt").is_file() and verify_site(site, demo_repo) == []


def test_a_page_may_link_a_recording_it_does_not_show(demo_repo: Path):
    """MkDocs finds the linked file among the site's files (strict: a broken link would fail) and
    rewrites the link for where the page is built."""
    write_tree(demo_repo, {"docs/more/deep.md": "# Deep\n\nThe [bare run's output](../evidence/demo/s1/bare.txt).\n"})
    site = built(demo_repo, "--strict")
    assert '<a href="../../evidence/demo/s1/bare.txt">bare run\'s output</a>' in (site / "more/deep/index.html").read_text()
    assert (site / "evidence/demo/s1/bare.txt").read_bytes() == (demo_repo / "evidence/demo/s1/bare.txt").read_bytes()
    assert verify_site(site, demo_repo) == []


def test_a_link_to_a_recording_the_evidence_lacks_is_refused_at_its_line(demo_repo: Path):
    page = ("# P\n\nSee [the run](evidence/demo/rase.txt),\n"
            '<a href="../evidence/nope/race.txt">this</a>, [that][x] and `[not a link](evidence/demo/zzz.txt)`.\n\n'
            "[x]: /evidence/demo/manifest.json\n")
    lead = "docs/p.md:{}: link {!r} leads to {} in the built site, but "
    assert errs(demo_repo, page) == [
        lead.format(3, "evidence/demo/rase.txt", "evidence/demo/rase.txt") + "evidence/demo holds no recording "
        "'rase.txt' (did you mean 's1/race.txt'?); the build publishes there only the recordings the evidence "
        "holds, so the link would be broken; link one of evidence/demo's recordings (its manifest.json lists them)",
        lead.format(4, "../evidence/nope/race.txt", "evidence/nope/race.txt") + "there is no evidence set "
        "'nope'; the build publishes there only the recordings of the sets: demo",
        lead.format(6, "/evidence/demo/manifest.json", "evidence/demo/manifest.json") + "evidence/demo holds no "
        "recording 'manifest.json'; the build publishes there only the recordings the evidence holds, so the "
        "link would be broken; link one of evidence/demo's recordings (its manifest.json lists them)"]


def test_links_elsewhere_are_not_read_as_recordings(demo_repo: Path):
    page = ("# P\n\n[a](https://example.org/evidence/demo/x.txt) [b](other.md) [c](#evidence) "
            "[d](code/evidence/x.txt) ![e](img/evidence.png)\n")
    result = run_page(demo_repo, page)
    assert result.errors == [] and result.published == []


def test_the_build_refuses_a_page_linking_a_missing_recording(demo_repo: Path):
    (demo_repo / "docs/index.md").write_text("# Demo\n\nThe [log](evidence/demo/gone.txt).\n")
    done = mkdocs_build(demo_repo)
    assert done.returncode == 1
    assert ("docs/index.md:3: link 'evidence/demo/gone.txt' leads to evidence/demo/gone.txt in the built site, "
            "but evidence/demo holds no recording 'gone.txt'") in done.stderr


def test_the_markdown_extension_writes_the_recordings_into_the_site_dir(demo_repo: Path):
    three_races(demo_repo)
    write_tree(demo_repo, {"docs/more/deep.md": "# Deep\n\n{{ transcript demo/race }}\n",
                           "mkdocs.yml": mkdocs_yml("site_dir: out\n")})
    md = markdown.Markdown(extensions=["pymdownx.superfences", "pymdownx.details", "lessonkit.site.mdext"],
                           extension_configs={"lessonkit.site.mdext": {"repo": str(demo_repo)}})
    html = md.convert((demo_repo / "docs/more/deep.md").read_text())
    # Relative to the page's Markdown file, as the engine reads the links of a page (Zensical
    # rewrites them for where it builds the page).
    assert links(html) == [
        f"../evidence/demo/s1/race.r{k}.txt" for k in (1, 2, 3)]
    for k in (1, 2, 3):
        assert (demo_repo / f"out/evidence/demo/s1/race.r{k}.txt").read_bytes() == \
            (demo_repo / f"evidence/demo/s1/race.r{k}.txt").read_bytes()
    assert not any(p.name.startswith(".lessonkit-") for p in (demo_repo / "out/evidence/demo").iterdir())


# -- verify-site: the published recordings are the evidence's -------------------------------------

def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[10] ^= 0x01
    path.write_bytes(bytes(data))


EXTRA = ("is not a recording any page of the site shows or links, and the build publishes only those under "
         "evidence/: left by an earlier build or added since; build into an empty folder (mkdocs build --clean)")


@pytest.mark.parametrize("change, expected", [
    (lambda site: flip_a_byte(site / "evidence/demo/s1/race.r2.txt"), "edited"),
    (lambda site: (site / "evidence/demo/s1/race.r3.txt").unlink(),
     ("evidence/demo/s1/race.r3.txt: is missing: docs/index.md shows or links this recording, so its link is broken; "
     "build the site again (Zensical: zensical build --clean, as a rebuild from its cache converts no page and "
     "writes no recording)")),
    # A file the evidence lacks, and a recording of the set that no page shows or links.
    (lambda site: (site / "evidence/demo/notes.txt").write_text("hand-written\n"), f"evidence/demo/notes.txt: {EXTRA}"),
    (lambda site: (site / "evidence/demo/s1/bare.txt").write_text(BARE), f"evidence/demo/s1/bare.txt: {EXTRA}"),
], ids=["edited", "deleted", "added", "added-unshown"])
def test_verify_site_holds_the_published_recordings_to_the_evidence(demo_repo: Path, change, expected: str):
    three_races(demo_repo)
    site = built(demo_repo)
    assert verify_site(site, demo_repo) == []
    change(site)
    if expected == "edited":
        recorded = read_manifest(demo_repo / "evidence/demo", "evidence/demo").entries["s1/race.r2"].sha256
        expected = (f"evidence/demo/s1/race.r2.txt: is not the recording the evidence holds: its sha256 is "
                    f"{sha256_file(site / 'evidence/demo/s1/race.r2.txt')[:12]}, evidence/demo/manifest.json records "
                    f"{recorded[:12]}; it was changed after the build: build the site again")
    assert [str(e) for e in verify_site(site, demo_repo)] == [f"{site.as_posix()}/{expected}"]
