"""The text a reader sees on a rendered page, read from its HTML (the standard library's parser).

`read_html` gives the page's visible text as lines, folded (lessonkit.pages.fold.shown): element text,
SVG text, and the alt, title, aria-label and aria-description text of any element; nothing inside `<script>`,
`<style>` or `<template>`, nor comments. A line ends where a block ends (a paragraph, a list
item, a table cell, a heading, a `<br>`, a line of a code block), so a tool's report line stays
one line whatever markup carried it; a table row is one line, its cells joined by " | ".

Each line says which of its characters the core produced from the evidence, and what backs them:
those between the marks the core wrote around a claim's value, a generated figure or cell, a region's
code block, the commands block, a transcript block or the provenance tables (lessonkit.pages.marks),
whatever markup carries them, an attribute's text included. No class or attribute is trusted. A mark
that is not the core's (a number with no record, one used twice, a closing mark with nothing open, one
left open) is listed in `ReaderText.refused`, and so is what the browser shows otherwise than this
model reads it, outside the core's marks: an element that hides, styles or scripts text (`<style>`,
`<script>`, `<template>`, `<noscript>`; a `hidden`, `aria-hidden`
or `style` attribute), a claim inside an HTML comment (its marks are never shown), and a comment
never closed (the browser hides the rest of the page), and a claim's value in a table cell the page wrote
(its labels would be bound to nothing; a table drawn from the evidence marks its own cells). A filled slot is read like the rest of the page: a
diagram's text is not produced, only its claims' values are. Text an element marked `data-lk-at="FILE:LINE"` holds (a
diagram's, lessonkit.pages.diagrams) says where it is written, so that an error names that line.
Code blocks are listed too, with their language, their title and whether a region made them.

An ordered list's item starts with the number the browser draws for it (`4. `: its place in the list,
from the list's `start` and an item's `value`), produced by the list's structure, so a reader's
numbers are in the model as drawn. A link that leads to an element of this page (`#ID`) inside a
numbered item records that item's number with the link's text (Line.items): "[Prediction 4](#p-stale)"
is checked against the item it opens (lessonkit.pages.audit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, NamedTuple

from lessonkit.pages.fold import shown
from lessonkit.pages.marks import CLOSE, DIAGRAM, VALUE, Mark, is_mark, opening, split
from lessonkit.pages.marks import strip as strip_marks

_SKIPPED = frozenset({"script", "style", "template", "noscript"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
                   "source", "track", "wbr"})
_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
                     "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
                     "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
                     "summary", "table", "tbody", "tfoot", "thead", "tr", "ul", "text", "svg",
                     "title", "desc"})
_ATTRIBUTES = ("alt", "title", "aria-label", "aria-description", "placeholder")
# Attributes whose text the browser shows in the page for some elements: a field's value, an option's label.
_SHOWN_BY = {"input": ("value",), "option": ("label",), "optgroup": ("label",)}
# The classes the core gives what it writes (lessonkit.pages.render, .published), which the site's
# stylesheet and script act on (a figure's tooltip, a recording loaded into its box), and its data-lk-*
# attributes: an element bearing one outside every mark is the page's own markup posing as the core's.
_CORE_CLASS_RE = re.compile(r"""lk-(?:v|region|commands|transcript[\w-]*|provenance|recordings?|recording-[\w-]+|evidence)""")
# An embedded document or a picture: the audit's own rule (lessonkit.pages.audit._UNREAD_RE).
_HIDING_TAGS = frozenset({"style", "script", "template", "noscript", "link", "meta", "base"})
# Elements whose content a browser shows as text, markup and all, where this parser reads markup (a
# comment in an <xmp>): their text is not what the model reads.
_RAW_TEXT_TAGS = frozenset({"xmp", "textarea", "plaintext", "listing", "noembed", "noframes"})
_RAW_TEXT = ("'<{}>' shows its content as raw text, markup and all, which the audit would read as markup; "
             "remove it (a code block shows text as typed)")
_HIDING_ATTRIBUTES = ("hidden", "aria-hidden", "style")
_HIDES = ("{!r} hides, styles or scripts text on the page, so a reader and the checks would read different "
          "things; remove it (the site's stylesheet and script are in docs/assets/)")
_COMMENT_CLAIM = ("a claim inside an HTML comment is checked but never shown, while the text beside the comment "
                  "is shown unchecked; take the claim out of the comment, or delete it")
_HAND_TABLE = ("a claim in a table written by hand: nothing binds the table's row labels and column headers to "
               "what the claim selects, so a label can name another row's records; draw the table from the "
               "evidence, {{ table … }}, or state the figure in a sentence")
_COMMENT_OPEN = ("an HTML comment '<!--' opened here is never closed, so everything after it is hidden from the "
                 "reader while the checks still read it; close it with '-->' where the note ends")
_CORE_MARK = ("{!r} is a mark of what lessonkit produced from the evidence; a page's own markup may not use it "
              "(the site's script and stylesheet act on it); remove it, or show it in a code span")
_COMMENT_RE = re.compile(r"""<!--.*?-->""", re.DOTALL)
_ALIGN_RE = re.compile(r"""text-align: (?:left|right|center);""")  # a Markdown table column's alignment
_AT = "data-lk-at"  # where an element's text is written, when not in the page (lessonkit.pages.diagrams)
# Spaces that group digits ("2 000"): shown as a plain space (fold.shown), written down where they stand;
# a browser does not collapse them with the white space around them.
_JOINING_SPACES = "\u00a0\u2007\u2009\u200a\u202f"
_SPACES_RE = re.compile(rf"""[^\S{_JOINING_SPACES}]+""")
_PLAIN_SPACES = str.maketrans(dict.fromkeys(_JOINING_SPACES, " "))


class ItemLink(NamedTuple):
    """A link's text (line.text[start:end]) that leads to `#target`, inside item `number` of a list whose
    markers are drawn in `style` (DECIMAL, or a letter or roman style)."""

    start: int
    end: int
    number: int
    style: str
    target: str


@dataclass
class Line:
    """One line of what a reader sees: its text, which stretches the core produced, where it stands."""

    text: str = ""
    produced: list[tuple[int, int]] = field(default_factory=list)
    code: int | None = None      # index into ReaderText.blocks when the line is in a code block
    attribute: str | None = None  # "alt", "title", "aria-label" or "aria-description" for an attribute's text
    folded: list[tuple[int, int]] = field(default_factory=list)  # stretches NFKC changed (look-alike forms)
    why: list[tuple[int, int, str]] = field(default_factory=list)  # produced stretches and what backs each
    code_ends: list[int] = field(default_factory=list)  # where an inline code element (`<code>`) ends
    origins: list[tuple[int, int, str]] = field(default_factory=list)  # stretches written elsewhere: FILE:LINE
    items: list[ItemLink] = field(default_factory=list)  # link texts that lead to a numbered list's item
    runs: list[tuple[int, int, tuple[tuple[str, str], ...]]] = field(default_factory=list)  # produced stretches' runs
    joints: list[int] = field(default_factory=list)  # columns where a space that groups digits was written
    records: list[tuple[int, int, Mark]] = field(default_factory=list)  # each produced stretch: its innermost record

    def origin(self, at: int) -> tuple[str, int] | None:
        """(file, line) where the text at `at` is written, when not in the page (a diagram's SVG)."""
        where = next((w for a, b, w in self.origins if a <= at < b), None)
        if where is None:
            return None
        file, _, line = where.rpartition(":")
        return (file, int(line)) if file and line.isdigit() else None

    def backing(self, start: int, end: int) -> str | None:
        """What backs the produced text[start:end] (its element's data-lk-why), if it says."""
        return next((w for a, b, w in self.why if a <= start and end <= b), None)

    def folded_within(self, start: int, end: int) -> bool:
        """Whether any of text[start:end] was written in characters NFKC folded (𝐑 for R, ２ for 2)."""
        return any(a < end and start < b for a, b in self.folded)

    def item(self, start: int, end: int) -> ItemLink | None:
        """The link to a numbered item whose text holds text[start:end], if any."""
        return next((i for i in self.items if i.start <= start and end <= i.end), None)

    def written_on(self, at: int) -> int | None:
        """The page line of the claim whose produced text holds column `at`, if one claim wrote it."""
        return next((r.line for a, b, r in self.records if a <= at < b and r.line is not None), None)

    def is_produced(self, start: int, end: int) -> bool:
        """Whether text[start:end] lies inside one produced stretch."""
        return any(a <= start and end <= b for a, b in self.produced)


@dataclass
class CodeBlock:
    """A code block as shown: its language (from `language-X`), its title, whether a region made it."""

    language: str
    title: str = ""
    produced: bool = False
    first_line: int = 0  # index into ReaderText.lines of its first line


@dataclass
class ReaderText:
    """Every line a reader sees, and the page's code blocks."""

    lines: list[Line] = field(default_factory=list)
    blocks: list[CodeBlock] = field(default_factory=list)
    # line, column, message, and the markup that caused it as the page's source writes it: see the module
    refused: list[tuple[Line, int, str, str]] = field(default_factory=list)


@dataclass
class _Open:
    tag: str
    skipped: bool
    block: int | None  # the code block this element opened, if any
    title: bool = False  # a code block's title (pymdownx.highlight's span.filename)
    at: str | None = None  # where what it holds is written (data-lk-at), when not in the page
    refused: bool = False  # a table the page wrote, refused for a claim in it


_FORGED = ("a character of the range lessonkit marks its produced text with (U+F0000 to U+FFFFF) that lessonkit "
           "did not write ({}); remove it")
ITEM_WHY = "generated by the browser: the number it draws for item {} of its ordered list"
_HTML_INT_RE = re.compile(r"""^[ \t\n\f\r]*([+-]?[0-9]{1,9})""")  # HTML's rules for parsing an integer
DECIMAL = "decimal"


def _html_int(text: str) -> int | None:
    """An attribute's integer as a browser reads it (leading digits; '3x' is 3), or None."""
    m = _HTML_INT_RE.match(text)
    return int(m.group(1)) if m else None


def _style(values: dict[str, str], nested: int) -> str:
    """How the theme draws an ordered list's markers (Material: decimal; nested in a list, lower-alpha,
    then lower-roman, upper-alpha, upper-roman), or as its `type` says."""
    kind = values.get("type")
    if kind is not None:
        return {"1": DECIMAL, "a": "lower-alpha", "A": "upper-alpha", "i": "lower-roman", "I": "upper-roman"}.get(
            kind.strip(), DECIMAL)
    return (DECIMAL, "lower-alpha", "lower-roman", "upper-alpha", "upper-roman")[min(nested, 4)]


# Roman numerals, the one table: a browser's lower-roman markers are written with it, and the audit
# reads "Prediction IV" with it.
_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))
_ROMAN_LETTERS = {digits: value for value, digits in _ROMAN if len(digits) == 1}


