"""The rendered-page audit: what a reader finally sees, against the evidence the page cites.

The checks on the Markdown hold every claim to the evidence; the words around a claim are the
author's. The audit reads the page as rendered (lessonkit.pages.readertext: element text, alt, title
and aria-label text, SVG text, Unicode folded by lessonkit.pages.fold) and refuses, in a page that
cites evidence:

- a figure a reader sees that equals a value of the evidence the page cites (any number of any
  recording of any run of a set it cites or names) and that no claim or directive produced,
  unless the page's front matter lists it as narrative, with a reason:
  `narrative: {"27": "the day number", "day 61": "yesterday's lesson"}` (a key that is a number,
  quoted as every key must be, covers every place it stands alone; a phrase covers the numbers inside that phrase only);
- a compute-sanitizer report or summary line (the `=========` prefix with text after it,
  "RACECHECK SUMMARY" or "ERROR SUMMARY" with a figure, "Race reported between", "hazard
  detected at", "Barrier error detected") that no transcript or claim produced, whatever markup
  carried it; a typed summary passes only when it is, verbatim and in plain characters, the
  summary line of a recording of a run the page cites (the Markdown's summary rule then binds
  it to the run of its own sentence);
- a code block in the language of a recorded input of those sets (`cuda` for a .cu input) that
  no region produced, unless its title, shown to the reader, says `not the lesson's program`.

Each finding is mapped back to the line of the page's Markdown that holds its text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.pages.figures import FIGURE_RE, canonical, evidence_figures
from lessonkit.pages.fold import shown, skeleton
from lessonkit.pages.frontmatter import read_front_matter
from lessonkit.pages.readertext import Line, ReaderText, read_html
from lessonkit.pages.render import language_of
from lessonkit.pages.sourcemap import SourceFinder
from lessonkit.pages.state import PAGE_RANK, PageResult

NARRATIVE = "narrative"
SKETCH_MARK = "not the lesson's program"  # a code block titled so is not shown as the program

# The tool's phrases, matched on a skeleton (lessonkit.pages.fold), so written as skeletons too.
_SUMMARY_RE = re.compile(f"(?:{skeleton('RACECHECK')}|{skeleton('ERROR')})" + r"[\s_-]*" + skeleton("SUMMARY"))
_REPORT_RE = re.compile(r"""(?:^|\s)={6,}\s*[^\s=]|""" + "|".join(
    skeleton(phrase).replace(" ", r"\s+") for phrase in
    ("Race reported between", "hazard detected at", "Barrier error detected")))
_APOSTROPHES = str.maketrans("\u2019\u2018\u02bc", "'''")


@dataclass
class _Cited:
    figures: dict[str, str]
    summaries: set[str]
    languages: set[str]


def _cited(result: PageResult, sets: Mapping[str, EvidenceSet]) -> _Cited | None:
    names = sorted({s for s, _ in result.cited} | {n for n in result.looked_up if n in sets})
    if not names:
        return None
    cited = _Cited({}, set(), set())
    for name in names:
        ev = sets[name]
        for figure, where in evidence_figures(ev).items():
            cited.figures.setdefault(figure, where)
        for entry in ev.entries.values():
            cited.languages.update(language_of(p) for p in entry.inputs if p.startswith("code/"))
    for name in names:  # which run a quote belongs to is the Markdown's summary rule's to say
        ev = sets[name]
        for recording in ev.entries:
            try:
                cited.summaries.update(s.text for s in ev.transcript(recording).summaries)
            except LessonError:
                continue
    cited.languages.discard("text")
    return cited


# -- what the page declares --------------------------------------------------------------------

@dataclass
class _Narrative:
    key: str      # as declared
    phrase: str   # skeleton of the key
    reason: str
    line: int     # of the key in the file
    used: bool = False


def _front_matter(source: str, path: str, errors: list[LessonError]) -> tuple[list[_Narrative], int]:
    """The page's narrative declarations and the number of lines its front matter takes."""
    front = read_front_matter(source, path)
    errors.extend(front.errors)
    lines, meta = front.lines, front.meta
    declared = meta.get(NARRATIVE)
    if declared is None:
        return [], lines
    at = next((k + 1 for k, text in enumerate(source.split("\n")[:lines]) if text.startswith(NARRATIVE)), 1)
    if not isinstance(declared, dict):
        errors.append(LessonError(path, at, f"{NARRATIVE}: must map each figure (or a short phrase holding it) "
                                  "to the reason it is not from the evidence", rank=PAGE_RANK))
        return [], lines
    found = []
    for key, reason in declared.items():
        text = str(key)
        where = next((k + 1 for k, line in enumerate(source.split("\n")[:lines])
                      if k + 1 > at and text in line), at)
        if not isinstance(reason, str) or not reason.strip():
            errors.append(LessonError(path, where, f"narrative figure {text!r} needs a reason: "
                                      f'{text}: "what it counts, and why no recording holds it"', rank=PAGE_RANK))
        elif not FIGURE_RE.search(text):
            errors.append(LessonError(path, where, f"narrative key {text!r} holds no figure; list a figure, "
                                      "or a short phrase around one", rank=PAGE_RANK))
        else:
            found.append(_Narrative(text, skeleton(shown(text)), reason, where))
    return found, lines


