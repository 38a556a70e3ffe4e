"""The rendered-page audit: what a reader finally sees, against the evidence the page cites.

The checks on the Markdown hold every claim to the evidence; the words around a claim are the
author's. The audit reads the page as rendered (lessonkit.pages.readertext: element text, alt, title
and aria-label text, SVG text, Unicode folded by lessonkit.pages.fold) and refuses, on every page:

- a character a reader does not see (a zero-width space, a soft hyphen, however written: the text
  is read with its character references decoded), and a word that hides a look-alike letter of
  another script among Latin ones, in any text the page wrote;

- a figure a reader sees that no claim, directive or generated table produced, unless it stands
  inside a phrase declared narrative (lessonkit.pages.narrative: the course's `narrative.yml`,
  or the page's front matter, `narrative: {"day 61": "yesterday's lesson"}`), inside a toolkit's
  name whose version an evidence set was recorded with ("CUDA 12.4"), inside a code block titled
  as not the lesson's program, or inside a directive shown as an example (`{{ … }}` escaped, which the
  reader sees with its braces). It is an allow-list: a figure is refused whether or not it equals
  a value of the evidence;
- a compute-sanitizer report or summary line (the `=========` prefix with text after it,
  "RACECHECK SUMMARY" or "ERROR SUMMARY" with a figure, "Race reported between", "hazard
  detected at", "Barrier error detected") that no transcript or claim produced, whatever markup
  carried it; a typed summary passes only when it is, verbatim and in plain characters, the
  summary line of every recording of a run that a figure of its own sentence (its line, in a code
  block) is backed by, as its mark's record lists them; a produced figure inside it stands
  for the summary's figure there;
- a code block in the language of a recorded input of those sets (`cuda` for a .cu input) that
  no region produced, unless its title, shown to the reader, says `not the lesson's program`.

The page is read whole, its slots filled (PageResult.fill): a transcript and the provenance tables
are the runs' own output and count as produced; a diagram's text (lessonkit.pages.diagrams) is read
like prose, only its claims' values produced, and a phrase the page's front matter declares covers
a figure there as anywhere on the page.

Each finding is mapped back to where its text is written: a diagram's to the SVG's own line (its
elements' `data-lk-at`, lessonkit.pages.readertext), anything else to the line of the page's
Markdown that holds its text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from html import unescape as html_unescape
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.evidence.transcript import Summary
from lessonkit.pages.claimcheck import PAGE_RANK
from lessonkit.pages.claims import (
    NUMBER_WORDS,
    ClaimValueError,
    Found,
    Sample,
    judge,
    parse_claim_value,
)
from lessonkit.pages.figures import FIGURE_RE, canonical, evidence_places
from lessonkit.pages.fold import LOOKALIKE_LETTERS, is_invisible, is_selector, shown, skeleton
from lessonkit.pages.frontmatter import read_front_matter
from lessonkit.pages.narrative import Course, PhrasePattern, compile_phrase, phrase_problem
from lessonkit.pages.readertext import (
    DECIMAL,
    CodeBlock,
    ItemLink,
    Line,
    ReaderText,
    marker,
    read_html,
    roman_value,
)
from lessonkit.pages.render import language_of
from lessonkit.pages.result import PageResult
from lessonkit.pages.scan import tokens
from lessonkit.pages.sourcemap import SourceFinder
from lessonkit.pages.units import unit_problem

NARRATIVE = "narrative"
CONSTANTS = "constants"  # phrases bound to a constant of the program: {"four tiles": "LESSON/FILE:NAME"}
SKETCH_MARK = "not the lesson's program"  # a code block titled so is not shown as the program
# The mark is about code: its figures are the sketch's. Output, a transcript or prose in a block (```text,
# ```console, no language) is read as any text is, whatever its title says.
SKETCH_LANGUAGES = frozenset({"c", "c++", "cpp", "cxx", "cu", "cuda", "python", "py", "python3", "py3", "ptx",
                              "sass", "yaml", "yml", "toml", "json", "bash", "sh", "shell", "make"})

# The tool's phrases, matched on a skeleton (lessonkit.pages.fold), so written as skeletons too.
_SUMMARY_RE = re.compile(f"(?:{skeleton('RACECHECK')}|{skeleton('ERROR')})" + r"[\s_-]*" + skeleton("SUMMARY"))
_REPORT_RE = re.compile(r"""(?:^|\s)={6,}\s*[^\s=]|""" + "|".join(
    skeleton(phrase).replace(" ", r"\s+") for phrase in
    ("Race reported between", "hazard detected at", "Barrier error detected")) + r"|" + skeleton("Potential")
    + r"\s+(?:" + "|".join(skeleton(k) for k in ("RAW", "WAR", "WAW")) + r")\s+" + skeleton("hazard"))
# `racecheck.cu:52`: a line of a file, which moves when the file changes (a claim on what names it follows it)
_LINE_REF_RE = re.compile(r"""(?<![\w/.-])[\w./-]+\.(?:cu|cuh|cpp|cc|c|h|hpp|py):[0-9]+(?![0-9])""")
# "Prediction 4", "step 3": a reference to an item of a numbered list, by its number
_NUMBERED = ("prediction", "question", "step", "hint", "item", "exercise", "point")  # nouns that number list items


def _nouns_re(nouns: tuple[str, ...]) -> re.Pattern[str]:
    """One of `nouns`, singular or plural, and the space after it, in any case."""
    return re.compile(r"""(?i)\b(?:""" + "|".join(nouns) + r""")s?\s+""")


_NUMBERED_RE = _nouns_re(_NUMBERED)
# The nouns no phrase may cover: the course declares "step N" and "hint N" for headings, and a page
# no phrase that numbers a list's item ("prediction 4 died" in its front matter would cover a swap).
_ONLY_LINKED = ("prediction", "question", "item", "exercise", "point")
_NUMBERED_ONLY_RE = _nouns_re(_ONLY_LINKED)


def _numbered_message(named: str) -> str:
    return (f"{named!r} numbers an item by hand: when the items move it names another; link it to the item, "
            f"whose number the browser draws: [{named}](#ID), with id=\"ID\" on the item or an element inside it "
            "(<span id=\"ID\"></span>)")


def _item_problem(line: Line, item: ItemLink, said: str) -> str | None:
    """Why a link's text that says `said` (a number) misnames the item it leads to, or None."""
    text = line.text[item.start:item.end]
    if item.style != DECIMAL:
        return (f"link text {text!r} names {said}, and what it leads to, #{item.target}, is in a list the theme "
                f"draws with {item.style.replace('-', ' ')} markers ('{marker(item.number, item.style)}.'), not "
                "numbers; link an item of a numbered list, or name it by its marker")
    if said != str(item.number):
        return (f"link text {text!r} names {said}, and what it leads to, #{item.target}, is in item {item.number} "
                f"of its list as the browser numbers it; write {item.number}, or link the item meant")
    return None
_APOSTROPHES = str.maketrans("\u2019\u2018\u02bc", "'''")


# The names a fence may give the language of a recorded input (its highlighting lexer's aliases):
# a ```cu, ```cpp or ```c++ block shows CUDA as much as a ```cuda one.
_ALIASES = {"cuda": ("cu", "cpp", "c++", "cxx", "c"), "python": ("py", "python3", "py3")}


class _Cited:
    """What the evidence sets a page cites hold, each part read only when the audit asks for it: a
    page that passes never needs the figures (they only name where a refused figure is found)."""

    def __init__(self, sets: list[EvidenceSet], unknowable: bool, own: set[str] | None = None) -> None:
        self.sets = sets
        self.own = own or set()  # the lesson the page is about (its `{{ evidence }}` set's), if it names one
        self.unknowable = unknowable  # a set the page cites cannot be read: its summaries are not known
        shown = {language_of(p) for ev in sets for entry in ev.entries.values()
                 for p in entry.inputs if p.startswith("code/")} - {"text"}
        self.languages = shown | {alias for name in shown for alias in _ALIASES.get(name, ())}

    @cached_property
    def places(self) -> dict[str, list[tuple[EvidenceSet, str]]]:
        """Every figure of the cited sets -> every (set, RUN: FIELD) that holds it."""
        found: dict[str, list[tuple[EvidenceSet, str]]] = {}
        for ev in self.sets:
            for figure, wheres in evidence_places(ev).items():
                found.setdefault(figure, []).extend((ev, where) for where in wheres)
        return found

    def hint(self, figure: str, context: str) -> str:
        """What the cited evidence says of a typed `figure`, for the words `context` around it: a field of
        the page's own lesson first, the one whose name and run share most words with the sentence; a
        field of another lesson only said to be one, since it may count something else."""
        places = self.places.get(figure, [])
        if not places:
            return "no claim, directive or table produced it"
        words = _words(context)
        own = [p for p in places if p[0].lesson in self.own]
        ranked = sorted(own or places, key=lambda p: -len(words & _words(p[1])))
        best = ranked[0][1]
        more = f", and {len(ranked) - 1} other field{'s' if len(ranked) > 2 else ''}" if len(ranked) > 1 else ""
        if not words & _words(best):  # no field's name shares a word with the sentence: likely a coincidence
            return (f"no field whose name matches the sentence holds it (the cited evidence has {figure} in "
                    f"{best}{more}, which may count something else)")
        if own:
            return f"the evidence says {figure} (in {best}{more})"
        lessons = ", ".join(sorted({ev.lesson for ev, _ in places}))
        if not self.own:
            return (f"the cited evidence holds {figure} (in {best}{more}; lesson {lessons}), which may count "
                    "something else: claim it there only if the sentence means that field")
        return (f"only another lesson's evidence holds {figure} (in {best}{more}; lesson {lessons}), which may "
                "count something else: claim it there only if the sentence means that field")


