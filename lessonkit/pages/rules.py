"""A rule over a whole expanded page: quoted sanitizer summaries (table labels: lessonkit.pages.tablerules).
(What a reader sees against what the checks read: lessonkit.pages.text.)

Summaries. Any line that mentions `RACECHECK SUMMARY` or `ERROR SUMMARY` (any case, any
spacing) followed by a figure quotes a summary. From the mention on, the expanded line must
be, verbatim, a summary line of every recording of some run that a claim in the quote's own
sentence cites (in its table row, for a quote in a table; on its line, in a code block), and
the quote must end there: at the end of the line, a closing backtick, quotation mark or bracket, or
sentence punctuation. A claim inside the quote stands for the figure at its place: its
value must hold for that figure in every recording.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from dataclasses import dataclass, field
from functools import cached_property

from lessonkit.errors import LessonError
from lessonkit.evidence.transcript import Summary
from lessonkit.pages.claims import Found, Sample, judge
from lessonkit.pages.figures import FIGURE_RE
from lessonkit.pages.scan import Lines, OutLine, Span
from lessonkit.pages.state import PageState, ShownClaim
from lessonkit.pages.text import (
    CHAR_REF_RE,
    SUMMARY_MENTION_RE,
    has_markup,
    is_invisible,
    refused_ref,
    visible,
)

_MAYBE_MENTION_RE = re.compile(r"""racecheck|error|summary""", re.IGNORECASE)
_MAYBE_MENTION_LOWER_RE = re.compile(r"""racecheck|error|summary""")  # the same, over lower-cased text
# A line that starts a new block: a soft line break before it is not a space inside a sentence.
# An HTML block interrupts a paragraph only with a block-level tag: "<span>0</span>" continues it.
_BLOCK_START_RE = re.compile(
    r"""^\s*(?:[-*+]\s|\d+[.)]\s|\#|\||>|`{3,}|~{3,}|$
       |</?(?:div|table|pre|p|details|summary|ul|ol|li|h[1-6]|blockquote|section|figure|hr|dl|script|style)\b
       |<!--)""", re.VERBOSE | re.IGNORECASE)
_QUOTE_END_RE = re.compile(r"""[`"\u201c\u201d;|<]|\.(?=\s|$)""")
_AFTER_QUOTE_RE = re.compile(
    r"""^(?:\s*$|[`"'\u201c\u201d\u2018\u2019*_<|)\]]|[.;:!?](?:$|[\s`"'\u201d\u2019*_<|)\]]))""", re.VERBOSE)
_VISIBLE_END_RE = re.compile(r"""["\u201c\u201d;|]|\.(?=\s|$)""")  # a quote's end in the visible text
# What cannot spell "summary": markup (tags, character references), then whatever is not a letter.
_MARKUP_RE = re.compile(r"""<[^<>]*>|&[\#\w]+;""")
_LETTERS_RE = re.compile(r"""[^A-Za-z]+""")
_PLAIN_NUMBER_RE = re.compile(r"""^[+-]?\d[\d,]*(?:\.\d+)?$""")


# -- summaries -----------------------------------------------------------------------------------

def check_summaries(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """Every summary a line quotes is a summary line of every recording of a run its own sentence cites."""
    paragraph: _Paragraph | None = None  # the last paragraph read: its lines that follow read it again
    with_spans = out.with_spans()
    for i in _mentioning(out):
        first = out[i]
        if in_fence[i]:  # a code line is its own paragraph
            here, base, first_end = _Paragraph(first), 0, len(first.text)
        else:
            paragraph = here = _paragraph_around(out, in_fence, i, paragraph, with_spans)
            base = here.bases[i - here.first]
            first_end = base + len(first.text.lstrip() if i > here.first else first.text)
        line = OutLine(first.src, here.joined.text, here.joined.spans)
        row = not in_fence[i] and first.text.lstrip().startswith("|")
        quoted: set[int] = set()  # where the quotes checked below begin
        mentioned = here.mentioned
        for k in range(bisect.bisect_left(here.mention_starts, base), len(mentioned)):
            m = mentioned[k]
            if m.start() >= first_end:
                break  # a mention on a later line is checked from that line
            end = here.text.next_end(m.end())
            if not here.text.has_digit(m.end(), end):
                continue  # a mention with no figure ("the ERROR SUMMARY: line") quotes nothing
            quoted.add(m.start())
            whole = in_fence[i] or row  # a code line and a table row are their own sentence
            sentence = (0, len(line.text)) if whole else here.sentence(m.start(), end)
            _check_quote(page, line, m.start(), m.group("tool").upper(), _quote(line.text, m.start(), end),
                         here.claims_between(*sentence),
                         "its table row" if row else "its line" if in_fence[i] else "its sentence")
        if not in_fence[i]:
            _check_disguised(page, line, base, first_end, quoted, here)


def _mentioning(out: Lines) -> list[int]:
    """The lines not generated that may mention a summary (_MAYBE_MENTION_RE), in order: searched
    over the page at once."""
    return list(out.find_words(_MAYBE_MENTION_LOWER_RE, _MAYBE_MENTION_RE))


_SENTENCE_END_RE = re.compile(r"""[.!?]["'\u201d\u2019)\]*_`]*(?=\s|$)""")
_SENTENCE_CLOSERS = "\"'\u201d\u2019)]*_`"
_DIGIT_OR_WIDE_RE = re.compile(r"""[0-9]|[^\x00-\x7f]""")  # a digit, or a character that may be one
_WIDE_RE = re.compile(r"""[^\x00-\x7f]""")
_COMMENT_OPEN_RE = re.compile(r"""<!--""")


class _Text:
    """Where a text's quotes end (a form whose every match is one character) and where its digits
    (str.isdigit) are: found once, so that a text of thousands of quotes is read in time linear in
    its length, not once for each quote."""

    def __init__(self, text: str, ends: re.Pattern[str]) -> None:
        self.text = text
        self._ends_re = ends

    @cached_property
    def _ends(self) -> list[int]:
        return [m.start() for m in self._ends_re.finditer(self.text)]

    def next_end(self, at: int) -> int:
        """Where a quote from `at` on ends (the first match from `at` on), or the text's end."""
        k = bisect.bisect_left(self._ends, at)
        return self._ends[k] if k < len(self._ends) else len(self.text)

    @cached_property
    def _digits(self) -> list[int]:
        return [m.start() for m in _DIGIT_OR_WIDE_RE.finditer(self.text) if m.group().isdigit()]

    def has_digit(self, start: int, end: int) -> bool:
        """Whether text[start:end] holds a digit."""
        k = bisect.bisect_left(self._digits, start)
        return k < len(self._digits) and self._digits[k] < end


@dataclass
class _Paragraph:
    """A paragraph joined as Markdown shows it (or a code line), where each of its lines starts in
    it, and what the summary rules read of it, each worked out once."""

    joined: OutLine
    first: int = 0  # its first line
    bases: list[int] = field(default_factory=lambda: [0])  # where each of its lines starts in joined.text

    @cached_property
    def mentions(self) -> bool:
        """Whether it mentions a summary however formatted (if not, the common case, its visible
        text is never built)."""
        text = self.joined.text
        if "<" not in text and "&" not in text:  # no markup: only the letters count
            return "summary" in _LETTERS_RE.sub("", text).lower()
        return "summary" in _LETTERS_RE.sub("", _MARKUP_RE.sub("", text)).lower()

    @cached_property
    def unformatted(self) -> bool:
        """Whether it holds nothing that visible() reads, nor a '<' (the visible text is the text, and
        its quotes end where the text's do: no quote is disguised)."""
        return "<" not in self.joined.text and not has_markup(self.joined.text)

    @cached_property
    def visible(self) -> tuple[str, list[int]]:
        return visible(self.joined.text)

    @cached_property
    def mentioned(self) -> list[re.Match[str]]:
        """The summary mentions of its text, in order (each of its lines reads those it holds: a
        mention starts with a whole word, so none starts inside another)."""
        return list(SUMMARY_MENTION_RE.finditer(self.joined.text))

    @cached_property
    def mention_starts(self) -> list[int]:
        return [m.start() for m in self.mentioned]

    @cached_property
    def visible_mentioned(self) -> list[re.Match[str]]:
        """The summary mentions of its visible text, in order."""
        return list(SUMMARY_MENTION_RE.finditer(self.visible[0]))

    @cached_property
    def visible_mention_columns(self) -> list[int]:
        """Where each visible mention starts in joined.text."""
        where = self.visible[1]
        return [where[m.start()] for m in self.visible_mentioned]

    @cached_property
    def text(self) -> _Text:
        """Its text's quote ends and digits."""
        return _Text(self.joined.text, _QUOTE_END_RE)

    @cached_property
    def shown(self) -> _Text:
        """Its visible text's quote ends and digits."""
        return _Text(self.visible[0], _VISIBLE_END_RE)

    @cached_property
    def _hidden(self) -> list[tuple[int, int]]:
        """(start, end) of what check_hidden_text reports in its text: comment openings, invisible
        characters, refused character references."""
        text = self.joined.text
        found = [m.span() for m in _COMMENT_OPEN_RE.finditer(text)]
        found += [m.span() for m in CHAR_REF_RE.finditer(text) if refused_ref(m.group())]
        invisible = "".join(c for c in set(_WIDE_RE.findall(text)) if is_invisible(c))
        if invisible:
            found += [m.span() for m in re.finditer(f"[{re.escape(invisible)}]", text)]
        return sorted(found)

    def hidden_between(self, start: int, end: int) -> bool:
        """Whether joined.text[start:end] holds a cause check_hidden_text reports."""
        hidden = self._hidden
        for k in range(bisect.bisect_left(hidden, (start,)), len(hidden)):
            if hidden[k][0] >= end:
                break
            if hidden[k][1] <= end:  # (one that runs past the end is a few characters long: few are read)
                return True
        return False

    @cached_property
    def _span_starts(self) -> tuple[list[int], list[ShownClaim]]:
        spans = sorted(self.joined.spans, key=lambda s: s.start)
        return [s.start for s in spans], [s.claim for s in spans]

    def claims_between(self, start: int, end: int) -> list[ShownClaim]:
        """The claims whose values start in joined.text[start:end]."""
        starts, claims = self._span_starts
        return claims[bisect.bisect_left(starts, start):bisect.bisect_left(starts, end)]

    @cached_property
    def _sentence_ends(self) -> tuple[list[int], list[int]]:
        found = list(_SENTENCE_END_RE.finditer(self.joined.text))
        return [m.start() for m in found], [m.end() for m in found]

    def sentence(self, start: int, end: int) -> tuple[int, int]:
        """The sentence holding joined.text[start:end]: from the end of the one before to its own end."""
        text = self.joined.text
        starts, ends = self._sentence_ends
        k = bisect.bisect_right(ends, start) - 1
        first = ends[k] if k >= 0 else 0
        k = start
        while k > first and text[k - 1] in _SENTENCE_CLOSERS:
            k -= 1
        if k > first and text[k - 1] in ".!?":
            first = start  # punctuation right before `start` ends a sentence there, as the text's end does
        k = bisect.bisect_left(starts, end)
        return first, ends[k] if k < len(ends) else len(text)


def _check_disguised(page: PageState, line: OutLine, base: int, first_end: int, quoted: set[int],
                     paragraph: _Paragraph) -> None:
    """A summary quote that formatting splits for the checks but not for a reader
    ('**RACECHECK** SUMMARY: 0 …', '`RACECHECK SUMMARY:` 0 …', 'SUMMARY: <b>0</b> …') is refused."""
    if paragraph.unformatted or not paragraph.mentions:
        return
    shown, where = paragraph.visible
    columns = paragraph.visible_mention_columns
    for k in range(bisect.bisect_left(columns, base), len(columns)):  # not those of an earlier line
        m, at = paragraph.visible_mentioned[k], columns[k]
        if at >= first_end:
            break
        if at in quoted:
            continue
        end = paragraph.shown.next_end(m.end())
        if not paragraph.shown.has_digit(m.end(), end):
            continue
        if paragraph.hidden_between(at, where[end - 1] + 1):
            continue  # check_hidden_text reports the cause
        page.error(line.src, f"formatting splits the summary quote {_quote(shown, m.start(), end)!r} for the checks but not for a "
                   "reader; write the quote as plain text or as one code span, so that it is checked against "
                   "the recordings")


# _BLOCK_START_RE over the whole page: each match is the start of a line that starts a block.
_BLOCK_START_LINE_RE = re.compile(_BLOCK_START_RE.pattern.replace(r"\s", r"[^\S\n]"),
                                  re.VERBOSE | re.IGNORECASE | re.MULTILINE)


def _paragraph_around(out: Lines, in_fence: list[bool], i: int, last: _Paragraph | None,
                      with_spans: list[int]) -> _Paragraph:
    """Line i's whole paragraph, joined as Markdown shows it: `last` (the paragraph read before) when
    it holds line i, else the one found from the line that starts it."""
    if last is not None and last.first <= i < last.first + len(last.bases):
        return last
    return _paragraph_from(out, in_fence, _paragraph_start(out, in_fence, i), with_spans)


def _paragraph_start(out: Lines, in_fence: list[bool], i: int) -> int:
    """The line that starts line i's paragraph: the last line up to i that starts a block, or the line
    after the last blank, generated or fenced line before i. Searched for over the page's text in
    windows before line i that grow fourfold: as far back as the paragraph goes, not line by line."""
    text, starts = out.joined, out.starts
    end = starts[i + 1] - 1
    window = 8
    while True:
        low = max(0, i - window)
        first = 0
        found = None
        for found in _BLOCK_START_LINE_RE.finditer(text, starts[low], end):
            pass
        if found is not None:
            k = out.line_at(found.start())
            first = k + 1 if not text[starts[k]:starts[k + 1] - 1].strip() else k
        fences = in_fence[low:i]
        if True in fences:
            first = max(first, i - fences[::-1].index(True))
        if first or low == 0:
            return first
        window *= 4


def _paragraph_from(out: Lines, in_fence: list[bool], i: int, with_spans: list[int]) -> _Paragraph:
    """Line i with the lines that continue its paragraph (up to a line that starts a block, a blank,
    generated or fenced line), joined as Markdown shows them (one space); `with_spans`: the lines
    with spans."""
    texts, starts = out.texts, out.starts
    block = _BLOCK_START_LINE_RE.search(out.joined, starts[i + 1]) if i + 1 < len(texts) else None
    j = out.line_at(block.start()) if block is not None else len(texts)
    try:
        j = min(j, in_fence.index(True, i + 1))
    except ValueError:
        pass
    pieces = [texts[i], *map(str.lstrip, texts[i + 1:j])]
    bases = [0, *itertools.accumulate(map(operator.add, map(len, pieces[:-1]), itertools.repeat(1)))]
    spans = list(out.spans(i))
    for k in with_spans[bisect.bisect_right(with_spans, i):bisect.bisect_left(with_spans, j)]:
        base = bases[k - i] - (len(texts[k]) - len(pieces[k - i]))
        spans += [Span(s.start + base, s.end + base, s.claim) for s in out.spans(k)]
    return _Paragraph(OutLine(out.srcs[i], " ".join(pieces), spans), i, bases)


_QUOTE_SHOWN = 200  # the most of a quote that a message shows (a summary line is shorter)


def _quote(text: str, start: int, end: int) -> str:
    """text[start:end] as a message shows the quote: without trailing punctuation or an unmatched
    ')', and cut short past _QUOTE_SHOWN characters."""
    if end - start > _QUOTE_SHOWN:
        return text[start:start + _QUOTE_SHOWN] + "…"
    quote = text[start:end].rstrip(" \t.:,")
    while quote.endswith(")") and quote.count(")") > quote.count("("):
        quote = quote[:-1]
    return quote


def _check_quote(page: PageState, line: OutLine, at: int, tool: str, quote: str, claims: list[ShownClaim],
                 named: str) -> None:
    """The quote at `at` is a summary of every recording of a run cited by a claim in its sentence (`claims`)."""
    cited = sorted({c.run for c in claims if c.run is not None})
    unknowable = any(c.unknowable for c in claims)
    said: list[str] = []
    for set_name, group in cited:
        recordings = _summaries(page, set_name, group)
        if recordings is None:
            unknowable = True
            continue
        if all(any(_matches(line, at, s.text) for s in sums) for _, sums in recordings):
            return
        said += _what_they_say(group, recordings, tool)
    if unknowable:
        return  # a run it cites cannot be read: that error is the one to fix first
    if not cited:
        page.error(line.src, f"quote {quote!r} belongs to the run cited in {named}, and {named} cites none; "
                   "cite the run there with a claim, or write the quote as a claim: {{ QUOTE @ RUN:summary }}")
        return
    instead = "; ".join(said[:4]) or "no summary of that kind"
    page.error(line.src, f"quote {quote!r} is not, verbatim, a summary line of every recording of a run "
               f"cited in {named}; they say: {instead}")


def _summaries(page: PageState, set_name: str, group: str) -> list[tuple[str, tuple[Summary, ...]]] | None:
    """(path, summaries) of every recording of a run, or None when one cannot be read."""
    ev = page.sets[set_name]
    found = []
    for name in ev.recordings(group):
        try:
            found.append((ev.transcript_path(name), ev.transcript(name).summaries))
        except LessonError:
            return None  # reported by the integrity check and by the claims on it
    return found


def _matches(line: OutLine, at: int, summary: str) -> bool:
    """Whether line.text from `at` is `summary` verbatim (claims standing for its figures), then ends."""
    text = line.text
    slots = {s.start: s for s in line.spans if _is_figure_claim(s.claim)}
    i, j = at, 0
    while j < len(summary):
        slot = slots.get(i)
        if slot is not None:
            figure = FIGURE_RE.match(summary, j)
            if figure is None or not judge(slot.claim.value, Sample((Found(figure.group()),), "", 1)).holds:
                return False
            i, j = slot.end, figure.end()
            continue
        if i >= len(text) or text[i] != summary[j]:
            return False
        i, j = i + 1, j + 1
    return bool(_AFTER_QUOTE_RE.match(text[i:]))


def _is_figure_claim(claim: ShownClaim) -> bool:
    value = claim.value
    return value is not None and (value.kind != "exact" or bool(_PLAIN_NUMBER_RE.match(value.text)))


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
