"""JSON transcripts (a program's machine-readable results) as queryable data."""

from __future__ import annotations

import json
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.transcript import Transcript


def parse_json_transcript(text: str, source: str) -> Transcript:
    """Top-level scalars become scalars; top-level lists of objects become collections."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LessonError(source, exc.lineno, f"not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise LessonError(source, None, "expected a JSON object at the top level")
    scalars: dict[str, Any] = {}
    records: dict[str, tuple[dict[str, Any], ...]] = {}
    for key, value in data.items():
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            records[key] = tuple(value)
        elif not isinstance(value, (list, dict)):
            scalars[key] = value
    return Transcript(source, tuple(text.splitlines()), scalars=scalars, records=records)
