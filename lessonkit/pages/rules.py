"""Rules over a whole expanded page: quoted sanitizer summaries, and table rows' labels.
(What a reader sees against what the checks read: lessonkit.pages.text.)

Summaries. Any line that mentions `RACECHECK SUMMARY` or `ERROR SUMMARY` (any case, any
spacing) followed by a figure quotes a summary. From the mention on, the expanded line must
be, verbatim, a summary line of every recording of some run that the same section cites (a
claim, a `transcript` or a `commands` directive under the same heading), and the quote
must end there: at the end of the line, a closing backtick, quotation mark or bracket, or
sentence punctuation. A claim inside the quote stands for the figure at its place: its
value must hold for that figure in every recording.

Row labels. In a table row with claims that filter records, a plain number cell must be
the value of one filter key shared by every claim of the row that uses that key
(`| 128 | {{ … cells[threads=128,…] … }} |`), and a text cell that names a value the
table's claims filter on must be the one this row's claims select.
"""

from __future__ import annotations

import re

from lessonkit.errors import LessonError
from lessonkit.evidence.transcript import Summary
from lessonkit.pages.claims import Found, Sample, judge
from lessonkit.pages.scan import OutLine, Section, Span, section_of, split_cells, tables
from lessonkit.pages.state import PageState, ShownClaim
from lessonkit.pages.text import CHAR_REF_RE, SUMMARY_MENTION_RE, is_invisible, refused_ref, visible

_MAYBE_MENTION_RE = re.compile(r"""racecheck|error|summary""", re.IGNORECASE)
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
_MARKUP_FREE_RE = re.compile(r"""<[^<>]*>|&[\#\w]+;|[^A-Za-z]""")  # what cannot spell "summary"
_PLAIN_NUMBER_RE = re.compile(r"""^[+-]?\d[\d,]*(?:\.\d+)?$""")
_LEADING_NUMBER_RE = re.compile(r"""^(?P<number>[+-]?\d[\d,]*(?:\.\d+)?)(?:[\s\-\u2010\u2011]|$)""")
_CODE_LABEL_RE = re.compile(r"""^`(?P<text>[^`]+)`$""")


# -- summaries -----------------------------------------------------------------------------------

def check_summaries(page: PageState, out: list[OutLine], in_fence: list[bool], sections: list[Section]) -> None:
    """Every summary a line quotes is a summary line of every recording of a run its section cites."""
    cites = _Citations(page, sections)
    for i, first in enumerate(out):
        if first.generated or not _MAYBE_MENTION_RE.search(first.text):
            continue
        line = first if in_fence[i] else _paragraph_from(out, in_fence, i)
        quoted: set[int] = set()  # where the quotes checked below begin
        for m in SUMMARY_MENTION_RE.finditer(line.text):
            if m.start() >= len(first.text):
                break  # a mention on a later line is checked from that line
            end = _QUOTE_END_RE.search(line.text, m.end())
            stretch = line.text[m.start():end.start() if end else len(line.text)]
            if not any(c.isdigit() for c in stretch[m.end() - m.start():]):
                continue  # a mention with no figure ("the ERROR SUMMARY: line") quotes nothing
            quoted.add(m.start())
            _check_quote(page, line, m.start(), m.group("tool").upper(), _shown(stretch), sections,
                         cites)
        if not in_fence[i]:
            _check_disguised(page, line, len(first.text), quoted)


def _check_disguised(page: PageState, line: OutLine, first_len: int, quoted: set[int]) -> None:
    """A summary quote that formatting splits for the checks but not for a reader
    ('**RACECHECK** SUMMARY: 0 …', '`RACECHECK SUMMARY:` 0 …', 'SUMMARY: <b>0</b> …') is refused."""
    if "summary" not in _MARKUP_FREE_RE.sub("", line.text).lower():
        return  # no mention, however formatted: the common case, without building the visible text
    shown, where = visible(line.text)
    for m in SUMMARY_MENTION_RE.finditer(shown):
        at = where[m.start()]
        if at >= first_len:
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


