"""Lessons not recorded yet: a code/<lesson>/runs.toml and no evidence set of that lesson.

Such a lesson is work in progress, not a broken one: `lessonkit check` and the build say so in a
note, which fails no build, strict or not; its page shows a "Not yet recorded" notice where its
provenance would be and stays out of the site's search and sitemap; any claim on its own evidence
is an error until the refresh records it (a page may meanwhile quote the sets that exist).
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

    def note(self) -> LessonError:
        """What `check` and the build say about it (a note: it fails no build)."""
        return LessonError(f"code/{self.lesson}/runs.toml", None,
                           f"lesson {self.lesson!r} is not recorded yet: no evidence set holds its runs, so its "
                           "page shows a 'Not yet recorded' notice and stays out of the search and the sitemap; "
                           f"claims on its own evidence wait for the first recording on a GPU machine: {self.refresh}",
                           note=True)


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


def unused_folders(repo: Path) -> list[LessonError]:
    """A warning for each folder under code/ that holds no runs.toml: the site uses nothing of it (no
    evidence set, no check of its regions, no published program), so an author who removed runs.toml
    to get past a refusal is told that the lesson has left the site."""
    code = repo / "code"
    if not code.is_dir():
        return []
    return [LessonError(f"code/{folder.name}", None,
                        f"holds no runs.toml, so the site uses nothing of this folder (no evidence set, no program "
                        f"page, no check of its regions); give it one (.venv/bin/python -m lessonkit new "
                        f"{folder.name} writes a lesson's files, here or in a fresh folder) or remove the folder",
                        warning=True)
            for folder in sorted(code.iterdir()) if folder.is_dir() and not folder.name.startswith((".", "_"))
            and not (folder / "runs.toml").exists()]
