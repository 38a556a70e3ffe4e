"""A page's directives and claims: expand what it pulls in and check every claim it makes.

Syntax, each inside double braces, which may span lines within a paragraph:
- standing alone on its line(s): `{{ region PATH NAME [highlight=LINE[@REF:QUERY],...] }}`,
  `{{ transcript RUN [open] [title="…"] }}`, `{{ evidence SET }}` (the page's default set),
  `{{ provenance SET }}` or `{{ commands SET [RUN ...] }}`;
- anywhere, a claim `{{ VALUE @ REF:QUERY }}`: VALUE is exact, a range LOW–HIGH or rounded ~V
  (lessonkit.claims), checked against every recording of the run; the page shows VALUE.
REF is SET/RUN, RUN of the default set, or SET alone for the set's provenance. A `{{` that
is never closed is an error; `\\{{` writes literal braces.

Two rules read the expanded page (lessonkit.pagerules): a sanitizer summary quoted anywhere
must be the summary line of a run its section cites, and a table row's labels must be the
filter values of the claims in that row.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lessonkit.claims import ClaimValue, ClaimValueError, judge, parse_claim_value
from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence import EvidenceSet
from lessonkit.pagescan import LineIndex, OutLine, Span, Token, scan, stands_alone, structure
from lessonkit.pagetext import SUMMARY_MENTION_RE, visible
from lessonkit.query import Query, QueryError, parse_query, resolve
from lessonkit.regions import load_region
from lessonkit.render import (
    Published,
    large_recordings,
    render_commands,
    render_provenance,
    render_region,
    render_transcript,
)

PAGE_RANK = 2  # what a page claims comes after the evidence and sources it depends on

_DIRECTIVES = ("region", "transcript", "evidence", "provenance", "commands")
_CLAIM_AT_RE = re.compile(r"""\s@\s""")
_NEWLINE_RUN_RE = re.compile(r"""[ \t\r]*\n[ \t\r]*""")
_HIGHLIGHT_RE = re.compile(r"""^(?P<line>\d+)(?:@(?P<claim>.+))?$""")
_WORD_RE = re.compile(r"""[^ \t\r\n]+""")
_SLOT_RE = re.compile(r"""<div\ data-lk-slot="(?P<n>\d+)"></div>""", re.VERBOSE)


@dataclass(frozen=True)
class ClaimOutcome:
    """One claim of a page: where its value is written, and whether it holds.

    `start`/`end` are offsets of the value in the processed Markdown. `error` is None when
    the claim holds; `fix` is a value that would hold, or None when the reference or query
    is broken (or no single value can hold); `skipped` marks a claim on an unreadable set.
    """

    line: int
    start: int
    end: int
    value: str
    ref_query: str
    error: LessonError | None = None
    fix: str | None = None
    skipped: bool = False
    set_name: str | None = None
    sets: tuple[str, ...] = ()  # every set a ratio or comparison reads (set_name is the first)


@dataclass
class PageResult:
    """The expanded Markdown, its errors, the runs it cites, HTML for its slots, its claims, what it links and reads."""

    markdown: str
    errors: list[LessonError] = field(default_factory=list)
    cited: set[tuple[str, str]] = field(default_factory=set)
    blocks: list[str] = field(default_factory=list)
    claims: list[ClaimOutcome] = field(default_factory=list)
    published: list[Published] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)  # paths under code/ its region directives read
    looked_up: set[str] = field(default_factory=set)  # names it looked up among the evidence sets

    def slot(self, html: str) -> str:
        """A placeholder for finished HTML, filled in by `fill` once Markdown has run."""
        self.blocks.append(html)
        return f'\n<div data-lk-slot="{len(self.blocks) - 1}"></div>\n'

    def fill(self, html: str) -> str:
        """The page's HTML with every slot replaced by its block."""
        return _SLOT_RE.sub(lambda m: self.blocks[int(m.group("n"))], html)


