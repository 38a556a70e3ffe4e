"""A page's directives and claims: expand what it pulls in and check every claim it makes.

Syntax, each inside double braces, which may span lines within a paragraph:
- standing alone on its line(s): `{{ region PATH NAME [highlight=LINE[@REF:QUERY],...] }}`,
  `{{ transcript RUN [open] [title="…"] }}`, `{{ evidence SET }}` (the page's default set),
  `{{ provenance SET }}` or `{{ commands SET [RUN ...] }}`;
- anywhere, a claim `{{ VALUE @ REF:QUERY }}`: VALUE is exact, a range LOW–HIGH or rounded ~V
  (lessonkit.pages.claims), checked against every recording of the run; the page shows VALUE.
REF is SET/RUN, RUN of the default set, or SET alone for the set's provenance. A `{{` that
is never closed is an error; `\\{{` writes literal braces.

What a reader sees is checked on the rendered page (lessonkit.pages.audit): a sanitizer summary, a
claim in a table the page wrote by hand (refused: lessonkit.pages.readertext). A link the page writes to a published recording
(evidence/SET/FILE in the built site) must lead to one the evidence holds
(lessonkit.pages.evidencelinks).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from lessonkit.evidence.sets import EvidenceSet
from lessonkit.evidence.unrecorded import Unrecorded
from lessonkit.pages.claimcheck import PageState
from lessonkit.pages.crossclaims import check_compound, compound
from lessonkit.pages.directives import check_escaped_directives, expand_directive
from lessonkit.pages.evidencelinks import check_evidence_links
from lessonkit.pages.marks import RESERVED_RE, Marks
from lessonkit.pages.meaning import describe, describe_generated, for_reader
from lessonkit.pages.render import (
    produced,
)
from lessonkit.pages.result import PageResult
from lessonkit.pages.scan import (
    DIRECTIVES,
    LineIndex,
    Lines,
    OutLine,
    Span,
    Token,
    code_spans,
    fenced,
    scan,
    stands_alone,
)
from lessonkit.pages.sources import Sources
from lessonkit.pages.values import is_value, render_value

_DIRECTIVES = DIRECTIVES  # lessonkit.pages.scan
_CLAIM_AT_RE = re.compile(r"""\s@\s""")
_NEWLINE_RUN_RE = re.compile(r"""[ \t\r]*\n[ \t\r]*""")


def process_page(markdown: str, path: str, repo: Path, sets: dict[str, EvidenceSet],
                 broken_sets: set[str] | frozenset[str] = frozenset(), line_offset: int = 0,
                 transcripts: bool = True, unrecorded: Mapping[str, Unrecorded] | None = None,
                 errors_only: bool = False, sources: Sources | None = None) -> PageResult:
    """Expand a page's directives and check its claims; `line_offset` counts lines stripped above `markdown`.

    `transcripts=False` leaves transcript slots empty: the same Markdown and errors, for a caller
    that wants only the errors (the blocks are finished HTML that no check reads). `unrecorded`:
    the lessons with no evidence yet (lessonkit.evidence.unrecorded). `errors_only`: the same
    errors, claims and citations, and no Markdown at all (`check`: nothing renders the page).
    `sources`: the course's list of works a page may quote figures from (lessonkit.pages.sources).
    """
    sets = _Reads(sets)
    page = PageState(path, line_offset, repo, sets, set(broken_sets), dict(unrecorded or {}),
                     transcripts=transcripts, sources=sources or Sources())
    page.result.looked_up = sets.names
    _refuse_marks(page, markdown)
    lines = LineIndex(markdown)
    tokens, unclosed = scan(markdown, lines)
    for u in unclosed:
        page.error(u.line, f"{u.snippet!r} is never closed: no '}}}}' before {u.before(page.offset)}; close it, "
                   "or write \\{{ for literal braces")
    _default_set(page, markdown, tokens)
    out = _expand(page, markdown, lines, tokens)
    in_fence = fenced(out)
    check_escaped_directives(page, out, in_fence, markdown)
    check_evidence_links(page, out, in_fence)
    page.result.errors.sort(key=lambda e: e.line or 0)
    if not errors_only:
        page.result.markdown = _marked_markdown(out, in_fence, page.result.marker)
    return page.result


def _refuse_marks(page: PageState, markdown: str) -> None:
    """An error for each line that writes a character of the range the core marks produced text with."""
    for m in RESERVED_RE.finditer(markdown):  # one error a line: the cause is the same
        if m.start() == 0 or RESERVED_RE.search(markdown, markdown.rfind("\n", 0, m.start()) + 1, m.start()) is None:
            page.error(markdown.count("\n", 0, m.start()), f"U+{ord(m.group()):X} is a character of the range "
                       "lessonkit marks the text it produced with (U+F0000 to U+FFFFF, lessonkit.pages.marks), which "
                       "a page may not write; delete it")


def _default_set(page: PageState, markdown: str, tokens: list[Token]) -> None:
    """The set the page's `{{ evidence SET }}` names (the last one), looked up when it is no set known."""
    for token in tokens:
        if _directive_word(token) == "evidence" and stands_alone(markdown, token):
            page.default_set = token.body.split(None, 1)[1].strip() if len(token.body.split()) > 1 else ""
            if (page.default_set not in page.sets and page.default_set not in page.broken_sets
                    and page.default_set not in page.unrecorded):
                page.lookup(token.line, page.default_set)
    page.result.default_set = page.default_set


