"""`python -m lessonkit verify-site SITE_DIR`: catch a site engine that published pages unchecked.

Every page lessonkit expanded and checked carries `CHECKED_MARK` (the MkDocs hooks and the
Markdown extension add it). A built page without it that still shows a claim
(`{{ VALUE @ REF:QUERY }}`) or a directive (`{{ region ... }}`, ...) was published by an engine
that never ran lessonkit: the hooks were ignored, or the extension was not configured. A page
with an unfilled transcript slot ran the expansion but not its second half.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

from lessonkit.errors import LessonError, LessonErrors

CHECKED_MARK = "\n<!-- lessonkit: checked -->\n"
_DIRECTIVES = ("region", "transcript", "evidence", "provenance", "commands")
_TOKEN_RE = re.compile(r"""\{\{(?P<body>[^{}\n]{1,400}?)\}\}""", re.VERBOSE)
_DIRECTIVE_RE = re.compile(rf"""^\s*(?P<word>{'|'.join(_DIRECTIVES)})\b""", re.VERBOSE)
_SLOT_RE = re.compile(r"""<div\ data-lk-slot="\d+"></div>""", re.VERBOSE)
_FIX = ("the engine published it without lessonkit; MkDocs and ProperDocs need "
        "'hooks: [hooks/lessonkit_hooks.py]', other engines 'markdown_extensions: [lessonkit.site.mdext]'")


def unexpanded(text: str, shown: str) -> list[LessonError]:
    """Errors for the claims, directives and transcript slots that reached a built page as is."""
    errors: list[LessonError] = []
    for m in _SLOT_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        errors.append(LessonError(shown, line, f"transcript slot {m.group(0)!r} was never filled; "
                                  "the engine ran lessonkit's expansion but not its postprocessor"))
    if CHECKED_MARK.strip() in text:
        return errors  # expanded and checked: any '{{' left is a literal the author escaped
    for m in _TOKEN_RE.finditer(text):
        body = html.unescape(m.group("body"))
        kind = ("claim" if " @ " in body else
                "directive" if _DIRECTIVE_RE.match(body) else None)
        if kind:
            line = text.count("\n", 0, m.start()) + 1
            errors.append(LessonError(shown, line, f"unexpanded {kind} {'{{' + body + '}}'!r}; {_FIX}"))
    return errors


def verify_site(site_dir: Path) -> list[LessonError]:
    """Every unexpanded claim, directive or slot in the HTML pages under `site_dir`."""
    if not site_dir.is_dir():
        return [LessonError(str(site_dir), None, "is not a folder; expected a built site (mkdocs build)")]
    errors: list[LessonError] = []
    for page in sorted(site_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        errors.extend(unexpanded(text, (site_dir / page.relative_to(site_dir)).as_posix()))
    return errors


HELP = "exit 1 naming page and text if a built page shows a claim or directive unexpanded"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `verify-site`."""
    parser.add_argument("site_dir", type=Path, help="the folder a build wrote (e.g. site/)")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every built page was expanded and checked; 1 listing each page and text otherwise."""
    errors = verify_site(args.site_dir)
    if errors:
        print(LessonErrors(errors).report(), file=sys.stderr)
        return 1
    pages = sum(1 for _ in args.site_dir.rglob("*.html"))
    print(f"ok: no unexpanded claim or directive in the {pages} pages under {args.site_dir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m lessonkit verify-site SITE_DIR` on its own; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit verify-site", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
