"""A page's text structure: `{{ … }}` tokens (which may span lines), fences, code spans (CodeSpans,
in linear time) and table cells: the one module that reads the Markdown's syntax for the others.

Pure text: nothing here knows evidence. `scan` finds every unescaped `{{` and the `}}` that
closes it within the same paragraph; a `{{` with no such `}}` is reported, never passed on.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

# The directives, the one list of them: what lessonkit.pages.directives expands, what the page's
# scanner and the escaped-directive warning recognise, what verify-site looks for unexpanded.
DIRECTIVES = ("region", "transcript", "evidence", "provenance", "commands", "table", "diagram")
_OPEN_RE = re.compile(r"""(?<!\\)\{\{""")
_BLANK_LINE_RE = re.compile(r"""\n[ \t\r]*\n""")
# The one fence pattern of the core: a fence may be indented (inside an admonition or a list); a
# backtick fence's info string has no backtick, so "```x``` is the binary" is inline code, not a
# fence (CommonMark 4.5). `info` is the rest of the line (the language, a title, attributes).
FENCE_RE = re.compile(r"""^[ \t]*(?P<fence>`{3,}(?=[^`\n]*$)|~{3,})(?P<info>[^\n]*)""", re.MULTILINE)


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
    """A `{{` with no `}}` before the next `{{`, the paragraph's end or the page's end (`before_line`,
    0-based in the scanned text, None for the page's end)."""

    start: int
    line: int
    snippet: str
    before_what: str  # "the next '{{'", "the end of its paragraph" or "the end of the page"
    before_line: int | None = None

    def before(self, offset: int = 0) -> str:
        """What comes first instead of a `}}`, with its line as the page's file numbers it (`offset`: the
        lines above the scanned text, its front matter)."""
        if self.before_line is None:
            return self.before_what
        return f"{self.before_what} (line {self.before_line + 1 + offset})"


class LineIndex:
    """Turns an offset of a text into a 0-based line number: by counting the line breaks since the
    offset asked for last when the questions go forward (as a page's scan does: nothing per line),
    and by a table of where each line starts, made at the first question that goes back."""

    def __init__(self, text: str):
        self.text = text
        self._last = (0, 0)  # an offset asked for, and its line
        self._starts: list[int] | None = None

    def line(self, offset: int) -> int:
        """The 0-based line holding `offset`."""
        at, line = self._last
        if offset >= at:
            line += self.text.count("\n", at, offset)
            self._last = (offset, line)
            return line
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return bisect.bisect_right(self._starts, offset) - 1


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
            what, at = "the end of the page", None
        elif limit == nxt:
            what, at = "the next '{{'", lines.line(nxt)
        else:
            what, at = "the end of its paragraph", lines.line(blank)
        end_of_line = text.find("\n", start)
        quiet_until = end_of_line if end_of_line != -1 else len(text)
        unclosed.append(Unclosed(start, lines.line(start), text[start:quiet_until].rstrip()[:60], what, at))
    return tokens, unclosed


def tokens(text: str) -> list[Token]:
    """Every `{{ … }}` of `text` (scan's tokens, without the report of unclosed ones): the one
    recogniser of double braces, for the page's Markdown and for what a reader sees of it alike."""
    return scan(text, LineIndex(text))[0] if "{{" in text else []


def stands_alone(text: str, token: Token) -> bool:
    """Whether only whitespace shares the token's first and last lines with it."""
    line_start = text.rfind("\n", 0, token.start) + 1
    line_end = text.find("\n", token.end)
    after = text[token.end:line_end if line_end != -1 else len(text)]
    return not text[line_start:token.start].strip() and not after.strip()


# -- expanded lines ----------------------------------------------------------------------------

@dataclass
class Span:
    """Where a claim's shown value sits in an expanded line, and the record of its produced text."""

    start: int
    end: int
    why: str | None = None  # what backs the value, in plain words (lessonkit.pages.meaning)
    runs: tuple[tuple[str, str], ...] = ()  # (set, run) of every run it was checked against
    line: int | None = None  # the page file's line (1-based, front matter counted) the claim is written on
    unit: str | None = None  # the unit of what it shows, when known ("" for none: lessonkit.pages.units)


@dataclass
class OutLine:
    """One line of the expanded page: its text, the claims shown in it and its first source line."""

    src: int
    text: str = ""
    spans: list[Span] = field(default_factory=list)
    generated: bool = False  # a directive's output (a region, a table, a slot): not the author's prose


class Lines:
    """The expanded page, line by line, kept as flat lists (each line's text and first source line),
    with an OutLine made only for a line that is asked for (`lines[i]`): the page rules find the few
    lines they read with one search over the page (`find`) instead of a Python loop over every line,
    and a page of a million lines costs a few C-level passes, not a million objects.

    While the page is expanded only the last line's text changes (through its OutLine); `settle`
    ends that, after which a line's text is fixed."""

    def __init__(self, first: OutLine | None = None) -> None:
        first = first or OutLine(0)
        self.texts: list[str] = [first.text]
        self.srcs: list[int] = [first.src]
        self.generated: set[int] = {0} if first.generated else set()
        self._made: dict[int, OutLine] = {0: first}
        self._joined: str | None = None
        
    @classmethod
    def of(cls, lines: list[OutLine]) -> Lines:
        """Lines holding these OutLines (tests, and what is built line by line)."""
        out = cls(lines[0] if lines else None)
        for line in lines[1:]:
            out.append(line)
        return out.settle()

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> OutLine:
        if i < 0:
            i += len(self.texts)
        line = self._made.get(i)
        if line is None:
            if not 0 <= i < len(self.texts):
                raise IndexError(i)
            line = self._made[i] = OutLine(self.srcs[i], self.texts[i], generated=i in self.generated)
        return line

    def __setitem__(self, i: int, line: OutLine) -> None:
        i = i + len(self.texts) if i < 0 else i
        self._made[i] = line
        self.texts[i], self.srcs[i] = line.text, line.src
        (self.generated.add if line.generated else self.generated.discard)(i)

    def __iter__(self) -> Iterator[OutLine]:
        return (self[i] for i in range(len(self.texts)))

    def append(self, line: OutLine) -> None:
        self._sync_last()
        self._made[len(self.texts)] = line
        self.texts.append(line.text)
        self.srcs.append(line.src)
        if line.generated:
            self.generated.add(len(self.texts) - 1)

    def extend_plain(self, first_src: int, texts: list[str]) -> None:
        """Plain lines (no claims yet), the first on source line `first_src`, the rest after it."""
        self._sync_last()
        self.texts += texts
        self.srcs += range(first_src, first_src + len(texts))

    def _sync_last(self) -> None:
        last = self._made.get(len(self.texts) - 1)
        if last is not None:
            self.texts[-1] = last.text

    def settle(self) -> Lines:
        """The page is expanded: every line's text is final."""
        self._sync_last()
        return self

    def with_spans(self) -> list[int]:
        """The lines that show claims, in order."""
        return sorted(i for i, line in self._made.items() if line.spans)

    @property
    def joined(self) -> str:
        """The page's lines joined by "\\n", a generated line's as empty, and a line break inside a
        line's text (a token shown as written, over several source lines) as a space."""
        if self._joined is None:
            texts = self.texts
            broken = [i for i in self._made if i not in self.generated and "\n" in texts[i]]
            if self.generated or broken:
                texts = list(texts)
                for i in self.generated:
                    texts[i] = ""
                for i in broken:
                    texts[i] = texts[i].replace("\n", " ")
            self._joined = "\n".join(texts)
        return self._joined

    def find(self, pattern: re.Pattern[str], text: str | None = None) -> Iterator[int]:
        """In order, the lines not generated in which `pattern` matches (a match that starts in the
        line; a pattern never crosses a line's end, and `^`/`$` need re.MULTILINE). `text`: the
        page's text in another form with every character at its place (lower-cased)."""
        text = self.joined if text is None else text
        line, counted = 0, 0  # the line that starts or holds offset `counted`
        m = pattern.search(text)
        while m is not None:
            line += text.count("\n", counted, m.start())
            yield line
            counted = text.find("\n", m.start()) + 1
            if counted == 0:
                return
            line += 1
            m = pattern.search(text, counted)




def fenced(out: Lines) -> list[bool]:
    """Which expanded lines are inside a fenced code block (its fences included). A fence closes
    with a line of only the opening fence's character, at least as many, and whitespace."""
    in_fence = [False] * len(out)
    text = out.joined
    line, counted = 0, 0  # the line holding offset `counted`
    fence, opened = "", 0  # the open fence, and the line that opened it
    for m in FENCE_RE.finditer(text):
        line += text.count("\n", counted, m.start())
        counted = m.start()
        if not fence:
            fence, opened = m.group("fence"), line
        elif m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) and not m.group("info").strip():
            in_fence[opened:line + 1] = [True] * (line + 1 - opened)
            fence = ""
    if fence:  # never closed: a code block to the page's end
        in_fence[opened:] = [True] * (len(out) - opened)
    for i in out.generated:  # a directive's output is not code, even inside an open fence
        in_fence[i] = False
    return in_fence


