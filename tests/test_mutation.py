"""The mutation test: every figure a lesson page shows is checked.

For each lesson page (a page that cites evidence), every run of digits in its Markdown that a
reader sees is changed by one, one at a time, and the page is checked as `lessonkit check` checks
it (CheckedSite.page_text, without the cache on disk): its Markdown expanded and checked, the HTML
rendered as the site renders it and audited, as a build audits it. Each change must fail the
check, except:

- the figures the page declares narrative in its front matter (`narrative:`), which are not the
  evidence's and are counted apart;
- the ends of a claimed range (`{{ 180000–210000 @ … }}`): moved by one, a range that held still
  bounds every recording, so the statement stays true; they are counted apart too.

A change that leaves what a reader sees as it was (a digit in a link target, a comment, a query)
is not a figure of the page and is not counted. The test prints caught/total per lesson.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO

from lessonkit.cache import Store
from lessonkit.pages.audit import NARRATIVE
from lessonkit.pages.figures import FIGURE_RE
from lessonkit.pages.fold import shown, skeleton
from lessonkit.pages.readertext import read_html
from lessonkit.pages.scan import LineIndex, scan
from lessonkit.site.check import CheckedSite, docs_pages, strip_front_matter
from lessonkit.textio import FRONT_MATTER_RE

_DIGITS_RE = re.compile(r"""[0-9]+""")
_DIRECTIVES = ("region", "transcript", "evidence", "provenance", "commands")
_NOT_SHOWN_RE = re.compile(r"""<!--.*?-->|\]\([^)]*\)|<[^<>]*>""", re.DOTALL)  # comments, link targets, tags


@dataclass
class Tally:
    """What the mutations of one page found."""

    caught: int = 0
    total: int = 0
    narrative: int = 0
    range_ends: int = 0
    survivors: list[str] = field(default_factory=list)


def _narrative_spans(source: str, body_start: int) -> list[tuple[int, int]]:
    """Where in `source` the figures the front matter declares narrative stand."""
    import yaml

    m = FRONT_MATTER_RE.match(source)
    meta = yaml.safe_load(m.group("yaml") or "") if m else None
    declared = (meta or {}).get(NARRATIVE) or {}
    folded = skeleton(shown(source))
    spans = []
    if len(folded) != len(source):
        return spans  # NFKC changed lengths: no page of ours does; then nothing counts as narrative
    for key in declared:
        phrase = skeleton(shown(str(key)))
        at = folded.find(phrase, body_start)
        while at != -1:
            end = at + len(phrase)
            if not (at and folded[at - 1].isalnum() and phrase[0].isalnum()) \
                    and not (end < len(folded) and folded[end].isalnum() and phrase[-1].isalnum()):
                spans.append((at, end))
            at = folded.find(phrase, at + 1)
    return spans


def _candidates(source: str) -> list[tuple[int, int, str]]:
    """Every digit run of the page's Markdown that may show: (start, end, 'claim' | 'range' | 'text')."""
    m = FRONT_MATTER_RE.match(source)
    start = m.end() if m else 0
    tokens, _ = scan(source, LineIndex(source))
    found: list[tuple[int, int, str]] = []
    inside: list[tuple[int, int]] = []
    for token in tokens:
        inside.append((token.start, token.end))
        body = token.body
        words = body.split(None, 1)
        at = body.rfind(" @ ")
        if (words and words[0] in _DIRECTIVES and at == -1) or at == -1:
            continue
        value = body[:at]
        kind = "range" if "\u2013" in value else "claim"
        for d in _DIGITS_RE.finditer(value):
            found.append((token.start + 2 + d.start(), token.start + 2 + d.end(), kind))
    hidden = [(h.start(), h.end()) for h in _NOT_SHOWN_RE.finditer(source)]
    for figure in FIGURE_RE.finditer(source, start):  # a figure as the audit reads one (not sm_90, H200)
        if any(a <= figure.start() < b for a, b in inside) or any(a <= figure.start() < b for a, b in hidden):
            continue
        last = list(_DIGITS_RE.finditer(figure.group("whole") + figure.group("tail")))[-1]
        found.append((figure.start() + last.start(), figure.start() + last.end(), "text"))
    return sorted(found)


