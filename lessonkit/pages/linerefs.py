"""Line references in prose are claims: `racecheck.cu:52` typed outside a claim is refused.

A line of a recorded input moves when the file changes, and a typed reference then points at
the wrong line while every claim still holds. So a page writes it as a claim on what names
the line (`{{ racecheck.cu:52 @ RUN:reports[severity=Error].location }}`, or `{{ 52 @ ….line }}`),
which fails when the line moves and which `lessonkit accept` rewrites; and a region's
`highlight=` is bound the same way (lessonkit.pages.page). Fenced code is left to the rules on typed
output (lessonkit.pages.text).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.pages.regions import Region, load_region
from lessonkit.pages.scan import Lines, Token
from lessonkit.pages.text import visible_text

if TYPE_CHECKING:
    from lessonkit.pages.state import PageState

_SOURCE_EXTENSIONS = ("cu", "cuh", "cpp", "cc", "c", "h", "hpp", "py")
_HIGHLIGHT_RE = re.compile(r"""^(?P<line>\d+)(?:@(?P<claim>.+))?$""")
_MARKER_LINE_RE = re.compile(r"""^@(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*?)\+(?P<offset>\d+)$""")
_LITERAL_BRACES_RE = re.compile(r"""\{\{.*?\}\}""")  # `\{{ … }}`: a claim shown as an example, braces and all
_LINE_REF_RE = re.compile(rf"""(?<![\w/.-])(?P<ref>[\w./-]+\.(?:{'|'.join(_SOURCE_EXTENSIONS)}):\d+)(?!\d)""")


# A line with a colon and a digit, typed or written as a character reference: it may hold a reference.
_MAYBE_REF_LINE_RE = re.compile(r"""^(?=[^\n]*:)[^\n]*?[\d&]""", re.MULTILINE)


def check_typed_line_refs(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """A `FILE.cu:NN` that a reader sees in prose and no claim produced is an error."""
    for i in out.find(_MAYBE_REF_LINE_RE):
        line = out[i]
        if in_fence[i]:
            continue
        text = line.text
        for span in line.spans:  # a claim's value is checked; blank it out
            text = text[:span.start] + " " * (span.end - span.start) + text[span.end:]
        shown = _LITERAL_BRACES_RE.sub(lambda b: " " * len(b.group()), visible_text(text))
        for m in _LINE_REF_RE.finditer(shown):
            page.error(line.src, f"{m.group('ref')!r} is a line reference typed by hand, which goes stale when "
                       "the file's lines move; write it as a claim on what names that line, e.g. "
                       f"{{{{ {m.group('ref')} @ RUN:reports[...].location }}}}")


def highlighted(page: PageState, token: Token, relpath: str, region: Region, item: str, source: str) -> int | None:
    """The file line a highlight names, bound so that it follows the line when the file changes:
    `52@REF:QUERY` (a claim: every recording names line 52; accept rewrites it) or `@MARKER+N` (the
    Nth line after the `// snippet: MARKER` line of the same file). A plain number is refused."""
    index = token.line
    marker = _MARKER_LINE_RE.match(item)
    if marker:
        where = LessonError(page.path, index + 1 + page.offset, f"asked for by highlight {item!r}")
        try:
            named = load_region(page.repo / "code", relpath, marker.group("name"), where)
        except (LessonError, LessonErrors) as exc:
            page.result.errors.extend(exc.errors if isinstance(exc, LessonErrors) else [exc])
            return None
        line = named.first - 1 + int(marker.group("offset"))
        if not named.contains(line):
            page.error(index, f"highlight {item!r} is line {line}, past the end of region {named.name!r} "
                       f"(lines {named.first}-{named.last}); count from its marker: +1 is its first line")
            return None
    else:
        m = _HIGHLIGHT_RE.match(item)
        if not m:
            page.error(index, f"cannot read highlight {item!r}; expected a line bound to the evidence, "
                       "131@SET/RUN:QUERY, or to a snippet marker, @MARKER+N")
            return None
        if not m.group("claim"):
            page.error(index, f"highlight {item!r} is a plain line number, which goes stale when the file's lines "
                       f"move; bind it: {item}@RUN:reports[...].line (a report names it) or @MARKER+N (the Nth "
                       "line after a snippet marker)")
            return None
        line = int(m.group("line"))
    if not marker:  # the claim first: when the file's lines moved, accept can rewrite it
        at = re.search(r"(?<=[=,])" + re.escape(item), source)
        start = token.start + (at.start() if at else 0)
        errors_before = len(page.result.errors)
        page.check_claim(index, m.group("line"), m.group("claim"), start, start + len(m.group("line")),
                         whole_number=True)
        if len(page.result.errors) > errors_before:
            return None
    if not region.contains(line):
        page.error(index, f"highlighted line {line} is outside region {region.name!r} of code/{relpath} "
                   f"(lines {region.first}-{region.last})")
        return None
    return line
