"""The one error type of the project: a location, what is wrong, what was expected."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class LessonError(Exception):
    """A problem found at `path:line`; `line` is 1-based, or None for a whole file."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class LessonErrors(Exception):
    """Several LessonErrors reported together, so a build shows all of them at once."""

    def __init__(self, errors: Iterable[LessonError]):
        self.errors: list[LessonError] = list(errors)
        super().__init__(self.report())

    def report(self) -> str:
        """All errors, one per line, followed by their count."""
        lines = [str(e) for e in self.errors]
        n = len(self.errors)
        lines.append(f"{n} error{'s' if n != 1 else ''} found")
        return "\n".join(lines)