def _exempt(line: Line, start: int, end: int, narrative: list[_Narrative], skel: str) -> bool:
    for n in narrative:
        at = skel.find(n.phrase)
        while at != -1:
            stop = at + len(n.phrase)
            if at <= start and end <= stop and not (at and skel[at - 1].isalnum() and n.phrase[0].isalnum()) \
                    and not (stop < len(skel) and skel[stop].isalnum() and n.phrase[-1].isalnum()):
                n.used = True
                return True
            at = skel.find(n.phrase, at + 1)
    return False


# -- the audit ---------------------------------------------------------------------------------

def audit_page(html: str | Callable[[], str], source: str, path: str, result: PageResult,
               sets: Mapping[str, EvidenceSet]) -> list[LessonError]:
    """The audit's errors for one rendered page (`source`: the page's file, front matter included);
    `html` may be a function that renders the page, called only when the audit reads the page."""
    errors: list[LessonError] = []
    cited = _cited(result, sets)
    if cited is None:
        return errors  # a page that cites no evidence is no lesson: the Markdown's rules hold it
    narrative, skip = _front_matter(source, path, errors)
    finder = SourceFinder(source, skip)
    text = read_html(html if isinstance(html, str) else html())
    for line in text.lines:
        for context, start, end in result.unmarked:
            at = line.text.find(context)
            while at != -1:
                line.produced.append((at + start, at + end))
                at = line.text.find(context, at + 1)
    # One error per cause: a line the Markdown's checks already refused is not audited again.
    reported: set[tuple[int | None, str]] = set()
    refused = {e.line for e in result.errors}

    def report(where: int | None, message: str) -> None:
        if (where, message) not in reported and where not in refused:
            reported.add((where, message))
            errors.append(LessonError(path, where, message, rank=PAGE_RANK))

    _code_blocks(text, cited, finder, report)
    _tool_lines(text, cited, finder, report)
    _figures(text, cited, narrative, finder, report)
    for n in narrative:  # declared for a figure the evidence does not hold: used if the page shows it
        if not n.used:
            for line in text.lines:
                for m in FIGURE_RE.finditer(line.text):
                    if not n.used and not line.is_produced(m.start(), m.end()):
                        _exempt(line, m.start(), m.end(), [n], skeleton(line.text))
    for n in narrative:
        if not n.used:
            report(n.line, f"narrative figure {n.key!r} is declared, but the page shows it nowhere outside "
                   "a claim; remove the declaration")
    return errors


