"""The repository's own files: README's lessons table lists every lesson, the home page links every
page of the nav, and .gitignore keeps the virtual environment out of git however it is made (a
folder, or a link to a shared one)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from conftest import REPO

from lessonkit.site.config import nav_pages

_FOLDER_RE = re.compile(r"""`(?P<folder>(?:code|evidence)/[^/`]+)/`""")
# A Markdown link's target, without its #anchor: ](reference/checking.md) or ](day62.md#predict).
_LINK_RE = re.compile(r"""\]\((?P<target>[^)\s#]+)(?:\#[^)\s]*)?\)""", re.VERBOSE)


def lessons_table(readme: str) -> list[str]:
    """The rows of README's table under '## The lessons' (the header and its rule left out)."""
    section = readme.split("\n## The lessons\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return rows[2:]


def listed_folders(readme: str) -> set[str]:
    """Every `code/X/` and `evidence/X/` the lessons table names."""
    return {m.group("folder") for row in lessons_table(readme) for m in _FOLDER_RE.finditer(row)}


def folders(root: Path, under: str) -> set[str]:
    return {f"{under}/{p.name}" for p in (root / under).iterdir() if p.is_dir() and not p.name.startswith(".")}


def test_readme_lists_every_lesson_and_evidence_set():
    listed = listed_folders((REPO / "README.md").read_text(encoding="utf-8"))
    assert folders(REPO, "code") <= listed, f"README's lessons table leaves out {folders(REPO, 'code') - listed}"
    assert folders(REPO, "evidence") <= listed, \
        f"README's lessons table leaves out {folders(REPO, 'evidence') - listed}"
    for row in lessons_table((REPO / "README.md").read_text(encoding="utf-8")):
        page = re.search(r"""`(docs/[^`]+\.md)`""", row)
        assert page and (REPO / page.group(1)).is_file(), row


def test_a_lesson_left_out_of_the_table_is_found(tmp_path: Path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    row = next(r for r in lessons_table(readme) if "code/day27-global-reduction/" in r)
    assert "code/day27-global-reduction" not in listed_folders(readme.replace(row + "\n", ""))
    assert "code/day27-global-reduction" in listed_folders(readme)


def pages_the_home_page_leaves_out(home: str, config: str) -> list[str]:
    """The pages of mkdocs.yml's nav (text `config`) that the home page's Markdown `home` does not link."""
    linked = {m.group("target") for m in _LINK_RE.finditer(home)}
    return [name for name, _ in nav_pages(config) if name != "index.md" and name not in linked]


def test_the_home_page_links_every_page_of_the_nav():
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert len(nav_pages(config)) > 5
    assert pages_the_home_page_leaves_out((REPO / "docs/index.md").read_text(encoding="utf-8"), config) == []


def test_a_page_left_off_the_home_page_is_found():
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    home = (REPO / "docs/index.md").read_text(encoding="utf-8")
    line = next(line for line in home.splitlines() if "(reference/writing-a-lesson.md)" in line)
    assert pages_the_home_page_leaves_out(home.replace(line, ""), config) == ["reference/writing-a-lesson.md"]
    config = config.replace("  - Home: index.md\n", "  - Home: index.md\n  - Other: other.md\n", 1)
    assert pages_the_home_page_leaves_out(home, config) == ["other.md"]
    assert pages_the_home_page_leaves_out(home + "\n[Other](other.md#part)\n", config) == []


def test_gitignore_ignores_a_linked_virtual_environment(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    (tmp_path / "shared-venv").mkdir()
    (tmp_path / ".venv").symlink_to(tmp_path / "shared-venv")
    done = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True)
    assert ".venv" not in done.stdout.split(), done.stdout
    (tmp_path / ".venv").unlink()
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    done = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True)
    assert ".venv/pyvenv.cfg" not in done.stdout.split(), done.stdout


def test_the_readme_layout_names_every_module_of_the_core():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):]
    layout = layout[:layout.index("```", layout.index("```") + 3)]
    words = set(re.findall(r"[a-z_]+", layout))
    modules = {p.stem for p in (REPO / "lessonkit").rglob("*.py") if p.stem not in ("__init__", "__main__")}
    assert sorted(modules - words) == []
