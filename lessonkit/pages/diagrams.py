"""Diagrams whose figures come from the evidence: `{{ diagram LESSON/diagrams/NAME.svg }}`.

The SVG lives under code/ (with the lesson it draws, outside docs/ so that no copy of it with
unexpanded claims is published) and is inlined into the page, after Markdown, in a slot. Inside
it, a figure is written as a claim `{{ VALUE @ REF:QUERY }}` (REF as on the page, its set
defaulting to the page's), shown as `<tspan class="lk-v">VALUE</tspan>` between the marks of what
lessonkit produced (lessonkit.pages.marks); errors name the SVG file
and line. A claim inside an attribute is refused (it cannot be marked as produced there): write
it in the `<title>` or `<desc>`.

Every other figure of its text (`<text>`, `<tspan>`, `<title>`, `<desc>`, `<textPath>`, and the
`aria-label`, `alt` and `title` a reader meets) is the rendered-page audit's (lessonkit.pages.audit),
which reads the filled slot like the rest of the page: a typed figure is refused unless a phrase
of the page's front matter (`narrative:` with its reason, `constants:` bound to the program) or
of the course's narrative.yml covers it. So that its errors name the SVG's own line, each element
holding such text carries `data-lk-at="code/LESSON/diagrams/NAME.svg:LINE"` into the audit
(lessonkit.pages.readertext); `PageResult.fill` takes the marks out of the published page. The
core's own marks (`lk-v`, `data-lk-*`: lessonkit.pages.readertext) may not be written in the SVG; the
old `data-lk-narrative` excuse is refused with them.
"""

from __future__ import annotations

import html
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError
from lessonkit.pages.marks import DIAGRAM
from lessonkit.pages.meaning import describe, for_reader
from lessonkit.pages.regions import resolve_code_path
from lessonkit.pages.scan import LineIndex, scan
from lessonkit.textio import read_text

if TYPE_CHECKING:
    from lessonkit.pages.claimcheck import PageState

_TAG_RE = re.compile(r"""<(?P<close>/)?(?P<name>[A-Za-z][\w:-]*)(?P<attrs>[^<>]*?)(?P<empty>/)?>|<!--.*?-->|<\?.*?\?>""",
                     re.DOTALL)
_TEXT_ELEMENTS = {"text", "tspan", "title", "desc", "textPath"}
_READ_ATTRS_RE = re.compile(r"""\b(?:aria-label|aria-description|alt|title)\s*=""")
_CLAIM_AT_RE = re.compile(r"""\s@\s""")
_MARK_OPEN = '<tspan class="lk-v">'
# The core's own classes and attributes written in an SVG: a figure's class (which the reader's audit
# trusts no more than any), where a text is written (data-lk-at, which the audit's errors name), the old
# excuse data-lk-narrative.
RESERVED_RE = re.compile(r"""(?<![\w-])lk-v(?![\w-])|\bdata-lk-[\w-]*""")
AT_ATTR = "data-lk-at"  # where an element's text is written: "code/LESSON/diagrams/NAME.svg:LINE"


def render_diagram(page: PageState, index: int, parts: list[str]) -> str:
    """The diagram's SVG with its claims expanded and checked, in a slot; "" with an error if unreadable."""
    if len(parts) != 1:
        page.error(index, "the diagram directive takes one path under code/: {{ diagram LESSON/diagrams/NAME.svg }}")
        return ""
    relpath = parts[0]
    page.result.sources.add(relpath)  # read, or looked for: the page's result depends on it either way
    where = LessonError(page.path, index + 1 + page.offset, f"asked for by a diagram on {page.path}")
    try:
        path = resolve_code_path(page.repo / "code", relpath, where)
        text = read_text(path, f"code/{relpath}")
    except LessonError as exc:
        page.result.errors.append(exc)
        return ""
    except OSError as exc:
        page.error(index, f"cannot read diagram code/{relpath}: {exc.strerror}")
        return ""
    shown = f"code/{relpath}"
    svg = _expand(page, index, shown, text)
    start = svg.find("<svg")
    if start == -1:
        page.error(index, f"{shown} holds no <svg> element")
        return ""
    # Out of the search index: its title and description repeat what the page's prose says, and a
    # lesson's index entries have a budget (tests/test_light_pages.py). An SVG holds no <div>, so
    # Material's search parser, which ends a skip at the end of any element of the skipped one's
    # tag, skips all of it.
    return page.result.slot(f'<div class="lk-diagram" data-search-exclude>{svg[start:].strip()}</div>',
                            f"the diagram {shown}", DIAGRAM)


