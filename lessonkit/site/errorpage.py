"""The page a development server shows in place of every page while the site has errors.

Under `mkdocs serve` a build with errors would leave the browser waiting on the last good
build, with the errors only in the terminal. Instead the hooks serve this page at every
address, as Hugo's server and Vite's overlay do: each error with its file and line, the line
itself as the file has it, what is wrong and what to do. The server adds its reload script
before `</body>`, so the page reloads by itself after the next build, and the lesson comes
back once the errors are fixed.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path

from lessonkit.errors import LessonError

TITLE = "lessonkit found problems"
_MAX_LINE = 400  # characters of the quoted source line shown

_STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #fff; color: #1a1a1a; }
main { max-width: 60rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.5rem; color: #a30000; margin: 0 0 .5rem; }
ol { padding-left: 1.5rem; }
li { margin: 1rem 0; }
.where { font-family: ui-monospace, monospace; font-weight: 600; }
pre { background: #f4f4f4; border-left: 4px solid #a30000; padding: .5rem .75rem; overflow-x: auto;
      white-space: pre-wrap; word-break: break-word; margin: .25rem 0; }
.fix { color: #1f4e79; }
@media (prefers-color-scheme: dark) {
  body { background: #1e1e1e; color: #e6e6e6; } h1 { color: #ff8080; }
  pre { background: #2a2a2a; border-left-color: #ff8080; } .fix { color: #9cc7f0; }
}
"""


STRICT_NOTE = ("Warnings stop the build here because mkdocs.yml sets strict: true; "
               "mkdocs serve --no-strict shows the pages, a lesson not recorded yet with its notice.")


def source_line(repo: Path, error: LessonError) -> str | None:
    """The line an error points at, as its file has it; None for a whole file or an unreadable one."""
    if error.line is None:
        return None
    path = repo / error.path
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, start=1):
                if number == error.line:
                    text = text.rstrip("\n")
                    return text if len(text) <= _MAX_LINE else text[:_MAX_LINE] + " ..."
    except OSError:
        return None
    return None


def split_fix(message: str) -> tuple[str, str]:
    """(what is wrong, what to do): the message up to its first '; ', and the rest ('' if none)."""
    wrong, _, fix = message.partition("; ")
    return wrong, fix


def _item(repo: Path, error: LessonError) -> str:
    where = error.path if error.line is None else f"{error.path}:{error.line}"
    where += " (warning)" if error.warning else ""
    wrong, fix = split_fix(error.message)
    parts = [f'<li><div class="where">{html.escape(where)}</div>']
    line = source_line(repo, error)
    if line is not None:
        parts.append(f"<pre><code>{error.line:>4} | {html.escape(line)}</code></pre>")
    parts.append(f"<div>{html.escape(wrong)}</div>")
    if fix:
        parts.append(f'<div class="fix">{html.escape(fix)}</div>')
    parts.append("</li>")
    return "".join(parts)


def error_page(errors: Iterable[LessonError], repo: Path, note: str = "") -> str:
    """A whole HTML page listing `errors` (causes first, as the report orders them)."""
    ordered = sorted(errors, key=lambda e: (e.warning, e.rank))
    n = sum(not e.warning for e in ordered)
    w = len(ordered) - n
    count = f"{n} error{'s' if n != 1 else ''}" + (f" and {w} warning{'s' if w != 1 else ''}" if w else "")
    items = "\n".join(_item(repo, e) for e in ordered)
    if w:
        note = (f"{note} " if note else "") + STRICT_NOTE
    note_html = f"<p>{html.escape(note)}</p>" if note else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{TITLE}: {count}</title>
<style>{_STYLE}</style>
</head>
<body>
<main data-lessonkit="errors">
<h1>{TITLE}: {count}</h1>
<p>The site is not built while these stand. Fix them and save: this page reloads by itself,
and shows the site again once every error is gone.</p>
{note_html}
<ol>
{items}
</ol>
</main>
</body>
</html>
"""
