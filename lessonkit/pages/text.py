"""What a reader sees against what the checks read.

Hidden text. What the checks read must be what a reader sees: no invisible characters (a soft
hyphen or a zero-width space splits "ERROR SUMMARY" for the checks, not for the eye), no
character reference that spells a letter or digit (`&#82;`), no claim inside an HTML comment
(checked, never shown), and no comment between two stretches of text on one line.

Typed tool output. A code block may not type compute-sanitizer's report lines by hand (its
`=========` prefix, "Race reported between", "Potential RAW hazard", "Barrier error
detected"): recorded output comes in through `{{ transcript RUN }}`. A summary line is a quote,
held to the recordings by the summary rule.

Escaped directives. `\\{{` writes literal braces, so `\\{{ region ... }}` at the start of a line
shows the directive's text instead of expanding it; only a page about the directives themselves
(under docs/reference/) means that, so on any other page it is a warning: an author who copied
a directive from the Markdown source of "Writing a lesson" would otherwise publish it unchecked.

`visible` gives the text a reader sees of a line, with each character's column on the page:
the summary rule uses it to refuse a quote that formatting splits (lessonkit.pages.rules).
"""

from __future__ import annotations

import html
import re
import unicodedata
from pathlib import PurePosixPath

from lessonkit.pages.scan import OutLine
from lessonkit.pages.state import PageState

# A directive escaped at the start of a line: it shows as text.
ESCAPED_DIRECTIVE_RE = re.compile(
    r"""^[ \t]*\\\{\{[ \t]*(?P<word>region|transcript|evidence|provenance|commands|table)\b""")
_RAW_FENCE_RE = re.compile(r"""^[ \t]*(?P<fence>`{3,}|~{3,})""")
REFERENCE_FOLDER = "reference"  # docs/reference/: pages that show directives as text on purpose
# "RACECHECK SUMMARY" or "ERROR SUMMARY", as a page may space it: a mention of a sanitizer's summary.
SUMMARY_MENTION_RE = re.compile(
    r"""\b(?P<tool>racecheck|error)(?:[\s_-]|&nbsp;|&\#0*160;|&\#x0*a0;)*summary\b""", re.IGNORECASE | re.VERBOSE)

CHAR_REF_RE = re.compile(r"""&(?:\#[xX][0-9a-fA-F]{1,6}|\#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});""")
_CODE_SPAN_RE = re.compile(r"""(?P<ticks>`+)(?!`).*?(?<!`)(?P=ticks)(?!`)""")
# Everything visible() treats specially, tried in this order at each place; the rest is plain text.
_TOKEN_RE = re.compile(
    rf"""(?P<code>{_CODE_SPAN_RE.pattern})
      | (?P<image>!\[[^\]]*\]\([^()]*\))
      | (?P<link>\[(?=[^\]]*\]\([^()]*\))|\]\([^()]*\))
      | (?P<tag><[^<>]*>)
      | (?P<mark>[*_`\\])
      | (?P<ref>{CHAR_REF_RE.pattern})
      | (?P<other>[^\x00-\x7f])""",
    re.VERBOSE)
# Tags that end a cell, a line or a block: a reader sees the text on either side apart.
_BREAKING_TAG_RE = re.compile(r"""</?(?:br|td|th|tr|p|div|li|dt|dd|h[1-6]|hr|table|pre|blockquote)\b""", re.IGNORECASE)


def visible(text: str) -> tuple[str, list[int]]:
    """The text a reader sees of a line (markup dropped, references decoded, code spans as typed),
    and each character's column."""
    where: list[int] = []
    return _visible(text, where), where


def visible_text(text: str) -> str:
    """visible(text)'s text alone (no columns worked out)."""
    return _visible(text, None)


def _visible(text: str, where: list[int] | None) -> str:
    shown: list[str] = []
    i = 0
    for m in _TOKEN_RE.finditer(text):
        if m.start() > i:  # plain text up to the token, in one piece
            shown.append(text[i:m.start()])
            if where is not None:
                where.extend(range(i, m.start()))
        i = m.end()
        kind = m.lastgroup
        at: int | range | None = None
        if kind == "code":  # a code span shows its text as typed
            ticks = len(m.group("ticks"))
            shown.append(text[m.start() + ticks:m.end() - ticks])
            at = range(m.start() + ticks, m.end() - ticks)
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
    if i < len(text):
        shown.append(text[i:])
        if where is not None:
            where.extend(range(i, len(text)))
    return "".join(shown)


# -- hidden text ---------------------------------------------------------------------------------

# Invisible characters outside Unicode's format category (Cf): fillers and a combining joiner.
_INVISIBLE_EXTRA = frozenset("\u034f\u115f\u1160\u3164\uffa0")
_HTML_SYNTAX = frozenset("&<>\"' ")  # what a page may need to write as a reference
# Markup that hides text from a reader, or styles or scripts the page: the checks read the text.
_HIDING_RE = re.compile(
    r"""(?P<table><\s*(?:table|tr|td|th)\b)
      | <\s*(?:style|script|template|noscript|iframe|object|embed)\b
      | <[^>]*\s(?:hidden|aria-hidden|style)(?=[\s=/>])
      | (?<!\{)\{:?[^{}]*[\s:](?:hidden|style)(?=[\s}=])""",
    re.VERBOSE | re.IGNORECASE)