def _cited(result: PageResult, sets: Mapping[str, EvidenceSet]) -> _Cited:
    names = sorted({s for s, _ in result.cited} | {n for n in result.looked_up if n in sets})
    own = sets.get(result.default_set or "")
    lessons = {own.lesson} if own is not None else {result.unrecorded} if result.unrecorded else set()
    return _Cited([sets[name] for name in names], any(c.skipped for c in result.claims), lessons)


_WORD_RE = re.compile(r"""[a-z]+""")
_STOP = frozenset(["a", "an", "and", "are", "as", "at", "by", "for", "from", "in", "is", "it", "of", "on", "or", "the", "to", "was", "were", "with"])


def _words(text: str) -> set[str]:
    """The words of `text` a field's name may share with a sentence: lower case, split at '_' and '.',
    a plural's 's' dropped."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w
            for w in _WORD_RE.findall(text.lower().replace("_", " ")) if w not in _STOP}


# -- what the page declares --------------------------------------------------------------------

@dataclass
class _Narrative:
    key: str      # as declared
    pattern: PhrasePattern  # where it stands on a line's skeleton (lessonkit.pages.narrative)
    reason: str
    line: int     # of the key in the file
    used: bool = False
    course: bool = False  # declared for the whole course (narrative.yml): never "unused"
    bound: str | None = None  # the constant whose value its figures are (LESSON/FILE:NAME), checked


# LESSON/FILE:NAME -> (value, where), or why not, or None when it cannot be known (its runs.toml's error)
Constant = Callable[[str], "tuple[object, str] | str | None"]


def _front_matter(source: str, path: str, errors: list[LessonError],
                  constant: Constant | None = None) -> tuple[list[_Narrative], int]:
    """The page's narrative declarations, its phrases bound to constants, and the number of lines its
    front matter takes."""
    front = read_front_matter(source, path)
    errors.extend(front.errors)
    lines, meta = front.lines, front.meta
    found = _narrative(source, path, errors, lines, meta.get(NARRATIVE))
    return found + _bound(source, path, errors, lines, meta.get(CONSTANTS), constant), lines


def _key_line(source: str, lines: int, at: int, text: str) -> int:
    """The front matter's line declaring `text`, the first after line `at` holding it (else `at`)."""
    return next((k + 1 for k, line in enumerate(source.split("\n")[:lines]) if k + 1 > at and text in line), at)


def bound_files(source: str, path: str) -> list[str]:
    """The files under code/ the page's bound phrases read (their contents are part of its audit's key)."""
    declared = read_front_matter(source, path).meta.get(CONSTANTS)
    if not isinstance(declared, dict):
        return []
    return sorted({str(ref).partition(":")[0].strip() for ref in declared.values() if isinstance(ref, str)})


def _phrase_figures(text: str) -> list[str]:
    """The figures a phrase holds, in order: its numbers (canonical) and its count words as numbers."""
    found = [(m.start(), canonical(m.group())) for m in FIGURE_RE.finditer(text)]
    found += [(m.start(), str(NUMBER_WORDS[m.group().lower()])) for m in re.finditer(r"[^\W\d_]+", text)
              if m.group().lower() in NUMBER_WORDS]
    return [figure for _, figure in sorted(found)]


def _entries(source: str, path: str, errors: list[LessonError], lines: int, declared: Any, name: str,
             shape: str) -> list[tuple[str, Any, int]]:
    """(key, value, its line) of the front matter's mapping `name:`; none, and one error saying what it must
    map (`shape`), when it is not a mapping."""
    if declared is None:
        return []
    at = next((k + 1 for k, text in enumerate(source.split("\n")[:lines]) if text.startswith(name)), 1)
    if not isinstance(declared, dict):
        errors.append(LessonError(path, at, f"{name}: must map {shape}", rank=PAGE_RANK))
        return []
    return [(str(key), value, _key_line(source, lines, at, str(key))) for key, value in declared.items()]


def _bound(source: str, path: str, errors: list[LessonError], lines: int, declared: Any,
           constant: Constant | None) -> list[_Narrative]:
    """The phrases `constants:` binds to a constant of the program, each checked against its value."""
    found = []
    for text, ref, where in _entries(source, path, errors, lines, declared, CONSTANTS,
                                     "each phrase (a figure with words around it) to the constant that fixes it, "
                                     "LESSON/FILE:NAME"):
        problem = phrase_problem(text, placeholder=False)
        if problem:
            errors.append(LessonError(path, where, f"{CONSTANTS} key {text!r} {problem}", rank=PAGE_RANK))
            continue
        if not isinstance(ref, str) or not ref.strip():
            errors.append(LessonError(path, where, f"{CONSTANTS} phrase {text!r} needs the constant that fixes its "
                                      "figure: LESSON/FILE:NAME (NAME[K] for an array's element)", rank=PAGE_RANK))
            continue
        # A phrase whose binding fails still covers its figures: its one error is the binding's.
        phrase = _Narrative(text, compile_phrase(text, placeholder=False), f"the constant {ref}", where, bound=ref)
        found.append(phrase)
        value = constant(ref) if constant is not None else "no program can be read here"
        if value is None:
            phrase.used = True
            continue
        if isinstance(value, str):
            phrase.used = True
            errors.append(LessonError(path, where, f"{CONSTANTS} phrase {text!r} is bound to {ref}: {value}",
                                      rank=PAGE_RANK))
            continue
        number, definition = value
        wanted = [canonical(str(v)) for v in (number if isinstance(number, tuple) else (number,))]
        figures = _phrase_figures(text)
        if figures != wanted:
            phrase.used = True
            says = ", ".join(wanted)
            errors.append(LessonError(path, where, f"{CONSTANTS} phrase {text!r} says {', '.join(figures)}, but {ref} "
                                      f"is {says} ({definition}); write the phrase with "
                                      f"{'its values' if len(wanted) > 1 else says}, or bind it to the constant that "
                                      "fixes what it says", rank=PAGE_RANK))
    return found


def _own_lesson(constant: Constant | None, result: PageResult, sets: Mapping[str, EvidenceSet]) -> Constant | None:
    """`constant`, reading a bare FILE:NAME as a file of the page's own lesson (its `{{ evidence }}` set's)."""
    own = sets.get(result.default_set or "")
    lesson = own.lesson if own is not None else result.unrecorded or result.default_set
    if constant is None or not lesson:
        return constant
    return lambda ref: constant(ref if "/" in ref.partition(":")[0] else f"{lesson}/{ref.strip()}")


def _narrative(source: str, path: str, errors: list[LessonError], lines: int, declared: Any) -> list[_Narrative]:
    """The phrases `narrative:` declares, each with its reason."""
    found = []
    for text, reason, where in _entries(source, path, errors, lines, declared, NARRATIVE,
                                        "each figure (or a short phrase holding it) to the reason it is not from "
                                        "the evidence"):
        problem = phrase_problem(text, placeholder=False)
        if not isinstance(reason, str) or not reason.strip():
            errors.append(LessonError(path, where, f"narrative phrase {text!r} needs a reason: "
                                      f'"{text}": "what it names, and why no recording holds it"', rank=PAGE_RANK))
        elif problem:
            errors.append(LessonError(path, where, f"narrative key {text!r} {problem}", rank=PAGE_RANK))
        else:
            found.append(_Narrative(text, compile_phrase(text, placeholder=False), reason, where))
    return found


def _exempt(line: Line, start: int, end: int, narrative: list[_Narrative], skel: str) -> bool:
    return _declared(start, end, _phrases_in(narrative, skel)) is not None


# Where a finding is written: a line of the page (None: the whole page), or (file, line) for text the
# page shows from another file (a diagram's SVG, lessonkit.pages.diagrams).
Where = int | None | tuple[str, int]
# What the audit found standing behind each figure a reader sees that no claim produced: (where it is
# written, the figure, what backs it in words). `lessonkit explain` lists them after the claims.
Collect = Callable[[Where, str, str], None]


