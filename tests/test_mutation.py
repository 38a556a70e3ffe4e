"""The mutation test: every figure a reader sees, on every page of the site, is checked.

For each page under docs/ (lessons, reference pages and the home page), every run of digits in
its Markdown that a reader sees is changed twice, one change at a time: by one, and to a value
that no recording of any evidence set holds. Each changed page is checked as `lessonkit check`
checks it (CheckedSite.page_text, without the cache on disk): its Markdown expanded and checked,
the HTML rendered as the site renders it and audited. Each change must fail the check, except:

- a figure inside a phrase declared narrative (the page's front matter, or the course's
  narrative.yml), inside a directive shown as an example (`\\{{ … }}`, escaped), or inside a code
  block (in a language of code, not text or console output) titled as not the lesson's program: declared, by the author, as no measurement; these
  are counted apart;
- an end of a claimed range moved by one (`{{ 180000–210000 @ … }}`): a range that held still
  bounds every recording, so the statement stays true; counted apart too (moved to a value no
  recording holds, it must fail like any other figure).

A change that leaves what a reader sees as it was (a digit in a link target, a comment, a
query) is not a figure of the page and is not counted.

The changes are checked in batches, each of changes in different blocks of the page (a paragraph,
a table row, a list item), at most one a block: a change counts as caught in its batch when the
check reports an error at its own line. Every change not caught so is checked again alone, as
above, so a batch can only speed up the catches; a change that survives has survived alone. Count words ("three reports") are not
changed here; tests/test_audit.py holds them. The test prints caught/total per page. The checks
run in as many processes as the machine has CPUs (two in CI).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from lessonkit.cache import Store
from lessonkit.errors import LessonErrors
from lessonkit.pages.audit import NARRATIVE, SKETCH_LANGUAGES, SKETCH_MARK
from lessonkit.pages.figures import FIGURE_RE, canonical, evidence_figures
from lessonkit.pages.fold import shown, skeleton
from lessonkit.pages.narrative import compile_phrase, load_course
from lessonkit.pages.readertext import read_html
from lessonkit.pages.scan import FENCE_RE, LineIndex, scan
from lessonkit.site.check import CheckedSite, strip_front_matter
from lessonkit.site.check import _split_page as split_page
from lessonkit.site.verdict import docs_pages
from lessonkit.textio import FRONT_MATTER_RE

_DIGITS_RE = re.compile(r"""[0-9]+""")
_DIRECTIVES = ("region", "transcript", "evidence", "provenance", "commands")
_NOT_SHOWN_RE = re.compile(r"""<!--.*?-->|\]\([^)]*\)|<[^<>]*>""", re.DOTALL)  # comments, link targets, tags
_EXAMPLE_RE = re.compile(r"""\\\{\{.*?\}\}""", re.DOTALL)  # a directive shown as an example


@dataclass
class Tally:
    """What the mutations of one page found."""

    caught: int = 0
    total: int = 0
    declared: int = 0
    range_ends: int = 0
    survivors: list[str] = field(default_factory=list)


def _declared_spans(source: str, repo: Path) -> list[tuple[int, int]]:
    """Where in `source` the figures stand that the page or the course declares no measurement:
    narrative phrases, directives shown as examples, code blocks titled as not the program."""
    m = FRONT_MATTER_RE.match(source)
    body = m.end() if m else 0
    meta = yaml.safe_load(m.group("yaml") or "") if m else None
    keys = [str(k) for k in ((meta or {}).get(NARRATIVE) or {})]
    patterns = [compile_phrase(k, placeholder=False) for k in keys]
    patterns += [p.pattern for p in load_course(repo).phrases]
    spans = [(e.start(), e.end()) for e in _EXAMPLE_RE.finditer(source, body)]
    # Phrases are matched on the folded text, paragraph by paragraph (a phrase may span lines): where
    # NFKC changes a paragraph's length (a mathematical digit) its positions are not the file's, and
    # nothing in it counts as declared.
    for para in re.finditer(r"""(?:[^\n]+\n?)+""", source[body:]):
        text = para.group()
        folded = skeleton(shown(text))
        if len(folded) == len(text):
            at = body + para.start()
            spans += [(at + p.start(), at + p.end()) for pattern in patterns for p in pattern.finditer(folded)]
    opened: re.Match | None = None
    for f in FENCE_RE.finditer(source, body):  # the core's one fence pattern (no ` in a ``` info string)
        if opened is None:
            opened = f
        elif f.group("fence").startswith(opened.group("fence")[0]) and len(f.group("fence")) >= \
                len(opened.group("fence")) and not f.group("info").strip():
            info = opened.group("info").replace("\u2019", "'").lower()
            language = (info.split() or [""])[0].lstrip(".{")
            if SKETCH_MARK in info and language in SKETCH_LANGUAGES:
                spans.append((opened.start(), f.end()))
            opened = None
    return spans


def _candidates(source: str) -> list[tuple[int, int, str, int, int]]:
    """Every digit run of the page's Markdown that may show: (start, end, 'claim' | 'range' | 'text',
    and the start and end of the whole figure it is part of)."""
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
        for f in FIGURE_RE.finditer(value):
            for d in _DIGITS_RE.finditer(f.group()):
                found.append((token.start + 2 + f.start() + d.start(), token.start + 2 + f.start() + d.end(), kind,
                              token.start + 2 + f.start(), token.start + 2 + f.end()))
    hidden = [(h.start(), h.end()) for h in _NOT_SHOWN_RE.finditer(source)]
    for figure in FIGURE_RE.finditer(source, start):  # a figure as the audit reads one (not sm_90, H200)
        if any(a <= figure.start() < b for a, b in inside) or any(a <= figure.start() < b for a, b in hidden):
            continue
        number = figure.group("whole") + figure.group("tail")
        last = list(_DIGITS_RE.finditer(number))[-1]
        found.append((figure.start() + last.start(), figure.start() + last.end(), "text",
                      figure.start(), figure.start() + len(number)))
    return sorted(found)


def absent(figure: str, held: set[str]) -> str:
    """A whole number, longer than `figure`, that no recording holds."""
    value = int("9" * (len(figure.replace(",", "").replace(".", "")) + 1) + "7")
    while str(value) in held or canonical(str(value)) in held:
        value = value * 10 + 7
    return str(value)


# -- checking, in worker processes ------------------------------------------------------------

_WORKER: dict[str, CheckedSite] = {}


def checker(repo: Path) -> CheckedSite:
    """`lessonkit check`'s way of checking pages (transcripts left out: the runs' own output, not
    audited, not mutated), without the cache on disk."""
    check = CheckedSite(repo, store=Store(None), keep="errors")
    check.refresh()
    return check


def _caught(job: tuple[str, str, str]) -> bool:
    """Whether `lessonkit check` refuses the mutant. Its errors are the Markdown's, then the audit's
    of the rendered page: a mutant the Markdown's checks refuse (a claim's value changed) is caught
    without rendering it, as the full check would refuse it too."""
    repo, text, path = job
    check = _WORKER.get(repo)
    if check is None:
        check = _WORKER[repo] = checker(Path(repo))
    try:
        body, offset, front = split_page(text, path)
    except LessonErrors:
        return True  # its front matter cannot be read: refused
    result = check.site.page(body, path, offset)
    if result.errors:
        return True
    return bool(check._audit_rendered(path, result, front + body))


def _blocks(source: str) -> list[int]:
    """For each line of `source` (0-based), the block it belongs to: a paragraph or a fenced block
    (lines up to a blank line), except that each table row and each list item is a block of its own."""
    ids, block, fence = [], 0, None
    for text in source.split("\n"):
        stripped = text.strip()
        opened = FENCE_RE.match(stripped + "\n")
        if fence is None and opened:
            fence, block = opened.group("fence")[0], block + 1
        elif fence is not None:
            if opened and opened.group("fence")[0] == fence and not opened.group("info").strip():
                fence = None
        elif not stripped or stripped.startswith(("|", "- ", "* ")) or re.match(r"[0-9]+[.)] ", stripped):
            block += 1
        ids.append(block)
        if fence is None and not stripped:
            block += 1
    return ids


def _batches(source: str, changes: list[tuple[int, int, str]]) -> list[list[int]]:
    """The changes (start, end, new text) in batches: no two of a batch in one block of the page."""
    blocks = _blocks(source)
    batches: list[list[int]] = []
    used: list[set[int]] = []
    for k, (start, _, _) in enumerate(changes):
        block = blocks[source.count("\n", 0, start)]
        for batch, taken in zip(batches, used):
            if block not in taken:
                batch.append(k)
                taken.add(block)
                break
        else:
            batches.append([k])
            used.append({block})
    return batches


def _caught_in_batch(job: tuple[str, str, str, list[tuple[int, int, int, str]]]) -> list[int]:
    """The changes of a batch (index, start, end, new text), made together, that the check refuses
    with an error in the change's own block (a batch has one change a block; an error of a paragraph
    may name its first line): the Markdown's errors and the audit's, both."""
    repo, source, path, changes = job
    check = _WORKER.get(repo)
    if check is None:
        check = _WORKER[repo] = checker(Path(repo))
    mutant = source
    for _, start, end, new in sorted(changes, key=lambda c: -c[1]):
        mutant = mutant[:start] + new + mutant[end:]
    try:
        body, offset, front = split_page(mutant, path)
    except LessonErrors:
        return []  # each alone, then
    result = check.site.page(body, path, offset)
    errors = list(result.errors) + list(check._audit_rendered(path, result, front + body))
    lines = {e.line for e in errors}
    return [k for k, start, _, _ in changes if source.count("\n", 0, start) + 1 in lines]


def _reader_text(check: CheckedSite, source: str, path: str) -> str:
    """What a reader sees of the page (the renderer `check` audits, over the expanded Markdown)."""
    body, offset = strip_front_matter(source)
    html = check.renderer.render(check.site.page(body, path, offset))
    return "\n".join(line.text for line in read_html(html).lines)


def _by_one(source: str, start: int, end: int, new: str) -> bool:
    """Whether `new` is the digits source[start:end] moved up by one."""
    return source[start:end].isdigit() and new == str(int(source[start:end]) + 1)


def mutate_page(check: CheckedSite, repo: Path, path: Path, shown_path: str) -> Tally:
    """Change each figure of the page by one and to a value no recording holds, check each as
    `lessonkit check` does; what was caught."""
    source = path.read_text(encoding="utf-8")
    declared = _declared_spans(source, repo)
    held = {f for ev in check.site.evidence.sets.values() for f in evidence_figures(ev)}
    tally = Tally()
    jobs: list[tuple[int, int, str, str, str]] = []  # start, end, kind, new digits, mutant
    seen_figures: set[int] = set()
    for start, end, kind, fstart, fend in _candidates(source):
        if any(a <= start and end <= b for a, b in declared):
            tally.declared += 1
            continue
        digits = source[start:end]
        jobs.append((start, end, kind, str(int(digits) + 1), source[:start] + str(int(digits) + 1) + source[end:]))
        if fstart not in seen_figures:  # once a figure: the whole of it to a value no recording holds
            seen_figures.add(fstart)
            new = absent(source[fstart:fend], held)
            jobs.append((fstart, fend, kind, new, source[:fstart] + new + source[fend:]))
    workers = max(1, min(len(os.sched_getaffinity(0)), 4))
    _WORKER[str(repo)] = check  # forked, each worker starts with the evidence this one has read
    batches = _batches(source, [(start, end, new) for start, end, _, new, _ in jobs])
    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        caught = [False] * len(jobs)
        for batch, hits in zip(batches, pool.map(_caught_in_batch, [(str(repo), source, shown_path, [
                (k, jobs[k][0], jobs[k][1], jobs[k][3]) for k in batch]) for batch in batches])):
            for k in hits:
                caught[k] = True
        # A range's end moved by one is counted apart whether or not it is caught: not checked again.
        alone = [k for k, hit in enumerate(caught)
                 if not hit and not (jobs[k][2] == "range" and _by_one(source, *jobs[k][:2], jobs[k][3]))]
        print(f"\n{shown_path}: {len(jobs)} changes in {len(batches)} batches, {len(alone)} checked again alone")
        for k, hit in zip(alone, pool.map(_caught, [(str(repo), jobs[k][4], shown_path) for k in alone], chunksize=8)):
            caught[k] = hit
    before = None
    for (start, end, kind, new, mutant), hit in zip(jobs, caught):
        if not hit and kind == "text":
            before = before if before is not None else _reader_text(check, source, shown_path)
            if _reader_text(check, mutant, shown_path) == before:
                continue  # not a figure a reader sees
        if kind == "range" and _by_one(source, start, end, new) and not hit:
            tally.range_ends += 1
            continue
        tally.total += 1
        if hit:
            tally.caught += 1
        else:
            line = source.count("\n", 0, start) + 1
            tally.survivors.append(f"{shown_path}:{line}: {source[start:end]} -> {new} passed "
                                   f"({source[max(start - 30, 0):end + 30]!r})")
    return tally


@pytest.fixture(scope="module")
def check() -> CheckedSite:
    return checker(REPO)


@pytest.mark.parametrize("shown_path, path", docs_pages(REPO), ids=lambda p: str(p))
def test_every_figure_a_page_shows_is_checked(check: CheckedSite, shown_path: str, path: Path):
    source = path.read_text(encoding="utf-8")
    assert check.page_text(source, shown_path).errors == [], "the page must pass before it is mutated"
    tally = mutate_page(check, REPO, path, shown_path)
    print(f"\n{shown_path}: caught {tally.caught}/{tally.total} changed figures (by one and to a value no "
          f"recording holds; {tally.declared} figures declared and {tally.range_ends} range ends moved by one "
          "not counted)")
    assert tally.survivors == [], "\n".join(tally.survivors)


def test_the_mutations_on_a_fixture_page(demo_repo: Path):
    """On a small page: claims and typed figures are caught twice each, a narrative figure and a
    range's ends moved by one are counted apart, and a figure in a code span that nothing checks
    survives, named."""
    page = demo_repo / "docs/p.md"
    page.write_text("---\nnarrative:\n  step 41 of the lesson: a step's number\n---\n# Racecheck\n\n"
                    "{{ evidence demo }}\n\n"
                    "racecheck found {{ 2 @ race:#reports }} reports with {{ 100\u2013130 @ "
                    "race:reports[severity=Error].hazards }} hazards, the warning "
                    "{{ 8 @ race:reports[severity=Warning].hazards }} of them.\n\n"
                    "This is step 41 of the lesson.\n")
    check = checker(demo_repo)
    assert check.page_text(page.read_text(), "docs/p.md").errors == []
    tally = mutate_page(check, demo_repo, page, "docs/p.md")
    # 2 and 8, twice each; 100 and 130 to a value no recording holds (by one: range ends apart)
    assert (tally.caught, tally.total, tally.declared, tally.range_ends) == (6, 6, 1, 2)
    bare = page.read_text().replace("This is step 41 of the lesson.", "The lesson has `41` steps.")
    page.write_text(bare.replace("  step 41 of the lesson: a step's number\n", ""))
    tally = mutate_page(check, demo_repo, page, "docs/p.md")
    assert tally.survivors == []  # even in a code span, a typed figure is refused: no survivor to name
    assert tally.survivors == []
