"""Where the course repository is: the one rule the command line and accept both use."""

from __future__ import annotations

from pathlib import Path

from lessonkit.errors import LessonError


def find_repo(start: Path) -> Path:
    """The nearest folder at or above `start` holding mkdocs.yml beside code/ or evidence/."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "mkdocs.yml").is_file() and ((folder / "code").is_dir() or (folder / "evidence").is_dir()):
            return folder
    raise LessonError(str(start), None, "is not inside a course repository: no folder from here up holds "
                      "mkdocs.yml beside code/ or evidence/; run from inside one, or name it with --repo PATH")