@dataclass(frozen=True)
class ShownClaim:
    """A claim as the page rules see it: its parsed value and query (None when unreadable)."""

    value: ClaimValue | None
    query: Query | None


@dataclass
class _Page:
    path: str
    offset: int
    repo: Path
    sets: dict[str, EvidenceSet]
    broken_sets: set[str]
    default_set: str | None = None
    result: PageResult = field(default_factory=lambda: PageResult(""))
    citations: list[tuple[int, str, str]] = field(default_factory=list)  # (source line, set, run)
    unknowable: list[int] = field(default_factory=list)  # source lines citing an unreadable set
    transcripts: bool = True  # render transcript blocks (not needed for the errors alone)

    def error(self, index: int, message: str) -> LessonError:
        """Record an error at 0-based source line `index`."""
        err = LessonError(self.path, index + 1 + self.offset, message, rank=PAGE_RANK)
        self.result.errors.append(err)
        return err

    def lookup(self, index: int, ref: str) -> tuple[EvidenceSet, str | None] | None:
        """Resolve REF to (set, run or None); records an error (or a skip) and returns None if it names nothing."""
        set_name, sep, group = ref.partition("/")
        default = self.sets.get(self.default_set or "")
        if not sep:
            if default is not None and (ref in default.groups or ref in default.entries):
                set_name, group = default.name, ref
            elif ref in self.sets:
                return self.sets[ref], None
            elif ref in self.broken_sets or (default is None and self.default_set in self.broken_sets):
                self.unknowable.append(index)
                return None
            elif default is not None:
                self.error(index, f"no transcript {ref!r} in the page's set {default.name!r} and no set "
                           f"of that name; transcripts: {', '.join(sorted(default.groups))}")
                return None
        ev = self.sets.get(set_name)
        if ev is None:
            if set_name in self.broken_sets:
                self.unknowable.append(index)  # the unreadable manifest is the one error to report
                return None
            self.error(index, f"no evidence set {set_name!r}; the sets are: {', '.join(sorted(self.sets)) or 'none'}")
            return None
        if not group:
            return ev, None
        if group not in ev.groups:
            entry = ev.entries.get(group)
            if entry is not None:
                self.error(index, f"{group!r} is recording {entry.repeat} of {entry.repeats} of {entry.group!r}; "
                           f"cite the run {entry.group!r}: a claim holds for every recording")
            else:
                self.error(index, f"evidence set {ev.name!r} has no transcript {group!r}; it has: "
                           f"{', '.join(sorted(ev.groups))}")
            return None
        self.cite(index, ev.name, group)
        return ev, group

    def cite(self, index: int, set_name: str, group: str) -> None:
        """Note that source line `index` cites run `group` of `set_name`."""
        self.result.cited.add((set_name, group))
        self.citations.append((index, set_name, group))

    def check_claim(self, index: int, value: str, ref_query: str, start: int, end: int,
                    whole_number: bool = False) -> ShownClaim:
        """Check `value` against every value REF:QUERY names; records the outcome and any error.

        `whole_number`: only a plain integer can replace the value (a highlighted line).
        """
        from lessonkit.crossclaims import check_compound, compound  # ratios and comparisons

        form = compound(ref_query)
        if form is not None:
            return check_compound(self, index, value, form, start, end)
        ref, sep, query = (p.strip() for p in ref_query.partition(":"))
        shown = f"{ref}:{query}" if sep else ref_query
        line = index + 1 + self.offset
        set_name: list[str] = []

        def outcome(error: LessonError | None = None, fix: str | None = None, skipped: bool = False) -> None:
            if fix is not None and whole_number and not fix.isdigit():
                fix = None
            self.result.claims.append(ClaimOutcome(line, start, end, value, shown, error, fix, skipped,
                                                   set_name[0] if set_name else None))

        parsed_query = _try_query(query) if sep else None
        if not sep:
            outcome(self.error(index, f"claim {value!r} names {ref_query!r}; expected REF:QUERY, "
                               "e.g. day62-racecheck/bare-all:rows[threads=32,kernel=scanTileRacy].mismatches"))
            return ShownClaim(None, None)
        try:
            claim = parse_claim_value(value)
        except ClaimValueError as exc:
            outcome(self.error(index, f"claim {value!r} ({shown}): {exc}"))
            return ShownClaim(None, parsed_query)
        errors_before = len(self.result.errors)
        found = self.lookup(index, ref)
        if found is None:
            new = self.result.errors[errors_before:]
            outcome(new[0] if new else None, skipped=not new)
            return ShownClaim(claim, parsed_query)
        ev, group = found
        set_name.append(ev.name)
        try:
            sample = resolve(ev, group, query)
        except QueryError as exc:
            outcome(self.error(index, f"claim {value!r} ({shown}): {exc}"))
            return ShownClaim(claim, parsed_query)
        except LessonError as exc:  # a recording is missing or malformed
            outcome(self.error(index, f"claim {value!r} ({shown}) cannot be checked: {exc}"))
            return ShownClaim(claim, parsed_query)
        verdict = judge(claim, sample)
        if verdict.holds:
            outcome()
        else:
            outcome(self.error(index, f"claim {value!r} ({shown}) {verdict.problem}"), verdict.fix)
        return ShownClaim(claim, parsed_query)


