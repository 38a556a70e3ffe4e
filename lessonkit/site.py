"""The whole site: every evidence set, every lesson's commands, every page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence import Evidence, load_all_evidence
from lessonkit.page import PageResult, process_page
from lessonkit.spec import load_spec

_FRONT_MATTER_RE = re.compile(r"""\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*\n""", re.DOTALL)


@dataclass
class Site:
    """What a build needs once: the repository root and its checked evidence."""

    repo: Path
    evidence: Evidence

    @classmethod
    def load(cls, repo: Path) -> "Site":
        """Load and check all evidence under `repo`."""
        return cls(repo, load_all_evidence(repo))

    def site_errors(self) -> list[LessonError]:
        """Errors that belong to no page: evidence integrity and freshness, lesson READMEs."""
        return self.evidence.errors + check_lesson_readmes(self.repo)

    def page(self, markdown: str, path: str, line_offset: int = 0) -> PageResult:
        """Expand and check one page's Markdown (`path` as messages name it)."""
        return process_page(markdown, path, self.repo, self.evidence.sets,
                            self.evidence.unreadable, line_offset)


def strip_front_matter(text: str) -> tuple[str, int]:
    """The page without its YAML front matter, and how many lines were removed."""
    m = _FRONT_MATTER_RE.match(text)
    if not m:
        return text, 0
    rest = text[m.end():]
    stripped = rest.lstrip("\n")
    return stripped, text.count("\n") - stripped.count("\n")


def check_lesson_readmes(repo: Path) -> list[LessonError]:
    """Each code/<lesson>/README.md shows every build line and command of its runs.toml verbatim."""
    errors: list[LessonError] = []
    code = repo / "code"
    for spec_path in sorted(code.glob("*/runs.toml")) if code.is_dir() else []:
        lesson = spec_path.parent.name
        try:
            spec = load_spec(code, lesson)
        except LessonError as exc:
            errors.append(exc)
            continue
        readme = spec_path.parent / "README.md"
        shown = f"code/{lesson}/README.md"
        if not readme.is_file():
            errors.append(LessonError(shown, None, "is missing; it must show the build lines and commands of runs.toml"))
            continue
        # A command counts only as a whole line (a console block may prefix it with "$ ").
        shown_lines = {line.strip().removeprefix("$ ") for line in readme.read_text(encoding="utf-8").splitlines()}
        wanted = [(f"build line {arch}", line) for arch, line in spec.build.items()]
        wanted += [(f"run {r.name!r}", r.command) for r in spec.runs]
        for what, command in wanted:
            if command not in shown_lines:
                errors.append(LessonError(shown, None, f"does not show the {what} of {spec.path}: {command!r}; "
                                          "copy it verbatim so readers run what the evidence ran"))
    return errors


def check_site(repo: Path, docs: Path | None = None) -> list[LessonError]:
    """All errors of the site: evidence, lesson READMEs and every page under docs/."""
    site = Site.load(repo)
    errors = site.site_errors()
    docs = docs or repo / "docs"
    for page_path in sorted(docs.rglob("*.md")):
        text = page_path.read_text(encoding="utf-8")
        body, offset = strip_front_matter(text)
        shown = page_path.relative_to(repo).as_posix() if page_path.is_relative_to(repo) else str(page_path)
        errors.extend(site.page(body, shown, offset).errors)
    return errors
