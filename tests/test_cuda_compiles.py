"""racecheck.cu compiles with nvcc (present on CI, without a GPU), with the lesson's own build line."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from lessonkit.spec import load_spec

from conftest import REPO


def test_racecheck_compiles_with_each_build_line(tmp_path: Path):
    assert shutil.which("nvcc"), "nvcc is required: CI compiles the lesson's CUDA code"
    spec = load_spec(REPO / "code", "day62-racecheck")
    shutil.copy(REPO / "code/day62-racecheck/racecheck.cu", tmp_path)
    for arch, line in spec.build.items():
        done = subprocess.run(shlex.split(line), cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, f"{arch}: {done.stderr}"
        assert (tmp_path / "racecheck").stat().st_size > 0
        (tmp_path / "racecheck").unlink()
