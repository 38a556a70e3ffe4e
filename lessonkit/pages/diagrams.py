"""Diagrams whose figures come from the evidence: `{{ diagram LESSON/diagrams/NAME.svg }}`.

The SVG lives under code/ (with the lesson it draws, outside docs/ so that no copy of it with
unexpanded claims is published) and is inlined into the page, after Markdown, in a slot. Inside
it, every figure a reader sees, in `<text>`, `<tspan>`, `<title>` and `<desc>` (the accessible
name and description), is a claim `{{ VALUE @ REF:QUERY }}` (REF as on the page, its set
defaulting to the page's), shown as `<tspan class="lk-v">VALUE</tspan>` and checked like a claim
in prose; errors name the SVG file and line. A digit typed in that text is refused, as is a claim
or a digit in an attribute a reader meets (`aria-label`, `alt`, `title`): write those in `<title>`
and `<desc>`. An element may declare that its text holds no evidence with
`data-lk-narrative="why"` (a constant of the program, a step number), which covers its text.
"""

from __future__ import annotations

import html
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError
from lessonkit.pages.regions import resolve_code_path
from lessonkit.pages.scan import LineIndex, scan
from lessonkit.textio import read_text

if TYPE_CHECKING:
    from lessonkit.pages.state import PageState

_TAG_RE = re.compile(r"""<(?P<close>/)?(?P<name>[A-Za-z][\w:-]*)(?P<attrs>[^<>]*?)(?P<empty>/)?>|<!--.*?-->|<\?.*?\?>""",
                     re.DOTALL)
_TEXT_ELEMENTS = {"text", "tspan", "title", "desc", "textPath"}
_READ_ATTRS_RE = re.compile(r"""\b(?P<attr>aria-label|aria-description|alt|title)\s*=\s*(?P<q>["'])(?P<value>.*?)(?P=q)""",
                            re.DOTALL)
_NARRATIVE_RE = re.compile(r"""\bdata-lk-narrative\s*=\s*(?P<q>["'])(?P<why>.*?)(?P=q)""", re.DOTALL)
_CLAIM_AT_RE = re.compile(r"""\s@\s""")
_NARRATIVE_TAG_RE = re.compile(r"""<[A-Za-z][\w:-]*\s[^<>]*\bdata-lk-narrative\s*=\s*["'][^"']+["'][^<>]*>""")
_MARK_OPEN = '<tspan class="lk-v">'


def render_diagram(page: PageState, index: int, parts: list[str]) -> str:
    """The diagram's SVG with its claims expanded and checked, in a slot; "" with an error if unreadable."""
    if len(parts) != 1:
        page.error(index, "the diagram directive takes one path under code/: {{ diagram LESSON/diagrams/NAME.svg }}")
        return ""
    relpath = parts[0]
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
    page.result.sources.add(relpath)
    shown = f"code/{relpath}"
    svg = _expand(page, index, shown, text)
    start = svg.find("<svg")
    if start == -1:
        page.error(index, f"{shown} holds no <svg> element")
        return ""
    _check_typed(page, shown, svg)
    return page.result.slot(f'<div class="lk-diagram">{_mark_narrative(svg[start:].strip())}</div>')


def _mark_narrative(svg: str) -> str:
    """Elements declared narrative carry the produced mark too: this module checked that their
    reason is given, and the rendered-page audit (lessonkit.pages.audit) does not read the attribute."""
    def mark(m: re.Match[str]) -> str:
        tag = m.group(0)
        if ' class="' in tag:
            return tag.replace(' class="', ' class="lk-v ', 1)
        return tag[:-1] + ' class="lk-v">' if not tag.endswith("/>") else tag[:-2] + ' class="lk-v"/>'
    return _NARRATIVE_TAG_RE.sub(mark, svg)


def _expand(page: PageState, index: int, shown: str, text: str) -> str:
    """The SVG with each claim checked and shown as its value, marked; errors at the SVG's lines."""
    lines = LineIndex(text)
    tokens, unclosed = scan(text, lines)
    for u in unclosed:
        page.result.errors.append(_at(page, shown, u.line, f"{u.snippet!r} is never closed"))
    out, pos = [], 0
    for token in tokens:
        out.append(text[pos:token.start])
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
        out.append(f"{_MARK_OPEN}{html.escape(value, quote=False)}</tspan>")
    out.append(text[pos:])
    return "".join(out)


def _at(page: PageState, shown: str, line: int, message: str) -> LessonError:
    return LessonError(shown, line + 1, message, rank=2)


def _check_typed(page: PageState, shown: str, svg: str) -> None:
    """A digit a reader sees in the diagram's text that no claim produced is an error."""
    lines = LineIndex(svg)
    stack: list[tuple[str, bool, bool]] = []  # (element, produced, narrative)
    pos = 0
    for m in _TAG_RE.finditer(svg):
        _text_run(page, shown, svg, pos, m.start(), stack, lines)
        pos = m.end()
        name = m.group("name")
        if name is None:
            continue
        if m.group("close"):
            while stack and stack.pop()[0] != name:
                pass
            continue
        attrs = m.group("attrs") or ""
        narrative = bool(_NARRATIVE_RE.search(attrs) and _NARRATIVE_RE.search(attrs).group("why").strip())
        inherited = any(n for _, _, n in stack)
        for a in _READ_ATTRS_RE.finditer(attrs):
            if any(c.isdigit() for c in a.group("value")) and not (narrative or inherited):
                page.result.errors.append(_at(page, shown, lines.line(m.start()),
                                              f"{a.group('attr')}={a.group('value')!r} types a figure a reader meets; "
                                              "say it in the <title> or <desc>, where a claim can state it"))
        if not m.group("empty"):
            stack.append((name, m.group(0) == _MARK_OPEN, narrative))
    _text_run(page, shown, svg, pos, len(svg), stack, lines)


def _text_run(page: PageState, shown: str, svg: str, start: int, end: int, stack: list[tuple[str, bool, bool]],
              lines: LineIndex) -> None:
    # A narrative mark covers its own element's text, not everything under it: on the diagram's
    # root (or a group) it would excuse every figure of the drawing.
    if start == end or not stack or stack[-1][0] not in _TEXT_ELEMENTS or any(p for _, p, _ in stack) \
            or stack[-1][2]:
        return
    text = html.unescape(svg[start:end])
    digits = re.search(r"\d[\d.,]*", text)
    if digits:
        page.result.errors.append(_at(page, shown, lines.line(start), (
            f"{digits.group()!r} in the diagram's text {text.strip()!r} is a figure typed by hand; write it as a "
            "claim, {{ VALUE @ REF:QUERY }}, or mark an element whose text holds no evidence with "
            "data-lk-narrative=\"why\"")))