_COMMENT_RE = re.compile(r"""<!--|-->""")


def _in_code_span(text: str, at: int) -> bool:
    """Whether column `at` lies inside a backtick code span, which shows its text literally."""
    return any(m.start() < at < m.end() for m in _CODE_SPAN_RE.finditer(text))


def check_hidden_text(page: PageState, out: list[OutLine], in_fence: list[bool]) -> None:
    """No text that the checks read differently from a reader: see the module's docstring."""
    in_comment: tuple[int, int] | None = None  # (line, column) where an open comment began
    for i, line in enumerate(out):
        if line.generated:
            continue
        _invisible(page, line, first_of_file=i == 0)
        _mixed_scripts(page, line)
        if in_fence[i] and in_comment is None:
            continue
        if not in_fence[i]:
            _char_refs(page, line)
            _hiding(page, line)
        in_comment = _comments(page, line, in_comment)


def _invisible(page: PageState, line: OutLine, first_of_file: bool) -> None:
    if line.text.isascii():
        return  # every invisible character is outside ASCII: the common line costs one pass in C
    seen: set[str] = set()
    for col, c in enumerate(line.text):
        if c in seen or not is_invisible(c):
            continue
        if c == "\ufeff" and first_of_file and col == 0:
            continue  # a byte-order mark
        if c == "\u200d" and not _ascii_beside(line.text, col):
            continue  # a zero-width joiner inside an emoji sequence
        seen.add(c)
        name = unicodedata.name(c, "an invisible character")
        page.error(line.src, f"invisible character U+{ord(c):04X} ({name}) at column {col + 1}: a reader does "
                   "not see it, and it changes the words and figures the checks read; remove it")


_WORD_RE = re.compile(r"""\w+""")
# Cyrillic and Greek letters that look like Latin ones (after Unicode's confusables list).
_LOOKALIKES = frozenset("\u0410\u0412\u0421\u0415\u041d\u0406\u0408\u041a\u041c\u041e\u0420\u0405\u0422"
                        "\u0425\u04ae\u0430\u0441\u0435\u0456\u0458\u043e\u0440\u0455\u0445\u0443\u04bb"
                        "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5"
                        "\u03a7\u03bf\u03b9\u03ba\u03bd\u03c1\u03c5")


def _mixed_scripts(page: PageState, line: OutLine) -> None:
    """A Latin word with a Cyrillic or Greek look-alike letter in it ('RAСECHECK' with a Cyrillic С)."""
    if line.text.isascii():
        return
    for m in _WORD_RE.finditer(line.text):
        word = m.group()
        odd = next((c for c in word if c in _LOOKALIKES), None)
        if odd is None or not any(c.isascii() and c.isalpha() for c in word):
            continue
        page.error(line.src, f"the word {word!r} hides {odd!r} ({unicodedata.name(odd)}) among Latin letters; "
                   "a reader cannot tell them apart, and the checks read another word; spell it in Latin letters")
        return


def _ascii_beside(text: str, col: int) -> bool:
    return any(0 <= k < len(text) and text[k].isascii() and text[k].isalnum() for k in (col - 1, col + 1))


def _char_refs(page: PageState, line: OutLine) -> None:
    if "&" not in line.text:
        return  # every reference starts with one
    for m in CHAR_REF_RE.finditer(line.text):
        char = _refused_char(m.group())
        if char is None or _in_code_span(line.text, m.start()):
            continue  # a reference a page needs, or one shown as typed
        if is_invisible(char):
            page.error(line.src, f"character reference {m.group()!r} writes an invisible character "
                       f"(U+{ord(char):04X}); a reader does not see it, and it changes the words and figures the "
                       "checks read; remove it")
        else:
            page.error(line.src, f"character reference {m.group()!r} spells {char!r}; write {char!r} "
                       "itself, so that the checks read the text a reader sees")


def refused_ref(ref: str) -> bool:
    """Whether a character reference writes an invisible character or an ASCII one a page can type."""
    return _refused_char(ref) is not None


def _refused_char(ref: str) -> str | None:
    """The character a refused reference writes, or None for a reference a page may use."""
    char = html.unescape(ref)
    if char == ref or len(char) != 1:
        return None  # not a reference HTML knows
    if is_invisible(char) or (char.isascii() and char.isprintable() and char not in _HTML_SYNTAX):
        return char
    return None


def _hiding(page: PageState, line: OutLine) -> None:
    if "<" not in line.text and "{" not in line.text:
        return  # every form _HIDING_RE knows starts with one
    for m in _HIDING_RE.finditer(line.text):
        if not _in_code_span(line.text, m.start()):
            if m.group("table"):
                page.error(line.src, f"{m.group().strip()!r}: an HTML table's labels are not bound to its claims; "
                           "write the table in Markdown")
            else:
                page.error(line.src, f"{m.group().strip()!r} hides, styles or scripts text on the page, so a "
                           "reader and the checks would read different things; remove it (the site's stylesheet "
                           "and script are in docs/assets/)")
            return


