"""A page's directives and claims: expand what it pulls in and check every claim it makes.

Syntax, each inside double braces:
- a line holding only `{{ region PATH NAME [highlight=LINE[@REF:QUERY],...] }}`,
  `{{ transcript REF [open] }}`, `{{ evidence SET }}` (the page's default set),
  `{{ provenance SET }}` or `{{ commands SET [NAME ...] }}`;
- anywhere, a claim `{{ VALUE @ REF:QUERY }}`: the author writes VALUE, the build checks it
  and the page shows it.
REF is SET/TRANSCRIPT, TRANSCRIPT of the default set, or SET alone for the set's provenance.
Any compute-sanitizer summary written elsewhere on the page is checked against the
transcripts the page cites.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence import EvidenceSet
from lessonkit.query import QueryError, resolve
from lessonkit.regions import load_region
from lessonkit.render import render_commands, render_provenance, render_region, render_transcript
from lessonkit.transcript import iter_summary_mentions

_TOKEN_RE = re.compile(r"""(?<!\\)\{\{(?P<body>.*?)\}\}""", re.VERBOSE)
_DIRECTIVE_LINE_RE = re.compile(r"""^\s*\{\{\s*(?P<word>[a-z]+)\b(?P<args>.*?)\}\}\s*$""", re.VERBOSE)
_DIRECTIVES = ("region", "transcript", "evidence", "provenance", "commands")
_HIGHLIGHT_RE = re.compile(r"""^(?P<line>\d+)(?:@(?P<claim>.+))?$""")


_SLOT_RE = re.compile(r"""<div\ data-lk-slot="(?P<n>\d+)"></div>""", re.VERBOSE)


@dataclass
class PageResult:
    """The expanded Markdown, the errors found, the transcripts the page cites, and HTML for its slots."""

    markdown: str
    errors: list[LessonError] = field(default_factory=list)
    cited: set[tuple[str, str]] = field(default_factory=set)
    blocks: list[str] = field(default_factory=list)

    def slot(self, html: str) -> str:
        """A placeholder for finished HTML, filled in by `fill` once Markdown has run."""
        self.blocks.append(html)
        return f'\n<div data-lk-slot="{len(self.blocks) - 1}"></div>\n'

    def fill(self, html: str) -> str:
        """The page's HTML with every slot replaced by its block."""
        return _SLOT_RE.sub(lambda m: self.blocks[int(m.group("n"))], html)


@dataclass
class _Page:
    path: str
    offset: int
    repo: Path
    sets: dict[str, EvidenceSet]
    broken_sets: set[str]
    default_set: str | None = None
    result: PageResult = field(default_factory=lambda: PageResult(""))

    def error(self, index: int, message: str) -> None:
        self.result.errors.append(LessonError(self.path, index + 1 + self.offset, message))

    def lookup(self, index: int, ref: str) -> tuple[EvidenceSet, str | None] | None:
        """Resolve REF to (set, transcript or None); records an error and returns None if it names nothing."""
        set_name, sep, transcript = ref.partition("/")
        if not sep:
            default = self.sets.get(self.default_set or "")
            if default is not None and ref in default.entries:
                set_name, transcript = default.name, ref
            elif ref in self.sets:
                return self.sets[ref], None
            elif default is not None:
                self.error(index, f"no transcript {ref!r} in the page's set {default.name!r} and no set "
                           f"of that name; transcripts: {', '.join(sorted(default.entries))}")
                return None
        ev = self.sets.get(set_name)
        if ev is None:
            why = (" (its manifest could not be read: see the error for it)"
                   if set_name in self.broken_sets else "")
            self.error(index, f"no evidence set {set_name!r}{why}; the sets are: "
                       f"{', '.join(sorted(self.sets)) or 'none'}")
            return None
        if transcript not in ev.entries:
            self.error(index, f"evidence set {ev.name!r} has no transcript {transcript!r}; it has: "
                       f"{', '.join(sorted(ev.entries))}")
            return None
        self.result.cited.add((ev.name, transcript))
        return ev, transcript

    def check_value(self, index: int, value: str, ref_query: str) -> bool:
        """Check that `value` is what REF:QUERY says; records an error otherwise."""
        ref, sep, query = ref_query.partition(":")
        if not sep:
            self.error(index, f"claim {value!r} names {ref_query!r}; expected REF:QUERY, "
                       "e.g. day62-racecheck/bare-all:rows[threads=32,kernel=scanTileRacy].mismatches")
            return False
        found = self.lookup(index, ref.strip())
        if found is None:
            return False
        ev, transcript = found
        try:
            got = resolve(ev, transcript, query.strip())
        except QueryError as exc:
            self.error(index, f"claim {value!r} ({ref_query.strip()}): {exc}")
            return False
        except LessonError as exc:  # the transcript itself is missing or malformed
            self.error(index, f"claim {value!r} ({ref_query.strip()}) cannot be checked: {exc}")
            return False
        if got.text != value:
            where = f" (line {got.line})" if got.line else ""
            self.error(index, f"claim {value!r} ({ref_query.strip()}) disagrees with {got.path}; "
                       f"it says {got.text!r}{where}")
            return False
        return True