def _phrases_in(narrative: list[_Narrative], skel: str) -> list[tuple[int, int, _Narrative]]:
    """Where each declared phrase stands on a line (its skeleton): read once a line."""
    return [(m.start(), m.end(), n) for n in narrative for m in n.pattern.finditer(skel)]


def _declared(start: int, end: int, phrases: list[tuple[int, int, _Narrative]]) -> _Narrative | None:
    """The line's phrase that skel[start:end] stands inside (which is then used), if any."""
    for a, b, n in phrases:
        if a <= start and end <= b:
            n.used = True
            return n
    return None


# A toolkit named with its version: the version must be one an evidence set was recorded with.
# Read on a skeleton (lessonkit.pages.fold), where the digits 0, 1 and 5 read as o, l and s and
# an i as an l: the names are written as skeletons too.
_TOOLKIT_FIELDS = {skeleton("cuda"): "nvcc", skeleton("nvcc"): "nvcc",
                   skeleton("compute-sanitizer"): "compute_sanitizer", skeleton("compute sanitizer"): "compute_sanitizer",
                   skeleton("sanitizer"): "compute_sanitizer"}
_TOOLKIT_RE = re.compile(r"""(?<![^\W_])(?P<tool>{tools})(?:\s+(?:{extra}))?\s+
                             (?P<version>[0-9ols]+(?:\.[0-9ols]+)*)(?![.,]?[0-9ols])""".format(
    tools="|".join(sorted(map(re.escape, _TOOLKIT_FIELDS), key=len, reverse=True)),
    extra="|".join((skeleton("toolkit"), skeleton("release")))), re.VERBOSE)


def _recorded_versions(sets: Mapping[str, EvidenceSet]) -> dict[str, set[str]]:
    """provenance field -> every version the site's sets were recorded with."""
    found: dict[str, set[str]] = {"nvcc": set(), "compute_sanitizer": set()}
    for ev in sets.values():
        for key, versions in found.items():
            value = ev.provenance.get(key)
            if isinstance(value, str) and value:
                versions.add(value)
    return found


def _toolkit(text: str, skel: str, start: int, end: int,
             versions: dict[str, set[str]]) -> tuple[bool, str | None]:
    """(whether text[start:end] is the version of a named toolkit, why that version is wrong or None)."""
    for m in _TOOLKIT_RE.finditer(skel):
        if m.start("version") <= start and end <= m.end("version"):
            recorded = versions[_TOOLKIT_FIELDS[m.group("tool")]]
            wanted = text[m.start("version"):m.end("version")]
            if any(v == wanted or v.startswith(wanted + ".") for v in recorded):
                return True, None
            return True, (f"'{text[m.start():m.end()]}' names a version no evidence set was recorded with; the sets were "
                          f"recorded with {text[m.start('tool'):m.end('tool')]} " + (", ".join(sorted(recorded)) or "no version"))
    return False, None


# An NVIDIA GPU named by its model: a reader takes "the H200" to be the GPU the page's runs were
# recorded on, so a model the site's evidence was not recorded on is refused unless a declared
# phrase names it on purpose (a T4's build line, a paper's GPU). The model of a set is read off its
# provenance's GPU name ("NVIDIA H100 80GB HBM3": H100) with the same pattern.
_GPU_MODEL_RE = re.compile(r"""(?<![\w.-])(?P<model>
    GH200|GB200|H100|H200|H800|H20|B100|B200|B300|A100|A800|A10G?|A16|A30|A40|L40S?|L4|T4|V100|P100|P40|K80|K40
  | C2075|(?:RTX|GTX)\s?(?:\d{3,4}|Titan))(?![\w])""", re.VERBOSE)


def recorded_models(sets: Mapping[str, EvidenceSet]) -> set[str]:
    """The GPU models the site's evidence sets were recorded on (from each set's provenance 'gpu')."""
    return {m.group("model") for ev in sets.values() for m in _GPU_MODEL_RE.finditer(str(ev.provenance.get("gpu", "")))}


def _gpu_models(text: ReaderText, narrative: list[_Narrative], models: set[str], finder: SourceFinder,
                report: Any) -> None:
    """GPU models a reader sees that no set was recorded on, unless produced or declared."""
    for line in text.lines:
        if not any(c.isdigit() for c in line.text):
            continue
        skel = None
        examples = [(t.start, t.end) for t in tokens(line.text)]  # directives shown as examples, braces and all
        for m in _GPU_MODEL_RE.finditer(line.text):
            if m.group("model") in models or line.is_produced(m.start(), m.end()):
                continue
            if any(a <= m.start() and m.end() <= b for a, b in examples):
                continue
            skel = skel if skel is not None else skeleton(line.text)
            if _exempt(line, m.start(), m.end(), narrative, skel):
                continue
            report(line.origin(m.start()) or finder.words(m.group(), line.text, m.start(), m.end()),
                   f"the GPU {m.group()!r} is named, but the site's evidence was recorded on "
                   f"{', '.join(sorted(models)) or 'no GPU it knows'}: a reader takes a GPU named beside the results "
                   "for the one they were recorded on; produce the name from the evidence, {{ NAME @ SET:gpu }}, "
                   f"or, if the page names another GPU on purpose, declare the phrase: {NARRATIVE}: "
                   f'{{"{_around(line.text, m.start(), m.end())}": "why"}}')


# -- the audit ---------------------------------------------------------------------------------

def audit_page(html: str | Callable[[], str], source: str, path: str, result: PageResult,
               sets: Mapping[str, EvidenceSet], course: Course | None = None,
               constant: Constant | None = None, collect: Collect | None = None) -> list[LessonError]:
    """The audit's errors for one rendered page (`source`: the page's file, front matter included;
    `sets`: every set of the site; `course`: the course's narrative phrases; `constant`: reads a constant
    of a lesson's program, for the phrases the page binds to one); `html` may be a
    function that renders the page, called only when the audit reads the page."""
    errors: list[LessonError] = []
    cited = _cited(result, sets)
    narrative, skip = _front_matter(source, path, errors, _own_lesson(constant, result, sets))
    narrative += [_Narrative(p.key, p.pattern, p.reason, p.line, course=True) for p in (course.phrases if course else ())]
    finder = SourceFinder(source, skip)
    html = html if isinstance(html, str) else html()
    text = read_html(html, result.marks)
    # One error per cause: a line the Markdown's checks already refused is not audited again.
    reported: set[tuple[str, int | None, str]] = set()
    refused = {e.line for e in result.errors}
    refused_elsewhere = {(e.path, e.line) for e in result.errors if e.path != path}

    def report(where: Where, message: str) -> None:
        """An error at `where`: a line of the page, or (file, line) where the text is written (a diagram)."""
        file, at = where if isinstance(where, tuple) else (path, where)
        if (file, at, message) in reported or (at in refused if file == path else (file, at) in refused_elsewhere):
            return
        reported.add((file, at, message))
        errors.append(LessonError(file, at, message, rank=PAGE_RANK))

    for line, col, message, markup in text.refused:
        report(line.written_on(col) or _where_around(line, col, finder) or (finder.phrase(skeleton(markup), markup) if markup else None),
               message)
    split = _characters(text, finder, report)
    # The cause, once: what an invisible or look-alike character split is not refused again.
    text.lines = [line for k, line in enumerate(text.lines) if k not in split]
    _code_blocks(text, cited, finder, report)
    _edges(text, report)
    _units(text, report)
    _tool_lines(text, cited, sets, finder, report)
    _figures(text, cited, narrative, _recorded_versions(sets), finder, report, collect)
    _gpu_models(text, narrative, recorded_models(sets), finder, report)
    _count_words(text, narrative, finder, report)
    _title(source, path, skip, narrative, report)
    _unread_places(html, source, finder, report)
    _recording_links(html, sets, finder, report)
    for n in narrative:
        if not n.used and not n.course:
            report(n.line, f"{CONSTANTS if n.bound else 'narrative'} figure {n.key!r} is declared, but the page "
                   "shows it nowhere outside a claim; remove the declaration")
    return errors


_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015"  # as a sign before a figure ("–34"), not inside a range ("2–34")
_SIGNS = "+-\u2212.,\ufe63\uff0b\uff0d"
# A unit written against the figure: "40s", "3ms", "4x", "2nd" (a magnitude such as "2k" is refused).
_UNIT_AFTER_RE = re.compile(r"""(?:s|ms|us|\u00b5s|ns|x|st|nd|rd|th)(?![\w])""")
_EDGE = ("the figure {figure!r} a claim produced runs into {what} right {side} it, so a reader sees {seen!r}, a "
         "number no claim checked; put a space{punctuation} between them, or write the whole figure inside the claim")