# A code span, as Python-Markdown reads one: backticks, text, and the same number of backticks (a
# run of exactly as many), within one paragraph: the span may run over lines, not over a blank line
# (Python-Markdown's pattern matches newlines, and a blank line ends the block it reads). CodeSpans
# finds what finditer would, in time linear in the text.
CODE_SPAN_RE = re.compile(r"""(?P<ticks>`+)(?!`)(?s:(?:(?!\n[ \t\r]*\n).)*?)(?<!`)(?P=ticks)(?!`)""")
_TICK_RUN_RE = re.compile(r"""`+""")


class CodeSpans:
    """The code spans of a text (CODE_SPAN_RE's matches), worked out from its runs of backticks: a span
    opened inside a run (the run's last L backticks) closes at the next run of exactly L backticks in
    the same paragraph. The regex itself tries every backtick and reads on to the paragraph's end
    from each, which takes minutes for a line of a million backticks. One scanner serves every
    reader of code spans: a page's links, the Markdown's visible text and the
    claims a paragraph's code spans hold."""

    def __init__(self, text: str) -> None:
        self.runs: list[tuple[int, int, int]] = []  # (start, end, paragraph) of each run of backticks
        self._by_length: dict[int, list[int]] = {}  # a length: the runs that long, in order
        blanks = [m.start() for m in _BLANK_LINE_RE.finditer(text)] if "\n" in text else []
        for m in _TICK_RUN_RE.finditer(text):
            self._by_length.setdefault(m.end() - m.start(), []).append(len(self.runs))
            self.runs.append((m.start(), m.end(), bisect.bisect_right(blanks, m.start())))
        self._lengths = sorted(self._by_length)
        self._run_at = [r[0] for r in self.runs]

    def opened(self, at: int) -> tuple[int, int, int] | None:
        """The first span opened at or after backtick `at` within its run: (start, end, the number of
        backticks on each side), or None."""
        k = bisect.bisect_right(self._run_at, at) - 1
        _, end, paragraph = self.runs[k]
        for width in reversed(self._lengths[:bisect.bisect_right(self._lengths, end - at)]):
            same = self._by_length[width]
            j = bisect.bisect_right(same, k)
            if j < len(same) and self.runs[same[j]][2] == paragraph:
                return end - width, self.runs[same[j]][1], width
        return None

    def run_end(self, at: int) -> int:
        """Where the run of backticks holding `at` ends."""
        return self.runs[bisect.bisect_right(self._run_at, at) - 1][1]

    def spans(self) -> list[tuple[int, int]]:
        """Every span, in order, as CODE_SPAN_RE.finditer finds them."""
        found: list[tuple[int, int]] = []
        for start, _, _ in self.runs:
            if found and start < found[-1][1]:
                continue  # the closing run of the span found last
            span = self.opened(start)
            if span is not None:
                found.append(span[:2])
        return found


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span of a text, in order."""
    return CodeSpans(text).spans() if "`" in text else []