_TAG_RE = re.compile(r"""<[^<>]*>""")


def _alt_texts(text: str) -> list[tuple[int, int]]:
    """Where the alt texts of a line's images lie: `![` to its matching `]` (alt text may hold
    brackets: `x[t]`)."""
    found = []
    at = text.find("![")
    while at != -1:
        depth, k = 1, at + 2
        while k < len(text) and depth:
            depth += {"[": 1, "]": -1}.get(text[k], 0)
            k += 1
        found.append((at, k))
        at = text.find("![", k)
    return found


def _paragraph_code_spans(out: Lines, in_fence: list[bool]) -> dict[int, list[tuple[int, int]]]:
    """The code spans of every line that is part of a paragraph, as (start, end) on that line: a span
    may run over the paragraph's lines (Python-Markdown reads a block's text whole), so each
    paragraph (lines that are not blank, not in a code block and not a directive's output) is
    scanned at once (lessonkit.pages.scan.CodeSpans) and its spans cut at the line ends."""
    texts = out.texts
    found: dict[int, list[tuple[int, int]]] = {}
    for i, j in _paragraphs(out, in_fence):
        block = "\n".join(texts[i:j])
        if "`" not in block:
            continue
        starts = list(itertools.accumulate((len(t) + 1 for t in texts[i:j - 1]), initial=0))
        for a, b in code_spans(block):
            first, last = bisect.bisect_right(starts, a) - 1, bisect.bisect_right(starts, b - 1) - 1
            for k in range(first, last + 1):
                found.setdefault(i + k, []).append((max(a - starts[k], 0), min(b - starts[k], len(texts[i + k]))))
    return found


def _paragraphs(out: Lines, in_fence: list[bool]) -> Iterator[tuple[int, int]]:
    """(first, one past the last) line of each run of lines that are not blank, not in a code block and
    not a directive's output."""
    texts, generated = out.texts, out.generated

    def prose(k: int) -> bool:
        return not in_fence[k] and k not in generated and bool(texts[k].strip())

    i, n = 0, len(texts)
    while i < n:
        if not prose(i):
            i += 1
            continue
        j = i
        while j < n and prose(j):
            j += 1
        yield i, j
        i = j


# What Markdown's inline syntax, and the site's extensions (attr_list, tables), read in a paragraph: in a
# value inside the core's span, each is a character reference, so that nothing the value holds (an '_'
# in a mangled C++ name) opens or closes markup across the marks, and the reader sees the same text.
_INLINE_SYNTAX = {c: f"&#{ord(c)};" for c in "\\`*_[]<>{}|!"}


def inline_text(value: str) -> str:
    """`value` as inline Markdown that shows it as typed and opens no markup (see _INLINE_SYNTAX)."""
    return "".join(_INLINE_SYNTAX.get(c, c) for c in value.replace("&", "&amp;"))