def _try_query(text: str) -> Query | None:
    try:
        return parse_query(text)
    except QueryError:
        return None


def process_page(markdown: str, path: str, repo: Path, sets: dict[str, EvidenceSet],
                 broken_sets: set[str] | frozenset[str] = frozenset(), line_offset: int = 0,
                 transcripts: bool = True) -> PageResult:
    """Expand a page's directives and check its claims; `line_offset` counts lines stripped above `markdown`.

    `transcripts=False` leaves transcript slots empty: the same Markdown and errors, for a caller
    that wants only the errors (the blocks are finished HTML that no check reads).
    """
    from lessonkit.pagerules import (  # they read what this module builds
        check_row_labels,
        check_summaries,
    )
    from lessonkit.pagetext import check_hidden_text, check_typed_output

    sets = _Reads(sets)
    page = _Page(path, line_offset, repo, sets, set(broken_sets), transcripts=transcripts)
    page.result.looked_up = sets.names
    lines = LineIndex(markdown)
    tokens, unclosed = scan(markdown, lines)
    for u in unclosed:
        page.error(u.line, f"{u.snippet!r} is never closed: no '}}}}' before {u.before}; close it, "
                   "or write \\{{ for literal braces")
    for token in tokens:
        if _directive_word(token) == "evidence" and stands_alone(markdown, token):
            page.default_set = token.body.split(None, 1)[1].strip() if len(token.body.split()) > 1 else ""
            if page.default_set not in sets and page.default_set not in page.broken_sets:
                page.lookup(token.line, page.default_set)
    out = _expand(page, markdown, lines, tokens)
    in_fence, sections = structure(out)
    check_hidden_text(page, out, in_fence)
    check_typed_output(page, out, in_fence)
    check_row_labels(page, out, in_fence)
    check_summaries(page, out, in_fence, sections)
    page.result.errors.sort(key=lambda e: e.line or 0)
    page.result.markdown = "\n".join(line.text for line in out)
    return page.result


