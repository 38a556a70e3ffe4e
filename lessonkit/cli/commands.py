"""Command line: `python -m lessonkit check [--no-cache] [--[no-]strict] | regions FILE |
transcript FILE|SET/RUN [--lesson LESSON] | accept | verify-site | new LESSON`.

Exit status: 0 all agree (warnings, listed on stderr, pass unless strict), 1 errors found
(listed on stderr), 2 a usage error (argparse's,
or no repository around the working folder), 141 the reader of stdout went away
(`... | head`), as a shell reports a program ended by SIGPIPE.

A subcommand is one entry of COMMANDS: its help, a function that declares its arguments,
and a function that runs it and returns the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lessonkit.cache import FOLDER, Store
from lessonkit.cli import accept, new
from lessonkit.errors import LessonError, LessonErrors, split_warnings
from lessonkit.evidence.harness import HarnessFormat
from lessonkit.evidence.jsontranscript import parse_json_transcript
from lessonkit.evidence.transcript import parse_transcript
from lessonkit.pages.regions import parse_regions
from lessonkit.repo import find_repo
from lessonkit.site import verify
from lessonkit.site.check import check_site
from lessonkit.textio import read_text

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, its arguments, and what it does."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _read(path: str) -> str:
    """A file named on the command line, as text; LessonError if it cannot be read or is not UTF-8."""
    try:
        return read_text(Path(path), path)
    except OSError as exc:
        raise LessonError(path, None, f"cannot read: {exc.strerror}", rank=0) from exc


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=None,
                        help="repository root (default: the nearest folder up from here with mkdocs.yml)")


def _check_site_arguments(parser: argparse.ArgumentParser) -> None:
    _check_arguments(parser)
    parser.add_argument("--no-cache", action="store_true",
                        help=f"neither read nor write the cache in {FOLDER}/ "
                             "(as LESSONKIT_CACHE=off)")
    parser.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                        help="fail on warnings (a lesson not recorded yet) too; default: as mkdocs.yml's "
                             "'strict' setting, which decides the same for the build")


def _check(args: argparse.Namespace) -> int:
    if args.repo is not None:
        repo = args.repo.resolve()
    else:
        try:
            repo = find_repo(Path.cwd())
        except LessonError as exc:
            print(exc, file=sys.stderr)
            return EXIT_USAGE
    # Imported here: only `check` reads mkdocs.yml (with PyYAML); the other commands, run on a
    # GPU machine too, need the standard library alone.
    from lessonkit.site.config import load_site_config_errors, site_is_strict

    found = load_site_config_errors(repo) + check_site(repo, store=Store(None) if args.no_cache else None)
    errors, warnings = split_warnings(found)
    strict = site_is_strict(repo) if args.strict is None else args.strict
    if found:
        print(LessonErrors(found).report(), file=sys.stderr)
    if errors or (warnings and strict):
        if not errors:
            why = "--strict" if args.strict else "mkdocs.yml sets 'strict: true', so its build fails on them too"
            print(f"warnings fail this check: {why}; --no-strict lets them pass", file=sys.stderr)
        return EXIT_ERRORS
    counted = f", with {len(warnings)} warning{'s' if len(warnings) != 1 else ''} (above)" if warnings else ""
    print(f"ok: every page, region, claim and evidence set under {repo} agrees{counted}")
    return EXIT_OK


def _file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file")


def _transcript_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a transcript file, or SET/RUN: every recording of a run of an evidence set")
    parser.add_argument("--lesson", help="read the program's lines by code/LESSON/runs.toml's [harness] "
                        "(default: the lesson of the evidence set holding FILE, if it is in one)")
    _check_arguments(parser)


def _regions(args: argparse.Namespace) -> int:
    found = parse_regions(_read(args.file), args.file)
    print(json.dumps([{"name": r.name, "first": r.first, "last": r.last} for r in found.values()], indent=2))
    return EXIT_OK


def _transcript(args: argparse.Namespace) -> int:
    if not Path(args.file).exists() and args.file.count("/") == 1:
        return _recordings(args)
    text = _read(args.file)
    if args.file.endswith(".json"):
        parsed = parse_json_transcript(text, args.file)
    else:
        parsed = parse_transcript(text, args.file, _harness_for(args))
    print(json.dumps(parsed.to_json(), indent=2, default=str))
    return EXIT_OK


def _harness_for(args: argparse.Namespace) -> HarnessFormat | None:
    """The harness format of --lesson, or of the lesson whose evidence set holds the file."""
    from lessonkit.evidence.manifest import MANIFEST, read_manifest
    from lessonkit.evidence.spec import load_spec

    path = Path(args.file).resolve()
    lesson = args.lesson
    if lesson is None and path.parent.parent.name == "evidence" and (path.parent / MANIFEST).is_file():
        lesson = read_manifest(path.parent, f"evidence/{path.parent.name}").lesson
    if lesson is None:
        return None
    repo = args.repo.resolve() if args.repo is not None else find_repo(
        path.parent if args.lesson is None else Path.cwd())
    return load_spec(repo / "code", lesson).harness


def _recordings(args: argparse.Namespace) -> int:
    """SET/RUN: every recording of the run, each with how it was recorded and what it says."""
    from lessonkit.evidence.sets import load_all_evidence

    repo = args.repo.resolve() if args.repo is not None else find_repo(Path.cwd())
    set_name, _, group = args.file.partition("/")
    evidence = load_all_evidence(repo)
    ev = evidence.sets.get(set_name)
    if ev is None:
        raise LessonError(args.file, None, f"no evidence set {set_name!r}; the sets are: "
                          f"{', '.join(sorted(evidence.sets)) or 'none'}", rank=0)
    names = ev.recordings(group)
    if not names:
        raise LessonError(args.file, None, f"set {set_name!r} has no run {group!r}; it has: "
                          f"{', '.join(sorted(ev.groups))}", rank=0)
    out = []
    for name in names:
        entry = ev.entries[name]
        out.append({"recording": name, "file": ev.transcript_path(name), **entry.fields(),
                    **ev.transcript(name).to_json()})
    print(json.dumps(out, indent=2, default=str))
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "check": Command("verify the site configuration and every page, region, claim and evidence set; "
                     "exit 1 listing all errors",
                     _check_site_arguments, _check),
    "regions": Command("the regions of a source file as JSON", _file_argument, _regions),
    "transcript": Command("a parsed transcript as JSON; SET/RUN gives every recording of a run",
                          _transcript_arguments, _transcript),
    "accept": Command(accept.HELP, accept.add_arguments, accept.run),
    "verify-site": Command(verify.HELP, verify.add_arguments, verify.run),
    "new": Command(new.HELP, new.add_arguments, new.run),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one subparser for each entry of COMMANDS."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        command.add_arguments(sub.add_parser(name, help=command.help))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        status = COMMANDS[args.command].run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader left; send whatever is still buffered nowhere so exit stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERRORS
    except LessonErrors as exc:
        print(exc.report(), file=sys.stderr)
        return EXIT_ERRORS