def _roman(n: int) -> str:
    out = ""
    for value, digits in _ROMAN:
        while n >= value:
            out, n = out + digits, n - value
    return out


def roman_value(text: str) -> int:
    """The number a run of Roman letters reads as ('IV': 4): a letter before a larger one counts
    negative."""
    values = [_ROMAN_LETTERS[c] for c in text.lower()]
    return sum(-v if k + 1 < len(values) and v < values[k + 1] else v for k, v in enumerate(values))


def marker(n: int, style: str) -> str:
    """The marker a browser draws for item number `n` in a list of `style` (without its dot)."""
    if style == DECIMAL or n < 1:
        return str(n)
    if style.endswith("alpha"):
        text = ""
        while n > 0:
            n, rest = divmod(n - 1, 26)
            text = chr(ord("a") + rest) + text
    else:
        text = _roman(n)
    return text.upper() if style.startswith("upper") else text


_FOREIGN = ("svg", "math")  # elements whose content a browser parses as SVG or MathML


def _note_folded(line: Line, text: str, raw: str) -> None:
    """`raw`, about to be appended to `line` as `text` (folded): a look-alike form is a folded stretch; a
    no-break space that groups digits (which a reader sees as a space) is a joint, where it stands."""
    start, plain = len(line.text), raw.translate(_PLAIN_SPACES)
    if text != plain:
        line.folded.append((start, start + len(text)))
    line.joints += [start + len(shown(raw[:k])) for k, c in enumerate(raw) if c != plain[k]]