def _joining_space(line: Line, at: int) -> bool:
    """Whether a space that groups digits ("2 000") was written at `at` (the reader's text shows a plain space)."""
    return at in line.joints


def _joins_after(line: Line, end: int) -> bool:
    """Whether what a reader sees at `end`, right after a figure, makes one number with it."""
    after = line.text[end:end + 2]
    if not after or _UNIT_AFTER_RE.match(line.text, end):
        return False
    c = after[0]
    return (c.isalnum() or unicodedata.category(c) == "No"
            or ((c in ".," or _joining_space(line, end)) and after[1:2].isdigit()))


def _joins_before(line: Line, start: int) -> bool:
    """Whether what a reader sees right before a figure at `start` makes one number with it (a sign too)."""
    last, before = line.text[start - 1:start], line.text[start - 2:start - 1]
    return bool(last) and (last.isalnum() or last in _SIGNS or unicodedata.category(last) == "No"
                           or (_joining_space(line, start - 1) and before.isdigit())
                           or (last in _DASHES and not before.isalnum()))


def _edges(text: ReaderText, report: Any) -> None:
    """A claim's figure may not run into a digit, letter or sign a reader sees beside it: '{{ 2 @ … }}0',
    '{{ 2 @ … }}<b>0</b>' and two claims side by side all show "20", and '-{{ 40 @ … }}' or
    '&minus;{{ 40 @ … }}' shows "-40"; none of that is what the claim checked. Read on the page as
    shown, so markup, character references and emphasis between them join as they do for a reader."""
    for line in text.lines:
        for start, end, record in line.records:
            at = None if record.line is None else _joint(line, start, end)
            if at is None:
                continue
            side, punctuation = ("after", " or punctuation") if at == end else ("before", "")
            what = ("the figure of the next claim" if side == "after" and line.written_on(end) is not None
                    else "a space that groups digits" if _joining_space(line, at) else repr(line.text[at]))
            lo, hi = _read_as_one(line.text, min(start, at), max(end, at + 1))
            report(record.line, _EDGE.format(figure=line.text[start:end], what=what, side=side, seen=line.text[lo:hi],
                                         punctuation=punctuation))
            line.produced.append((lo, hi))  # one error for the joined figure, not a second for typing it


def _units(text: ReaderText, report: Any) -> None:
    """A unit a reader sees right after a claim's figure must be the unit the figure shows (none, for a
    count): '{{ 310 @ …launch_us }} ms' reads as milliseconds of a field in microseconds."""
    for line in text.lines:
        for start, end, record in line.records:
            if record.unit is None or not line.text[start:end][-1:].isdigit():
                continue
            problem = unit_problem(record.unit or None, line.text[end:end + 80])
            if problem:
                report(record.line, f"{line.text[start:end]!r}, produced from the evidence: {problem}")


def _joint(line: Line, start: int, end: int) -> int | None:
    """Where the claim's figure line.text[start:end] runs into what is beside it: `end` (the character
    after it) or `start - 1` (the one before); None when it stands apart, or what touches it was
    produced with it (a claim inside a produced cell)."""
    figure = line.text[start:end]
    if figure[-1:].isdigit() and _joins_after(line, end):
        at = end
    elif figure[:1].isdigit() and _joins_before(line, start):
        at = start - 1
    else:
        return None
    lo, hi = min(start, at), max(end, at + 1)
    return None if any(a <= lo and hi <= b for a, b in line.produced) else at


def _read_as_one(text: str, lo: int, hi: int) -> tuple[int, int]:
    """text[lo:hi] widened by the figures that touch it: the number a reader reads across a joint."""
    for m in FIGURE_RE.finditer(text, max(0, lo - 40), hi + 40):
        if m.start() <= hi and m.end() >= lo:
            lo, hi = min(lo, m.start()), max(hi, m.end())
    return lo, hi


def _tool_lines(text: ReaderText, cited: _Cited, sets: Mapping[str, EvidenceSet], finder: SourceFinder,
                report: Any) -> None:
    """Report and summary lines a reader sees that no transcript or claim produced."""
    blocks_reported: set[int] = set()
    for line in text.lines:
        skel = skeleton(line.text)
        for m in _SUMMARY_RE.finditer(skel):
            if line.is_produced(m.start(), m.end()):
                continue
            end = _next_end(line.text, m.end())
            if not any(c.isdigit() for c in line.text[m.end():end]):
                continue  # a mention with no figure ("the ERROR SUMMARY: line") quotes nothing
            if cited.unknowable:  # the set's summaries cannot be read: its own error is the one cause
                line.produced.append((m.start(), len(line.text)))
                continue
            tool = _summary_tool(m.group())
            matched, problem = _summary_quote(line, m.start(), end, tool, sets)
            prefix = re.search(r"={6,}\s*$", line.text[:m.start()])  # the tool's own prefix, quoted with it
            start = prefix.start() if prefix else m.start()
            if problem is None:
                line.produced.append((start, matched))  # checked: its figures too
                line.why.append((start, matched, ("quoted verbatim: the summary line that every recording of the "
                                                  "run its sentence cites printed, as its transcripts hold it")))
                continue
            line.produced.append((start, max(end, matched)))  # one error for the quote, not each figure
            token = line.text[m.start():m.end()]
            first = token.split()[0] if token.split() else token
            report(line.origin(m.start()) or finder.words(token, line.text, m.start(), m.end())  # a quote wrapped in the
                   or finder.words(first, line.text, m.start(), m.start() + len(first))  # Markdown: its first word
                   or finder.phrase(skel[m.start():m.end()], m.group()), problem)
        for m in _REPORT_RE.finditer(skel):
            start = m.start() + (len(m.group()) - len(m.group().lstrip()))
            if line.is_produced(start, m.end()):
                continue
            line.produced.append((0, len(line.text)))  # one error for the line (or block), not each figure
            if line.code is not None and line.code in blocks_reported:
                break
            if line.code is not None:
                blocks_reported.add(line.code)
            report(line.origin(start) or finder.phrase(skel[start:m.end()].strip(), line.text[start:m.end()].strip()),
                   f"a reader sees compute-sanitizer output {line.text.strip()[:60]!r} that no transcript "
                   "produced; show what a run printed with {{ transcript RUN }}")
            break


# A quoted summary, in the reader's text: where it ends, what follows a whole one, its sentence, the runs
# a figure's backing (data-lk-why, lessonkit.pages.meaning) names.
_QUOTE_END_RE = re.compile(r"""["\u201c\u201d;|]|\.(?=\s|$)""")
_AFTER_QUOTE_RE = re.compile(r"""^(?:\s*$|\s[-\u2013\u2014]\s|["'\u201c\u201d\u2018\u2019|)\]]|[.;:!?](?:$|[\s"'\u201d\u2019|)\]]))""")
_SENTENCE_END_RE = re.compile(r"""[.!?]["'\u201d\u2019)\]]*(?=\s|$)""")
_QUOTE_SHOWN = 200  # the most of a quote that a message shows (a summary line is shorter)


def _summary_tool(matched: str) -> str:
    """Which tool's summary a _SUMMARY_RE match (on the skeleton) names: RACECHECK or ERROR."""
    return "RACECHECK" if matched.startswith(skeleton("RACECHECK")) else "ERROR"