def process_page(markdown: str, path: str, repo: Path, sets: dict[str, EvidenceSet],
                 broken_sets: set[str] = frozenset(), line_offset: int = 0) -> PageResult:
    """Expand a page's directives and check its claims; `line_offset` counts lines stripped above `markdown`."""
    page = _Page(path, line_offset, repo, sets, set(broken_sets))
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        m = _DIRECTIVE_LINE_RE.match(line)
        if m and m.group("word") == "evidence":
            page.default_set = m.group("args").strip()
            if page.default_set not in sets:
                page.lookup(i, page.default_set)
    out: list[str] = []
    mentions: list[tuple[int, int, str | None]] = []
    for i, line in enumerate(lines):
        m = _DIRECTIVE_LINE_RE.match(line)
        if m and m.group("word") in _DIRECTIVES:
            indent = line[:len(line) - len(line.lstrip())]
            block = _directive(page, i, m.group("word"), m.group("args"))
            out.append("\n".join(indent + b if b else b for b in block.split("\n")))
            continue
        out.append(_claims_in_line(page, i, line, mentions))
    _check_mentions(page, mentions)
    page.result.errors.sort(key=lambda e: e.line or 0)
    page.result.markdown = "\n".join(out)
    return page.result


def _claims_in_line(page: _Page, index: int, line: str,
                    mentions: list[tuple[int, int, str | None]]) -> str:
    pieces: list[str] = []
    last = 0
    for m in _TOKEN_RE.finditer(line):
        plain = line[last:m.start()]
        mentions.extend((index, s, text) for s, _, text in iter_summary_mentions(plain))
        pieces.append(plain)
        body = m.group("body")
        value, sep, ref_query = body.rpartition(" @ ")
        if not sep:
            word = body.strip().split(" ", 1)[0]
            hint = (f"'{word}' must stand alone on its line" if word in _DIRECTIVES
                    else "expected {{ VALUE @ REF:QUERY }} or a directive: " + ", ".join(_DIRECTIVES))
            page.error(index, f"cannot read {m.group(0)!r}; {hint}")
            pieces.append(m.group(0))
        else:
            value = value.strip()
            page.check_value(index, value, ref_query.strip())
            pieces.append(value)
        last = m.end()
    tail = line[last:]
    mentions.extend((index, s, text) for s, _, text in iter_summary_mentions(tail))
    pieces.append(tail)
    return "".join(pieces).replace("\\{{", "{{")


