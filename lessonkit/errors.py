"""The one error type of the project: a location, what is wrong, what was expected."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import FrozenInstanceError, dataclass


@dataclass(frozen=True)
class LessonError(Exception):
    """A problem found at `path:line` (`path:line:column` with a column); `line` is 1-based, or None for a whole file.

    `rank` orders a report so causes come before consequences: 0 for a file that cannot be
    read or a marker that is wrong, 1 for evidence integrity and freshness, 2 for what a page
    claims.
    """

    path: str
    line: int | None
    message: str
    rank: int = 1
    warning: bool = False  # fails only a strict build (a lesson folder the site does not use)
    column: int | None = None  # 1-based, in characters, where a line alone is not enough (a bad byte)
    note: bool = False  # said, never failing a build (a lesson not recorded yet: its page shows a notice)

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.line is not None and self.column is not None:
            where += f":{self.column}"
        level = "note: " if self.note else "warning: " if self.warning else ""
        return f"{where}: {level}{self.message}"

    def __reduce__(self) -> tuple[type[LessonError], tuple[str, int | None, str, int, bool, int | None, bool]]:
        """Pickled as its fields (a page checked in another process sends its errors back)."""
        return LessonError, (self.path, self.line, self.message, self.rank, self.warning, self.column, self.note)


def _set_dunder_only(self: LessonError, name: str, value: object) -> None:
    """Frozen fields, but Python may still set __traceback__, __cause__ and __context__ on it."""
    if name.startswith("__") and name.endswith("__"):
        object.__setattr__(self, name, value)
    else:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")


LessonError.__setattr__ = _set_dunder_only  # type: ignore[method-assign]


class LessonErrors(Exception):
    """Several LessonErrors reported together, so a build shows all of them at once."""

    def __init__(self, errors: Iterable[LessonError]):
        self.errors: list[LessonError] = list(errors)
        super().__init__(self.report())

    def __reduce__(self) -> tuple[type[LessonErrors], tuple[list[LessonError]]]:
        return LessonErrors, (self.errors,)

    def report(self) -> str:
        """All errors, causes first (stable within a rank), one per line, then the warnings, then the
        notes, then their counts."""
        lines = [str(e) for e in sorted(self.errors, key=report_order)]
        n = sum(not e.warning and not e.note for e in self.errors)
        w = sum(e.warning and not e.note for e in self.errors)
        k = sum(e.note for e in self.errors)
        count = f"{n} error{'s' if n != 1 else ''}"
        if w:
            count += f" and {w} warning{'s' if w != 1 else ''}"
        if k:
            count += f" ({k} note{'s' if k != 1 else ''})"
        lines.append(f"{count} found")
        return "\n".join(lines)


def report_order(error: LessonError) -> tuple[bool, bool, int, str, int, int]:
    """How a report lists errors: errors, then warnings, then notes; causes first (rank); then by file and
    line, so a reader fixing them goes down each file once."""
    return (error.note, error.warning, error.rank, error.path, error.line or 0, error.column or 0)


def split_warnings(errors: Iterable[LessonError]) -> tuple[list[LessonError], list[LessonError]]:
    """(the errors, the warnings) of a report; notes are in neither (split_notes)."""
    found = [e for e in errors if not e.note]
    return [e for e in found if not e.warning], [e for e in found if e.warning]


def split_notes(errors: Iterable[LessonError]) -> tuple[list[LessonError], list[LessonError]]:
    """(what is not a note, the notes) of a report."""
    found = list(errors)
    return [e for e in found if not e.note], [e for e in found if e.note]