def _next_end(text: str, at: int) -> int:
    m = _QUOTE_END_RE.search(text, at)
    return m.start() if m else len(text)


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence holding text[start:end]: from the end of the one before to its own end."""
    first = 0
    for m in _SENTENCE_END_RE.finditer(text, 0, start):
        first = m.end()
    last = _SENTENCE_END_RE.search(text, end)
    return first, last.end() if last else len(text)


def _quote(text: str, start: int, end: int) -> str:
    """text[start:end] as a message shows the quote: without trailing punctuation or an unmatched ')',
    and cut short past _QUOTE_SHOWN characters."""
    if end - start > _QUOTE_SHOWN:
        return text[start:start + _QUOTE_SHOWN] + "\u2026"
    quote = text[start:end].rstrip(" \t.:,")
    while quote.endswith(")") and quote.count(")") > quote.count("("):
        quote = quote[:-1]
    return quote


def _summary_quote(line: Line, at: int, end: int, tool: str,
                   sets: Mapping[str, EvidenceSet]) -> tuple[int, str | None]:
    """(where the quote at `at` ends, why it is refused or None): from `at` on, the line must be, verbatim,
    a summary line of every recording of some run that a figure of its sentence (its line, in a code
    block) is backed by; a produced figure inside it stands for the summary's figure there, and must
    hold for it in every recording."""
    first, last = (0, len(line.text)) if line.code is not None else _sentence(line.text, at, end)
    named = "its line" if line.code is not None else "its sentence"
    quote = _quote(line.text, at, end)
    runs = sorted({run for a, _, cited in line.runs if first <= a < last for run in cited})
    if any(not line.backing(a, b) for a, b in line.produced if first <= a < last and not (at <= a and b <= end)):
        return end, None  # a claim of its sentence failed (it shows no backing): its error is the one to fix first
    if not runs:
        return end, (f"quote {quote!r} belongs to the run cited in {named}, and {named} cites none; cite the run "
                     "there with a claim, or write the quote as a claim: {{ QUOTE @ RUN:summary }}")
    found = _summary_of_runs(line, at, end, runs, sets, tool)
    if isinstance(found, tuple):
        matched, group = found
        if group is not None and line.folded_within(at, matched):
            return matched, (f"quote {quote!r} is not, verbatim, a summary line of a run cited in {named}: it "
                             f"is the summary of {group} only in characters that look like its own (NFKC folds "
                             "them); write it in plain characters")
        return matched, None
    instead = "; ".join(found[:4]) or "no summary of that kind"
    return end, (f"quote {quote!r} is not, verbatim, a summary line of every recording of a run cited in {named}; "
                 f"they say: {instead}")


def _summary_of_runs(line: Line, at: int, end: int, runs: list[tuple[str, str]], sets: Mapping[str, EvidenceSet],
                     tool: str) -> tuple[int, str | None] | list[str]:
    """The first of `runs` whose every recording has a summary line that the line reads, from `at` on:
    (where the quote ends, the run); (end, None) when a run cannot be read (that error comes first);
    else what the runs' recordings say instead."""
    said: list[str] = []
    for set_name, group in runs:
        ev = sets.get(set_name)
        recordings = _recorded_summaries(ev, group) if ev is not None else None
        if recordings is None:
            return end, None
        ends = [[e for s in sums if (e := _matches(line, at, s.text)) is not None] for _, sums in recordings]
        if ends and all(ends):
            return max(max(e) for e in ends), group
        said += _what_they_say(group, recordings, tool)
    return said


def _recorded_summaries(ev: EvidenceSet, group: str) -> list[tuple[str, tuple[Summary, ...]]] | None:
    """(path, summaries) of every recording of a run, or None when one cannot be read."""
    found = []
    for name in ev.recordings(group) if group in ev.groups else ():
        try:
            found.append((ev.transcript_path(name), ev.transcript(name).summaries))
        except LessonError:
            return None  # reported by the integrity check and by the claims on it
    return found


def _matches(line: Line, at: int, summary: str) -> int | None:
    """Where line.text from `at`, read as `summary` verbatim (a produced figure standing for its figure
    there), ends, when it does and the quote ends there; else None."""
    text = line.text
    slots = {a: b for a, b in line.produced if a > at}
    i, j = at, 0
    while j < len(summary):
        b = slots.get(i)
        if b is not None:
            figure = FIGURE_RE.match(summary, j)
            try:
                value = parse_claim_value(text[i:b])
            except ClaimValueError:
                return None
            if figure is None or not judge(value, Sample((Found(figure.group()),), "", 1)).holds:
                return None
            i, j = b, figure.end()
            continue
        if i >= len(text) or text[i] != summary[j]:
            return None
        i, j = i + 1, j + 1
    return i if i in line.code_ends or _AFTER_QUOTE_RE.match(text[i:]) else None


def _what_they_say(group: str, recordings: list[tuple[str, tuple[Summary, ...]]], tool: str) -> list[str]:
    """The summaries of `tool`'s kind in a run's recordings, each with where it is."""
    where: dict[str, list[tuple[str, int]]] = {}
    for path, sums in recordings:
        for s in sums:
            if s.text.upper().startswith(tool):
                where.setdefault(s.text, []).append((path, s.at))
    said = []
    for text, places in where.items():
        path, at = places[0]
        if len(recordings) == 1:
            said.append(f"{text!r} in {path} (line {at})")
        else:
            said.append(f"{text!r} in {len(places)} of {len(recordings)} recordings of {group} ({path}, line {at})")
    return said


# A count word (two and up) before a noun a run counts is a figure too ("all three reports"). "One"
# is left out: it is as often an article as a count ("one launch at a time").
_COUNT_WORDS = [w for w, n in NUMBER_WORDS.items() if n >= 2]
_NUMBERED_WORD_RE = re.compile(r"""(?<![^\W_])(?:""" + "|".join(skeleton(w) for w in _NUMBERED) + r""")s?\s+(?P<word>"""
                               + "|".join(skeleton(w) for w in sorted(NUMBER_WORDS, key=len, reverse=True))
                               + r""")(?![^\W_])""")
_ORDINALS = {w: n for n, w in enumerate([
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
    "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth",
    "twentieth"], 1)}
# "the fourth prediction" (not "the first step", which the course's headings use as English)
_ORDINAL_RE = re.compile(r"""(?<![^\W_])(?P<word>""" + "|".join(skeleton(w) for w in _ORDINALS) + r""")\s+(?:"""
                         + "|".join(skeleton(w) for w in _ONLY_LINKED) + r""")(?![^\W_s])""")
_ROMAN_RE = re.compile(r"""(?i:\b(?:""" + "|".join(_NUMBERED) + r"""))s?\s+(?P<word>[IVXLC]+)(?![\w])""")


def _numbered_words(text: str, skel: str) -> list[tuple[int, int, int, str]]:
    """(start, end, number, the words) of each item number written in words: "prediction four",
    "the fourth prediction", "Prediction IV"."""
    found = [(m.start("word"), m.end("word"), NUMBER_WORDS[text[m.start("word"):m.end("word")].lower()],
              text[m.start():m.end()]) for m in _NUMBERED_WORD_RE.finditer(skel)
             if text[m.start("word"):m.end("word")].lower() in NUMBER_WORDS]
    found += [(m.start("word"), m.end("word"), _ORDINALS[text[m.start("word"):m.end("word")].lower()],
               text[m.start():m.end()]) for m in _ORDINAL_RE.finditer(skel)
              if text[m.start("word"):m.end("word")].lower() in _ORDINALS]
    found += [(m.start("word"), m.end("word"), roman_value(m.group("word")), m.group())
              for m in _ROMAN_RE.finditer(text)]
    return found
_COUNTED = ("report", "hazard", "error", "warning", "record", "recording", "launch", "race", "mismatch",
            "barrier", "run", "kernel", "row", "cell", "thread", "block", "instance", "failure", "warp", "lane",
            "element", "tile", "instruction", "session", "time")  # "nine times in ten": a count of occasions
# A counted noun that names a kind of something else ("the two block sizes", "three thread counts") is
# not what the count counts: the count is of sizes, not of blocks.
_ATTRIBUTIVE = ("size", "sizes", "dimension", "dimensions", "index", "indices", "count", "counts", "width", "widths",
                "level", "levels", "id", "ids", "shape", "shapes", "scope", "scopes")
_COUNT_RE = re.compile(r"""(?<![^\W_])(?P<word>{w})(?:[\s-]+(?:{w}))*[\s-]+(?:[^\W\d_]+[\s-]+)?(?P<noun>{n})(?:e?s)?(?![^\W_])
                           (?![\s-]+(?:{a})(?![^\W_]))""".format(
    w="|".join(sorted((skeleton(x) for x in _COUNT_WORDS), key=len, reverse=True)),
    n="|".join(skeleton(x) for x in _COUNTED), a="|".join(skeleton(x) for x in _ATTRIBUTIVE)), re.VERBOSE)


def _where_around(line: Line, at: int, finder: SourceFinder, word: str = "") -> Where:
    """The Markdown line of the reader's text at column `at`: the one holding `word`, else the visible
    text just before it, else just after it."""
    where = line.origin(at)
    if where is not None:
        return where
    plain = "".join(c for c in line.text if not is_invisible(c))
    col = len("".join(c for c in line.text[:at] if not is_invisible(c)))
    for token, start in ((word, col), (plain[max(0, col - 16):col].strip(), None), (plain[col:col + 16].strip(), None)):
        if token:
            start = plain.find(token, max(0, col - 16)) if start is None else start
            found = finder.words(token, plain, start, start + len(token))
            if found is not None:
                return found
    return None


def _characters(text: ReaderText, finder: SourceFinder, report: Any) -> set[int]:
    """What a reader cannot see or tell apart, in text the page wrote (not a region's code or a run's
    output): an invisible character, however written (a character reference too: the reader's text
    is read decoded), and a Latin word with a look-alike letter of another script in it. The lines it
    refused, by index."""
    refused: set[int] = set()
    for k, line in enumerate(text.lines):
        if line.text.isascii():
            continue
        # Each rule reports on the line (all three may), and says whether it did.
        if (_invisible(line, line is text.lines[0], finder, report) | _digit_like(line, finder, report)
                | _mixed_word(line, finder, report)):
            refused.add(k)
    return refused