class _Citations:
    """The runs each section cites, and the sections citing an unreadable set (found once a page)."""

    def __init__(self, page: PageState, sections: list[Section]) -> None:
        self.runs: dict[Section, set[tuple[str, str]]] = {}
        for src, set_name, group in page.citations:
            self.runs.setdefault(section_of(sections, src), set()).add((set_name, group))
        self.unknowable = {section_of(sections, src) for src in page.unknowable}


def _check_quote(page: PageState, line: OutLine, at: int, tool: str, quote: str, sections: list[Section],
                 cites: _Citations) -> None:
    section = section_of(sections, line.src)
    cited = sorted(cites.runs.get(section, ()))
    unknowable = section in cites.unknowable
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
        page.error(line.src, f"quote {quote!r} is checked against the runs cited in its section, and none "
                   f"is cited in {section.named()}; cite the run there (a claim, or a transcript or commands "
                   "directive) or write the quote as a claim: {{ QUOTE @ RUN:summary }}")
        return
    instead = "; ".join(said[:4]) or "no summary of that kind"
    page.error(line.src, f"quote {quote!r} is not, verbatim, a summary line of every recording of a run "
               f"cited in {section.named()}; they say: {instead}")


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


# -- row labels ----------------------------------------------------------------------------------

def check_row_labels(page: PageState, out: list[OutLine], in_fence: list[bool]) -> None:
    """A table row's number labels, and its labels that name filter values, agree with its claims' filters."""
    for rows in tables(out, in_fence):
        filters = {r: _row_filters(out[r]) for r in rows}
        used: dict[str, set[str]] = {}
        for pairs in filters.values():
            for key, value in pairs:
                used.setdefault(key, set()).add(value)
        for r in rows:
            if not filters[r]:
                continue  # a row that claims nothing from records has nothing to bind its labels to
            for cell in split_cells(out[r]):
                inside = [s.start for s in out[r].spans if cell.start <= s.start < cell.end]
                text = cell.text if not inside else out[r].text[cell.start:min(inside)]
                if not visible(text)[0].strip():
                    continue  # the cell is a claim: it is checked
                problem = _label_problem(text.strip(), filters[r], used, visible(text)[0].strip())
                if problem:
                    page.error(out[r].src, problem)


def _row_filters(line: OutLine) -> list[tuple[str, str]]:
    pairs = []
    for span in line.spans:
        query = span.claim.query
        if query is not None:
            pairs += [(k, v) for k, v in query.filters or () if v != "*"]
    return pairs


def _label_problem(label: str, pairs: list[tuple[str, str]], used: dict[str, set[str]],
                   seen: str) -> str | None:
    """What is wrong with a label cell (`seen` is what a reader sees of it: `**1024**` is 1024)."""
    by_key: dict[str, set[str]] = {}
    for key, value in pairs:
        by_key.setdefault(key, set()).add(value)
    lead = _LEADING_NUMBER_RE.match(seen.replace("\u00a0", " "))
    if lead:  # "1024", "**1024**", "1024 threads"
        number = lead.group("number").replace(",", "")
        if any(values == {number} for values in by_key.values()):
            return None
        shown = ", ".join(sorted({f"{k}={v}" for k, v in pairs}))
        return (f"row label {label!r} is not the value of a filter that every claim in its row shares "
                f"({shown}); write the value they select, or make the label a claim")
    m = _CODE_LABEL_RE.match(label)
    text = m.group("text") if m else seen
    keys = [k for k, values in used.items() if text in values]
    clashes = [(k, sorted(by_key[k])) for k in keys if k in by_key and by_key[k] != {text}]
    if not keys or any(by_key.get(k) == {text} for k in keys) or not clashes:
        return None
    key, values = clashes[0]
    return (f"row label {label!r} is a {key} that the table's claims select, but the claims in its row "
            f"select {', '.join(f'{key}={v}' for v in values)}; write the label of the records they select")
