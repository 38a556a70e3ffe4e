"""Command line: `python -m lessonkit check [--no-cache] [--[no-]strict] [--jobs N] | regions FILE |
transcript FILE|SET/RUN [--lesson LESSON] | accept | explain PAGE | verify-site | new LESSON`.

A subcommand is one entry of COMMANDS: its help line, its description for `NAME --help`, a
function that declares its arguments (each with its help), and a function that runs it and
returns the exit status; or the module that holds those (HELP, DESCRIPTION, add_arguments, run),
imported only when that command runs or `--help` lists every command. DESCRIPTION and EPILOG
are what `--help` shows a reader.

A command imports what it needs when it runs: `check` that finds its verdict stored loads
neither the evidence nor the page modules (lessonkit.site.verdict).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from lessonkit.cache import FOLDER, Store
from lessonkit.errors import LessonError, LessonErrors, split_notes, split_warnings
from lessonkit.repo import repo_root
from lessonkit.textio import SAVE_AS_UTF8, WRITTEN_BY_REFRESH, read_text

if TYPE_CHECKING:
    from lessonkit.evidence.harness import HarnessFormat

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE


DESCRIPTION = """\
Check the course site against its evidence: every figure a page quotes, every code region it
shows and every transcript it embeds, against the recordings under evidence/ (made on a GPU
machine by scripts/refresh.py). Run it from anywhere inside the repository."""

EPILOG = """\
exit status:
  0    everything agrees (notes, such as a lesson not recorded yet, are printed and fail
       nothing; warnings, such as a folder under code/ with no runs.toml, are listed on
       stderr and pass only where they do not fail the check: see 1)
  1    errors found, each listed on stderr as PATH:LINE: what is wrong; what to do; or
       check found only warnings and is strict: mkdocs.yml sets 'strict: true' (this
       site's does), or --strict was given; --no-strict lets warnings pass
  2    the command line is wrong, or no course repository around the working folder
       (accept: some claims could not be accepted; see accept --help)
  141  the program reading the output closed it early (as with | head)

examples:
  .venv/bin/python -m lessonkit check
  .venv/bin/python -m lessonkit regions code/day62-racecheck/racecheck.cu
  .venv/bin/python -m lessonkit transcript day62-racecheck/racecheck-buggy-analysis
  .venv/bin/python -m lessonkit verify-site site/

Run `.venv/bin/python -m lessonkit COMMAND --help` for what a command does and its arguments."""


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, its arguments, what it does, and its `--help` text."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


def _read(path: str, expected: str = SAVE_AS_UTF8) -> str:
    """A file named on the command line, as text; LessonError if it cannot be read or is not UTF-8."""
    try:
        return read_text(Path(path), path, expected)
    except OSError as exc:
        raise LessonError(path, None, f"cannot read: {exc.strerror}", rank=0) from exc


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=None, metavar="PATH",
                        help="the repository's root folder (default: the nearest folder from here up "
                             "that holds mkdocs.yml beside code/ or evidence/)")


def _check_site_arguments(parser: argparse.ArgumentParser) -> None:
    _check_arguments(parser)
    parser.add_argument("--no-cache", action="store_true",
                        help=f"neither read nor write the cache in {FOLDER}/ "
                             "(as LESSONKIT_CACHE=off)")
    parser.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                        help="fail on warnings (a folder under code/ with no runs.toml) too; default: as mkdocs.yml's "
                             "'strict' setting, which decides the same for the build")
    parser.add_argument("--jobs", type=_positive, default=None, metavar="N",
                        help="check pages in up to N processes when many must be checked (a fresh "
                             "clone, a changed evidence set); default: the CPUs this process may use")


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def _check(args: argparse.Namespace) -> int:
    try:
        repo = repo_root(args.repo, Path.cwd())
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    # Imported here: only `check` reads mkdocs.yml (with PyYAML); the other commands, run on a
    # GPU machine too, need the standard library alone.
    from lessonkit.site import verdict

    store = Store(None) if args.no_cache else Store.for_repo(repo)
    looked = verdict.lookup(store, repo)  # the verdict stored for these files, read without the core
    found, config = looked.errors, looked.config
    if found is None:
        # A page must be checked: the whole core.
        from lessonkit.site.check import CheckedSite, available_cpus
        site = CheckedSite(repo, store=store, keep="errors", jobs=args.jobs or available_cpus())
        found = site.check(looked=looked)
        config = site.config_checked and site.config_checked[:2]
    if config is None:  # not kept with the verdict: mkdocs.yml is read (PyYAML, the rules)
        from lessonkit.site.config import config_verdict
        config = config_verdict(repo)[:2]
    found = config[0] + found
    found, notes = split_notes(found)
    errors, warnings = split_warnings(found)
    strict = config[1] if args.strict is None else args.strict
    if found:
        print(LessonErrors(found).report(), file=sys.stderr)
    for note in notes:  # work in progress that fails nothing (a lesson not recorded yet)
        print(note)
    if errors or (warnings and strict):
        if not errors:
            why = "--strict" if args.strict else "mkdocs.yml sets 'strict: true', so its build fails on them too"
            print(f"warnings fail this check: {why}; --no-strict lets them pass", file=sys.stderr)
        return EXIT_ERRORS
    counted = f", with {len(warnings)} warning{'s' if len(warnings) != 1 else ''} (above)" if warnings else ""
    print(f"ok: every page, region, claim and evidence set under {repo} agrees{counted}")
    return EXIT_OK


def _file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE",
                        help="a source file with region markers, e.g. code/day62-racecheck/racecheck.cu")


def _transcript_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE|SET/RUN",
                        help="a transcript file (evidence/SET/NAME.txt or .json), or SET/RUN: every "
                             "recording of the run RUN of the evidence set SET, e.g. "
                             "day62-racecheck/racecheck-buggy-analysis")
    parser.add_argument("--lesson", metavar="LESSON",
                        help="read the program's lines by code/LESSON/runs.toml's [harness] "
                             "(default: the lesson of the evidence set holding FILE, if it is in one)")
    _check_arguments(parser)


def _regions(args: argparse.Namespace) -> int:
    from lessonkit.pages.regions import parse_regions

    found = parse_regions(_read(args.file), args.file)
    print(json.dumps([{"name": r.name, "first": r.first, "last": r.last} for r in found.values()], indent=2))
    return EXIT_OK


def _transcript(args: argparse.Namespace) -> int:
    if not Path(args.file).exists() and args.file.count("/") == 1:
        return _recordings(args)
    from lessonkit.evidence.jsontranscript import parse_json_transcript
    from lessonkit.evidence.transcript import parse_transcript

    text = _read(args.file, WRITTEN_BY_REFRESH)
    if args.file.endswith(".json"):
        parsed = parse_json_transcript(text, args.file)
    else:
        harness, recorded, tool_run = _harness_for(args)
        if not recorded and args.lesson is None:
            print(f"note: {args.file} is not in an evidence set, so no lesson's [harness] reads the "
                  "program's own lines; give --lesson LESSON for its values", file=sys.stderr)
        # A recording is what its set says it is (a run of compute-sanitizer's holds its output); any
        # other file must hold something this reads.
        parsed = parse_transcript(text, args.file, harness, require_output=not recorded, require_tool=tool_run)
    print(json.dumps(parsed.to_json(), indent=2, default=str))
    return EXIT_OK


def _harness_for(args: argparse.Namespace) -> tuple[HarnessFormat | None, bool, bool]:
    """The harness format of --lesson, or of the lesson whose evidence set holds the file; whether
    the file is in an evidence set; and whether it records a run that invokes compute-sanitizer."""
    from lessonkit.evidence.manifest import MANIFEST, read_manifest
    from lessonkit.evidence.spec import load_spec

    path = Path(args.file).resolve()
    lesson = args.lesson
    # evidence/SET/FILE (a set of format 3) or evidence/SET/SESSION/FILE
    folder = next((f for f in (path.parent, path.parent.parent)
                   if f.parent.name == "evidence" and (f / MANIFEST).is_file()), None)
    recorded = folder is not None
    manifest = read_manifest(folder, f"evidence/{folder.name}") if folder is not None else None
    inside = path.relative_to(folder).as_posix() if folder is not None else ""
    if lesson is None and manifest is not None:
        lesson = manifest.lesson
    if lesson is None:
        return None, recorded, False
    repo = repo_root(args.repo, path.parent if args.lesson is None else Path.cwd())
    spec = load_spec(repo / "code", lesson)
    entry = next((e for e in manifest.entries.values() if e.file == inside), None) if manifest else None
    run = spec.run(entry.group) if entry is not None else None
    return spec.harness, recorded, run is not None and run.uses_sanitizer and entry.format == "text"


def _recordings(args: argparse.Namespace) -> int:
    """SET/RUN: every recording of the run, each with how it was recorded and what it says."""
    from lessonkit.evidence.sets import load_all_evidence

    repo = repo_root(args.repo, Path.cwd())
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


COMMANDS: dict[str, Command | str] = {
    "check": Command(
        "check the site configuration and every page, region, claim and evidence set; exit 1 "
        "listing all errors", _check_site_arguments, _check,
        "Check what a build checks, without building: mkdocs.yml (the hooks and extensions that "
        "keep every published page checked), every page under docs/ (its Markdown, then the page "
        "rendered with mkdocs.yml's extensions and audited as a build audits it), every code region, "
        "claim and transcript on them, and every evidence set (hashes, freshness against the code, README "
        "commands). Lists every error, causes first, and exits 1; prints ok and exits 0 when "
        "everything agrees. Results are kept in .lessonkit-cache/, keyed by the contents they "
        "came from, so a second run re-checks only what changed."),
    "regions": Command(
        "the regions of a source file as JSON", _file_argument, _regions,
        "Print the named regions of a source file as JSON: for each region between a "
        "'// snippet: NAME' line and its '// end snippet' line (or '#' comments), its name and its "
        "first and last line, as a page's {{ region FILE NAME }} shows them. A malformed marker is "
        "an error naming its line."),
    "transcript": Command(
        "a parsed transcript as JSON; SET/RUN gives every recording of a run",
        _transcript_arguments, _transcript,
        "Print a transcript as JSON: every value a page can quote from it (tables, sanitizer "
        "reports, summaries). Given SET/RUN, print every recording of that run of the evidence "
        "set, each with how it was recorded (command, exit code, date, hashes) and what it says."),
    "accept": "lessonkit.cli.accept",
    "explain": "lessonkit.cli.explain",
    "verify-site": "lessonkit.site.verify",
    "new": "lessonkit.cli.new",
}


def program_name(argv0: str) -> str:
    """How usage lines name the program: `lessonkit` when run as the console script
    (.venv/bin/lessonkit), `python -m lessonkit` when run as a module."""
    name = os.path.basename(argv0)
    return "python -m lessonkit" if name in ("__main__.py", "-m", "-c", "") else name.removesuffix(".exe")


def command(name: str) -> Command:
    """COMMANDS' entry `name`, its module imported when it names one."""
    entry = COMMANDS[name]
    if isinstance(entry, Command):
        return entry
    module = import_module(entry)
    return Command(module.HELP, module.add_arguments, module.run, module.DESCRIPTION)


def build_parser(names: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, one subparser for each of `names` (default: every entry of COMMANDS)."""
    parser = argparse.ArgumentParser(prog=program_name(sys.argv[0]), description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for name in names or COMMANDS:
        command_ = command(name)
        command_.add_arguments(sub.add_parser(name, help=command_.help, description=_paragraphs(
            command_.description or command_.help), formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def _paragraphs(text: str, width: int = 80) -> str:
    """`text` filled to `width`, its paragraphs (split by a blank line) kept apart."""
    return "\n\n".join(textwrap.fill(par, width, break_on_hyphens=False) for par in text.split("\n\n"))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    given = sys.argv[1:] if argv is None else argv
    # The first word is the command (the program takes no option before it but --help): only
    # its parser is built, and only its module imported. Anything else gets every command's.
    first = given[0] if given else None
    args = build_parser([first] if first in COMMANDS else None).parse_args(given)
    try:
        status = command(args.command).run(args)
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