def _invisible(line: Line, first: bool, finder: SourceFinder, report: Any) -> bool:
    """Each invisible character of the line, once: not a joiner or selector inside an emoji
    sequence, nor a byte-order mark at the start of the file (`first`: the page's first line)."""
    seen: set[str] = set()
    for col, c in enumerate(line.text):
        if c in seen or not is_invisible(c) or line.is_produced(col, col + 1):
            continue
        if (c == "\u200d" or is_selector(c)) and not _ascii_beside(line.text, col):
            continue  # a zero-width joiner or a variation selector inside an emoji sequence
        if c == "\ufeff" and col == 0 and first:
            continue  # a byte-order mark at the start of the file (MkDocs reads it as utf-8-sig)
        seen.add(c)
        folded = " (as NFKC reads the character written there)" if line.folded_within(col, col + 1) else ""
        report(_where_around(line, col, finder),
               f"invisible character U+{ord(c):04X} ({unicodedata.name(c, 'an invisible character')}){folded}: "
               "a reader does not see it, and it splits the words and figures around it; remove it")
    return bool(seen)


def _digit_like(line: Line, finder: SourceFinder, report: Any) -> bool:
    """The line's first letter of another script that reads as a figure among Latin words ("Prediction З")."""
    for m in _DIGIT_LIKE_RE.finditer(line.text):
        if line.is_produced(m.start(), m.end()) or not _LATIN_WORD_RE.search(line.text):
            continue
        report(_where_around(line, m.start(), finder, m.group()),
               f"{m.group()!r} ({unicodedata.name(m.group()[0])}) stands alone among Latin words, where a "
               "reader reads it as a figure; write the figure in the digits 0 to 9, as a claim, or the word")
        return True
    return False


def _mixed_word(line: Line, finder: SourceFinder, report: Any) -> bool:
    """The line's first Latin word with a look-alike letter of another script in it."""
    if _MIXED.isdisjoint(line.text):
        return False
    for m in _MIXED_WORD_RE.finditer(line.text):
        if line.is_produced(m.start(), m.end()):
            continue
        odd_at = next((m.start() + k for k, c in enumerate(m.group()) if c in _MIXED
                       and not line.folded_within(m.start() + k, m.start() + k + 1)), None)
        if odd_at is None:
            continue  # written as a compatibility character (the micro sign in 'µs'), a symbol of its own
        odd = line.text[odd_at]
        report(_where_around(line, m.start(), finder, m.group()),
               f"the word {m.group()!r} hides {odd!r} ({unicodedata.name(odd)}) among Latin letters; a reader "
               "cannot tell them apart, and reads another word than the one written; spell it in Latin letters")
        return True
    return False


# Letters of other scripts drawn as digits (Cyrillic З and О, Greek Ο, Cyrillic б and Ч), as a word of their own.
_DIGIT_LIKE_RE = re.compile("(?<![^\\W_])[\u0417\u0437\u041e\u043e\u039f\u03bf\u0431\u0427]+(?![^\\W_])")
_LATIN_WORD_RE = re.compile(r"""[A-Za-z]{2,}""")


def _ascii_beside(text: str, col: int) -> bool:
    """Whether an ASCII letter or digit stands right before or after column `col`."""
    return any(0 <= k < len(text) and text[k].isascii() and text[k].isalnum() for k in (col - 1, col + 1))


# A word with a look-alike letter and a Latin one (each word read once, from its start): Cyrillic letters
# and Greek capitals, and the Greek small letters drawn as Latin ones. Latin letters of other alphabets
# (Turkish ı), a unit's prefix (μs) and symbol (kΩ), and a variable's name (εmax) are words of their own.
_MIXED = frozenset(c for c in LOOKALIKE_LETTERS if unicodedata.name(c, "").startswith(("CYRILLIC", "GREEK CAPITAL"))
                   or c in "\u03bf\u03b9\u03ba\u03bd\u03c1\u03c5") - {"\u03a9"}  # ο ι κ ν ρ υ; not Ω (ohms)
_MIXED_WORD_RE = re.compile(rf"""(?<!\w)(?=\w*[{"".join(sorted(_MIXED))}])(?=\w*[A-Za-z])\w+""")


def _count_words(text: ReaderText, narrative: list[_Narrative], finder: SourceFinder, report: Any) -> None:
    """Count words before a counted noun that no claim produced and no phrase declares."""
    for line in text.lines:
        if line.code is not None:
            continue
        skel = skeleton(line.text)
        for start, end, value, named in _numbered_words(line.text, skel):  # "Prediction four", "the fourth step"
            item = line.item(start, end)
            if item is not None:
                problem = _item_problem(line, item, str(value))
                if problem is not None:
                    report(line.origin(start) or finder.phrase(skeleton(named), named), problem)
                continue
            only = any(w in named.lower() for w in _ONLY_LINKED)  # no phrase may cover it
            if line.is_produced(start, end) or (not only and _exempt(line, start, end, narrative, skel)):
                continue
            report(line.origin(start) or finder.phrase(skeleton(named), named), _numbered_message(named))
        for m in _COUNT_RE.finditer(skel):
            start, end = m.start("word"), m.end("word")
            if line.is_produced(start, end) or _exempt(line, start, end, narrative, skel):
                continue
            word = line.text[start:end]
            noun = line.text[m.start("noun"):m.end()]
            report(line.origin(start) or finder.phrase(skel[start:m.end()], line.text[start:m.end()]),
                   f"the count {word!r} before {noun!r} is a figure a reader takes from the evidence; write it as "
                   f"a claim, {{{{ {word} @ RUN:#COLLECTION }}}} (a count word holds when every recording counts "
                   f"{NUMBER_WORDS.get(word.lower(), word)}), or on the program's constant that fixes it, "
                   f"{{{{ {word} @ FILE:NAME }}}}, or, if it counts something neither holds, "
                   f"declare the phrase: {NARRATIVE}: {{\"{line.text[start:m.end()]}\": \"why\"}}")


_RUN_OF_RE = re.compile(r"""\bruns? ([\w.-]+)""")  # the run a generated figure's backing names first


def _figures(text: ReaderText, cited: _Cited, narrative: list[_Narrative], versions: dict[str, set[str]],
             finder: SourceFinder, report: Any, collect: Collect | None = None) -> None:
    """Figures a reader sees that nothing produced and no phrase declares (an allow-list); `collect`
    hears what backs each other one that no claim produced."""
    audit = _FigureAudit(text, cited, narrative, versions, finder, report, collect)
    for line in text.lines:
        if not line.text.isascii() or any(c.isdigit() for c in line.text):
            audit.line(line)


def _ends_at(found: re.Match[str] | None, at: int) -> bool:
    """Whether a search found something that ends just where a figure starts."""
    return found is not None and found.end() == at


class _LineView:
    """One line as the allow-list reads it, its examples and declared phrases worked out when first asked."""

    def __init__(self, line: Line, narrative: list[_Narrative]) -> None:
        self.line, self._narrative = line, narrative

    @functools.cached_property
    def examples(self) -> list[tuple[int, int]]:
        """Where directives shown as examples, braces and all, stand."""
        return [(t.start, t.end) for t in tokens(self.line.text)]

    @functools.cached_property
    def skeleton(self) -> str:
        return skeleton(self.line.text)

    @functools.cached_property
    def phrases(self) -> list[tuple[int, int, _Narrative]]:
        return _phrases_in(self._narrative, self.skeleton)