def _reader_text(check: CheckedSite, source: str, path: str) -> str:
    """What a reader sees of the page (the renderer `check` audits, over the expanded Markdown)."""
    body, offset = strip_front_matter(source)
    html = check.renderer.render(check.site.page(body, path, offset))
    return "\n".join(line.text for line in read_html(html).lines)


def mutate_page(check: CheckedSite, path: Path, shown_path: str) -> Tally:
    """Change each figure of the page by one and check it as `lessonkit check` does; what was caught."""
    source = path.read_text(encoding="utf-8")
    m = FRONT_MATTER_RE.match(source)
    narrative = _narrative_spans(source, m.end() if m else 0)
    before = _reader_text(check, source, shown_path)
    tally = Tally()
    for start, end, kind in _candidates(source):
        digits = source[start:end]
        mutant = source[:start] + str(int(digits) + 1) + source[end:]
        line = source.count("\n", 0, start) + 1
        if any(a <= start and end <= b for a, b in narrative):
            tally.narrative += 1
            continue
        caught = bool(check.page_text(mutant, shown_path).errors)
        if not caught and kind == "text" and _reader_text(check, mutant, shown_path) == before:
            continue  # not a figure a reader sees
        if kind == "range" and not caught:
            tally.range_ends += 1
            continue
        tally.total += 1
        if caught:
            tally.caught += 1
        else:
            tally.survivors.append(f"{shown_path}:{line}: {digits} -> {int(digits) + 1} passed "
                                   f"({source[max(start - 30, 0):end + 30]!r})")
    return tally


def checker(repo: Path) -> CheckedSite:
    """`lessonkit check`'s way of checking pages (transcripts left out: the runs' own output, not
    audited, not mutated), without the cache on disk."""
    check = CheckedSite(repo, store=Store(None), keep="errors")
    check.refresh()
    return check


def lesson_pages() -> list[tuple[str, Path]]:
    """The site's pages that cite evidence (lessons): those the audit reads."""
    site = checker(REPO).site
    pages = []
    for shown_path, path in docs_pages(REPO):
        body, offset = strip_front_matter(path.read_text(encoding="utf-8"))
        result = site.page(body, shown_path, offset)
        if result.cited or any(n in site.evidence.sets for n in result.looked_up):
            pages.append((shown_path, path))
    return pages


@pytest.fixture(scope="module")
def check() -> CheckedSite:
    return checker(REPO)


@pytest.mark.parametrize("shown_path, path", lesson_pages(), ids=lambda p: str(p))
def test_every_figure_a_lesson_shows_is_checked(check: CheckedSite, shown_path: str, path: Path):
    source = path.read_text(encoding="utf-8")
    assert check.page_text(source, shown_path).errors == [], "the page must pass before it is mutated"
    tally = mutate_page(check, path, shown_path)
    print(f"\n{shown_path}: caught {tally.caught}/{tally.total} figures changed by one "
          f"({tally.narrative} declared narrative and {tally.range_ends} range ends not counted)")
    assert tally.survivors == []


def test_the_mutations_on_a_fixture_page(demo_repo: Path):
    """On a small page: claims and a typed figure the evidence holds are caught, a narrative figure
    and a range's ends are counted apart, and a page figure no check covers survives, named."""
    page = demo_repo / "docs/p.md"
    page.write_text("---\nnarrative:\n  day 62: the day of the course\n---\n# Day 62\n\n{{ evidence demo }}\n\n"
                    "racecheck found {{ 2 @ race:#reports }} reports with {{ 100\u2013130 @ "
                    "race:reports[severity=Error].hazards }} hazards, the warning "
                    "{{ 8 @ race:reports[severity=Warning].hazards }} of them.\n\n"
                    "Step 41 of the lesson.\n")
    check = checker(demo_repo)
    assert check.page_text(page.read_text(), "docs/p.md").errors == []
    tally = mutate_page(check, page, "docs/p.md")
    assert (tally.caught, tally.total, tally.narrative, tally.range_ends) == (2, 3, 1, 2)
    assert [s.split(" (")[0] for s in tally.survivors] == ["docs/p.md:11: 41 -> 42 passed"]
