"""The repository's own files: README's lessons table lists every lesson, and .gitignore keeps the
virtual environment out of git however it is made (a folder, or a link to a shared one)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from conftest import REPO

_FOLDER_RE = re.compile(r"""`(?P<folder>(?:code|evidence)/[^/`]+)/`""")


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
