"""A page's text structure: `{{ … }}` tokens (which may span lines), headings, fences and table cells.

Pure text: nothing here knows evidence. `scan` finds every unescaped `{{` and the `}}` that
closes it within the same paragraph; a `{{` with no such `}}` is reported, never passed on.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field

_OPEN_RE = re.compile(r"""(?<!\\)\{\{""")
_BLANK_LINE_RE = re.compile(r"""\n[ \t\r]*\n""")
# A fence may be indented (inside an admonition or a list); a backtick fence's info string has no
# backtick, so "```x``` is the binary" is inline code, not a fence (CommonMark 4.5).
_FENCE_RE = re.compile(r"""^[ \t]*(?P<fence>`{3,}(?=[^`]*$)|~{3,})""")
_HEADING_RE = re.compile(r"""^[ ]{0,3}(?P<level>\#{1,6})(?:[ \t]+(?P<title>.*?))?[ \t#]*$""", re.VERBOSE)
_SETEXT_RE = re.compile(r"""^[ ]{0,3}(?:=+|-+)[ \t]*$""")
_NOT_PARAGRAPH_RE = re.compile(r"""^\s*(?:$|[-*+>|]|\d+[.)]\s|\#|<|!!!|\?\?\?)""")
_BACKTICKS_RE = re.compile(r"""`+""")


@dataclass(frozen=True)
class Token:
    """`{{ body }}` at text[start:end]; `line` and `last_line` are 0-based lines of its braces."""

    start: int
    end: int
    line: int
    last_line: int
    body: str


@dataclass(frozen=True)
class Unclosed:
    """A `{{` with no `}}` before `before` (the next `{{`, the paragraph's end or the page's end)."""

    start: int
    line: int
    snippet: str
    before: str


class LineIndex:
    """Offsets of a text's lines, to turn an offset into a 0-based line number."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        """The 0-based line holding `offset`."""
        return bisect.bisect_right(self.starts, offset) - 1


def scan(text: str, lines: LineIndex) -> tuple[list[Token], list[Unclosed]]:
    """Every `{{ … }}` of `text` in order, and the first `{{` of each line that is never closed.

    Linear in the text: the openings are found in one pass (a `{{` never closed is followed by
    the next, and a token holds none), and the next `}}` and blank line are searched for again
    only once the scan has passed them; a line of thousands of `{{` is read once, not once each."""
    tokens: list[Token] = []
    unclosed: list[Unclosed] = []
    opens = [m.start() for m in _OPEN_RE.finditer(text)]
    none = len(text) + 1
    close = blank = -1  # the next `}}` and blank line found so far (`none`: there is none)
    quiet_until = -1  # the end of the line whose first unclosed `{{` was reported
    for i, start in enumerate(opens):
        if close < start + 2:  # passed: the first one from here on is found again
            found = text.find("}}", start + 2)
            close = none if found == -1 else found
        if blank < start:
            b = _BLANK_LINE_RE.search(text, start)
            blank = none if b is None else b.start()
        nxt = opens[i + 1] if i + 1 < len(opens) else none
        limit = min(nxt, blank)
        if close + 2 <= limit:
            tokens.append(Token(start, close + 2, lines.line(start), lines.line(close), text[start + 2:close]))
            continue
        if start < quiet_until:
            continue  # one error per line: the first says what to fix
        if limit == none:
            before = "the end of the page"
        elif limit == nxt:
            before = f"the next '{{{{' (line {lines.line(nxt) + 1})"
        else:
            before = f"the end of its paragraph (line {lines.line(blank) + 1})"
        end_of_line = text.find("\n", start)
        quiet_until = end_of_line if end_of_line != -1 else len(text)
        unclosed.append(Unclosed(start, lines.line(start), text[start:quiet_until].rstrip()[:60], before))
    return tokens, unclosed


def stands_alone(text: str, token: Token) -> bool:
    """Whether only whitespace shares the token's first and last lines with it."""
    line_start = text.rfind("\n", 0, token.start) + 1
    line_end = text.find("\n", token.end)
    after = text[token.end:line_end if line_end != -1 else len(text)]
    return not text[line_start:token.start].strip() and not after.strip()


# -- expanded lines ----------------------------------------------------------------------------

@dataclass
class Span:
    """Where a claim's shown value sits in an expanded line, and the claim (any object)."""

    start: int
    end: int
    claim: object


@dataclass
class OutLine:
    """One line of the expanded page: its text, the claims shown in it and its first source line."""

    src: int
    text: str = ""
    spans: list[Span] = field(default_factory=list)
    generated: bool = False  # a directive's output (a region, a table, a slot): not the author's prose


@dataclass(frozen=True)
class Section:
    """The part of a page under one heading (or before the first): its first source line and title."""

    first: int
    title: str

    def named(self) -> str:
        """How messages name it."""
        return f"the section {self.title!r}" if self.title else "the page's opening section (above the first heading)"


def structure(out: list[OutLine]) -> tuple[list[bool], list[Section]]:
    """Which expanded lines are inside a fenced code block, and the page's sections."""
    in_fence: list[bool] = []
    sections = [Section(0, "")]
    fence = ""
    prev: OutLine | None = None  # the line before, outside fences
    for line in out:
        if line.generated:
            in_fence.append(False)
            prev = line
            continue
        m = _FENCE_RE.match(line.text)
        if fence:
            in_fence.append(True)
            if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                    and not line.text.strip().strip(fence[0]):
                fence = ""
            continue
        if m:
            fence = m.group("fence")
            in_fence.append(True)
            prev = None
            continue
        in_fence.append(False)
        if h := _HEADING_RE.match(line.text):
            sections.append(Section(line.src, (h.group("title") or "").strip()))
        elif _SETEXT_RE.match(line.text) and len(in_fence) > 1 and not in_fence[-2] and prev is not None \
                and not prev.generated and not _NOT_PARAGRAPH_RE.match(prev.text) and prev.src == line.src - 1:
            sections.append(Section(prev.src, prev.text.strip()))  # "Title" over "=====" or "-----"
        prev = line
    return in_fence, sections


def section_of(sections: list[Section], src: int) -> Section:
    """The section holding source line `src`."""
    return sections[bisect.bisect_right(sections, src, key=lambda s: s.first) - 1]


# -- tables ------------------------------------------------------------------------------------

def is_delimiter_row(text: str) -> bool:
    """A table's `| --- | :-: |` row."""
    stripped = text.strip()
    return "|" in stripped and "-" in stripped and not re.sub(r"[|:\-\s]", "", stripped)


@dataclass(frozen=True)
class Cell:
    """One cell of a table row: text[start:end] of its expanded line."""

    start: int
    end: int
    text: str


def split_cells(line: OutLine) -> list[Cell]:
    """The cells of a table row: split at `|` outside code spans, claims and `\\|` escapes."""
    text = line.text
    protected: list[tuple[int, int]] = [(s.start, s.end) for s in line.spans]
    pos = 0
    while (m := _BACKTICKS_RE.search(text, pos)) is not None:
        close = text.find(m.group(0), m.end())
        if close == -1:
            break
        protected.append((m.start(), close + len(m.group(0))))
        pos = close + len(m.group(0))
    bars = [i for i, c in enumerate(text) if c == "|" and (i == 0 or text[i - 1] != "\\")
            and not any(a <= i < b for a, b in protected)]
    edges = [-1] + bars + [len(text)]
    cells = [Cell(a + 1, b, text[a + 1:b]) for a, b in itertools.pairwise(edges)]
    if cells and not cells[0].text.strip() and bars and text[:bars[0]].strip() == "":
        cells = cells[1:]
    if cells and not cells[-1].text.strip() and bars and text[bars[-1] + 1:].strip() == "":
        cells = cells[:-1]
    return cells


def tables(out: list[OutLine], in_fence: list[bool]) -> list[list[int]]:
    """The body rows of each Markdown table, as indexes into `out`."""
    found: list[list[int]] = []
    i = 1
    while i < len(out):
        line, header = out[i], out[i - 1]
        if (not line.generated and not header.generated and not in_fence[i] and not in_fence[i - 1]
                and is_delimiter_row(line.text) and "|" in header.text):
            rows = []
            j = i + 1
            while j < len(out) and not out[j].generated and not in_fence[j] and out[j].text.strip() \
                    and "|" in out[j].text:
                rows.append(j)
                j += 1
            found.append(rows)
            i = j
            continue
        i += 1
    return found
