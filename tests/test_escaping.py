"""Every string that comes from runs.toml, a manifest or a transcript is data where it lands: a
hostile string in each place reaches the rendered page escaped, never as markup."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import (
    BARE,
    PROVENANCE,
    RACE,
    README,
    RUNS,
    SOURCE,
    checked,
    mkdocs_yml,
    record_set,
    write_tree,
)

from lessonkit.site.check import Site
from lessonkit.site.rendered import Renderer
from lessonkit.site.verdict import rendering_key

# No figure in it: a label's figures must be its value's, and this must pass every other rule.
HOSTILE = "<script>alert('x')</script><i>y</i>"
DECLARED = f"""
[names]
kernel = "{HOSTILE}"
mismatches = "{HOSTILE} wrong"

[labels.kernel]
k = "{HOSTILE}"

[labels.run]
race = "race {HOSTILE}"
bare = "bare {HOSTILE}"

[formats]
threads = "{{}} {HOSTILE}"
"""
PAGE = ("{{ evidence demo }}\n\n"
        "{{ table race:rows rows=kernel cols=threads cell=mismatches }}\n\n"
        "{{ table race:rows rows=threads cell=mismatches }}\n\n"
        "{{ table bare:verdicts race:verdicts rows=kernel cols=run cell=verdict }}\n\n"
        "Its mode: {{ value race:mode }}.\n\n"
        "{{ provenance demo }}\n\n{{ transcript race }}\n\n{{ commands demo race }}\n")


def rendered(repo: Path) -> str:
    assert checked(repo, PAGE, "docs/index.md") == []
    result = Site.load(repo).page(PAGE, "docs/index.md")
    return result.fill(Renderer(rendering_key(repo)).render(result))


def test_a_hostile_string_is_escaped_in_every_place_it_lands(tmp_path: Path):
    command = "compute-sanitizer --tool racecheck ./demo"
    write_tree(tmp_path, {"code/demo/demo.cu": SOURCE, "code/demo/runs.toml": RUNS + DECLARED,
                          "code/demo/README.md": README, "docs/index.md": "# x\n", "mkdocs.yml": mkdocs_yml()})
    race = RACE.replace("mode: buggy", f"mode: {HOSTILE}")
    record_set(tmp_path, "demo", {"race": race, "bare": BARE},
               provenance=dict(PROVENANCE, gpu=f"NVIDIA {HOSTILE}", driver=HOSTILE, nvcc=f"13.0 {HOSTILE}"))
    html = rendered(tmp_path)
    assert "<script" not in html and "<i>y" not in html
    escaped = html.count("&lt;script&gt;")
    # the tables' header, row and column labels and the run labels; the value; the provenance table
    # (GPU, driver, nvcc) and the transcript's sentence; the transcript's text
    assert escaped >= 12, escaped
    assert re.search(r"&lt;script&gt;alert\('x'\)&lt;/script&gt;&lt;i&gt;y&lt;/i&gt;", html)
    assert command in html