def _check_mentions(page: _Page, mentions: list[tuple[int, int, str | None]]) -> None:
    """Every summary quoted outside a claim must be a summary line of a transcript the page cites."""
    cited = sorted(page.result.cited)
    for index, _, text in mentions:
        if text is None:
            continue  # a mention with no figures ("the ERROR SUMMARY: line") quotes nothing
        said: list[str] = []
        for set_name, name in cited:
            ev = page.sets[set_name]
            try:
                summaries = ev.transcript(name).summaries
            except LessonError:
                continue  # reported where the transcript is cited, and by the integrity check
            if any(s.text == text for s in summaries):
                break
            kind = text.split(":", 1)[0]
            said += [f"{s.text!r} in {ev.transcript_path(name)} (line {s.at})"
                     for s in summaries if s.text.startswith(kind)]
        else:
            if not cited:
                page.error(index, f"quote {text!r} is checked against the transcripts the page cites, "
                           "and this page cites none; write it as a claim: {{ QUOTE @ SET/TRANSCRIPT:summary }}")
            else:
                instead = "; ".join(said[:4]) or "no summary of that kind"
                page.error(index, f"quote {text!r} is in none of the transcripts this page cites; "
                           f"they say: {instead}")


def _directive(page: _Page, index: int, word: str, args: str) -> str:
    try:
        parts = shlex.split(args)
    except ValueError as exc:
        page.error(index, f"cannot read the {word} directive: {exc}")
        return ""
    if word == "evidence":
        return ""
    if word == "region":
        return _region(page, index, parts)
    if not parts:
        page.error(index, f"the {word} directive needs an evidence name")
        return ""
    found = page.lookup(index, parts[0])
    if found is None:
        return ""
    ev, transcript = found
    if word == "transcript":
        if transcript is None:
            page.error(index, f"'transcript {parts[0]}' names a set; name one of its transcripts: "
                       f"{', '.join(sorted(ev.entries))}")
            return ""
        try:
            text = ev.transcript_text(transcript)
        except LessonError as exc:
            page.error(index, f"cannot embed: {exc}")
            return ""
        return page.result.slot(render_transcript(ev, ev.entries[transcript], text, opened="open" in parts[1:]))
    if transcript is not None:
        page.error(index, f"'{word}' takes a set name, not the transcript {parts[0]!r}")
        return ""
    if word == "provenance":
        return render_provenance(ev)
    names = parts[1:] or sorted(ev.entries)
    unknown = [n for n in names if n not in ev.entries]
    if unknown:
        page.error(index, f"commands: set {ev.name!r} has no transcript {unknown[0]!r}; it has: "
                   f"{', '.join(sorted(ev.entries))}")
        return ""
    page.result.cited.update((ev.name, n) for n in names)
    return render_commands(ev, names)


def _region(page: _Page, index: int, parts: list[str]) -> str:
    if len(parts) < 2:
        page.error(index, "the region directive needs a path under code/ and a region name: "
                   "{{ region LESSON/FILE NAME [highlight=LINE,...] }}")
        return ""
    relpath, name, options = parts[0], parts[1], parts[2:]
    where = LessonError(page.path, index + 1 + page.offset, f"asked for by region {name!r}")
    try:
        region = load_region(page.repo / "code", relpath, name, where)
    except LessonError as exc:
        page.result.errors.append(exc)
        return ""
    except LessonErrors as exc:
        page.result.errors.extend(exc.errors)
        return ""
    highlight: list[int] = []
    for option in options:
        key, _, value = option.partition("=")
        if key != "highlight" or not value:
            page.error(index, f"unknown region option {option!r}; expected highlight=LINE[@REF:QUERY],...")
            continue
        for item in value.split(","):
            m = _HIGHLIGHT_RE.match(item)
            if not m:
                page.error(index, f"cannot read highlight {item!r}; expected a file line number, "
                           "optionally checked: 131@SET/TRANSCRIPT:QUERY")
                continue
            line = int(m.group("line"))
            if not region.contains(line):
                page.error(index, f"highlighted line {line} is outside region {name!r} of code/{relpath} "
                           f"(lines {region.first}-{region.last})")
                continue
            if m.group("claim") and not page.check_value(index, str(line), m.group("claim")):
                continue
            highlight.append(line)
    return render_region(region, highlight)
