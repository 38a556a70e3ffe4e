"""The README works as written: its commands run through the project's .venv (never the system
Python on project code), and the error output it quotes is what `lessonkit check` prints after
the edits it shows, made on a copy of this repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
_BLOCK_RE = re.compile(r"""^[ \t]*```(?P<kind>\w+)\n(?P<body>.*?)^[ \t]*```$""", re.MULTILINE | re.DOTALL)
EXAMPLE = "<!-- the edits and the errors below are checked by tests/test_readme.py -->"
CHECK = ".venv/bin/python -m lessonkit check"


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group("kind"), textwrap.dedent(m.group("body"))) for m in _BLOCK_RE.finditer(text)]


def commands() -> list[str]:
    """Every command line of the README's console blocks, comments dropped."""
    lines = []
    for kind, body in blocks(README):
        if kind == "console":
            lines += [line.split("  #")[0].strip() for line in body.splitlines() if line.strip()]
    return lines


def test_commands_run_through_the_venv():
    """After the setup (`python3 -m venv .venv ...`), nothing runs on the system Python."""
    lines = commands()
    assert lines[0].startswith("python3 -m venv .venv && .venv/bin/pip install -r requirements.txt")
    system = [line for line in lines if re.match(r"(?:\S+=\S+ )*python3?\b(?! -m venv)", line)]
    assert system == []
    assert any(line.startswith(".venv/bin/python -m lessonkit check") for line in lines)
    properdocs = [line for line in lines if "-m properdocs" in line]
    assert properdocs and all("-f mkdocs.yml" in line for line in properdocs)  # no advice to rename it


def check_errors(repo: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "lessonkit", "check"], cwd=repo, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO), LESSONKIT_CACHE="off"), timeout=300)
    return [line for line in done.stderr.splitlines() if not re.fullmatch(r"\d+ errors? found", line)]


def test_the_quoted_errors_are_what_check_prints(tmp_path: Path):
    at = README.index(EXAMPLE)
    (kind, edits), (text_kind, quoted) = blocks(README[at:])[:2]
    assert (kind, text_kind) == ("console", "text")
    repo = tmp_path / "repo"
    for name in ("docs", "code", "evidence", "hooks", "overrides"):
        shutil.copytree(REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "mkdocs.yml", repo / "mkdocs.yml")
    before = check_errors(repo)  # whatever else the site says today is not the example's
    lines = [line.split("  #")[0].strip() for line in edits.splitlines() if line.strip()]
    assert CHECK in lines and lines[-1].startswith("git checkout -- ")
    for line in lines[:lines.index(CHECK)]:
        subprocess.run(["bash", "-c", line], cwd=repo, check=True)
    new = [line for line in check_errors(repo) if line not in before]
    shown = quoted.splitlines()
    expected = new + [f"{len(new)} error{'s' if len(new) != 1 else ''} found"]
    assert shown == expected, "the README's example no longer matches; check prints:\n" + "\n".join(expected)


def test_the_inspecting_commands_run_as_written():
    """regions and transcript, as the README writes them, on this repository."""
    lines = [line for line in commands() if re.match(r"\.venv/bin/python -m lessonkit (regions|transcript) ", line)]
    assert len(lines) >= 3
    for line in lines:
        args = line.split()[3:]
        done = subprocess.run([sys.executable, "-m", "lessonkit", *args], cwd=REPO, capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
        assert done.returncode == 0 and json.loads(done.stdout), (line, done.stderr)


def recorded_span(set_name: str) -> tuple[int, float]:
    """How many recordings the set's latest session holds, and the seconds from its first start to its last end."""
    from lessonkit.evidence.manifest import read_manifest
    m = read_manifest(REPO / "evidence" / set_name, f"evidence/{set_name}/manifest.json")
    latest = list(m.sessions)[-1]
    entries = [e for e in m.entries.values() if e.session == latest]
    return len(entries), max(e.ended for e in entries) - min(e.started for e in entries)


def test_the_refresh_times_are_the_recorded_ones():
    text = " ".join(README.split())
    m = re.search(r"the (\d+) recordings of Day 62's latest session took (\d+) s, the litmus set's (\d+) s", text)
    assert m, "the README no longer states the refresh times"
    count, day62 = recorded_span("day62-racecheck")
    _, litmus = recorded_span("deeper-weak-memory")
    assert (int(m[1]), int(m[2]), int(m[3])) == (count, round(day62), round(litmus))
