"""Command line: `python -m lessonkit check | regions FILE | transcript FILE`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.jsontranscript import parse_json_transcript
from lessonkit.regions import parse_regions
from lessonkit.site import check_site
from lessonkit.transcript import parse_transcript


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LessonError(path, None, f"cannot read: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="verify every page, region, claim and evidence set; exit 1 listing all errors")
    check.add_argument("--repo", default=".", help="repository root (default: .)")
    regions = sub.add_parser("regions", help="the regions of a source file as JSON")
    regions.add_argument("file")
    transcript = sub.add_parser("transcript", help="a parsed transcript as JSON")
    transcript.add_argument("file")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            repo = Path(args.repo).resolve()
            errors = check_site(repo)
            if errors:
                print(LessonErrors(errors).report(), file=sys.stderr)
                return 1
            print(f"ok: every page, region, claim and evidence set under {repo} agrees")
            return 0
        if args.command == "regions":
            found = parse_regions(_read(args.file), args.file)
            print(json.dumps([{"name": r.name, "first": r.first, "last": r.last} for r in found.values()], indent=2))
            return 0
        text = _read(args.file)
        parse = parse_json_transcript if args.file.endswith(".json") else parse_transcript
        print(json.dumps(parse(text, args.file).to_json(), indent=2, default=str))
        return 0
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return 1
    except LessonErrors as exc:
        print(exc.report(), file=sys.stderr)
        return 1
