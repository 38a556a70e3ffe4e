"""What the theme shows around a page's content: the header, the navigation, the table of contents, the
footer, the browser tab's title, and whatever a template of the project's own (overrides/) writes.

The built page is read whole, as the browser shows it, less the page's content (which the rendered-page
audit read, lessonkit.pages.audit), by the same reader (lessonkit.pages.readertext). A
figure there must stand inside a text the checks already read: a setting of mkdocs.yml that the theme
shows (lessonkit.site.config), a page's title, a section of the navigation, a heading of this page (its
table of contents). Anything else was written by a template or a setting no check reads, and is refused.
`lessonkit check` renders no theme, so this is the build's (the hooks') check, and verify-site's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lessonkit.errors import LessonError
from lessonkit.pages.figures import FIGURE_RE
from lessonkit.pages.fold import shown
from lessonkit.pages.readertext import read_html

_SPACES_RE = re.compile(r"""\s+""")


def _normal(text: str) -> str:
    return _SPACES_RE.sub(" ", text).strip()


def chrome_texts(page_html: str, content: str) -> list[str]:
    """The lines a reader sees of a built page outside its content (`content`: the page's HTML as the
    engine put it in; the whole page is read when it is not found there), read by the one reader of
    what a page shows (lessonkit.pages.readertext)."""
    at = page_html.find(content) if content else -1
    outside = page_html if at == -1 else page_html[:at] + page_html[at + len(content):]
    return [_normal(line.text) for line in read_html(outside).lines]


def chrome_errors(page_html: str, content: str, where: str, allowed: Iterable[str]) -> list[LessonError]:
    """An error for each text around the page's content that shows a figure outside every `allowed`
    text (the ones the checks read), once a text."""
    known = sorted({_normal(shown(a)) for a in allowed if a and _normal(a)}, key=len, reverse=True)
    errors, said = [], set()
    for text in chrome_texts(page_html, content):
        if text in said:
            continue
        covered = [(m.start(), m.start() + len(a)) for a in known if a in text
                   for m in re.finditer(re.escape(a), text)]
        figure = next((m for m in FIGURE_RE.finditer(text)
                       if not any(a <= m.start() and m.end() <= b for a, b in covered)), None)
        if figure is not None:
            said.add(text)
            errors.append(LessonError(where, None, (
                f"the theme shows {text[:80]!r} around the page's content, with the figure {figure.group()!r}, "
                "which is in no text the checks read (a setting of mkdocs.yml, a page's title, a section of the "
                "navigation, a heading of the page); a template (overrides/) or a setting of the theme wrote it: "
                "remove the figure there"), rank=2))
    return errors
