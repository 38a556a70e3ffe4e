"""JSON transcripts (a program's machine-readable results) as queryable data."""

from __future__ import annotations

import json
from typing import Any

from lessonkit import jsonkeys
from lessonkit.errors import LessonError
from lessonkit.evidence.transcript import Transcript

_KINDS = {list: "an array", str: "a string", bool: "true or false", int: "a number", float: "a number",
          type(None): "null"}


def parse_json_transcript(text: str, source: str) -> Transcript:
    """Top-level scalars become scalars; top-level lists of objects become collections."""
    try:
        data = jsonkeys.loads(text)
    except jsonkeys.DuplicateKey as exc:
        raise LessonError(source, exc.line, f"the key {exc.key!r} appears twice in one object; a value read from it "
                          "would be only the last of the two") from None
    except json.JSONDecodeError as exc:
        raise LessonError(source, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from exc
    except RecursionError:
        raise LessonError(source, None, "nested too deeply to read; expected a JSON object of "
                          "results and lists of records") from None
    if not isinstance(data, dict):
        raise LessonError(source, None, f"the top level is {_KINDS[type(data)]}; expected a JSON object "
                          "of results and lists of records")
    scalars: dict[str, Any] = {}
    records: dict[str, tuple[dict[str, Any], ...]] = {}
    for key, value in data.items():
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            records[key] = tuple(value)
        elif not isinstance(value, (list, dict)):
            scalars[key] = value
    return Transcript(source, tuple(text.splitlines()), scalars=scalars, records=records)
