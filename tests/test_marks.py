"""Produced text marked in band (lessonkit.pages.marks): the audit knows what the core wrote by the marks
around it, whatever markup carries it, and trusts no class; the published page holds none.

Each test fails when its part of the mechanism is removed: the marks around a claim where no element
can go (a code span or block, alt text, a heading shown in the table of contents), the reader's
refusal of a mark that is not the core's, the page's refusal of an authored mark, `strip` on what is
published, and verify-site's refusal of a built page or search index that holds one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import checked, run_page

from lessonkit.cache import Store
from lessonkit.pages.audit import audit_page
from lessonkit.pages.marks import CLOSE, FIRST, Mark, Marks, strip
from lessonkit.pages.readertext import read_html
from lessonkit.pages.result import PageResult
from lessonkit.site.check import CheckedSite
from lessonkit.site.verify import verify_site

HEAD = "{{ evidence demo }}\n\n"
CLAIM_120 = "{{ 120 @ race:reports[severity=Error].hazards }}"


def _audit(repo: Path, html: str, marks: list[Mark]) -> list[str]:
    """The audit's errors for `html` as the page docs/p.md (no claims of its own), its records `marks`."""
    site = CheckedSite(repo, store=Store(None), keep="errors")
    site.refresh()
    return [str(e) for e in audit_page(html, HEAD, "docs/p.md", PageResult("", marks=marks), site.site.evidence.sets)]


@pytest.mark.parametrize("text", [
    f"In code: `hazards = {CLAIM_120}`.",                           # a code span: no element can go there
    f'[the race](#top "a race with {CLAIM_120} hazards")',         # a link's title
    f'<abbr title="{CLAIM_120} hazards">h</abbr>',                  # an attribute
    f"```text\nhazards: {CLAIM_120}\n```",                          # a code block
    f"## The {CLAIM_120} hazards",                                  # a heading
])
def test_a_claim_is_produced_wherever_markdown_carries_it(demo_repo: Path, text: str):
    """The marks carry the claim's record through any markup: the audit finds its value produced, and a
    copy of the same figure typed beside it is still refused (nothing is guessed from the text around)."""
    assert checked(demo_repo, HEAD + text + "\n") == []
    copied = text.replace(CLAIM_120, "120", 1) + " " + text if not text.startswith("```") else \
        text + "\n\nThe error had 120 hazards."
    errors = checked(demo_repo, HEAD + copied + "\n")
    assert any("figure '120' is typed, not produced" in e for e in errors), errors


def test_a_claim_s_record_says_what_backs_it(demo_repo: Path):
    result = run_page(demo_repo, HEAD + f"The error has {CLAIM_120} hazards, in `{CLAIM_120}`.\n")
    assert [m.kind for m in result.marks] == ["value", "value"]
    assert all(m.why and "run race of set demo" in m.why for m in result.marks), result.marks
    text = read_html(f"<p>{result.marked}</p>", result.marks)
    line = text.lines[0]
    produced = [line.text[a:b] for a, b in line.produced]
    assert produced == ["120", "120"] and [w for _, _, w in line.why] == [m.why for m in result.marks]


@pytest.mark.parametrize("html, forged", [
    ("<p>It has \U000F0001120\U000FFFFD hazards.</p>", "mark 1 has no record"),
    ("<p>It has \U000F0000120\U000FFFFD and \U000F0000120\U000FFFFD.</p>", "mark 0 is used twice"),
    ("<p>It has 120\U000FFFFD hazards.</p>", "a closing mark with nothing open"),
    ("<p>It has \U000F0000120 hazards.</p>", "a mark left open"),
    ('<p><img alt="\U000F0000120 hazards" src="x.png"></p>', "a mark left open"),
])
def test_a_mark_the_core_did_not_write_is_refused(demo_repo: Path, html: str, forged: str):
    """A record's number used twice, one with no record, a close with nothing open, an open never
    closed: the reader lists each, and the audit refuses it."""
    errors = _audit(demo_repo, html, [Mark("120: one value")])
    assert any(f"that lessonkit did not write ({forged})" in e for e in errors), errors


def test_a_core_class_without_marks_produces_nothing(demo_repo: Path):
    """The class the site styles a produced figure with is not what the audit trusts."""
    errors = _audit(demo_repo, '<p>It has <span class="lk-v" data-lk-why="120: one value">120</span> hazards.</p>', [])
    assert any("figure '120' is typed, not produced" in e for e in errors), errors
    marked = Marks()
    html = f"<p>It has {marked.wrap('<span class=' + chr(34) + 'lk-v' + chr(34) + '>120</span>', '120: one value')} hazards.</p>"
    assert _audit(demo_repo, html, marked.records) == []


@pytest.mark.parametrize("char", ["\U000F0000", "\U000FFFFD", "\U000F1234"])
def test_a_page_may_not_write_a_mark(demo_repo: Path, char: str):
    errors = checked(demo_repo, HEAD + f"The error has 1{char}20 hazards.\n")
    assert any(e.startswith(f"docs/p.md:3: U+{ord(char):X} is a character of the range lessonkit marks") for e in
               errors), errors


def test_strip_leaves_no_mark_nor_what_only_marks_made():
    marks = Marks()
    inline = marks.wrap("<span>120</span>")
    block = marks.block("```cuda\nint x;\n```", "cut", "region")
    html = (f"<p>It has {inline} hazards.</p>\n<p>{block[0]}</p>\n<pre><span class=\"err\">{chr(FIRST + 1)}</span>"
            f"int x;</pre>\n<p>{CLOSE}</p>\n")
    assert strip(html) == "<p>It has <span>120</span> hazards.</p>\n<pre>int x;</pre>\n"


def test_a_published_page_holds_no_mark(demo_repo: Path):
    result = run_page(demo_repo, HEAD + f"The error has {CLAIM_120} hazards.\n\n{{{{ region demo/demo.cu body }}}}\n")
    assert chr(FIRST) in result.marked and chr(FIRST) not in result.fill(result.marked)


def test_verify_site_refuses_a_mark_left_in_the_site(tmp_path: Path):
    site = tmp_path / "site"
    (site / "search").mkdir(parents=True)
    (site / "index.html").write_text("<html><p>It has \U000F0000120\U000FFFFD hazards.</p></html>")
    (site / "search/search_index.json").write_text(json.dumps({"docs": [{"location": "", "text": "1\U000F000020"}]}))
    errors = [str(e) for e in verify_site(site)]
    assert any(e.startswith(f"{site.as_posix()}/index.html:1: holds U+F0000, a mark of lessonkit's") for e in errors), errors
    assert any(e.startswith(f"{site.as_posix()}/search/search_index.json: holds a mark") for e in errors), errors