def is_invisible(c: str) -> bool:
    return c in _INVISIBLE_EXTRA or unicodedata.category(c) == "Cf"


def _comments(page: PageState, line: OutLine, open_at: tuple[int, int] | None) -> tuple[int, int] | None:
    """Report claims inside comments and comments between text on one line; the comment still open."""
    text = line.text
    if open_at is None and "<!--" not in text and "-->" not in text:
        return None
    start = 0 if open_at is not None else None
    for m in _COMMENT_RE.finditer(text):
        if _in_code_span(text, m.start()):
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


# -- the core's own marks ------------------------------------------------------------------------

# The classes and attributes the core gives what it produced (lessonkit.pages.render): the rendered-page
# audit trusts them, so a page's own text may not write them (a hand-typed span marked as a claim's
# value, a code block marked as a region, a block marked as a transcript).
_RESERVED_RE = re.compile(r"""(?<![\w-])lk-(?:v|region|commands|transcript[\w-]*|recordings?|recording-file|evidence)(?![\w-])
                              |\bdata-lk-[\w-]*""", re.VERBOSE)


def check_reserved_marks(page: PageState, out: list[OutLine], in_fence: list[bool]) -> None:
    """No class or attribute of the core's (`lk-v`, `lk-region`, `data-lk-slot`, ...) in a page's own
    markup: in raw HTML, an attribute list, or a fence's info string (a code span shows it as typed)."""
    for i, line in enumerate(out):
        if line.generated or "lk-" not in line.text:
            continue
        if in_fence[i] and not _FENCE_LINE_RE.match(line.text):
            continue  # inside a code block: shown as typed
        for m in _RESERVED_RE.finditer(line.text):
            if in_fence[i] or not _in_code_span(line.text, m.start()):
                page.error(line.src, f"{m.group()!r} is a mark of what lessonkit produced from the evidence; a "
                           "page's own markup may not use it (the audit of the rendered page trusts it); remove "
                           "it, or show it in a code span")
                break


_FENCE_LINE_RE = re.compile(r"""^[ \t]*(?:`{3,}|~{3,})""")


# -- typed tool output ---------------------------------------------------------------------------

_TOOL_LINE_RE = re.compile(
    r"""^\s*(?:={6,}|.*\b(?:Race\s+reported\s+between|Potential\s+(?:RAW|WAR|WAW)\s+hazard
                       |Barrier\s+error\s+detected))""",
    re.VERBOSE | re.IGNORECASE)
# The tool's prefix with text after it: tool output wherever it stands (an indented block, <pre>).
_PREFIXED_RE = re.compile(r"""^\s*={6,}[ \t]+\S""")


def check_typed_output(page: PageState, out: list[OutLine], in_fence: list[bool]) -> None:
    """No code block that types a sanitizer's report lines (one error a block), and no line outside a
    fence that starts with the tool's prefix (an indented code block, a raw <pre>)."""
    reported = False
    for i, line in enumerate(out):
        if i == 0 or in_fence[i] != in_fence[i - 1] or not in_fence[i]:
            reported = False  # a new block, or a line outside any fence
        if in_fence[i]:
            typed = _TOOL_LINE_RE.match(line.text)
        else:  # the prefix is six '=' or more, however tags split them
            typed = line.text.count("=") >= 6 and _PREFIXED_RE.match(visible_text(line.text))
        if reported or line.generated or not typed or SUMMARY_MENTION_RE.search(line.text):
            continue  # a summary line is a quote: check_summaries holds it to the recordings
        reported = True
        page.error(line.src, f"a code block types compute-sanitizer output by hand ({line.text.strip()[:40]!r}); "
                   "show what a run printed with {{ transcript RUN }}, or quote its summary line in the text")


def is_reference_page(path: str) -> bool:
    """Whether page `path` (as messages name it, e.g. docs/reference/checking.md) is a reference page."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return REFERENCE_FOLDER in parts[:-1]


def check_escaped_directives(page: PageState, markdown: str) -> None:
    """A warning for each directive escaped at the start of a line outside code blocks, except on a
    reference page (which shows directives as text on purpose)."""
    if is_reference_page(page.path):
        return
    fence = ""
    for index, text in enumerate(markdown.split("\n")):
        m = _RAW_FENCE_RE.match(text)
        if fence:
            if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                    and not text.strip().strip(fence[0]):
                fence = ""
            continue
        if m:
            fence = m.group("fence")
            continue
        found = ESCAPED_DIRECTIVE_RE.match(text)
        if found:
            shown = text.strip()
            shown = shown if len(shown) <= 60 else shown[:59] + "…"
            page.warn(index, f"'{shown}' is escaped and shows as text; remove the backslash to expand it "
                      f"(\\{{{{ writes literal braces: the {found.group('word')} directive is not run)")