class _Reads(dict):
    """The evidence sets by name, noting every name the page looks up."""

    def __init__(self, sets: dict[str, EvidenceSet]) -> None:
        super().__init__(sets)
        self.names: set[str] = set()

    def __getitem__(self, name: str) -> EvidenceSet:
        self.names.add(name)
        return super().__getitem__(name)

    def get(self, name: str, default: EvidenceSet | None = None) -> EvidenceSet | None:
        self.names.add(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.names.add(name)
        return super().__contains__(name)


def _directive_word(token: Token) -> str | None:
    words = token.body.split(None, 1)
    if words and words[0] in _DIRECTIVES and not _CLAIM_AT_RE.search(token.body):
        return words[0]
    return None


def _expand(page: _Page, text: str, lines: LineIndex, tokens: list[Token]) -> list[OutLine]:
    """The page with claims replaced by their values and directives by what they pull in."""
    out = [OutLine(0)]

    def plain(segment: str, at: int) -> None:
        first = lines.line(at) if segment else 0
        for k, piece in enumerate(segment.split("\n")):
            if k:
                out.append(OutLine(first + k))
            out[-1].text += piece.replace("\\{{", "{{")

    pos = 0
    for token in tokens:
        word = _directive_word(token)
        if word is not None and stands_alone(text, token):
            line_start = text.rfind("\n", 0, token.start) + 1
            plain(text[pos:line_start], pos)
            indent = text[line_start:token.start]
            block = _directive(page, token, word, text)
            out[-1] = OutLine(token.line, "\n".join(indent + b if b else b for b in block.split("\n")),
                              generated=True)
            line_end = text.find("\n", token.end)
            if line_end == -1:
                pos = len(text)
            else:
                pos = line_end + 1
                out.append(OutLine(token.last_line + 1))
            continue
        plain(text[pos:token.start], pos)
        pos = token.end
        if word is None:
            _check_edges(page, token, text)
        _inline(page, out[-1], token, word, text[token.start:token.end])
    plain(text[pos:], pos)
    return out


_JOINING_SPACES = "\u00a0\u2007\u2009\u200a\u202f"  # spaces that group digits: "2 000"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015"  # as a sign before a figure ("–34"), not inside a range ("2–34")
# A unit written against the figure: "40s", "3ms", "4x", "2nd" (a magnitude such as "2k" is refused).
_UNIT_AFTER_RE = re.compile(r"""^(?:s|ms|us|\u00b5s|ns|x|st|nd|rd|th)(?![\w])""")
_NEXT_CLAIM_RE = re.compile(r"""^\{\{\s*(?P<value>.*?)\s@\s""", re.DOTALL)


def _check_edges(page: _Page, token: Token, text: str) -> None:
    """A claim's figure must not run into a digit, letter or sign beside it, as a reader sees the page:
    '{{ 2 @ … }}0', '{{ 2 @ … }}<b>0</b>' and two figure claims side by side all show "20", and
    '-{{ 40 @ … }}' or '&minus;{{ 40 @ … }}' shows "-40"; none of that is what the claim checked."""
    at = _last_at(token.body)
    value = token.body[:at.start()].strip() if at else ""
    if not value:
        return  # not a claim: _inline reports it
    claim = _one_line(text[token.start:token.end])
    line_end = text.find("\n", token.end)
    after = text[token.end:line_end if line_end != -1 else len(text)][:200]
    if after[:1] not in ("", " ", "\t"):  # a space shows as one: only then is nothing joined
        after = visible(after)[0]
    line_start = text.rfind("\n", 0, token.start) + 1
    before = text[max(line_start, token.start - 200):token.start]
    if before[-1:] not in ("", " ", "\t"):
        before = visible(before)[0]
    if value[-1].isdigit() and after and not _UNIT_AFTER_RE.match(after):
        nxt = _NEXT_CLAIM_RE.match(after)
        touching = (nxt.group("value")[:1] if nxt else after[0]) or " "
        if touching.isalnum() or unicodedata.category(touching) == "No" \
                or (touching in ".," + _JOINING_SPACES and after[1:2].isdigit()):
            what = "the figure of the next claim" if nxt else f"{touching!r}"
            page.error(token.line, f"the figure of claim {claim!r} runs into {what} right after it, so the page "
                       "shows a number the claim did not check; put a space or punctuation between them, or "
                       "write the whole figure inside the claim")
    if value[0].isdigit() and before:
        last = before[-1]
        if last.isalnum() or last in "+-\u2212.,\ufe63\uff0b\uff0d" or unicodedata.category(last) == "No" \
                or (last in _JOINING_SPACES and before[-2:-1].isdigit()) \
                or (last in _DASHES and not before[-2:-1].isalnum()):
            page.error(token.line, f"the figure of claim {claim!r} runs into {last!r} right before it, so the "
                       "page shows a number the claim did not check; put a space between them, or write the "
                       "whole figure inside the claim")


def _last_at(body: str) -> re.Match[str] | None:
    """The ' @ ' that separates a claim's value from its reference: the last one in the braces."""
    m = None
    for m in _CLAIM_AT_RE.finditer(body):
        pass
    return m


def _inline(page: _Page, line: OutLine, token: Token, word: str | None, source: str) -> None:
    """Append a claim's value to `line` (checking it), or the token as written with its error."""
    if word is not None:
        page.error(token.line, f"'{word}' must stand alone on its line(s): {_one_line(source)!r}")
        line.text += source
        return
    m = _last_at(token.body)
    if m is None:
        page.error(token.line, f"cannot read {_one_line(source)!r}; expected {{{{ VALUE @ REF:QUERY }}}} "
                   "or a directive: " + ", ".join(_DIRECTIVES))
        line.text += source
        return
    raw_value = token.body[:m.start()]
    value = _NEWLINE_RUN_RE.sub(" ", raw_value.strip())
    start = token.start + 2 + len(raw_value) - len(raw_value.lstrip())
    end = token.start + 2 + len(raw_value.rstrip())
    ref_query = _NEWLINE_RUN_RE.sub(" ", token.body[m.end():].strip())
    shown = page.check_claim(token.line, value, ref_query, start, end)
    line.spans.append(Span(len(line.text), len(line.text) + len(value), shown))
    line.text += value


def _one_line(source: str) -> str:
    return _NEWLINE_RUN_RE.sub(" ", source)


def _words(text: str) -> list[str]:
    """shlex.split(text), without its cost when nothing is quoted or escaped (then the words are
    the runs of characters other than shlex's whitespace)."""
    if "'" in text or '"' in text or "\\" in text:
        return shlex.split(text)
    return _WORD_RE.findall(text)


def _directive(page: _Page, token: Token, word: str, text: str) -> str:
    index = token.line
    try:
        parts = _words(token.body.split(None, 1)[1] if len(token.body.split()) > 1 else "")
    except ValueError as exc:
        page.error(index, f"cannot read the {word} directive: {exc}")
        return ""
    if word == "evidence":
        return ""
    if word == "region":
        return _region(page, token, parts, text)
    if not parts:
        page.error(index, f"the {word} directive needs an evidence name")
        return ""
    found = page.lookup(index, parts[0])
    if found is None:
        return ""
    ev, group = found
    if word == "transcript":
        if group is None:
            page.error(index, f"'transcript {parts[0]}' names a set; name one of its transcripts: "
                       f"{', '.join(sorted(ev.groups))}")
            return ""
        return _transcript(page, index, ev, group, parts[1:])
    if group is not None:
        page.error(index, f"'{word}' takes a set name, not the transcript {parts[0]!r}")
        return ""
    if word == "provenance":
        return render_provenance(ev)
    names = parts[1:] or sorted(ev.groups)
    unknown = [n for n in names if n not in ev.groups]
    if unknown:
        page.error(index, f"commands: set {ev.name!r} has no transcript {unknown[0]!r}; it has: "
                   f"{', '.join(sorted(ev.groups))}")
        return ""
    for name in names:
        page.cite(index, ev.name, name)
    return render_commands(ev, [ev.recordings(n)[0] for n in names])


def _transcript(page: _Page, index: int, ev: EvidenceSet, group: str, options: list[str]) -> str:
    opened, title = False, None
    for option in options:
        key, sep, value = option.partition("=")
        if option == "open":
            opened = True
        elif key == "title" and sep and value.strip():
            title = value.strip()
        else:
            page.error(index, f"unknown transcript option {option!r}; expected open or title=\"…\"")
            return ""
    names = ev.recordings(group)
    if title is not None and names:
        _check_title(page, index, ev, ev.entries[names[0]].command, title)
    try:
        texts = [ev.transcript_text(n) for n in names]
    except LessonError as exc:
        page.error(index, f"cannot embed: {exc}")
        return ""
    page.result.published.extend(large_recordings(ev, group, texts))
    if not page.transcripts:
        return page.result.slot("")
    figures = []
    for name in names:
        try:
            figures.append(dict(ev.transcript(name).scalars))
        except LessonError:
            figures.append({})  # reported by the claims on it and by the integrity check
    return page.result.slot(render_transcript(ev, group, texts, title=title, opened=opened, figures=figures))


_TITLE_WORD_RE = re.compile(r"""[a-z0-9]+""")


@lru_cache(maxsize=4096)
def _command_words(command: str) -> frozenset[str]:
    """A command's words as a title would name them: './racecheck' -> racecheck, 'sweep.py' -> sweep."""
    words = set()
    for token in command.lower().split():
        token = token.lstrip("-").removeprefix("./")
        words.add(token.rsplit(".", 1)[0] if "." in token[1:] else token)
    return frozenset(words)


def _check_title(page: _Page, index: int, ev: EvidenceSet, command: str, title: str) -> None:
    """A transcript's title may not say what the run did not do: no summary quote (it would go
    unchecked), no number its command lacks, and no word that tells the set's runs apart (a tool,
    a mode, an argument) unless this run's command has it."""
    if SUMMARY_MENTION_RE.search(title):
        page.error(index, f"transcript title {title!r} quotes a summary, which a title cannot check; "
                   "quote it in the text, next to the transcript")
        return
    own = _command_words(command)
    commands = [_command_words(e.command) for e in ev.entries.values()]
    telling = frozenset().union(*commands) - frozenset.intersection(*commands)
    for word in dict.fromkeys(_TITLE_WORD_RE.findall(title.lower())):
        if word not in own and (word.isdigit() or word in telling):
            page.error(index, f"transcript title {title!r} says {word!r}, but the run it shows is "
                       f"{command!r}; title it by what this run did")
            return


def _check_recorded(page: _Page, index: int, relpath: str) -> None:
    """A region shows code that ran: its file is an input of a recording in its lesson's evidence set
    (and the freshness check holds that input to the hash recorded)."""
    lesson = relpath.split("/", 1)[0]
    if lesson in page.broken_sets:
        return  # the set's own error comes first
    ev = page.sets.get(lesson)
    key = f"code/{relpath}"
    if ev is not None and any(key in entry.inputs for entry in ev.entries.values()):
        return
    where = f"any recording in evidence/{lesson}" if ev is not None else f"a recording: evidence/{lesson} does not exist"
    page.error(index, f"{key} is not an input of {where}; a region shows only code that ran, so that its lines "
               f"are the lines the transcripts come from: list the file under inputs in code/{lesson}/runs.toml "
               "and refresh the evidence")


def _region(page: _Page, token: Token, parts: list[str], text: str) -> str:
    index = token.line
    if len(parts) < 2:
        page.error(index, "the region directive needs a path under code/ and a region name: "
                   "{{ region LESSON/FILE NAME [highlight=LINE,...] }}")
        return ""
    relpath, name, options = parts[0], parts[1], parts[2:]
    page.result.sources.add(relpath)
    where = LessonError(page.path, index + 1 + page.offset, f"asked for by region {name!r}")
    try:
        region = load_region(page.repo / "code", relpath, name, where)
    except LessonError as exc:
        page.result.errors.append(exc)
        return ""
    except LessonErrors as exc:
        page.result.errors.extend(exc.errors)
        return ""
    _check_recorded(page, index, relpath)
    highlight: list[int] = []
    source = text[token.start:token.end]
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
            if m.group("claim"):
                at = re.search(r"(?<=[=,])" + re.escape(item), source)
                start = token.start + (at.start() if at else 0)
                errors_before = len(page.result.errors)
                page.check_claim(index, m.group("line"), m.group("claim"), start, start + len(m.group("line")),
                                 whole_number=True)
                if len(page.result.errors) > errors_before:
                    continue
            highlight.append(line)
    return render_region(region, highlight)