def _marked_markdown(out: Lines, in_fence: list[bool], marks: Marks) -> str:
    """The expanded page with every claim's value between the marks of its record (lessonkit.pages.marks),
    inside the span that lets a reader open what backs it (lessonkit.pages.render.produced), or, where
    HTML cannot hold a span (code, alt text, a tag), the marks alone."""
    texts = list(out.texts)
    code = _paragraph_code_spans(out, in_fence)
    for i in out.with_spans():
        line = out[i]
        text = line.text
        closed = code.get(i, []) + [(m.start(), m.end()) for m in _TAG_RE.finditer(text)] + _alt_texts(text)
        pieces, pos = [], 0
        for span in sorted(line.spans, key=lambda s: s.start):
            value = text[span.start:span.end]
            pieces.append(text[pos:span.start])
            pos = span.end
            if not in_fence[i] and not any(a <= span.start < b for a, b in closed):
                pieces.append(produced(marks, inline_text(value), span.why, runs=span.runs, line=span.line,
                                       unit=span.unit))
            else:
                pieces.append(marks.wrap(value, span.why, runs=span.runs, line=span.line, unit=span.unit))
        pieces.append(text[pos:])
        texts[i] = "".join(pieces)
    return "\n".join(texts)


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


def _expand(page: PageState, text: str, lines: LineIndex, tokens: list[Token]) -> Lines:
    """The page with claims replaced by their values and directives by what they pull in."""
    out = Lines()

    def plain(segment: str, at: int) -> None:
        pieces = segment.replace("\\{{", "{{").split("\n")
        out[-1].text += pieces[0]
        if len(pieces) > 1:
            out.extend_plain(lines.line(at) + 1, pieces[1:])

    pos = 0
    for token in tokens:
        word = _directive_word(token)
        if word is not None and stands_alone(text, token):
            line_start = text.rfind("\n", 0, token.start) + 1
            plain(text[pos:line_start], pos)
            indent = text[line_start:token.start]
            block = expand_directive(page, token, word, text)
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
        _inline(page, out[-1], token, word, text[token.start:token.end])
    plain(text[pos:], pos)
    return out.settle()


def _last_at(body: str) -> re.Match[str] | None:
    """The ' @ ' that separates a claim's value from its reference: the last one in the braces."""
    m = None
    for m in _CLAIM_AT_RE.finditer(body):
        pass
    return m


def _runs(page: PageState, since: int) -> tuple[tuple[str, str], ...]:
    """The runs cited from citation `since` on: those a claim or figure just read, in order, each once."""
    return tuple(dict.fromkeys((s, r) for _, s, r in page.citations[since:]))


def _inline(page: PageState, line: OutLine, token: Token, word: str | None, source: str) -> None:
    """Append a claim's value to `line` (checking it), or the token as written with its error."""
    if word is not None:
        page.error(token.line, f"'{word}' must stand alone on its line(s): {_one_line(source)!r}")
        line.text += source
        return
    cited = len(page.citations)  # the runs it reads, as it reads them
    if is_value(token.body):  # a figure generated from the evidence (lessonkit.pages.values)
        rendered = render_value(page, token.line, token.body)
        if rendered is not None:
            figure, unit = rendered
            query = " ".join(token.body.split()[1:])
            why = for_reader(describe_generated(query, page.default_set, page.sets), page.sets, page.default_set)
            line.spans.append(Span(len(line.text), len(line.text) + len(figure), why, _runs(page, cited),
                                   token.line + 1 + page.offset, unit))
            line.text += figure
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
    form = compound(ref_query)  # a ratio or a comparison of sets (lessonkit.pages.crossclaims)
    if form is not None:
        check_compound(page, token.line, value, form, start, end)
        unit = None  # a ratio's or a comparison's: not held to one
    else:
        unit = page.check_claim(token.line, value, ref_query, start, end)
    outcome = page.result.claims[-1] if page.result.claims and page.result.claims[-1].start == start else None
    why = (for_reader(describe(outcome, page.sets, page.default_set), page.sets, page.default_set)
           if outcome is not None and outcome.error is None else None)
    line.spans.append(Span(len(line.text), len(line.text) + len(value), why, _runs(page, cited),
                           token.line + 1 + page.offset, unit))
    line.text += value


def _one_line(source: str) -> str:
    return _NEWLINE_RUN_RE.sub(" ", source)
