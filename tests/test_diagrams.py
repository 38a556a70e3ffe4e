"""Diagrams whose figures come from the evidence (lessonkit.diagrams)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import errs, run_page

SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50" role="img" aria-labelledby="t d">
  <title id="t">The demo kernel</title>
  <desc id="d">racecheck found {{ 2 @ race:#reports }} reports.</desc>
  <text x="1" y="10">{{ 120 @ race:reports[severity=Error].hazards }} hazards</text>
  <text x="1" y="30" data-lk-narrative="a constant of the program">4 tiles a block</text>
</svg>
"""


def _page(repo: Path, svg: str) -> list[str]:
    (repo / "code/demo/diagrams").mkdir(exist_ok=True)
    (repo / "code/demo/diagrams/d.svg").write_text(svg)
    return errs(repo, "{{ evidence demo }}\n\n{{ diagram demo/diagrams/d.svg }}\n")


def test_a_diagrams_claims_are_expanded_checked_and_marked(demo_repo: Path):
    assert _page(demo_repo, SVG) == []
    result = run_page(demo_repo, "{{ evidence demo }}\n\n{{ diagram demo/diagrams/d.svg }}\n")
    svg = result.blocks[0]
    assert '<text x="1" y="10"><tspan class="lk-v">120</tspan> hazards</text>' in svg
    assert 'racecheck found <tspan class="lk-v">2</tspan> reports.' in svg
    assert svg.startswith('<div class="lk-diagram"><svg') and "{{" not in svg


def test_a_wrong_claim_in_a_diagram_names_the_svg_line(demo_repo: Path):
    found = _page(demo_repo, SVG.replace("{{ 120 @", "{{ 121 @"))
    assert found == [("code/demo/diagrams/d.svg:4: claim '121' (race:reports[severity=Error].hazards) disagrees "
                      "with evidence/demo/s1/race.txt; it says '120' (line 7)")]


@pytest.mark.parametrize("typed, line", [
    ('<text x="1" y="40">34 full tiles</text>', 6),
    ('<text x="1" y="40">tile <tspan>34</tspan></text>', 6),
    ("<title>99 of 256</title>", 6),
    ('<g aria-label="99 elements"></g>', 6),
])
def test_a_figure_typed_in_a_diagram_is_refused(demo_repo: Path, typed: str, line: int):
    found = _page(demo_repo, SVG.replace("</svg>", f"  {typed}\n</svg>"))
    assert len(found) == 1 and found[0].startswith(f"code/demo/diagrams/d.svg:{line}: ")


def test_a_narrative_mark_covers_its_own_element_not_the_drawing(demo_repo: Path):
    """On the diagram's root (or a group) the mark would excuse every figure of the drawing."""
    marked = SVG.replace("<svg ", '<svg data-lk-narrative="an illustration" ').replace(
        "</svg>", '  <g data-lk-narrative="labels"><text x="1" y="40">34 full tiles</text></g>\n</svg>')
    found = _page(demo_repo, marked)
    assert len(found) == 1 and found[0].startswith("code/demo/diagrams/d.svg:6: '34' in the diagram's text")


def test_a_claim_in_an_attribute_is_refused(demo_repo: Path):
    found = _page(demo_repo, SVG.replace('role="img"', 'role="img" aria-label="{{ 2 @ race:#reports }} reports"'))
    assert any("inside an attribute" in e for e in found)


def test_accept_rewrites_a_stale_claim_in_a_diagram(demo_repo: Path):
    from conftest import BARE, RACE, record_set

    from lessonkit.cli.accept import apply_edits, plan_accept

    (demo_repo / "docs/index.md").write_text("{{ evidence demo }}\n\n{{ diagram demo/diagrams/d.svg }}\n")
    assert _page(demo_repo, SVG) == []
    record_set(demo_repo, "demo", {"race": RACE.replace("[120 hazards]", "[125 hazards]"), "bare": BARE})
    plan = plan_accept(demo_repo)
    assert [(e.page, e.line, e.old, e.new) for e in plan.edits] == [("code/demo/diagrams/d.svg", 4, "120", "125")]
    apply_edits(demo_repo, plan.edits)
    assert "{{ 125 @ race:reports[severity=Error].hazards }} hazards" in (demo_repo / "code/demo/diagrams/d.svg").read_text()
    assert _page(demo_repo, (demo_repo / "code/demo/diagrams/d.svg").read_text()) == []


def test_narrative_text_in_a_diagram_is_marked_for_the_audit(demo_repo: Path):
    assert _page(demo_repo, SVG) == []
    svg = run_page(demo_repo, "{{ evidence demo }}\n\n{{ diagram demo/diagrams/d.svg }}\n").blocks[0]
    assert '<text x="1" y="30" data-lk-narrative="a constant of the program" class="lk-v">4 tiles a block</text>' in svg
    found = _page(demo_repo, SVG.replace('data-lk-narrative="a constant of the program"', 'data-lk-narrative=""'))
    assert len(found) == 1 and "'4'" in found[0]
