"""`python -m lessonkit verify-site SITE_DIR`: catch a site engine that published pages unchecked.

Every page lessonkit expanded and checked carries `CHECKED_MARK` (the MkDocs hooks and the
Markdown extension add it). A built page without it that still shows a claim
(`{{ VALUE @ REF:QUERY }}`) or a directive (`{{ region ... }}`, ...) was published by an engine
that never ran lessonkit: the hooks were ignored, or the extension was not configured. A page
with an unfilled transcript slot ran the expansion but not its second half. And with the
repository it was built from (`--repo`, default the working directory), every built page is
audited as a reader sees it (lessonkit.pages.audit), so an engine that ran the expansion but skipped
the audit, or changed the page after it, is caught too.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

from lessonkit.errors import LessonError, LessonErrors

CHECKED_MARK = "\n<!-- lessonkit: checked -->\n"
START_MARK = "\n<!-- lessonkit: page -->\n"  # where the page's own content begins, inside the theme's
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


def verify_site(site_dir: Path, repo: Path | None = None) -> list[LessonError]:
    """Every unexpanded claim, directive or slot in the HTML pages under `site_dir`; with `repo`, the
    repository the site was built from, also the audit of every built page against its source."""
    if not site_dir.is_dir():
        return [LessonError(str(site_dir), None, "is not a folder; expected a built site (mkdocs build)")]
    errors: list[LessonError] = []
    for page in sorted(site_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        errors.extend(unexpanded(text, (site_dir / page.relative_to(site_dir)).as_posix()))
    if repo is not None:
        errors.extend(audit_site(site_dir, repo))
    return errors


def page_content(html: str) -> str:
    """The part of a built page that its Markdown made: between the marks lessonkit adds, or the
    whole page when they are missing (an engine that never ran lessonkit)."""
    start, end = html.find(START_MARK.strip()), html.find(CHECKED_MARK.strip())
    return html[start:end] if 0 <= start < end else html


def built_page(site_dir: Path, docs_path: str) -> Path | None:
    """Where a build put the page `docs_path` (relative to docs/): x/index.html or x.html."""
    stem = docs_path.removesuffix(".md")
    name = stem.rsplit("/", 1)[-1]
    candidates = ([f"{stem[:-len(name)]}index.html"] if name in ("index", "README")
                  else [f"{stem}/index.html", f"{stem}.html"])
    return next((site_dir / c for c in candidates if (site_dir / c).is_file()), None)


def audit_site(site_dir: Path, repo: Path) -> list[LessonError]:
    """The rendered-page audit (lessonkit.pages.audit) of every page of `repo`'s docs/ as built under `site_dir`."""
    from lessonkit.site.check import CheckedSite, docs_pages  # the whole core: only the audit needs it

    session = CheckedSite(repo)
    session.refresh()
    errors: list[LessonError] = []
    docs = repo / "docs"
    for shown, path in docs_pages(repo, docs):
        built = built_page(site_dir, path.relative_to(docs).as_posix())
        if built is None:
            continue  # not published: nothing a reader sees
        session.check_page_file(shown, path)
        html = page_content(built.read_text(encoding="utf-8", errors="replace"))
        errors.extend(session.audit(shown, html, path.read_text(encoding="utf-8")))
    return errors


HELP = ("exit 1 naming page and text if a built page shows a claim or directive unexpanded, or fails "
        "the audit of what a reader sees")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `verify-site`."""
    parser.add_argument("site_dir", type=Path, help="the folder a build wrote (e.g. site/)")
    parser.add_argument("--repo", type=Path, default=Path("."),
                        help="the repository the site was built from (docs/, evidence/): its pages are "
                        "audited as built (default: the working directory)")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every built page was expanded and checked; 1 listing each page and text otherwise."""
    repo = args.repo if (args.repo / "docs").is_dir() else None
    errors = verify_site(args.site_dir, repo)
    if errors:
        print(LessonErrors(errors).report(), file=sys.stderr)
        return 1
    pages = sum(1 for _ in args.site_dir.rglob("*.html"))
    audited = f"; the pages of {repo / 'docs'} pass the audit as built" if repo is not None else ""
    print(f"ok: no unexpanded claim or directive in the {pages} pages under {args.site_dir}{audited}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m lessonkit verify-site SITE_DIR` on its own; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit verify-site", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
