"""What a reader sees against what the checks read.

Hidden text. What the checks read must be what a reader sees: no claim inside an HTML comment
(checked, never shown), no comment between two stretches of text on one line, no markup that
hides text. (Invisible characters and words that mix look-alike scripts are refused on the
rendered page, which reads character references decoded, as a reader does; so is typed tool
output: lessonkit.pages.audit.)

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
from lessonkit.pages.scan import DIRECTIVES, CodeSpans, Lines, OutLine, code_spans
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


# -- hidden text ---------------------------------------------------------------------------------

# Markup that hides text from a reader, or styles or scripts the page: the checks read the text.
_HIDING_RE = re.compile(
    r"""(?P<table><\s*(?:table|tr|td|th)\b)
      | <\s*(?:style|script|template|noscript|iframe|object|embed)\b
      | (?<!\{)\{:?[^{}]*[\s:](?:hidden|style)(?=[\s}=])""",
    re.VERBOSE | re.IGNORECASE)
# A tag with an attribute that hides or styles text. Tried only at the first '<' (outside code) after
# each '>': from a later '<' before the same '>' it reads less of the same text, so it matches only
# where the first does (tried at every '<', a line of a million '<' takes hours).
_HIDING_ATTRIBUTE_RE = re.compile(r"""<[^>]*\s(?:hidden|aria-hidden|style)(?=[\s=/>])""", re.IGNORECASE)
_COMMENT_RE = re.compile(r"""<!--|-->""")


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


# What a line holds when check_hidden_text has something to read in it (or a claim, inside a comment):
# a character outside ASCII, a reference, a comment mark, a tag _HIDING_RE names, or the attribute words.
_HIDDEN_TEXT_LINE_RE = re.compile(
    r"""[^\x00-\x7f]|&|<!--|-->|hidden|style
      |<[^\S\n]*(?:table|tr|td|th|script|template|noscript|iframe|object|embed)""", re.VERBOSE)
_HIDDEN_TEXT_LINE_ANY_CASE_RE = re.compile(_HIDDEN_TEXT_LINE_RE.pattern, re.VERBOSE | re.IGNORECASE)


def check_hidden_text(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """No text that the checks read differently from a reader: see the module's docstring."""
    in_comment: tuple[int, int] | None = None  # (line, column) where an open comment began
    with_spans = out.with_spans()  # a claim may stand inside a comment that an earlier line opened
    found = out.find_words(_HIDDEN_TEXT_LINE_RE, _HIDDEN_TEXT_LINE_ANY_CASE_RE)
    lines = sorted(set(found).union(with_spans)) if with_spans else list(found)
    unclosed = _never_closed(out, lines, in_fence)
    if unclosed is not None:  # one error, its cause, instead of one for each claim the comment hides
        page.error(unclosed[0], "an HTML comment '<!--' opened here is never closed, so everything after it is "
                   "hidden from the reader while the checks still read it; close it with '-->' where the note ends")
    for i in lines:
        line = out[i]
        if line.generated:
            continue
        if in_fence[i] and in_comment is None:
            continue
        if not in_fence[i]:
            _hiding(page, line)
        if unclosed is not None and line.src >= unclosed[0]:
            continue  # inside the comment that never closes: said once, above
        in_comment = _comments(page, line, in_comment)


def _never_closed(out: Lines, lines: list[int], in_fence: list[bool]) -> tuple[int, int] | None:
    """(line, column) of an HTML comment the page opens and never closes, outside code; None if every one closes."""
    open_at: tuple[int, int] | None = None
    for i in lines:
        line = out[i]
        if line.generated or (in_fence[i] and open_at is None) or ("<!--" not in line.text and "-->" not in line.text):
            continue
        code = _InCode(line.text)
        for m in _COMMENT_RE.finditer(line.text):
            if code.span(m.start()):
                continue
            if m.group() == "<!--" and open_at is None:
                open_at = (line.src, m.start())
            elif m.group() == "-->":
                open_at = None
    return open_at


def _hiding(page: PageState, line: OutLine) -> None:
    """The first markup outside code spans that hides, styles or scripts text, or an HTML table."""
    text = line.text
    if "<" not in text and "{" not in text:
        return  # every form _HIDING_RE knows starts with one
    code = _InCode(text)
    m = _HIDING_RE.search(text)
    while m is not None and code.span(m.start()):
        m = _HIDING_RE.search(text, m.start() + 1)
    attribute = None
    at = text.find("<")
    while at != -1 and (m is None or at < m.start()):
        span = code.span(at)
        if span is not None:
            at = text.find("<", span[1])
            continue
        attribute = _HIDING_ATTRIBUTE_RE.match(text, at)
        close = text.find(">", at)
        if attribute is not None or close == -1:
            break
        at = text.find("<", close)
    if attribute is not None and (m is None or attribute.start() < m.start()):
        m = attribute
    if m is None:
        return
    if m.re is _HIDING_RE and m.group("table"):
        page.error(line.src, f"{m.group().strip()!r}: an HTML table's labels are not bound to its claims; "
                   "write the table in Markdown")
    else:
        page.error(line.src, f"{m.group().strip()!r} hides, styles or scripts text on the page, so a "
                   "reader and the checks would read different things; remove it (the site's stylesheet "
                   "and script are in docs/assets/)")


def _comments(page: PageState, line: OutLine, open_at: tuple[int, int] | None) -> tuple[int, int] | None:
    """Report claims inside comments and comments between text on one line; the comment still open."""
    text = line.text
    if open_at is None and "<!--" not in text and "-->" not in text:
        return None
    start = 0 if open_at is not None else None
    code = _InCode(text)
    for m in _COMMENT_RE.finditer(text):
        if code.span(m.start()):
            continue  # shown as typed
        if m.group() == "<!--" and start is None:
            start = m.start()
            open_at = (line.src, m.start())
        elif m.group() == "-->" and start is not None:
            _one_comment(page, line, start, m.end(), whole_line_before=open_at is not None and open_at[0] != line.src)
            start, open_at = None, None
    if start is not None:
        _one_comment(page, line, start, len(text), whole_line_before=False, still_open=True)
    return open_at


def _one_comment(page: PageState, line: OutLine, start: int, end: int, whole_line_before: bool,
                 still_open: bool = False) -> None:
    if any(s.start < end and s.end > start for s in line.spans):
        page.error(line.src, "a claim inside an HTML comment is checked but never shown, while the text "
                   "beside the comment is shown unchecked; take the claim out of the comment, or delete it")
        return
    before = line.text[:start].strip() if not whole_line_before else ""
    after = line.text[end:].strip() if not still_open else ""
    if before and after:
        page.error(line.src, f"an HTML comment between {before[-12:]!r} and {after[:12]!r} joins them for "
                   "a reader but not for the checks; put the comment on a line of its own")


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
