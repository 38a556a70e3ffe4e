"""The text a reader sees of a line of Markdown (`visible_text`), for the source map back from the
rendered page to the line an error names (lessonkit.pages.sourcemap). What the page shows is read
from its HTML (lessonkit.pages.readertext).
"""

from __future__ import annotations

import html
import re

from lessonkit.pages.fold import is_invisible
from lessonkit.pages.scan import CodeSpans

CHAR_REF_RE = re.compile(r"""&(?:\#[xX][0-9a-fA-F]{1,6}|\#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});""")
# Everything visible_text treats specially, tried in this order at each place; the rest is plain text.
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


def visible_text(text: str) -> str:
    """The text a reader sees of a line: markup dropped, references decoded, code spans as typed."""
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
        shown.append(text[i:m.start()])  # plain text up to the token, in one piece
        i = end
        if ticks is not None and m.group() == "`":
            code = ticks.opened(m.start())
            if code is None:  # no span opens in the rest of the run: each backtick is a mark
                i = ticks.run_end(m.start())
            else:  # the backticks before the span's are marks; the span shows its text as typed
                start, i, width = code
                shown.append(text[start + width:i - width])
        elif kind == "ref":
            char = html.unescape(m.group())
            if len(char) == 1 and not is_invisible(char):
                shown.append(char)
        elif kind == "tag" and _BREAKING_TAG_RE.match(m.group()):
            shown.append(" ")
        elif kind == "other" and not is_invisible(m.group()):
            shown.append(m.group())
        m = _TOKEN_RE.search(text, i)
    shown.append(text[i:])
    return "".join(shown)


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
