"""What a reader sees against what the checks read.

Tables written in HTML: their labels are bound to no claim (a Markdown table's are: lessonkit.pages.
tablerules). Hidden text, comments, invisible characters, look-alike letters and typed tool output
are refused on the rendered page, as a reader reads it (lessonkit.pages.readertext,
lessonkit.pages.audit).

Escaped directives. `\\{{` writes literal braces, so `\\{{ region ... }}` at the start of a line
shows the directive's text instead of expanding it; only a page about the directives themselves
(under docs/reference/) means that, so on any other page it is a warning: an author who copied
a directive from the Markdown source of "Writing a lesson" would otherwise publish it unchecked.

`visible` gives the text a reader sees of a line, with each character's column on the page.
"""

from __future__ import annotations

import bisect
import html
import re
from pathlib import PurePosixPath

from lessonkit.pages.fold import is_invisible
from lessonkit.pages.scan import DIRECTIVES, CodeSpans, Lines, code_spans
from lessonkit.pages.state import PageState

# A directive escaped at the start of a line: it shows as text (as the expanded line shows it, unescaped).
ESCAPED_DIRECTIVE_RE = re.compile(
    r"""^[ \t]*\\\{\{[ \t]*(?P<word>""" + "|".join(DIRECTIVES) + r""")\b""")
_SHOWN_DIRECTIVE_RE = re.compile(
    r"""^[ \t]*\{\{[ \t]*(?:""" + "|".join(DIRECTIVES) + r""")\b""", re.MULTILINE)
REFERENCE_FOLDER = "reference"  # docs/reference/: pages that show directives as text on purpose
# "RACECHECK SUMMARY" or "ERROR SUMMARY", as a page may space it: a mention of a sanitizer's summary.
SUMMARY_MENTION_RE = re.compile(
    r"""\b(?P<tool>racecheck|error)(?:[\s_-]|&nbsp;|&\#0*160;|&\#x0*a0;)*summary\b""", re.IGNORECASE | re.VERBOSE)

CHAR_REF_RE = re.compile(r"""&(?:\#[xX][0-9a-fA-F]{1,6}|\#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});""")
# Everything visible() treats specially, tried in this order at each place; the rest is plain text.
# A backtick is a mark unless a code span opens there (CodeSpans.opened).
# An image `![ALT](TARGET)` (ALT up to the first ']'), a link's '[' (when its ']' is followed by a
# target) and a link's `](TARGET)` start where _TOKEN_RE finds `![`, `[` or `](`, and are read by
# _Links: searched from each '[' (as `!\[[^\]]*\]\([^()]*\)` would be), a line of a million '['
# takes hours.
_TOKEN_RE = re.compile(
    rf"""(?P<image>!\[)
      | (?P<link>\[|\]\()
      | (?P<tag><[^<>]*>)
      | (?P<mark>[*_`\\])
      | (?P<ref>{CHAR_REF_RE.pattern})
      | (?P<other>[^\x00-\x7f])""",
    re.VERBOSE)
_TOKEN_NO_LINK_RE = re.compile(_TOKEN_RE.pattern.replace("(?P<image>!\\[)", "(?!)").replace(
    "(?P<link>\\[|\\]\\()", "(?!)"), re.VERBOSE)
_TOKEN_NO_LINK_START_RE = re.compile(r"""[<*_`\\&]|[^\x00-\x7f]""")  # where one of those may start
# Tags that end a cell, a line or a block: a reader sees the text on either side apart.
_BREAKING_TAG_RE = re.compile(r"""</?(?:br|td|th|tr|p|div|li|dt|dd|h[1-6]|hr|table|pre|blockquote)\b""", re.IGNORECASE)


def visible(text: str) -> tuple[str, list[int]]:
    """The text a reader sees of a line (markup dropped, references decoded, code spans as typed),
    and each character's column."""
    where: list[int] = []
    return _visible(text, where), where


def has_markup(text: str) -> bool:
    """Whether visible() reads anything in `text` (if not, the text is what a reader sees)."""
    return _TOKEN_RE.search(text) is not None


def visible_text(text: str) -> str:
    """visible(text)'s text alone (no columns worked out)."""
    return _visible(text, None)


_TARGET_RE = re.compile(r"""[^()]*\)""")


