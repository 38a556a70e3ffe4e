"""Day 27's program compiles with its own build line, refuses bad arguments before it touches
the GPU, and writes every JSON value that the page queries (the page cannot be checked
against evidence until a GPU records it; this catches a misspelt key before that)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from lessonkit.evidence.spec import load_spec
from lessonkit.pages.tables import RUN, SESSION

LESSON = REPO / "code/day27-global-reduction"
PAGE = REPO / "docs/day27-global-reduction.md"
# A claim on one of the lesson's JSON artifacts: `@ NAME-results:QUERY }}`.
_JSON_CLAIM_RE = re.compile(r"@\s+(?:day27-global-reduction/)?(?P<artifact>[a-z-]+-results):(?P<query>[^\s}]+)")
# A table drawn from an artifact: its source, the keys of its rows and columns, its cells' fields.
_TABLE_RE = re.compile(r"\{\{\s*table\s+(?P<body>[^}]*)\}\}")
_TABLE_SOURCE_RE = re.compile(r"^(?:day27-global-reduction/)?[a-z-]+-results:(?P<query>\S+)$")
_QUERY_NAMES_RE = re.compile(r"^#?(?P<name>\w+)(?:\[(?P<filters>[^\]]*)\])?(?:\.(?P<field>\w+))?$")


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """reduction built once with the sm_90 build line of runs.toml."""
    assert shutil.which("nvcc"), "nvcc is required: CI compiles the lesson's CUDA code"
    folder = tmp_path_factory.mktemp("day27")
    shutil.copy(LESSON / "reduction.cu", folder)
    line = load_spec(REPO / "code", "day27-global-reduction").build["sm_90"]
    done = subprocess.run(shlex.split(line), cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder / "reduction"


@pytest.mark.parametrize("args", [["--bogus"], ["--variants", "racy,racy"], ["--variants", "racy,nope"],
                                  ["--spare", "nope"], ["--threads", "48"], ["--launches", "0"],
                                  ["--launches"]])
def test_bad_arguments_print_usage_and_fail(program: Path, args: list[str]):
    done = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout.startswith(f"usage: {program} [--variants racy,fence,relacq,writer]")


def test_help_prints_usage(program: Path):
    # (Its exit code is 0 only where a CUDA driver answers: main synchronizes the device on the way out.)
    done = subprocess.run([str(program), "--help"], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith(f"usage: {program} [--variants racy,fence,relacq,writer]")
    assert "Only fence and relacq are gated." in done.stdout


def json_names_queried(page: str) -> set[str]:
    """Every scalar, collection and field name that the page's claims ask of a JSON artifact."""
    names: set[str] = set()
    for m in _JSON_CLAIM_RE.finditer(page):
        q = _QUERY_NAMES_RE.match(m.group("query"))
        assert q, m.group(0)
        names.add(q.group("name"))
        names.update(k.split("=")[0].strip() for k in (q.group("filters") or "").split(",") if k)
        if q.group("field"):
            names.add(q.group("field"))
    for m in _TABLE_RE.finditer(page):
        for word in shlex.split(m.group("body")):
            source = _TABLE_SOURCE_RE.match(word)
            if source:
                q = _QUERY_NAMES_RE.match(source.group("query"))
                assert q, word
                names.add(q.group("name"))
                names.update(k.split("=")[0].strip() for k in (q.group("filters") or "").split(",") if k)
            elif word.startswith(("rows=", "cols=")) and word[5:].split(":")[0] not in (RUN, SESSION):
                names.add(word[5:].split(":")[0])  # the table's own keys, the run and the session, are no JSON's
            elif word.startswith("cell="):
                names.update(re.findall(r"\{(\w+)\}", word) or [word[5:].strip('"')])
    return names


def test_the_page_queries_only_json_keys_the_program_writes():
    source = (LESSON / "reduction.cu").read_text()
    written = set(re.findall(r'\\"(\w+)\\":', source))
    queried = json_names_queried(PAGE.read_text())
    assert {"variants", "wrong", "ci_high", "timing", "ratio", "spare_blocks"} <= queried
    # What the manifest records of how a recording was made (TranscriptEntry.fields) is no JSON key.
    recorded = {"command", "exit_code", "timed_out", "wall_s", "date", "day", "repeats", "exclusive"}
    assert queried - written - recorded == set()


def test_the_key_check_sees_a_misspelt_key():
    assert json_names_queried("{{ 0 @ bare-results:variants[variant=racy].wrnog }}") == {"variants", "variant",
                                                                                        "wrnog"}
