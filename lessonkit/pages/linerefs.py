"""A region's highlighted line, bound so that it follows the file: a claim on what names the line, or a
snippet marker and an offset.

A line of a recorded input moves when the file changes, and a typed line number then points at
the wrong line while every claim still holds. So `highlight=` takes `52@REF:QUERY` (a claim that
every recording names line 52, which `lessonkit accept` rewrites) or `@MARKER+N`; a plain number
is refused. A line reference a reader sees in prose (`racecheck.cu:52`) is a figure like any other:
the rendered-page audit refuses it unless a claim produced it (lessonkit.pages.audit).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.pages.regions import Region, load_region
from lessonkit.pages.scan import Token

if TYPE_CHECKING:
    from lessonkit.pages.claimcheck import PageState

_HIGHLIGHT_RE = re.compile(r"""^(?P<line>\d+)(?:@(?P<claim>.+))?$""")
_MARKER_LINE_RE = re.compile(r"""^@(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*?)\+(?P<offset>\d+)$""")


def _after_marker(page: PageState, index: int, relpath: str, item: str, marker: re.Match[str]) -> int | None:
    """The file line `@MARKER+N` names: the Nth line after the marker, inside the region it opens; None with
    the error recorded otherwise."""
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
    return line


def highlighted(page: PageState, token: Token, relpath: str, region: Region, item: str, source: str) -> int | None:
    """The file line a highlight names, bound so that it follows the line when the file changes:
    `52@REF:QUERY` (a claim: every recording names line 52; accept rewrites it) or `@MARKER+N` (the
    Nth line after the `// snippet: MARKER` line of the same file). A plain number is refused."""
    index = token.line
    marker = _MARKER_LINE_RE.match(item)
    if marker:
        line = _after_marker(page, index, relpath, item, marker)
        if line is None:
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
