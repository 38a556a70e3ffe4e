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
import re
from dataclasses import dataclass
from functools import cached_property

from lessonkit.errors import LessonError
from lessonkit.evidence.transcript import Summary
from lessonkit.pages.claims import Found, Sample, judge
from lessonkit.pages.scan import OutLine, Span
from lessonkit.pages.state import PageState, ShownClaim
from lessonkit.pages.text import CHAR_REF_RE, SUMMARY_MENTION_RE, is_invisible, refused_ref, visible

_MAYBE_MENTION_RE = re.compile(r"""racecheck|error|summary""", re.IGNORECASE)
_MAYBE_MENTION_LOWER_RE = re.compile(r"""racecheck|error|summary""")  # the same, over lower-cased text
# A line that starts a new block: a soft line break before it is not a space inside a sentence.
# An HTML block interrupts a paragraph only with a block-level tag: "<span>0</span>" continues it.
_BLOCK_START_RE = re.compile(
    r"""^\s*(?:[-*+]\s|\d+[.)]\s|\#|\||>|`{3,}|~{3,}|$
       |</?(?:div|table|pre|p|details|summary|ul|ol|li|h[1-6]|blockquote|section|figure|hr|dl|script|style)\b
       |<!--)""", re.VERBOSE | re.IGNORECASE)
_QUOTE_END_RE = re.compile(r"""[`"\u201c\u201d;|<]|\.(?=\s|$)""")
_FIGURE_RE = re.compile(r"""\d[\d,]*(?:\.\d+)?""")
_AFTER_QUOTE_RE = re.compile(
    r"""^(?:\s*$|[`"'\u201c\u201d\u2018\u2019*_<|)\]]|[.;:!?](?:$|[\s`"'\u201d\u2019*_<|)\]]))""", re.VERBOSE)
_VISIBLE_END_RE = re.compile(r"""["\u201c\u201d;|]|\.(?=\s|$)""")  # a quote's end in the visible text
# What cannot spell "summary": markup (tags, character references), then whatever is not a letter.
_MARKUP_RE = re.compile(r"""<[^<>]*>|&[\#\w]+;""")
_LETTERS_RE = re.compile(r"""[^A-Za-z]+""")
_PLAIN_NUMBER_RE = re.compile(r"""^[+-]?\d[\d,]*(?:\.\d+)?$""")


# -- summaries -----------------------------------------------------------------------------------

def check_summaries(page: PageState, out: list[OutLine], in_fence: list[bool]) -> None:
    """Every summary a line quotes is a summary line of every recording of a run its own sentence cites."""
    paragraphs: dict[int, _Paragraph] = {}  # by the line each starts on: built once, read for each of its lines
    for i in _mentioning(out):
        first = out[i]
        line, base, first_end, paragraph = (first, 0, len(first.text), None) if in_fence[i] \
            else _paragraph_around(out, in_fence, i, paragraphs)
        row = not in_fence[i] and first.text.lstrip().startswith("|")
        quoted: set[int] = set()  # where the quotes checked below begin
        mentions = (SUMMARY_MENTION_RE.finditer(line.text) if paragraph is None
                    else (m for m in paragraph.mentioned if m.start() >= base))
        for m in mentions:
            if m.start() >= first_end:
                break  # a mention on a later line is checked from that line
            end = _QUOTE_END_RE.search(line.text, m.end())
            stretch = line.text[m.start():end.start() if end else len(line.text)]
            if not any(c.isdigit() for c in stretch[m.end() - m.start():]):
                continue  # a mention with no figure ("the ERROR SUMMARY: line") quotes nothing
            quoted.add(m.start())
            whole = in_fence[i] or row  # a code line and a table row are their own sentence
            sentence = (0, len(line.text)) if whole else _sentence(line.text, m.start(), m.start() + len(stretch))
            _check_quote(page, line, m.start(), m.group("tool").upper(), _shown(stretch), sentence,
                         "its table row" if row else "its line" if in_fence[i] else "its sentence")
        if paragraph is not None:
            _check_disguised(page, line, base, first_end, quoted, paragraph)


def _mentioning(out: list[OutLine]) -> list[int]:
    """The lines not generated that may mention a summary (_MAYBE_MENTION_RE), in order: searched
    over the page at once, from each hit on to the next line (no word it looks for holds a line
    break), instead of line by line."""
    texts = ["" if line.generated else line.text for line in out]
    starts, at = [], 0
    for line in texts:
        starts.append(at)
        at += len(line) + 1
    text = "\n".join(texts)
    pattern = _MAYBE_MENTION_RE
    if "\u0130" not in text:  # then lower() keeps every character's place (only U+0130 lowers to two)
        # Ignoring case, Python's re also matches KELVIN SIGN for k (lower() gives k) and LONG S for s.
        text, pattern = text.lower().replace("\u017f", "s"), _MAYBE_MENTION_LOWER_RE
    found: list[int] = []
    m = pattern.search(text)
    while m is not None:
        found.append(bisect.bisect_right(starts, m.start()) - 1)
        if found[-1] + 1 == len(starts):
            break
        m = pattern.search(text, starts[found[-1] + 1])
    return found


