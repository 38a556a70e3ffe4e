"""Line references in prose are claims: `racecheck.cu:52` typed outside a claim is refused.

A line of a recorded input moves when the file changes, and a typed reference then points at
the wrong line while every claim still holds. So a page writes it as a claim on what names
the line (`{{ racecheck.cu:52 @ RUN:reports[severity=Error].location }}`, or `{{ 52 @ ….line }}`),
which fails when the line moves and which `lessonkit accept` rewrites; and a region's
`highlight=` is bound the same way (lessonkit.page). Fenced code is left to the rules on typed
output (lessonkit.pagetext).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lessonkit.pagescan import OutLine
from lessonkit.pagetext import visible

if TYPE_CHECKING:
    from lessonkit.page import _Page

_SOURCE_EXTENSIONS = ("cu", "cuh", "cpp", "cc", "c", "h", "hpp", "py")
_LITERAL_BRACES_RE = re.compile(r"""\{\{.*?\}\}""")  # `\{{ … }}`: a claim shown as an example, braces and all
_LINE_REF_RE = re.compile(rf"""(?<![\w/.-])(?P<ref>[\w./-]+\.(?:{'|'.join(_SOURCE_EXTENSIONS)}):\d+)(?!\d)""")


def check_typed_line_refs(page: _Page, out: list[OutLine], in_fence: list[bool]) -> None:
    """A `FILE.cu:NN` that a reader sees in prose and no claim produced is an error."""
    for i, line in enumerate(out):
        if line.generated or in_fence[i] or ":" not in line.text:
            continue
        text = line.text
        for span in line.spans:  # a claim's value is checked; blank it out
            text = text[:span.start] + " " * (span.end - span.start) + text[span.end:]
        shown = _LITERAL_BRACES_RE.sub(lambda b: " " * len(b.group()), visible(text)[0])
        for m in _LINE_REF_RE.finditer(shown):
            page.error(line.src, f"{m.group('ref')!r} is a line reference typed by hand, which goes stale when "
                       "the file's lines move; write it as a claim on what names that line, e.g. "
                       f"{{{{ {m.group('ref')} @ RUN:reports[...].location }}}}")