def _tool_lines(text: ReaderText, cited: _Cited, finder: SourceFinder, report: Any) -> None:
    """Report and summary lines a reader sees that no transcript or claim produced."""
    blocks_reported: set[int] = set()
    for line in text.lines:
        skel = skeleton(line.text)
        for m in _SUMMARY_RE.finditer(skel):
            rest = line.text[m.end():m.end() + 60]
            if not any(c.isdigit() for c in rest) or line.is_produced(m.start(), m.end()):
                continue
            quote = next((s for s in cited.summaries if line.text.startswith(s, m.start())), None)
            if quote is not None and not line.folded_within(m.start(), m.start() + len(quote)):
                line.produced.append((m.start(), m.start() + len(quote)))  # checked: its figures too
                continue
            shown_text = line.text[m.start():m.start() + 80].strip()
            line.produced.append((m.start(), m.start() + len(shown_text)))  # one error for the line, not each figure
            report(finder.phrase(skel[m.start():m.end()], m.group()),
                   f"a reader sees the summary line {shown_text!r}, which no claim or transcript produced and "
                   "which is not, verbatim in plain characters, the summary of a run the page cites; the "
                   "evidence says " + (" | ".join(sorted(cited.summaries)[:3]) or "no summary")
                   + "; write it as a claim: {{ QUOTE @ RUN:summary }}")
        for m in _REPORT_RE.finditer(skel):
            start = m.start() + (len(m.group()) - len(m.group().lstrip()))
            if line.is_produced(start, m.end()):
                continue
            line.produced.append((0, len(line.text)))  # one error for the line (or block), not each figure
            if line.code is not None and line.code in blocks_reported:
                break
            if line.code is not None:
                blocks_reported.add(line.code)
            report(finder.phrase(skel[start:m.end()].strip(), line.text[start:m.end()].strip()),
                   f"a reader sees compute-sanitizer output {line.text.strip()[:60]!r} that no transcript "
                   "produced; show what a run printed with {{ transcript RUN }}")
            break


def _figures(text: ReaderText, cited: _Cited, narrative: list[_Narrative], finder: SourceFinder,
             report: Any) -> None:
    """Figures a reader sees that the evidence holds and no claim produced."""
    for line in text.lines:
        if line.text.isascii() and not any(c.isdigit() for c in line.text):
            continue
        skel = None
        for m in FIGURE_RE.finditer(line.text):
            if line.is_produced(m.start(), m.end()):
                continue
            figure = canonical(m.group())
            where = cited.figures.get(figure)
            if where is None:
                continue
            skel = skel if skel is not None else skeleton(line.text)
            if _exempt(line, m.start(), m.end(), narrative, skel):
                continue
            report(finder.figure(m.group(), line.text, m.start(), m.end()),
                   f"figure {m.group()!r} is typed, not produced by a claim; the evidence says {figure} "
                   f"(in {where}); write it as a claim, {{{{ {m.group()} @ RUN:QUERY }}}}, or, if it counts "
                   f"something no recording holds, list it in the front matter: {NARRATIVE}: "
                   f'{{"{m.group()}": "why"}}')
        if not line.text.isascii():
            odd = next((c for c in line.text if unicodedata.category(c) == "Nd" and not c.isascii()), None)
            if odd is not None:
                report(finder.phrase(skeleton(odd), odd),
                       f"the digit {odd!r} ({unicodedata.name(odd, 'a digit')}) is of another script: a reader "
                       f"may read it as another figure; write the figure in the digits 0 to 9")


def _code_blocks(text: ReaderText, cited: _Cited, finder: SourceFinder, report: Any) -> None:
    """Code in a recorded input's language comes from a region, or says it is not the program."""
    for k, block in enumerate(text.blocks):
        if block.produced or block.language not in cited.languages:
            continue
        if SKETCH_MARK in block.title.translate(_APOSTROPHES).lower():
            continue
        lines = [line for line in text.lines if line.code == k]
        for line in lines:
            line.produced.append((0, len(line.text)))  # one error for the block, not for its figures
        first = next((line.text for line in lines if line.text.strip() and not line.text.strip().isdigit()), "")
        report(finder.code(first, block.language), _code_message(block.language))
    # A fence names its language in the Markdown whether or not the HTML keeps it (pymdownx.highlight
    # writes `language-X` only with pygments_lang_class): read the author's fences too.
    for k, language in finder.fences():
        if language in cited.languages and SKETCH_MARK not in finder.lines[k].translate(_APOSTROPHES).lower():
            report(k + 1, _code_message(language))
            first = finder.lines[k + 1].strip() if k + 1 < len(finder.lines) else ""
            for line in text.lines:  # the block as rendered: one error for it, not for its figures
                if line.code is not None and first and line.text.strip() == first:
                    for other in text.lines:
                        if other.code == line.code:
                            other.produced.append((0, len(other.text)))


def _code_message(language: str) -> str:
    return (f"a {language} code block that no region directive produced looks like the lesson's program; "
            f"show the program's code with {{{{ region FILE NAME }}}}, or title the block so the reader sees "
            f"it is not: ```{language} title=\"sketch, {SKETCH_MARK}\"")



