"""Diagrams whose figures come from the evidence (lessonkit.diagrams)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import checked, errs, run_page

from lessonkit.pages.marks import strip

SVG = """\
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50" role="img" aria-labelledby="t d">
  <title id="t">The demo kernel</title>
  <desc id="d">racecheck found {{ 2 @ race:#reports }} reports.</desc>
  <text x="1" y="10">{{ 120 @ race:reports[severity=Error].hazards }} hazards</text>
  <text x="1" y="30">the kernel's tiles</text>
</svg>
"""
DIAGRAM_PAGE = "{{ evidence demo }}\n\n{{ diagram demo/diagrams/d.svg }}\n"


def _page(repo: Path, svg: str) -> list[str]:
    """The Markdown's errors of a page showing the diagram `svg`."""
    (repo / "code/demo/diagrams").mkdir(exist_ok=True)
    (repo / "code/demo/diagrams/d.svg").write_text(svg)
    return errs(repo, DIAGRAM_PAGE)


def _checked(repo: Path, svg: str, front: str = "") -> list[str]:
    """Every error `lessonkit check` reports for a page showing the diagram `svg`: the Markdown's, then
    the audit's of the page as rendered, its slots filled; `front`, the page's front matter."""
    (repo / "code/demo/diagrams").mkdir(exist_ok=True)
    (repo / "code/demo/diagrams/d.svg").write_text(svg)
    return checked(repo, (f"---\n{front}---\n" if front else "") + DIAGRAM_PAGE)


def test_a_diagrams_claims_are_expanded_checked_and_marked(demo_repo: Path):
    assert _checked(demo_repo, SVG) == []
    result = run_page(demo_repo, DIAGRAM_PAGE)
    svg = strip(re.sub(r' data-lk-why="[^"]*"', "", result.blocks[0]))  # what backs each: tests/test_explain.py
    assert ('<text x="1" y="10" data-lk-at="code/demo/diagrams/d.svg:4"><tspan class="lk-v">120</tspan> hazards</text>'
            in svg)
    assert 'racecheck found <tspan class="lk-v">2</tspan> reports.' in svg
    assert svg.startswith('<div class="lk-diagram" data-search-exclude><svg') and "{{" not in svg


def test_the_published_page_carries_no_origin_marks(demo_repo: Path):
    """The audit reads where each text of a diagram is written; the page a reader gets does not carry it."""
    assert _page(demo_repo, SVG) == []
    result = run_page(demo_repo, DIAGRAM_PAGE)
    html = result.markdown
    assert 'data-lk-at="code/demo/diagrams/d.svg:3"' in result.fill(html, origins=True)
    published = result.fill(html)
    assert "data-lk-at" not in published and '<text x="1" y="10"><tspan class="lk-v" data-lk-why=' in published


def test_a_wrong_claim_in_a_diagram_names_the_svg_line(demo_repo: Path):
    found = _page(demo_repo, SVG.replace("{{ 120 @", "{{ 121 @"))
    assert found == [("code/demo/diagrams/d.svg:4: claim '121' (race:reports[severity=Error].hazards) disagrees "
                      "with evidence/demo/s1/race.txt; it says '120' (line 7)")]


@pytest.mark.parametrize("typed, figure", [
    ('<text x="1" y="40">34 full tiles</text>', "34"),
    ('<text x="1" y="40">tile <tspan>34</tspan></text>', "34"),
    ('<text x="1" y="40">tile\n    <tspan>34</tspan></text>', "34"),  # its own line: the tspan's
    ("<title>99 of 256</title>", "99"),
    ('<g aria-label="99 elements"></g>', "99"),
    ('<text x="1" y="40"><textPath href="#p">lap 7</textPath></text>', "7"),
])
def test_a_figure_typed_in_a_diagram_is_refused_by_the_audit_at_the_svgs_line(demo_repo: Path, typed: str,
                                                                              figure: str):
    """The audit reads the diagram in the filled page and names the SVG's line, not a guessed line of the page."""
    found = _checked(demo_repo, SVG.replace("</svg>", f"  {typed}\n</svg>"))
    line = 6 + typed[:typed.index(figure)].count("\n")
    assert found and all(e.startswith(f"code/demo/diagrams/d.svg:{line}: figure ") for e in found), found
    assert f"figure {figure!r} is typed, not produced" in found[0]


def test_a_count_word_typed_in_a_diagram_is_refused_at_the_svgs_line(demo_repo: Path):
    found = _checked(demo_repo, SVG.replace("the kernel's tiles", "the kernel's four tiles"))
    assert len(found) == 1 and found[0].startswith("code/demo/diagrams/d.svg:5: the count 'four' before 'tiles'")


def test_a_phrase_the_page_declares_covers_a_figure_in_its_diagram(demo_repo: Path):
    typed = SVG.replace("the kernel's tiles", "4 tiles a block")
    assert len(_checked(demo_repo, typed)) == 1
    front = "narrative:\n  4 tiles a block: the illustration's tiles\n"
    assert _checked(demo_repo, typed, front) == []
    # the phrase covers its words, not the figure elsewhere in the drawing
    found = _checked(demo_repo, typed.replace("</svg>", '  <text x="1" y="40">4 lanes</text>\n</svg>'), front)
    assert len(found) == 1 and found[0].startswith("code/demo/diagrams/d.svg:6: figure '4'")
    # a phrase used only in the diagram is used: declared and nowhere shown is an error
    found = _checked(demo_repo, SVG, front)
    assert len(found) == 1 and "'4 tiles a block' is declared, but the page shows it nowhere" in found[0]


def test_data_lk_narrative_is_refused_once_a_file(demo_repo: Path):
    """The old excuse covered every figure typed in its element, whatever its reason said."""
    marked = SVG.replace('<text x="1" y="30">the kernel\'s tiles</text>',
                         '<text x="1" y="30" data-lk-narrative="a constant">4 tiles a block</text>\n'
                         '  <text x="1" y="40" data-lk-narrative="a constant">8 tiles</text>')
    found = _page(demo_repo, marked)
    assert len(found) == 1 and found[0].startswith("code/demo/diagrams/d.svg:5: data-lk-narrative is gone")
    assert "front matter" in found[0]
    # and it excuses nothing: the figures are the audit's (line 5 holds the refusal already)
    audited = _checked(demo_repo, marked)
    assert [e for e in audited if e.startswith("code/demo/diagrams/d.svg:6: figure '8'")]


@pytest.mark.parametrize("mark", ['class="lk-v"', 'data-lk-at="docs/p.md:1"'])
def test_the_cores_marks_may_not_be_written_in_a_diagram(demo_repo: Path, mark: str):
    found = _page(demo_repo, SVG.replace('<text x="1" y="30">', f'<text x="1" y="30" {mark}>'))
    assert len(found) == 1 and found[0].startswith("code/demo/diagrams/d.svg:5: ")
    assert "a mark of what lessonkit produced" in found[0]


def test_figures_in_a_transcript_or_the_provenance_tables_are_produced(demo_repo: Path):
    """The audit reads every slot: a transcript's and the provenance tables' figures are the runs' own."""
    page = "{{ evidence demo }}\n\n{{ transcript race }}\n\n{{ provenance demo }}\n"
    assert checked(demo_repo, page) == []
    result = run_page(demo_repo, page)
    transcript, provenance = result.blocks
    assert "lk-transcript" in transcript and any(c.isdigit() for c in transcript)
    assert 'class="lk-provenance"' in provenance and any(c.isdigit() for c in provenance)
    from lessonkit.pages.readertext import read_html

    lines = read_html(result.fill(result.marked, origins=True), result.marks).lines
    typed = [line for line in lines if any(c.isdigit() for c in line.text)]
    assert typed and all(line.is_produced(k, k + 1) for line in typed for k, c in enumerate(line.text) if c.isdigit())


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