class _FigureAudit:
    """The allow-list over one page's lines: each figure a reader sees is produced, drawn by the browser,
    shown in an example, declared, or a recorded toolkit's version; anything else is an error."""

    def __init__(self, text: ReaderText, cited: _Cited, narrative: list[_Narrative], versions: dict[str, set[str]],
                 finder: SourceFinder, report: Any, collect: Collect | None) -> None:
        self.text, self.cited, self.narrative, self.versions = text, cited, narrative, versions
        self.finder, self.report, self.collect = finder, report, collect

    def line(self, line: Line) -> None:
        if line.code is not None and _sketch_code(self.text.blocks[line.code], self.finder):
            for m in FIGURE_RE.finditer(line.text) if self.collect is not None else ():
                self.note(line, m, "in a code block the reader is told is not the lesson's program")
            return  # the reader is told, above the block, that it is not the lesson's program
        view = _LineView(line, self.narrative)
        for m in FIGURE_RE.finditer(line.text):
            self.figure(view, m)
        odd = None if line.text.isascii() else next(
            (c for c in line.text if unicodedata.category(c) == "Nd" and not c.isascii()), None)
        if odd is not None:
            self.report(line.origin(line.text.index(odd)) or self.finder.phrase(skeleton(odd), odd),
                        f"the digit {odd!r} ({unicodedata.name(odd, 'a digit')}) is of another script: a reader "
                        f"may read it as another figure; write the figure in the digits 0 to 9")

    def note(self, line: Line, m: re.Match[str], what: str) -> None:
        """Tell `collect` what backs a figure no claim produced, at the page's line that writes it."""
        if self.collect is not None:
            self.collect(self._noted_where(line, m, what), m.group(), what)

    def _noted_where(self, line: Line, m: re.Match[str], what: str) -> Where:
        """The page's line that writes a figure: where its text is written, a generated cell's table
        directive, a typed figure's line, or a generated value's directive, found by the words before it."""
        where: Where = line.origin(m.start())
        if where is None and what.startswith("generated"):
            where = self._table_line(what)
        elif where is None:
            where = self.finder.figure(m.group(), line.text, m.start(), m.end())
        if where is None:
            words = [w for w in line.text[:m.start()].split() if any(c.isalnum() for c in w)][-3:]
            where = self.finder.phrase(skeleton(" ".join(words)), " ".join(words)) if words else None
        return where or self.finder.figure(m.group(), line.text, m.start(), m.end())

    def _table_line(self, what: str) -> int | None:
        """A generated table cell's page line: the table directive that names its run."""
        run = _RUN_OF_RE.search(what)
        if run is None or "the cell (" not in what:
            return None
        return next((k + 1 for k, text in enumerate(self.finder.lines) if "{{ table" in text and run.group(1) in text),
                    None)

    def figure(self, view: _LineView, m: re.Match[str]) -> None:
        line = view.line
        item = line.item(m.start(), m.end())
        if item is not None:  # a link's text that names the numbered item it leads to, produced or typed
            self._item(line, m, item)
        elif line.is_produced(m.start(), m.end()):
            why = line.backing(m.start(), m.end()) or ""
            if why.startswith(("generated", "quoted verbatim")):  # a claim: with its sentence
                self.note(line, m, why)
        elif _ends_at(numbered := _NUMBERED_ONLY_RE.search(line.text, 0, m.start()), m.start()):
            # no phrase covers "Prediction 4"
            self.report(self._where(line, m), _numbered_message(line.text[numbered.start():m.end()]))  # type: ignore[union-attr]
        elif any(a <= m.start() and m.end() <= b for a, b in view.examples):
            self.note(line, m, "inside a directive shown as an example, braces and all")
        elif (phrase := _declared(m.start(), m.end(), view.phrases)) is not None:
            # a release the page names on purpose (a later one, cited) is declared so
            self.note(line, m, f"the constant {phrase.bound}, read from the program (phrase {phrase.key!r})"
                      if phrase.bound else f"declared {'by the course' if phrase.course else 'by the page'} "
                      f"(phrase {phrase.key!r}): {phrase.reason}")
        else:
            self._typed(line, m, view.skeleton)

    def _where(self, line: Line, m: re.Match[str]) -> Where:
        return line.origin(m.start()) or self.finder.figure(m.group(), line.text, m.start(), m.end())

    def _item(self, line: Line, m: re.Match[str], item: ItemLink) -> None:
        problem = _item_problem(line, item, canonical(m.group()))
        if problem is None:
            self.note(line, m, f"the number the browser draws for the list item its link leads to (#{item.target})")
        else:
            self.report(self._where(line, m), problem)

    def _typed(self, line: Line, m: re.Match[str], skel: str) -> None:
        """A figure typed into the page that nothing declares: a recorded toolkit's version, or an error."""
        named, wrong = _toolkit(line.text, skel, m.start(), m.end(), self.versions)
        if named and not wrong:
            self.note(line, m, "the version of a toolkit an evidence set was recorded with")
            return
        where_line = self._where(line, m)
        if wrong:
            self.report(where_line, wrong + "; if the page names a release it did not record on purpose, declare the "
                        f"phrase in the front matter: {NARRATIVE}: "
                        f"{{\"{line.text[max(0, m.start() - 20):m.end()].strip()}\": \"why\"}}")
            return
        if named:
            return
        self.report(where_line, self._typed_message(line, m))

    def _typed_message(self, line: Line, m: re.Match[str]) -> str:
        said = self.cited.hint(canonical(m.group()), line.text[max(0, m.start() - 60):m.end() + 60])
        block = self.text.blocks[line.code] if line.code is not None else None
        if block is not None and _says_sketch(block.title):
            said += (f" (a title saying {SKETCH_MARK!r} exempts code, and this block's language is "
                     f"{_language(block, self.finder) or 'none'}: output and text are read as any "
                     "text is)")
        ref = _LINE_REF_RE.search(line.text, 0, m.end())
        if ref is not None and ref.end() == m.end():
            return (f"{ref.group()!r} is a line reference typed by hand, which goes stale when the "
                    "file's lines move; write it as a claim on what names that line, e.g. "
                    f"{{{{ {ref.group()} @ RUN:reports[...].location }}}}")
        numbered = _NUMBERED_RE.search(line.text, 0, m.start())
        if _ends_at(numbered, m.start()):
            return _numbered_message(line.text[numbered.start():m.end()])  # type: ignore[union-attr]
        return (f"figure {m.group()!r} is typed, not produced: {said}; write it as a claim, "
                f"{{{{ {m.group()} @ RUN:QUERY }}}}, or on the program's constant that fixes it, "
                f"{{{{ {m.group()} @ FILE:NAME }}}}, or, if it names or numbers something rather than "
                f"measuring it, declare the words around it in the front matter: {NARRATIVE}: "
                f'{{"{_around(line.text, m.start(), m.end())}": "why"}}')


def _title(source: str, path: str, skip: int, narrative: list[_Narrative], report: Any) -> None:
    """No text of the front matter holds a figure no phrase declares: the title (the browser tab, the
    navigation) and whatever else the theme may show of it (a subtitle in the navigation, a date at the
    foot of the page), every key but lessonkit's own declarations."""
    for key, value in read_front_matter(source, path).meta.items():
        if key in (NARRATIVE, CONSTANTS):
            continue
        texts = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] \
            if isinstance(value, list) else []
        at = next((k + 1 for k, text in enumerate(source.split("\n")[:skip]) if text.startswith(str(key))), 1)
        for text in texts:
            line = Line(shown(text))
            skel = skeleton(line.text)
            m = next((m for m in FIGURE_RE.finditer(line.text) if not _exempt(line, m.start(), m.end(), narrative, skel)), None)
            if m is not None:
                what = "the title" if key == "title" else f"the front matter's {key}"
                report(at, f"{what} {text!r} shows the figure {m.group()!r}, which no claim can produce there "
                       f"and no narrative phrase declares; declare the words around it ({NARRATIVE}: "
                       f'{{"{_around(text, m.start(), m.end())}": "why"}}), or leave the figure out')
                break


# What shows a reader text the audit cannot read: a picture, an embedded document, a linked image.
_UNREAD_RE = re.compile(r"""<(?P<tag>img|object|embed|iframe|picture|video|audio|canvas|image|feImage)\b[^>]*>
                            |<(?P<use>use)\b[^>]*\bhref="(?!\#)[^"]*"[^>]*>
                            |<a\b[^>]*\bhref="(?P<href>[^"]+\.(?:svg|png|jpe?g|gif|webp|avif|bmp|pdf))(?:[?#][^"]*)?"
                            """, re.VERBOSE | re.IGNORECASE)
_SRC_RE = re.compile(r'\b(?:src|data|href)="(?P<src>[^"]*)"')
# A checkbox, ticked or not (pymdownx.tasklist's `- [x]`, or an <input> written in the page): its state
# is a verdict the reader reads ("held", "died") that no text of the page carries.
_CHECKBOX_RE = re.compile(r"""<input\b[^>]*\btype\s*=\s*["']?checkbox""", re.IGNORECASE)
_TASK_RE = re.compile(r"""^\s*(?:[-*+]|\d+[.)])\s+\[[ xX]\]\s|<input\b[^>]*checkbox""", re.IGNORECASE)
_TOC_LABEL_RE = re.compile(r"""\bdata-toc-label\s*=""")  # in an attribute list or a raw HTML heading alike


_REVERSED_RE = re.compile(r"""<ol\b[^>]*\breversed\b""", re.IGNORECASE)


