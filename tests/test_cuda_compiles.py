"""racecheck.cu compiles with nvcc (present on CI, without a GPU), with the lesson's own build line.

The program reads its arguments before it touches CUDA, so its usage check runs here too;
only rejected arguments are run (a valid mode would need a GPU, and `stayalive` may hang).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

from lessonkit.evidence.spec import load_spec
from lessonkit.pages.regions import parse_regions

SOURCE = REPO / "code/day62-racecheck/racecheck.cu"
USAGE = "usage: ./racecheck [buggy|fixed|all]\n       ./racecheck stayalive 32|256\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """racecheck built once with the sm_90 build line of runs.toml."""
    assert shutil.which("nvcc"), "nvcc is required: CI compiles the lesson's CUDA code"
    folder = tmp_path_factory.mktemp("racecheck")
    shutil.copy(SOURCE, folder)
    line = load_spec(REPO / "code", "day62-racecheck").build["sm_90"]
    done = subprocess.run(shlex.split(line), cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return folder


def test_racecheck_compiles_with_each_build_line(tmp_path: Path):
    assert shutil.which("nvcc"), "nvcc is required: CI compiles the lesson's CUDA code"
    spec = load_spec(REPO / "code", "day62-racecheck")
    shutil.copy(SOURCE, tmp_path)
    for arch, line in spec.build.items():
        done = subprocess.run(shlex.split(line), cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, f"{arch}: {done.stderr}"
        assert (tmp_path / "racecheck").stat().st_size > 0
        (tmp_path / "racecheck").unlink()


def test_build_lines_name_source_lines_and_the_architecture():
    build = load_spec(REPO / "code", "day62-racecheck").build
    assert set(build) == {"sm_90", "sm_75"}
    for arch, line in build.items():
        words = shlex.split(line)
        assert "-lineinfo" in words and f"-arch={arch}" in words, line


@pytest.mark.parametrize("args", [["bogus"], ["stayalive"], ["stayalive", "64"], ["stayalive", "032"],
                                  ["stayalive", "32", "extra"], ["all", "extra"], ["buggy", "32"]])
def test_usage_rejects_unknown_arguments(built: Path, args: list[str]):
    done = subprocess.run(["./racecheck", *args], cwd=built, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", USAGE)


def test_stay_alive_variant_is_marked_and_run_only_by_its_mode():
    text = SOURCE.read_text(encoding="utf-8")
    regions = parse_regions(text, "code/day62-racecheck/racecheck.cu")
    assert set(regions) == {"racy-step", "fixed-step", "divergent-barrier", "fixed-barrier", "stay-alive"}
    body = regions["stay-alive"].text
    # the skipping threads stay in the kernel and reach a barrier after the loop
    assert "break;" in body and "return" not in body
    assert body.rstrip().splitlines()[-1].strip().startswith("__syncthreads();")
    cases = re.search(r"constexpr Case kCases\[\] = \{(?P<body>.*?)\};", text, re.DOTALL)
    assert cases and "reverseTilesStayAlive" not in cases.group("body")
    assert 'std::strcmp(mode, "stayalive") == 0' in text


def test_harness_prints_the_lines_the_page_quotes():
    text = SOURCE.read_text(encoding="utf-8")
    assert 'std::printf("elements: %d (%d*1024 + %d)\\n", kElements, kElements / 1024, kElements % 1024);' in text
    assert ('std::printf("tiling: threads %d | full tiles %d | partial tile %d elements\\n", threads,\n'
            '                kElements / threads, kElements % threads);') in text


def test_stay_alive_runs_are_short_and_recorded_once():
    runs = {r.name: r for r in load_spec(REPO / "code", "day62-racecheck").runs}
    expected = {
        "bare-stayalive-32": "./racecheck stayalive 32",
        "bare-stayalive-256": "./racecheck stayalive 256",
        "synccheck-stayalive-32": "compute-sanitizer --tool synccheck ./racecheck stayalive 32",
        "synccheck-stayalive-256": "compute-sanitizer --tool synccheck ./racecheck stayalive 256",
    }
    assert {name: runs[name].command for name in expected if name in runs} == expected
    assert all(runs[name].timeout == 20 and not runs[name].gate for name in expected)


def test_runs_that_vary_are_repeated_and_the_sweep_runs_alone():
    raw = tomllib.loads((REPO / "code/day62-racecheck/runs.toml").read_text(encoding="utf-8"))
    repeats = {r["name"]: r.get("repeat", 1) for r in raw["run"]}
    exclusive = sorted(r["name"] for r in raw["run"] if r.get("exclusive", False))
    assert {name for name, n in repeats.items() if n > 1} == {
        "bare-all", "racecheck-buggy-analysis", "racecheck-buggy-hazard", "racecheck-buggy-xml",
        "synccheck-buggy", "sweep", "sweep-crossed", "synccheck-stayalive-256", "racecheck-buggy-info",
        "initcheck-buggy-shared"}
    assert {n for n in repeats.values()} == {1, 3, 5}
    assert exclusive == ["sweep", "sweep-crossed"]
