"""Produced text, marked in band: characters that carry a record's number through Markdown to the HTML.

Everything the core writes from the evidence or the program (a claim's value, a generated figure or
table cell, a region's code block, a transcript, the provenance tables) is wrapped in two characters
of Unicode's Supplementary Private Use Area-A, which no text of the course uses and which
Python-Markdown, its extensions and Pygments pass through unchanged: an opening one, U+F0000 + N, where
N numbers the page's record of what backs the text (`Mark`), and the closing one, U+FFFFD. They nest.
The way Python-Markdown keeps its own placeholders (STX and ETX around a stash index), so the
rendered-page audit (lessonkit.pages.readertext) knows exactly which characters the core produced
and from which record, whatever markup carried them: a code span, an image's alt text, a table cell,
a heading. No class, attribute or context is trusted. The marks are removed (`strip`) from what is
published; lessonkit verify-site fails on a built page that still holds one.

A page's own text may not hold one (lessonkit.pages.page refuses it, naming the line), and the
reader refuses a mark that is not the core's: a number with no record, a record's number used
twice, a closing mark with nothing open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FIRST = 0xF0000            # the opening mark of record N is chr(FIRST + N)
CLOSE = "\U000FFFFD"      # the closing mark
LIMIT = 0xFFFFD - FIRST     # records a page may hold
RESERVED_RE = re.compile("[\U000F0000-\U000FFFFF]")  # the whole plane-15 private use block: no page's own
_MARK_RE = re.compile("[\U000F0000-\U000FFFFD]")
# Pygments gives a character it cannot lex a span of its own ('err'); a mark's one goes with the mark.
_ERR_SPAN_RE = re.compile('<span class="err">([\U000F0000-\U000FFFFD]+)</span>')
_ALONE_RE = re.compile('<p>([\U000F0000-\U000FFFFD]+)</p>\n?')  # a block's marks, on lines of their own


VALUE = "value"  # a claim's value, or a figure generated inline (`{{ value … }}`)
DIAGRAM = "diagram"  # a diagram's block: written by the core, its text the author's (not produced)


@dataclass(frozen=True)
class Mark:
    """What backs one stretch of produced text: in plain words for the reader (`why`, shown on hover),
    every run it was drawn from (`runs`), and what the core made it as (`kind`: "value" for a claim's or a generated figure, "cell", "region",
    "commands", "transcript", "provenance", or DIAGRAM, whose own text is not produced)."""

    why: str | None = None
    kind: str = VALUE
    runs: tuple[tuple[str, str], ...] = ()  # (set, run) of every run it was drawn from
    line: int | None = None  # the page file's line it is written on, when one claim wrote it
    unit: str | None = None  # the unit of the claim's figure when known ("" for none: a count, a ratio)


class Marks:
    """A page's records, in the order their marks were written."""

    def __init__(self, records: list[Mark] | None = None) -> None:
        self.records: list[Mark] = records if records is not None else []

    def wrap(self, text: str, why: str | None = None, kind: str = VALUE,
             runs: tuple[tuple[str, str], ...] = (), line: int | None = None, unit: str | None = None) -> str:
        """`text` between the marks of a new record."""
        n = len(self.records)
        if n >= LIMIT:
            raise ValueError(f"a page holds more than {LIMIT} produced stretches")
        self.records.append(Mark(why, kind, tuple(runs), line, unit))
        return chr(FIRST + n) + text + CLOSE

    def block(self, markdown: str, why: str | None, kind: str) -> str:
        """Markdown for a block (a fenced code block) between marks, each on a line of its own, so the
        block's own syntax is untouched; `strip` removes the paragraphs they make."""
        opened = self.wrap("", why, kind)
        return f"{opened[0]}\n\n{markdown}\n\n{CLOSE}"


def opening(char: str) -> int | None:
    """The record number an opening mark carries, or None for any other character."""
    n = ord(char) - FIRST
    return n if 0 <= n < LIMIT else None


def split(text: str) -> list[str]:
    """`text` cut before and after every mark: text pieces and single marks, in order."""
    return [piece for piece in re.split(f"({_MARK_RE.pattern})", text) if piece]


def is_mark(piece: str) -> bool:
    return len(piece) == 1 and _MARK_RE.match(piece) is not None


def strip(html: str) -> str:
    """The published HTML: no mark, nor the paragraphs and highlighter spans only marks made."""
    if not RESERVED_RE.search(html):
        return html
    html = _ALONE_RE.sub("", html)
    html = _ERR_SPAN_RE.sub(r"\1", html)
    return RESERVED_RE.sub("", html)