class _Links:
    """Links and images as the forms `!\\[[^\\]]*\\]\\([^()]*\\)`, `\\[(?=[^\\]]*\\]\\([^()]*\\))` and
    `\\]\\([^()]*\\)` read them, with each ']' and each target found once for every '[' before it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._close = (len(text) + 1, -1)  # a place searched from, and the first ']' at or after it
        self._targets: dict[int, int] = {}  # a ']' followed by '(': the end of its target, or -1

    def target(self, close: int) -> int:
        """The end of `](TARGET)` at `close`, or -1."""
        if close not in self._targets:
            m = _TARGET_RE.match(self.text, close + 2) if self.text.startswith("](", close) else None
            self._targets[close] = m.end() if m else -1
        return self._targets[close]

    def next_token(self, at: int, failed: str | None) -> re.Match[str] | None:
        """The next token from `at` on, after a '[' or '![' (`failed`) that opens no link or image
        before `at`: no '[' before the same ']' opens one either, so they are passed over at once."""
        searched, close = self._close
        if failed != "image" and failed != "link" or self.text[at - 1] != "[" or searched > at:
            return _TOKEN_RE.search(self.text, at)
        until = len(self.text) if close == -1 else close  # no '[' before it opens a link or an image
        start = _TOKEN_NO_LINK_START_RE.search(self.text, at, until)
        while start is not None:  # a token that starts before `until` (it may end after)
            m = _TOKEN_NO_LINK_RE.match(self.text, start.start())
            if m is not None:
                return m
            start = _TOKEN_NO_LINK_START_RE.search(self.text, start.start() + 1, until)
        return _TOKEN_RE.search(self.text, until)

    def after(self, at: int) -> int:
        """The end of `](TARGET)` at the first ']' from `at` on, or -1."""
        searched, close = self._close
        if not (searched <= at and (close == -1 or close >= at)):
            close = self.text.find("]", at)
            self._close = (at, close)
        return -1 if close == -1 else self.target(close)


def _visible(text: str, where: list[int] | None) -> str:
    shown: list[str] = []
    i = 0  # the end of the last token: the plain text from here on is shown as it is
    ticks = CodeSpans(text) if "`" in text else None
    links = _Links(text) if "[" in text or "](" in text else None
    m = _TOKEN_RE.search(text)
    while m is not None:
        kind, end = m.lastgroup, m.end()
        if links is not None and kind in ("image", "link"):
            if kind == "link" and m.group() == "[":
                found = links.after(m.start() + 1)
                end = m.end() if found != -1 else -1  # the '[' alone: its ']' and target follow
            else:
                end = links.after(m.start() + 2) if kind == "image" else links.target(m.start())
            if end == -1:  # not a link or an image: shown as typed
                m = links.next_token(m.start() + 1, kind)
                continue
        if m.start() > i:  # plain text up to the token, in one piece
            shown.append(text[i:m.start()])
            if where is not None:
                where.extend(range(i, m.start()))
        i = end
        at: int | range | None = None
        if ticks is not None and m.group() == "`":
            code = ticks.opened(m.start())
            if code is None:  # no span opens in the rest of the run: each backtick is a mark
                i = ticks.run_end(m.start())
            else:  # the backticks before the span's are marks; the span shows its text as typed
                start, i, width = code
                shown.append(text[start + width:i - width])
                at = range(start + width, i - width)
        elif kind == "ref":
            char = html.unescape(m.group())
            if len(char) == 1 and not is_invisible(char):
                shown.append(char)
                at = m.start()
        elif kind == "tag" and _BREAKING_TAG_RE.match(m.group()):
            shown.append(" ")
            at = m.start()
        elif kind == "other" and not is_invisible(m.group()):
            shown.append(m.group())
            at = m.start()
        if where is not None and at is not None:
            if isinstance(at, range):
                where.extend(at)
            else:
                where.append(at)
        m = _TOKEN_RE.search(text, i)
    if i < len(text):
        shown.append(text[i:])
        if where is not None:
            where.extend(range(i, len(text)))
    return "".join(shown)


# -- tables written in HTML ---------------------------------------------------------------------

# A table written in HTML: its labels are read by no rule (lessonkit.pages.tablerules reads a Markdown
# table's). What hides, styles or scripts text, and comments, are read on the rendered page
# (lessonkit.pages.readertext), where they do what they do.
_HTML_TABLE_RE = re.compile(r"""<\s*(?:table|tr|td|th)\b""", re.IGNORECASE)


class _InCode:
    """Whether a column of a line lies inside a backtick code span, which shows its text literally
    (the line's spans found once, at the first question)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._spans: list[tuple[int, int]] | None = None

    def span(self, at: int) -> tuple[int, int] | None:
        """The span holding column `at` (not on its opening backtick), or None."""
        if self._spans is None:
            self._spans = code_spans(self.text)
        k = bisect.bisect_left(self._spans, (at,)) - 1
        return self._spans[k] if k >= 0 and at < self._spans[k][1] else None


def check_html_tables(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """No table written in HTML outside code: its labels would be bound to no claim."""
    for i in out.find(_HTML_TABLE_RE):
        line = out[i]
        if in_fence[i] or line.generated:
            continue
        code = _InCode(line.text)
        m = next((m for m in _HTML_TABLE_RE.finditer(line.text) if not code.span(m.start())), None)
        if m is not None:
            page.error(line.src, f"{m.group().strip()!r}: an HTML table's labels are not bound to its claims; "
                       "write the table in Markdown")


def is_reference_page(path: str) -> bool:
    """Whether page `path` (as messages name it, e.g. docs/reference/checking.md) is a reference page."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return REFERENCE_FOLDER in parts[:-1]


def check_escaped_directives(page: PageState, out: Lines, in_fence: list[bool], markdown: str) -> None:
    """A warning for each directive escaped at the start of a line outside code blocks, except on a
    reference page (which shows directives as text on purpose). The expanded line shows the directive
    unescaped; its source line (`markdown`'s) has the backslash."""
    if is_reference_page(page.path):
        return
    source: list[str] | None = None
    for i in out.find(_SHOWN_DIRECTIVE_RE):
        if in_fence[i]:
            continue
        source = markdown.split("\n") if source is None else source
        index = out.srcs[i]
        text = source[index]
        found = ESCAPED_DIRECTIVE_RE.match(text)
        if found:
            shown = text.strip()
            shown = shown if len(shown) <= 60 else shown[:59] + "…"
            page.warn(index, f"'{shown}' is escaped and shows as text; remove the backslash to expand it "
                      f"(\\{{{{ writes literal braces: the {found.group('word')} directive is not run)")
