"""The "Writing a lesson" page, followed as written: every command it gives runs, in its order, on
a small course (the refresh with the fake GPU tools of test_refresh), with the outputs it shows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, mkdocs_yml
from fake_gpu import install

GUIDE = REPO / "docs" / "reference" / "writing-a-lesson.md"
LESSON = "day3-add-one"
FENCE_RE = re.compile(r"""^```(?P<lang>[\w+-]*)(?: [^\n]*)?\n(?P<body>.*?)^```$""", re.MULTILINE | re.DOTALL)
INLINE_RE = re.compile(r"""`(?P<cmd>\.venv/bin/python -m lessonkit [^`]+)`""")
# What the stub prints on an H100 (the fake GPU's program prints the same).
OUTPUT = "device: NVIDIA H100 80GB HBM3 | compute capability 9.0\nresult: 0 of 1000 elements wrong\n"


def blocks() -> list[tuple[str, str]]:
    """(language, text) of every fenced block of the guide, in order."""
    return [(m.group("lang"), m.group("body")) for m in FENCE_RE.finditer(GUIDE.read_text())]


@pytest.fixture
def course(demo_repo: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A course configured as this site is (strict, a nav, its narrative phrases), and the fake GPU tools."""
    (demo_repo / "mkdocs.yml").write_text("strict: true\n" + mkdocs_yml("nav:\n  - Home: index.md\n"))
    (demo_repo / "narrative.yml").write_text((REPO / "narrative.yml").read_text())  # "day N" for the nav title
    env = install(tmp_path / "bin")
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")  # the refresh's fixed build folder goes here, as in test_refresh
    (tmp_path / "bin" / "fake_program.py").write_text(f"#!/usr/bin/env python3\nprint({OUTPUT!r}, end='')\n")
    return demo_repo, env


def run(line: str, repo: Path, env: dict[str, str], scratch: Path) -> subprocess.CompletedProcess:
    """A command of the guide, run in `repo` as an author would: the project's Python for
    `.venv/bin/python`, the fake GPU for the refresh, the real nvcc for the build line."""
    line = line.replace("/tmp/add-one.txt", str(scratch / "add-one.txt"))
    if line.startswith(".venv/bin/python scripts/refresh.py"):
        command = line.replace(".venv/bin/python scripts/refresh.py", f"{sys.executable} {REPO}/scripts/refresh.py", 1)
        return subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    command = line.replace(".venv/bin/python", sys.executable)
    plain = dict(os.environ, PYTHONPATH=str(REPO), NO_MKDOCS_2_WARNING="1")
    return subprocess.run(["bash", "-c", command], cwd=repo, env=plain, capture_output=True, text=True, timeout=300)


def test_the_guide_s_toml_is_what_new_writes(demo_repo: Path):
    subprocess.run([sys.executable, "-m", "lessonkit", "new", LESSON, "--repo", str(demo_repo)], check=True,
                   env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
    written = {line.split(" #")[0].strip() for line in (demo_repo / f"code/{LESSON}/runs.toml").read_text().splitlines()}
    shown = [line.split(" #")[0].strip() for lang, body in blocks() if lang == "toml" for line in body.splitlines()]
    assert [line for line in shown if line and line not in written] == []


def test_every_command_of_the_guide_works_as_written(course, tmp_path: Path):
    repo, env = course
    page = repo / "docs" / f"{LESSON}.md"
    found = blocks()
    ran: list[str] = []
    for i, (lang, body) in enumerate(found):
        if lang == "markdown":  # the page's section on what the program prints, as the guide writes it
            text = page.read_text()
            page.write_text(text[:text.index("## What it prints")] + body.replace("\\{{", "{{"))
            continue
        if lang != "console":
            continue
        shown = found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
        for line in body.splitlines():
            if line.startswith("git "):
                continue  # the course here is no git repository
            done = run(line, repo, env, tmp_path)
            ran.append(line)
            assert done.returncode == 0, (line, done.stdout, done.stderr)  # a lesson not recorded yet fails nothing
            if shown is not None and line.startswith(".venv/bin/python -m lessonkit new"):
                assert done.stdout == shown
            elif shown is not None and line == ".venv/bin/python -m lessonkit check":
                assert done.stdout.replace(str(repo), "/path/to/the/repository") + done.stderr == shown
            if "--lesson" in line:
                data = json.loads(done.stdout)
                assert (data["gpu"], data["wrong"], data["elements"]) == ("NVIDIA H100 80GB HBM3", 0, 1000)
    assert ran == [
        f".venv/bin/python -m lessonkit new {LESSON}",
        ".venv/bin/python -m lessonkit check",
        f"(cd code/{LESSON} && nvcc -std=c++17 -O2 -lineinfo -arch=sm_90 -o add-one add-one.cu)",
        "printf 'device: NVIDIA H100 80GB HBM3 | compute capability 9.0\\nresult: 0 of 1000 elements wrong\\n' > /tmp/add-one.txt",
        f".venv/bin/python -m lessonkit transcript /tmp/add-one.txt --lesson {LESSON}",
        f".venv/bin/python scripts/refresh.py {LESSON}",
        f".venv/bin/python scripts/refresh.py {LESSON} --dry-run",
        ".venv/bin/python -m lessonkit check",
        ".venv/bin/python -m lessonkit accept",
    ]
    assert "{{ 0 @ bare:wrong }}" in page.read_text()  # the claims were checked, not left out
    for m in INLINE_RE.finditer(GUIDE.read_text()):  # the commands named in the prose
        done = run(m.group("cmd"), repo, env, tmp_path)
        assert done.returncode == 0, (m.group("cmd"), done.stderr)


def test_without_a_gpu_the_guide_shows_what_the_refresh_says(course, tmp_path: Path):
    repo, env = course
    subprocess.run([sys.executable, "-m", "lessonkit", "new", LESSON, "--repo", str(repo)], check=True,
                   env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
    (tmp_path / "bin" / "nvidia-smi").unlink()  # a laptop with the CUDA toolkit and no GPU
    said = [body for lang, body in blocks() if lang == "text" and "needs a GPU machine" in body]
    plain = run(f".venv/bin/python scripts/refresh.py {LESSON}", repo, env, tmp_path)
    assert (plain.returncode, [plain.stderr]) == (2, said)
    dry = run(f".venv/bin/python scripts/refresh.py {LESSON} --dry-run", repo, env, tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "build   sm_90: nvcc -std=c++17 -O2 -lineinfo -arch=sm_90 -o add-one add-one.cu" in dry.stdout
    assert "would run bare: ./add-one" in dry.stdout and not (repo / "evidence" / LESSON).exists()


def test_the_guide_explains_what_new_writes():
    text = GUIDE.read_text()
    first = text.index("evidence directive")
    assert "names the\npage's default evidence set" in text[first:first + 400]  # where it first appears
    assert "`code/day3-add-one/.gitignore`: the program the build line writes" in text
    source_note = text[:text.index("## Step 1. Make the lesson")]
    assert "backslash" in source_note and "is escaped and shows as text" in source_note
