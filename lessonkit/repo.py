"""Where the course repository is (the one rule the command line and accept both use), and the
names of the course-wide files it holds beside mkdocs.yml."""

from __future__ import annotations

from pathlib import Path

from lessonkit.errors import LessonError

COURSE_FILE = "narrative.yml"  # the course's narrative phrases (lessonkit.pages.narrative)
SOURCES_FILE = "sources.yml"  # the works pages quote (lessonkit.pages.sources)
# Other files an engine reads instead of mkdocs.yml (ProperDocs tries properdocs.yml,
# properdocs.yaml, mkdocs.yml, mkdocs.yaml in that order), and when (lessonkit.site.config).
OTHER_CONFIGS = {
    "properdocs.yml": "ProperDocs reads it instead of mkdocs.yml",
    "properdocs.yaml": "ProperDocs reads it instead of mkdocs.yml",
    "mkdocs.yaml": "MkDocs and ProperDocs read it when mkdocs.yml is missing or named with -f",
    "zensical.toml": "Zensical reads it instead of mkdocs.yml",
}


def find_repo(start: Path) -> Path:
    """The nearest folder at or above `start` holding mkdocs.yml beside code/ or evidence/."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "mkdocs.yml").is_file() and ((folder / "code").is_dir() or (folder / "evidence").is_dir()):
            return folder
    raise LessonError(str(start), None, "is not inside a course repository: no folder from here up holds "
                      "mkdocs.yml beside code/ or evidence/; run from inside one, or name it with --repo PATH")


def repo_root(named: Path | None, cwd: Path) -> Path:
    """The repository named with --repo (which must be a folder), or the one around `cwd`."""
    if named is None:
        return find_repo(cwd)
    if not named.is_dir():
        raise LessonError(str(named), None, "is not a folder; name the repository's root folder with --repo PATH")
    return named.resolve()
