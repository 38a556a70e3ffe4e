"""`python -m lessonkit explain PAGE`: every sentence of a page that states a figure from the evidence,
with what backs each figure, in plain words (lessonkit.pages.meaning).

For a reviewer: read what the sentence says against what its figures are (run, filter, set and
toolkit, field and unit, recordings, one value or a range or a comparison). What no mechanism can
see, the words around a correct claim, is put in front of the reader this way
(docs/reference/checking.md, "What no check sees").
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

from lessonkit.cache import Store
from lessonkit.cli.accept import sentence_span, shown_sentence
from lessonkit.errors import LessonError
from lessonkit.pages.meaning import describe
from lessonkit.repo import repo_root
from lessonkit.site.check import CheckedSite, Site, strip_front_matter
from lessonkit.textio import read_text

_TAG_RE = re.compile(r"""<[^<>]*>|<[^<>]*$|^[^<>]*>""")  # a tag, or the part of one a sentence's edge cut

HELP = "print each sentence of a page that states a figure, with what backs each figure in plain words"
DESCRIPTION = ("Print every sentence of PAGE (a file under docs/) that states a figure from the evidence, "
               "then, for each figure, what backs it: the run and its filter, the evidence set and its "
               "toolkit, the field and its unit, how many recordings, and whether the figure is one value, "
               "a range, a ratio or a comparison of two sets. Exit 1 when the page has errors (listed), "
               "0 otherwise.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("page", type=Path, metavar="PAGE", help="a page under docs/, e.g. docs/day62-racecheck.md")
    parser.add_argument("--repo", type=Path, default=None, metavar="PATH",
                        help="the repository's root folder (default: found from the working folder)")


def explain(repo: Path, page: Path) -> tuple[list[str], list[LessonError]]:
    """The lines `explain` prints for `page`, and the page's errors."""
    shown = page.resolve().relative_to(repo.resolve()).as_posix() if page.resolve().is_relative_to(
        repo.resolve()) else str(page)
    text = read_text(page, shown)
    body, offset = strip_front_matter(text)
    site = Site.load(repo)
    site.transcripts = False
    result = site.page(body, shown, offset)
    lines: list[str] = []
    for file, written, lo, hi, claims in _sentences(repo, result, shown, text, len(text) - len(body)):
        said = shown_sentence(written, lo, hi, [(s, e, c.value) for s, e, c in claims])
        if file.endswith(".svg"):  # a diagram: its text as the reader sees it, not its markup
            said = " ".join(html.unescape(_TAG_RE.sub(" ", said)).split())
        lines.append(f"{file}:{claims[0][2].line}: {said}")
        for _, _, claim in claims:
            mark = "" if claim.error is None else "  (does not hold: see check)"
            lines.append(f"    {describe(claim, site.evidence.sets)}{mark}")
            if claim.recorded:  # its values vary: how, session by session
                lines.append(f"      recorded, session by session: {claim.recorded}")
    lines += _other_figures(repo, text, shown)
    return lines, [e for e in result.errors if not e.warning]


def _sentences(repo: Path, result, shown: str, text: str, base: int) -> list[tuple[str, str, int, int, list]]:
    """The page's claims grouped by the sentence they stand in: (file, its text, the sentence's start
    and end, [(start, end, claim)]), a diagram's claims in its own file."""
    groups: list[tuple[str, str, int, int, list]] = []
    for claim in result.claims:
        file = claim.file or shown
        written, at = (read_text(repo / claim.file, claim.file), 0) if claim.file else (text, base)
        start, end = at + claim.start, at + claim.end
        lo, hi = sentence_span(written, start, end)
        if groups and groups[-1][0] == file and groups[-1][2:4] == (lo, hi):
            groups[-1][4].append((start, end, claim))
        else:
            groups.append((file, written, lo, hi, [(start, end, claim)]))
    return groups


def _other_figures(repo: Path, text: str, shown: str) -> list[str]:
    """Every figure a reader sees that is no claim, and what stands behind it, as `lessonkit check`
    audits the rendered page: the page's in its order, then a diagram's at its own file's lines."""
    checked = CheckedSite(repo, store=Store(None), keep="errors")
    checked.refresh()
    others = checked.figures(text, shown)
    if not others:
        return []
    ordered = sorted(enumerate(others), key=lambda o: (isinstance(o[1][0], tuple), o[1][0] is None,
                                                       o[1][0] if isinstance(o[1][0], tuple) else (o[1][0] or 0,), o[0]))
    return ["Every other figure a reader sees, and what stands behind it:"] + [
        f"{'{}:{}'.format(*at) if isinstance(at, tuple) else f'{shown}:{at}'}: {figure}: {what}"
        for _, (at, figure, what) in ordered]


def run(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo, Path.cwd())
    page = args.page if args.page.is_absolute() or args.page.exists() else repo / args.page
    lines, errors = explain(repo, page)
    for line in lines:
        print(line)
    for error in errors:
        print(error, file=sys.stderr)
    return 1 if errors else 0