class _Reader(HTMLParser):
    def __init__(self, records: list[Mark]) -> None:
        super().__init__(convert_charrefs=True)
        self.records = records
        self.open: list[int] = []  # the records whose marks are open here, outermost first
        self.seen: set[int] = set()
        self.out = ReaderText()
        self.stack: list[_Open] = []
        self.line = Line()
        self.lists: list[list | None] = []  # per open list: [the last item's number, style] for <ol>, None for <ul>
        self.numbers: list[tuple[int, str]] = []  # the numbered items open, outermost first: number, list style
        self.ids: dict[str, tuple[int, str]] = {}  # id -> (number, style) of the innermost numbered item holding it
        self.seen_ids: set[str] = set()  # every id so far: a link leads to the first element with its id
        self.links: list[tuple[Line, int, str]] = []  # open links to #ID: their line, where their text starts
        self.linked: list[tuple[Line, int, int, str]] = []  # closed ones: line, start, end, ID
        self.drawn: str | None = None  # the line's text while it holds only an item's number

    def _list_item(self, tag: str, values: dict[str, str]) -> None:
        """Keep count of ordered lists' items; start a numbered item's line with its number as drawn."""
        if tag in ("ol", "ul", "menu"):
            start = _html_int(values.get("start", "")) if tag == "ol" else None
            self.lists.append([(1 if start is None else start) - 1, _style(values, len(self.lists))]
                              if tag == "ol" and "reversed" not in values else None)
        elif tag == "li" and self.lists and self.lists[-1] is not None:
            counter = self.lists[-1]
            value = _html_int(values.get("value", ""))
            counter[0] = value if value is not None else counter[0] + 1
            self.numbers.append((counter[0], counter[1]))
            drawn = marker(counter[0], counter[1]) + "."
            at = len(self.line.text)
            self.line.produced.append((at, at + len(drawn)))
            self.line.why.append((at, at + len(drawn), ITEM_WHY.format(counter[0])))
            self.line.text += drawn + " "
            self.drawn = self.line.text
        ident = values.get("id")
        if ident and ident not in self.seen_ids:
            self.seen_ids.add(ident)
            if self.numbers:
                self.ids[ident] = self.numbers[-1]

    # -- the marks ----------------------------------------------------------------------------
    def _mark(self, char: str, line: Line, col: int, stack: list[int]) -> None:
        """Open or close a record's mark on `stack`; a mark that is not the core's goes to `forged`."""
        n = opening(char)
        if char == CLOSE:
            if stack:
                stack.pop()
            else:
                self.out.refused.append((line, col, _FORGED.format("a closing mark with nothing open"), char))
        elif n is None or n >= len(self.records) or n in self.seen:
            self.out.refused.append((line, col, _FORGED.format(f"mark {n} {'is used twice' if n in self.seen else 'has no record'}"), char))
        else:
            if not stack and self.records[n].kind == VALUE:
                self._hand_table(line, col)
            self.seen.add(n)
            stack.append(n)

    def _hand_table(self, line: Line, col: int) -> None:
        """A claim's value opens at `col`: refused once a table, at its first claim, in a cell of a table
        the page wrote (lessonkit's tables mark their cells as theirs)."""
        table = next((o for o in reversed(self.stack) if o.tag == "table"), None)
        if table is not None and not table.refused and any(o.tag in ("td", "th") for o in self.stack):
            table.refused = True
            self.out.refused.append((line, col, _HAND_TABLE, ""))  # at the claim: its line is the cause

    def _produced(self, stack: list[int]) -> bool:
        """Whether text is produced under `stack`: inside a mark other than a diagram's (whose own text
        is the author's; only its claims' values, marked inside it, are produced)."""
        return bool(stack) and self.records[stack[-1]].kind != DIAGRAM

    def _why(self, stack: list[int]) -> str | None:
        return next((self.records[n].why for n in reversed(stack) if self.records[n].why), None)

    def _attribute(self, name: str, value: str, at: str | None) -> Line:
        """An attribute's text as a line of its own, its marks read (they open and close inside it)."""
        line = Line(code=self._code_block(), attribute=name)
        stack = list(self.open)
        for piece in split(value):
            if is_mark(piece):
                self._mark(piece, line, len(line.text), stack)
                continue
            self._text(line, shown(piece), piece, stack, at)
        if len(stack) > len(self.open):
            self.out.refused.append((line, len(line.text), _FORGED.format("a mark left open"), ""))
        return line

    def _text(self, line: Line, text: str, raw: str, stack: list[int], at: str | None) -> None:
        """Append `text` (`raw` folded) to `line`, produced when a mark is open on `stack`."""
        start, end = len(line.text), len(line.text) + len(text)
        if text != raw:
            _note_folded(line, text, raw)
        if text and self._produced(stack):
            self._note_produced(line, start, end, stack)
        if text and at:
            line.origins.append((start, end, at))
        line.text += text

    def _note_produced(self, line: Line, start: int, end: int, stack: list[int]) -> None:
        """line.text[start:end] is produced under `stack`: what backs it, its runs, the claim's line."""
        line.produced.append((start, end))
        why = self._why(stack)
        if why:
            line.why.append((start, end, why))
        runs = next((self.records[n].runs for n in reversed(stack) if self.records[n].runs), ())
        if runs:
            line.runs.append((start, end, runs))
        line.records.append((start, end, self.records[stack[-1]]))

    # -- state of the innermost open element ----------------------------------------------------
    def _skipped(self) -> bool:
        return bool(self.stack) and self.stack[-1].skipped

    def _code_block(self) -> int | None:
        return next((o.block for o in reversed(self.stack) if o.block is not None), None)

    def _in_title(self) -> bool:
        return any(o.title for o in self.stack)

    def _break(self) -> None:
        if self.drawn is not None and self.line.text == self.drawn:
            return  # an item's number stays on the line of the item's first text (<li><p>…)
        self.drawn = None
        if self.line.text.strip():
            self.out.lines.append(self.line)
        self.line = Line(code=self._code_block())

    def _authored(self, tag: str, values: dict[str, str], classes: set[str]) -> None:
        """Refuse what the page's own markup may not do outside the core's marks: hide, style or script
        text, or bear a class or attribute of the core's."""
        at = (self.line, len(self.line.text))
        if not self._skipped():
            hiding = next((a for a in _HIDING_ATTRIBUTES if a in values and not (
                a == "style" and tag in ("td", "th") and _ALIGN_RE.fullmatch(values[a]))), None)
            if hiding or tag in _HIDING_TAGS:
                shown = f"<{tag} {hiding}>" if hiding else f"<{tag}>"
                self.out.refused.append((*at, _HIDES.format(shown), hiding or f"<{tag}"))
            elif tag in _RAW_TEXT_TAGS:
                self.out.refused.append((*at, _RAW_TEXT.format(tag), f"<{tag}"))
        core = sorted(c for c in classes if _CORE_CLASS_RE.fullmatch(c)) + [k for k in values if k.startswith("data-lk-")]
        if core:
            self.out.refused.append((*at, _CORE_MARK.format(core[0]), core[0]))

    def _code_block_opened(self, tag: str, classes: set[str], skipped: bool) -> int | None:
        """The code block this element opens (its number), if it opens one; a block's language noted."""
        language = next((c[len("language-"):] for c in sorted(classes) if c.startswith("language-")), None)
        inside = self._code_block()
        if language and inside is not None and not self.out.blocks[inside].language:
            self.out.blocks[inside].language = language  # <pre><code class="language-X">
        if skipped or inside is not None or (language is None and tag != "pre" and "highlight" not in classes):
            return None
        self.out.blocks.append(CodeBlock(language or "", produced=self._produced(self.open),
                                         first_line=len(self.out.lines)))
        return len(self.out.blocks) - 1

    # -- parser callbacks ---------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        classes = set(values.get("class", "").split())
        at = values.get(_AT) or (self.stack[-1].at if self.stack else None)
        skipped = self._skipped() or tag in _SKIPPED
        if tag in _BLOCKS:
            self._break()
        elif tag in ("td", "th") and self.line.text.strip():
            # a table row is one line, its cells apart, as the Markdown writes it
            self.line.text += "| " if self.line.text.endswith(" ") else " | "
        if not self.open:
            self._authored(tag, values, classes)
        if not skipped:
            self._list_item(tag, values)
            if tag == "a" and values.get("href", "").startswith("#") and len(values["href"]) > 1:
                self.links.append((self.line, len(self.line.text), values["href"][1:]))
        block = self._code_block_opened(tag, classes, skipped)
        if not skipped:
            for name in _ATTRIBUTES + _SHOWN_BY.get(tag, ()):
                if strip_marks(values.get(name, "")).strip():
                    self.out.lines.append(self._attribute(name, values[name], at))
        if tag not in _VOID:
            title = "filename" in classes and self._code_block() is not None
            self.stack.append(_Open(tag, skipped, block, title, at))
            if block is not None:
                self.line.code = block
        elif tag == "br":
            self._break()

    def set_cdata_mode(self, elem: str, *args: Any, **kwargs: Any) -> None:
        """Python's parser reads a <title> as text with no tags in it (RCDATA, CPython gh-118350) from Python 3.9.23,
        3.10.18, 3.11.13, 3.12.11 and 3.13.6 on. A browser does so for the page's <title>, not for an
        SVG's, whose content is elements (foreign content, HTML's parsing rules 13.2.6.5): a
        diagram's <title> holds produced <tspan>s, read as the browser reads them on every Python."""
        if elem == "title" and any(o.tag in _FOREIGN for o in self.stack):
            return
        super().set_cdata_mode(elem, *args, **kwargs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k].tag == tag:
                closed = self.stack[k:]
                del self.stack[k:]
                for o in reversed(closed):
                    self._closed(o.tag)
                if tag == "code" and self._code_block() is None and not self._skipped():
                    self.line.code_ends.append(len(self.line.text))
                if tag in _BLOCKS or any(o.block is not None for o in closed):
                    self._break()
                return

    def _closed(self, tag: str) -> None:
        if tag in ("ol", "ul", "menu") and self.lists:
            self.lists.pop()
        elif tag == "li" and self.lists and self.lists[-1] is not None and self.numbers:
            self.numbers.pop()
        elif tag == "a" and self.links:
            line, start, target = self.links.pop()
            if line is self.line:  # a link's text on one line (a block inside a link is not read as one)
                self.linked.append((line, start, len(line.text), target))

    def handle_data(self, data: str) -> None:
        if self._skipped() or not data:
            return
        for chunk in split(data):
            if is_mark(chunk):
                self._mark(chunk, self.line, len(self.line.text), self.open)
            elif self._in_title():
                block = self.out.blocks[self._code_block()]  # type: ignore[index]
                block.title += shown(chunk)
            else:
                self._data(chunk)

    def _data(self, data: str) -> None:
        code = self._code_block()
        if code is None:  # as a browser shows it: a run of white space is one space
            data = _SPACES_RE.sub(" ", data)
            if data.startswith(" ") and (not self.line.text or self.line.text.endswith(" ")):
                data = data[1:]
        pieces = data.split("\n") if code is not None else [data]
        at = self.stack[-1].at if self.stack else None
        for k, piece in enumerate(pieces):
            if k:
                self._break()
            self._text(self.line, shown(piece), piece, self.open, at)

    def unknown_decl(self, data: str) -> None:
        """A CDATA section: inside SVG or MathML a browser shows its text (elsewhere, HTML makes it a
        comment)."""
        if data.startswith("CDATA[") and any(o.tag in _FOREIGN for o in self.stack):
            self.handle_data(data[len("CDATA["):])

    def handle_comment(self, data: str) -> None:
        if any(is_mark(piece) for piece in split(data)):
            self.out.refused.append((self.line, len(self.line.text), _COMMENT_CLAIM, "<!--"))

    def close(self) -> None:
        super().close()
        if self.open:
            self.out.refused.append((self.line, len(self.line.text), _FORGED.format("a mark left open"), ""))
        self._break()


def _unclosed_comment(html: str) -> int | None:
    """Where a comment opens that never closes (a browser hides everything after it), or None."""
    last = 0
    for m in _COMMENT_RE.finditer(html):
        last = m.end()
    at = html.find("<!--", last)
    return None if at == -1 else at


def read_html(html: str, records: list[Mark] | None = None) -> ReaderText:
    """The lines a reader sees of `html` and its code blocks (see the module's docstring); `records`:
    what backs each of the page's marks (PageResult.marks)."""
    reader = _Reader(records or [])
    unclosed = _unclosed_comment(html)
    reader.feed(html if unclosed is None else html[:unclosed])
    if unclosed is not None:  # a browser reads the rest of the page as the comment
        reader.out.refused.append((reader.line, len(reader.line.text), _COMMENT_OPEN, "<!--"))
        if any(is_mark(piece) for piece in split(html[unclosed:])):
            reader.open.clear()  # the claims it hides: the comment is the cause, said once
    reader.close()
    for line, start, end, target in reader.linked:  # a target may come after its link
        if target in reader.ids:
            line.items.append(ItemLink(start, end, *reader.ids[target], target))
    return reader.out
