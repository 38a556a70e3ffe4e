"""`python -m lessonkit accept`: rewrite the value of every claim that the evidence no longer supports.

An author's loop is refresh, review, accept, commit. Accept lists every claim that no
longer holds as `page:line: old -> new` and, once confirmed, replaces only the value
before the claim's `@`; every other byte of the page stays as it was. The new value is
exact when every recording agrees, a rounded `~V` when a rounded claim's values all round
to one V, and otherwise a range around every value (lessonkit.pages.claims.accepted_value).
A claim whose reference or query is broken, or whose evidence set has errors, is refused:
its error is printed and nothing is changed for it. Running it twice changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from lessonkit.errors import LessonError
from lessonkit.repo import repo_root
from lessonkit.site.check import Site, strip_front_matter
from lessonkit.textio import decode_utf8

EXIT_DONE = 0         # every claim holds, or every stale one was rewritten
EXIT_UNCONFIRMED = 1  # stale claims listed, nothing written: no --yes and no terminal, or the author said no
EXIT_REFUSED = 2      # some claims cannot be accepted (their errors are printed); the others were rewritten


@dataclass(frozen=True)
class Edit:
    """One value to rewrite: text[start:end] of `page` (offsets into the file's text) is `old`."""

    page: str
    line: int
    start: int
    end: int
    old: str
    new: str


@dataclass
class Plan:
    """What accept would do: the edits, and the claims it refuses with their errors."""

    edits: list[Edit] = field(default_factory=list)
    refused: list[LessonError] = field(default_factory=list)
    held_back: dict[str, int] = field(default_factory=dict)  # set -> stale claims on it, while it has errors


def _read_page(path: Path, shown: str) -> str:
    """The page's text exactly as stored (no newline translation), so offsets are the file's."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return decode_utf8(data, shown)  # raises the LessonError naming the first bad byte


def plan_accept(repo: Path, docs: Path | None = None) -> Plan:
    """Check every page under docs/ and plan a new value for each claim that no longer holds."""
    site = Site.load(repo)
    troubled = {e.path.split("/")[1] for e in site.evidence.errors if e.path.startswith("evidence/")}
    plan = Plan()
    docs = docs or repo / "docs"
    for page_path in sorted(docs.rglob("*.md")):
        shown = page_path.relative_to(repo).as_posix() if page_path.is_relative_to(repo) else str(page_path)
        text = _read_page(page_path, shown)
        body, line_offset = strip_front_matter(text)
        base = len(text) - len(body)  # the body is the end of the file's text
        for claim in site.page(body, shown, line_offset).claims:
            if claim.error is None or claim.skipped:
                continue
            held = [name for name in claim.sets or (claim.set_name,) if name in troubled]
            if held:
                plan.held_back[held[0]] = plan.held_back.get(held[0], 0) + 1
            elif claim.fix is None:
                plan.refused.append(claim.error)
            elif text[base + claim.start:base + claim.end] != claim.value:
                plan.refused.append(LessonError(shown, claim.line, f"claim {claim.value!r} ({claim.ref_query}) "
                                                "is not accepted: its value is not written on one line as shown; "
                                                f"write {claim.fix!r} by hand"))
            else:
                plan.edits.append(Edit(shown, claim.line, base + claim.start, base + claim.end,
                                       claim.value, claim.fix))
    return plan


def apply_edits(repo: Path, edits: list[Edit]) -> list[str]:
    """Rewrite the values in place (each page replaced atomically); returns the pages changed."""
    by_page: dict[str, list[Edit]] = {}
    for edit in edits:
        by_page.setdefault(edit.page, []).append(edit)
    for page, page_edits in by_page.items():
        path = repo / page
        text = _read_page(path, page)
        for edit in sorted(page_edits, key=lambda e: e.start, reverse=True):
            if text[edit.start:edit.end] != edit.old:
                raise LessonError(page, edit.line, f"changed while accept ran: expected {edit.old!r} here; "
                                  "run accept again")
            text = text[:edit.start] + edit.new + text[edit.end:]
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".accept")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            os.chmod(tmp, path.stat().st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return list(by_page)


def _confirmed(count: int, pages: int, yes: bool, stdin: TextIO, out: TextIO) -> bool:
    if yes:
        return True
    if not stdin.isatty():
        print("nothing written: confirm with --yes (there is no terminal to ask)", file=out)
        return False
    out.write(f"rewrite {count} claim value{'s' if count != 1 else ''} in {pages} page{'s' if pages != 1 else ''}? [y/N] ")
    out.flush()
    if stdin.readline().strip().lower() in ("y", "yes"):
        return True
    print("nothing written: not confirmed", file=out)
    return False


HELP = ("list the claims the evidence no longer supports as page:line: old -> new, and rewrite their "
        "values once confirmed (--yes: without asking)")
DESCRIPTION = """\
After a refresh, list every claim whose value the new evidence no longer supports, as
PAGE:LINE: OLD -> NEW, and once you confirm, rewrite those values and nothing else on the
pages. The new value is exact when every recording agrees, rounded (~V) for a rounded claim,
and otherwise a range around every recorded value. A claim whose reference is broken, or
whose evidence set has errors, is listed and left alone.

exit status: 0 every claim holds or was rewritten; 1 nothing written (not confirmed, or no
terminal to ask and no --yes); 2 some claims could not be accepted (listed), the others
were rewritten."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare accept's arguments on `parser`."""
    parser.add_argument("--repo", type=Path, default=None, metavar="PATH",
                        help="the repository's root folder (default: the nearest folder from here up "
                             "that holds mkdocs.yml beside code/ or evidence/)")
    parser.add_argument("--yes", action="store_true",
                        help="rewrite without asking (needed where there is no terminal to ask)")


def run(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    """Run accept with parsed arguments; returns EXIT_DONE, EXIT_UNCONFIRMED or EXIT_REFUSED."""
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    repo = repo_root(args.repo, Path.cwd())
    plan = plan_accept(repo)
    for edit in plan.edits:
        print(f"{edit.page}:{edit.line}: {edit.old} -> {edit.new}", file=out)
    for set_name, count in sorted(plan.held_back.items()):
        print(f"evidence/{set_name}: {count} claim{'s' if count != 1 else ''} on it not accepted while the set "
              "has errors (python -m lessonkit check lists them); fix or refresh it, then accept", file=out)
    if plan.refused:
        print(f"not accepted ({len(plan.refused)}; fix by hand):", file=out)
        for error in plan.refused:
            print(f"  {error}", file=out)
    refused = bool(plan.refused or plan.held_back)
    if not plan.edits:
        if not refused:
            print("every claim holds; nothing to accept", file=out)
        return EXIT_REFUSED if refused else EXIT_DONE
    pages = len({e.page for e in plan.edits})
    if not _confirmed(len(plan.edits), pages, args.yes, stdin, out):
        return EXIT_UNCONFIRMED
    apply_edits(repo, plan.edits)
    print(f"rewrote {len(plan.edits)} claim value{'s' if len(plan.edits) != 1 else ''} in {pages} "
          f"page{'s' if pages != 1 else ''}; review with git diff, then run python -m lessonkit check", file=out)
    return EXIT_REFUSED if refused else EXIT_DONE


def main(argv: list[str] | None = None, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    """`python -m lessonkit accept [--repo R] [--yes]`; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit accept", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv), stdin, out)
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return EXIT_UNCONFIRMED