_SENTENCE_END_RE = re.compile(r"""[.!?]["'\u201d\u2019)\]*_`]*(?=\s|$)""")


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence of `text` holding text[start:end]: from the end of the one before to its own end."""
    first = 0
    for m in _SENTENCE_END_RE.finditer(text, 0, start):
        first = m.end()
    last = _SENTENCE_END_RE.search(text, end)
    return first, last.end() if last else len(text)


@dataclass
class _Paragraph:
    """A paragraph joined as Markdown shows it, and what the summary rules read of it (each once)."""

    joined: OutLine

    @cached_property
    def mentions(self) -> bool:
        """Whether it mentions a summary however formatted (if not, the common case, its visible
        text is never built)."""
        text = self.joined.text
        if "<" not in text and "&" not in text:  # no markup: only the letters count
            return "summary" in _LETTERS_RE.sub("", text).lower()
        return "summary" in _LETTERS_RE.sub("", _MARKUP_RE.sub("", text)).lower()

    @cached_property
    def visible(self) -> tuple[str, list[int]]:
        return visible(self.joined.text)

    @cached_property
    def mentioned(self) -> list[re.Match[str]]:
        """The summary mentions of its text, in order (each of its lines reads those it holds: a
        mention starts with a whole word, so none starts inside another)."""
        return list(SUMMARY_MENTION_RE.finditer(self.joined.text))

    @cached_property
    def visible_mentioned(self) -> list[re.Match[str]]:
        """The summary mentions of its visible text, in order."""
        return list(SUMMARY_MENTION_RE.finditer(self.visible[0]))


def _check_disguised(page: PageState, line: OutLine, base: int, first_end: int, quoted: set[int],
                     paragraph: _Paragraph) -> None:
    """A summary quote that formatting splits for the checks but not for a reader
    ('**RACECHECK** SUMMARY: 0 …', '`RACECHECK SUMMARY:` 0 …', 'SUMMARY: <b>0</b> …') is refused."""
    if not paragraph.mentions:
        return
    shown, where = paragraph.visible
    for m in paragraph.visible_mentioned:
        at = where[m.start()]
        if at < base:
            continue  # a mention on an earlier line was checked from that line
        if at >= first_end:
            break
        end = _VISIBLE_END_RE.search(shown, m.end())
        stretch = shown[m.start():end.start() if end else len(shown)]
        if at in quoted or not any(c.isdigit() for c in stretch[m.end() - m.start():]):
            continue
        raw = line.text[at:where[m.start() + len(stretch) - 1] + 1]
        if "<!--" in raw or any(is_invisible(c) for c in raw) \
                or any(refused_ref(r.group()) for r in CHAR_REF_RE.finditer(raw)):
            continue  # check_hidden_text reports the cause
        page.error(line.src, f"formatting splits the summary quote {_shown(stretch)!r} for the checks but not for a "
                   "reader; write the quote as plain text or as one code span, so that it is checked against "
                   "the recordings")


def _paragraph_around(out: list[OutLine], in_fence: list[bool], i: int,
                      paragraphs: dict[int, _Paragraph]) -> tuple[OutLine, int, int, _Paragraph]:
    """Line i's whole paragraph, joined as Markdown shows it, and where line i begins and ends in it.
    The paragraph's `src` is line i's: the checks report the line a quote starts on. `paragraphs`
    keeps each paragraph joined, by its first line."""
    j = i
    while j > 0 and not _BLOCK_START_RE.match(out[j].text) and not out[j - 1].generated \
            and not in_fence[j - 1] and out[j - 1].text.strip():
        j -= 1
    if j not in paragraphs:
        paragraphs[j] = _Paragraph(_paragraph_from(out, in_fence, j))
    whole = paragraphs[j].joined
    base = 0
    for k in range(j, i):
        base += len(out[k].text.lstrip() if k > j else out[k].text) + 1
    end = base + len(out[i].text.lstrip() if i > j else out[i].text)
    return OutLine(out[i].src, whole.text, whole.spans), base, end, paragraphs[j]


def _paragraph_from(out: list[OutLine], in_fence: list[bool], i: int) -> OutLine:
    """Line i with the lines that continue its paragraph, joined as Markdown shows them (one space)."""
    text, spans = out[i].text, list(out[i].spans)
    j = i + 1
    while j < len(out) and not out[j].generated and not in_fence[j] and not _BLOCK_START_RE.match(out[j].text):
        rest = out[j].text.lstrip()
        base = len(text) + 1 - (len(out[j].text) - len(rest))
        spans += [Span(s.start + base, s.end + base, s.claim) for s in out[j].spans]
        text = f"{text} {rest}"
        j += 1
    return OutLine(out[i].src, text, spans)


def _shown(stretch: str) -> str:
    text = stretch.rstrip(" \t.:,")
    while text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1]
    return text


def _check_quote(page: PageState, line: OutLine, at: int, tool: str, quote: str, sentence: tuple[int, int],
                 named: str) -> None:
    """The quote at `at` is a summary of every recording of a run cited by a claim in `sentence`."""
    claims = [s.claim for s in line.spans if sentence[0] <= s.start < sentence[1]]
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
            figure = _FIGURE_RE.match(summary, j)
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