def _origins(page: PageState, shown: str, text: str, lines: LineIndex, claims: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """Where each element holding text a reader sees gets its `data-lk-at` mark: (offset in `text`, the
    attribute); the core's marks written in the SVG are refused here."""
    blank = list(text)
    for a, b in claims:  # a claim's query is not markup
        blank[a:b] = [c if c == "\n" else " " for c in text[a:b]]
    plain = "".join(blank)
    said: set[str] = set()
    for m in RESERVED_RE.finditer(plain):
        mark = m.group()
        if mark in said:
            continue
        said.add(mark)
        line = lines.line(m.start())
        if mark == "data-lk-narrative":
            message = ("data-lk-narrative is gone: it excused every figure typed in its element, whatever its reason "
                       "said; write the figure as a claim, or declare the words around it in the front matter of the "
                       "page that shows the diagram (narrative: with the reason, or constants: bound to the program's "
                       "constant that fixes it)")
        else:
            message = (f"{mark!r} is a mark of what lessonkit produced from the evidence; a diagram may not write it "
                       "(the audit of the rendered page trusts it): write the figure as a claim, {{ VALUE @ REF:QUERY }}")
        page.result.errors.append(_at(page, shown, line, message))
    found = []
    for m in _TAG_RE.finditer(plain):
        name = m.group("name")
        if name is None or m.group("close"):
            continue
        if name in _TEXT_ELEMENTS or _READ_ATTRS_RE.search(m.group("attrs") or ""):
            at = m.end() - (2 if m.group("empty") else 1)
            found.append((at, f' {AT_ATTR}="{html.escape(shown)}:{lines.line(m.start()) + 1}"'))
    return found


def _expand(page: PageState, index: int, shown: str, text: str) -> str:
    """The SVG with each claim checked and shown as its value, marked, and each element holding text
    marked with where it is written (`data-lk-at`); errors at the SVG's lines."""
    lines = LineIndex(text)
    tokens, unclosed = scan(text, lines)
    for u in unclosed:
        page.result.errors.append(_at(page, shown, u.line, f"{u.snippet!r} is never closed"))
    origins = _origins(page, shown, text, LineIndex(text), [(t.start, t.end) for t in tokens])
    out, pos, k = [], 0, 0

    def copy(end: int) -> None:  # text[pos:end], each element's mark put in
        nonlocal pos, k
        while k < len(origins) and origins[k][0] < end:
            if origins[k][0] < pos:  # inside a claim: none is (its text is blanked), but never go back
                k += 1
                continue
            out.append(text[pos:origins[k][0]])
            out.append(origins[k][1])
            pos, k = origins[k][0], k + 1
        out.append(text[pos:end])
        pos = end

    for token in tokens:
        copy(token.start)
        pos = token.end
        m = None
        for m in _CLAIM_AT_RE.finditer(token.body):
            pass
        if m is None:
            page.result.errors.append(_at(page, shown, token.line, f"cannot read {{{{{token.body}}}}} in a diagram; "
                                          "expected {{ VALUE @ REF:QUERY }}"))
            continue
        tag_open = text.rfind("<", 0, token.start) > text.rfind(">", 0, token.start)
        raw = token.body[:m.start()]
        value = " ".join(raw.split())
        ref_query = " ".join(token.body[m.end():].split())
        before = len(page.result.errors)
        start = token.start + 2 + len(raw) - len(raw.lstrip())
        page.check_claim(index, value, ref_query, start, token.start + 2 + len(raw.rstrip()), file=shown)
        page.result.errors[before:] = [_at(page, shown, token.line, e.message) for e in page.result.errors[before:]]
        if page.result.claims and page.result.claims[-1].file == shown and page.result.claims[-1].error:
            page.result.claims[-1] = replace(page.result.claims[-1], line=token.line + 1,
                                             error=page.result.errors[before])
        if tag_open:
            page.result.errors.append(_at(page, shown, token.line, f"claim {value!r} is inside an attribute, where it "
                                          "cannot be marked as produced; put it in the <title> or <desc>"))
            out.append(html.escape(value))
            continue
        claim = page.result.claims[-1] if page.result.claims and page.result.claims[-1].file == shown else None
        why = (for_reader(describe(claim, page.sets, page.default_set), page.sets, page.default_set)
               if claim is not None and claim.error is None else None)
        out.append(page.result.marker.wrap((f'<tspan class="lk-v" data-lk-why="{html.escape(why)}">' if why
                                            else _MARK_OPEN) + f"{html.escape(value, quote=False)}</tspan>", why))
    copy(len(text))
    return "".join(out)


def _at(page: PageState, shown: str, line: int, message: str) -> LessonError:
    return LessonError(shown, line + 1, message, rank=2)