def _unread_places(html: str, source: str, finder: SourceFinder, report: Any) -> None:
    """Pictures, embedded documents and linked image files, checkboxes, and headings the sidebar names
    otherwise: what a reader sees that the audit cannot read."""
    for m in _UNREAD_RE.finditer(html):
        if m.group("tag") or m.group("use"):
            src = _SRC_RE.search(m.group())
            target = src.group("src") if src else (m.group("tag") or m.group("use"))
            report(finder.phrase(skeleton(target), target),
                   f"a <{(m.group('tag') or m.group('use')).lower()}> ({target}) shows the reader text no check can read; draw "
                   "it as an SVG under code/LESSON/diagrams/ and show it with {{ diagram LESSON/diagrams/"
                   "NAME.svg }}, whose text is checked like the page's")
        else:
            href = m.group("href")
            report(finder.phrase(skeleton(href), href),
                   f"the link to {href} opens a file whose text no check can read; show a drawing with "
                   "{{ diagram LESSON/diagrams/NAME.svg }}, whose text is checked like the page's")
    for m in _REVERSED_RE.finditer(html):
        report(finder.phrase("reversed", "reversed"), "a reversed list counts down from its last item, which the "
               "audit does not read; number its items in order (an ordered list without 'reversed')")
        break
    if _CHECKBOX_RE.search(html):
        lines = source.split("\n")
        at = next((k + 1 for k, line in enumerate(lines) if _TASK_RE.search(line)), None)
        report(at, "a checkbox shows the reader a verdict, ticked or not, that no check can read (its state is "
               "no text); say in words what held and what did not, with the claim that shows it, and leave the "
               "box out")
    for k, line in enumerate(source.split("\n")):
        if "data-toc-label" in line and _TOC_LABEL_RE.search(line):
            report(k + 1, "data-toc-label names the heading otherwise in the sidebar, where the audit does not "
                   "read; let the sidebar show the heading's own text (remove data-toc-label)")


# A link into the published evidence (evidence/SET/FILE, relative or from the root), and its text.
_RECORDING_LINK_RE = re.compile(r"""<a\b[^>]*\bhref\s*=\s*"(?P<href>[^"]*?\bevidence/(?P<set>[^/"]+)/(?P<file>[^"#?]+))[^"]*"[^>]*>
                                    (?P<text>.*?)</a>""", re.VERBOSE | re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"""<[^>]*>""")
_RECORDING_NUMBER_RE = re.compile(r"""\b(?:(?P<ordinal>{o})\s+(?:recording|run|repeat)|(?:recording|repeat)\s+(?P<number>\d+)
                                      |\br(?P<short>\d+)\b)""".format(o="|".join(_ORDINALS)),
                                  re.VERBOSE | re.IGNORECASE)
_SESSION_NUMBER_RE = re.compile(r"""\b(?:session\s+(?P<number>\d+)|s(?P<short>\d+)\b)""", re.IGNORECASE)


def _recording_links(html: str, sets: Mapping[str, EvidenceSet], finder: SourceFinder, report: Any) -> None:
    """A link to a recording says which one it opens: its text may not name another run of the set,
    another recording (`the third recording`, `recording 2`, `r2`) or another session than its target."""
    for m in _RECORDING_LINK_RE.finditer(html):
        ev = sets.get(m.group("set"))
        entry = next((e for e in ev.entries.values() if e.file == m.group("file")), None) if ev else None
        if entry is None:
            continue  # a link to a file the evidence does not hold is refused where the page is checked
        text = " ".join(html_unescape(_TAG_RE.sub(" ", m.group("text"))).split())
        wrong = (_names_another_run(text, ev, entry) or _names_another_recording(text, entry)
                 or _names_another_session(text, entry)) if text else None
        if wrong is not None:
            report(finder.phrase(skeleton(text), text),
                   f"the link {text!r} {wrong} ({entry.file} of {ev.name}); make its text say what it opens, or "
                   "link the recording it names")


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) is not None


def _names_another_run(text: str, ev: EvidenceSet, entry: Any) -> str | None:
    """Why a link's text names another run of the set than the recording it opens, if it does."""
    others = sorted({g for g in ev.groups if g != entry.group and _named(g, text)}, key=len, reverse=True)
    if others and not _named(entry.group, text):
        return f"names the run {others[0]!r}, and it opens a recording of {entry.group!r}"
    return None


def _names_another_recording(text: str, entry: Any) -> str | None:
    """Why a link's text names another recording (`the third recording`, `recording 2`, `r2`), if it does."""
    for n in _RECORDING_NUMBER_RE.finditer(text):
        said = _ORDINALS[n.group("ordinal").lower()] if n.group("ordinal") else int(n.group("number") or n.group("short"))
        if said != entry.repeat:
            return f"names recording {said} ({n.group().strip()!r}), and it opens recording {entry.repeat}"
    return None


def _names_another_session(text: str, entry: Any) -> str | None:
    """Why a link's text names another session (`session 2`, `s2`), if it does."""
    for n in _SESSION_NUMBER_RE.finditer(text):
        said = int(n.group("number") or n.group("short"))
        if f"s{said}" != entry.session:
            return f"names session {said} ({n.group().strip()!r}), and it opens one of session {entry.session}"
    return None


def _around(text: str, start: int, end: int) -> str:
    """The figure text[start:end] with the words next to it, as the reader's text has them, as a phrase to
    declare: a word before and a word after (as many more as it takes to hold a letter), cut where a
    word is not a word (punctuation at either end), so that declared it matches where it stands."""
    pieces = [m.span() for m in re.finditer(r"\S+", text)]
    at = next((k for k, (a, b) in enumerate(pieces) if a <= start < b), None)
    if at is None:
        return text[start:end]
    lo, hi = at, at
    for _ in range(4):
        lo, hi = max(lo - 1, 0), min(hi + 1, len(pieces) - 1)
        phrase = _trim(text[pieces[lo][0]:pieces[hi][1]], text[start:end])
        if phrase_problem(phrase, placeholder=False) is None:
            return phrase
    return _trim(text[pieces[lo][0]:pieces[hi][1]], text[start:end])


def _trim(phrase: str, figure: str) -> str:
    """`phrase` without a double quote (it would end the YAML text) or the punctuation at its ends,
    white space made single, and never cut into `figure`."""
    phrase = " ".join(phrase.replace('"', " ").replace("\u00b6", " ").split())  # a heading's permalink mark too
    trimmed = phrase.strip(" ,.;:()[]")
    return trimmed if figure in trimmed else phrase


def _language(block: CodeBlock, finder: SourceFinder) -> str:
    """A code block's language: as its HTML names it, else as the fence that opened it does (found by
    its title; pymdownx.highlight writes `language-X` only with pygments_lang_class)."""
    if block.language or not block.title.strip():
        return block.language.lower()
    title = block.title.strip().translate(_APOSTROPHES)
    return next((language.lower() for k, language in finder.fences()
                 if title in finder.lines[k].translate(_APOSTROPHES)), "")


def _sketch_code(block: CodeBlock, finder: SourceFinder) -> bool:
    """Whether a code block is titled as not the lesson's program, and is code (SKETCH_LANGUAGES)."""
    return (_says_sketch(block.title)
            and _language(block, finder) in SKETCH_LANGUAGES)


def _code_blocks(text: ReaderText, cited: _Cited, finder: SourceFinder, report: Any) -> None:
    """Code in a recorded input's language comes from a region, or says it is not the program."""
    for k, block in enumerate(text.blocks):
        if block.produced or block.language not in cited.languages or _says_sketch(block.title):
            continue
        lines = _one_error_for(text, k)
        first = next((line.text for line in lines if line.text.strip() and not line.text.strip().isdigit()), "")
        report(finder.code(first, block.language), _code_message(block.language))
    _fenced_code(text, cited, finder, report)


def _fenced_code(text: ReaderText, cited: _Cited, finder: SourceFinder, report: Any) -> None:
    """A fence names its language in the Markdown whether or not the HTML keeps it (pymdownx.highlight
    writes `language-X` only with pygments_lang_class): the author's fences are read too."""
    for k, language in finder.fences():
        if language in cited.languages and not _says_sketch(finder.lines[k]):
            report(k + 1, _code_message(language))
            first = finder.lines[k + 1].strip() if k + 1 < len(finder.lines) else ""
            for code in {line.code for line in text.lines if line.code is not None and first and line.text.strip() == first}:
                _one_error_for(text, code)  # the block as rendered


def _says_sketch(title: str) -> bool:
    """Whether a code block's title (or its fence's line) tells the reader it is not the lesson's program."""
    return SKETCH_MARK in title.translate(_APOSTROPHES).lower()


def _one_error_for(text: ReaderText, code: int) -> list[Line]:
    """Code block `code`'s lines, each marked as produced: one error for the block, not one for each
    figure in it."""
    lines = [line for line in text.lines if line.code == code]
    for line in lines:
        line.produced.append((0, len(line.text)))
    return lines


def _code_message(language: str) -> str:
    return (f"a {language} code block that no region directive produced looks like the lesson's program; "
            f"show the program's code with {{{{ region FILE NAME }}}}, or title the block so the reader sees "
            f"it is not: ```{language} title=\"sketch, {SKETCH_MARK}\"")



