"""Lessons not recorded yet: a code/<lesson>/runs.toml and no evidence set of that lesson.

Such a lesson is work in progress, not a broken one: `lessonkit check` and the build say so as a
warning (which a strict build, this site's, refuses to publish), its page shows a notice where its
provenance would be, and any claim on it is an error until the refresh records it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence.spec import load_spec


@dataclass(frozen=True)
class Unrecorded:
    """A lesson with a runs.toml and no evidence: its name and the files its runs read."""

    lesson: str
    inputs: frozenset[str]  # code/<lesson>/<file> for every input its runs.toml names

    @property
    def refresh(self) -> str:
        """The command that records the lesson's evidence on a GPU machine."""
        return f".venv/bin/python scripts/refresh.py {self.lesson}"

    def warning(self) -> LessonError:
        """What `check` and the build say about it."""
        return LessonError(f"code/{self.lesson}/runs.toml", None,
                           f"lesson {self.lesson!r} is not recorded yet: no evidence set holds its runs, so its "
                           "page shows a 'Not yet recorded' notice and none of its claims can be checked; "
                           f"record it on a GPU machine: {self.refresh}", warning=True)


def find_unrecorded(repo: Path, recorded: Iterable[str]) -> tuple[dict[str, Unrecorded], set[str]]:
    """(every lesson under code/ with a readable runs.toml whose name is not in `recorded` (the
    lessons and folder names of the evidence sets), the names of those whose runs.toml cannot be
    read): the error of such a runs.toml is left to the check that reports it."""
    known = set(recorded)
    found: dict[str, Unrecorded] = {}
    unread: set[str] = set()
    code = repo / "code"
    for spec_path in sorted(code.glob("*/runs.toml")) if code.is_dir() else []:
        lesson = spec_path.parent.name
        if lesson in known:
            continue
        try:
            spec = load_spec(code, lesson)
        except LessonError:
            unread.add(lesson)
            continue
        files = spec.inputs + tuple(i for r in spec.runs for i in r.inputs)
        found[lesson] = Unrecorded(lesson, frozenset(f"code/{lesson}/{f}" for f in files))
    return found, unread
