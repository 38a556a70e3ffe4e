"""Fixture trees for the tests: small lessons, evidence sets and sites, made on the spot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lessonkit.evidence import BUILD_INPUT
from lessonkit.spec import sha256_file, sha256_text

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / "hooks" / "lessonkit_hooks.py"

SOURCE = """\
// a tiny lesson
__global__ void k(float* a) {
    // snippet: body
    a[threadIdx.x] += 1.0f;
    a[threadIdx.x] *= 2.0f;
    // end snippet
}
"""

BUILD = "nvcc -lineinfo -arch=sm_90 -o demo demo.cu"

RUNS = f"""\
lesson = "demo"
inputs = ["demo.cu"]

[build]
sm_90 = "{BUILD}"

[[run]]
name = "race"
command = "compute-sanitizer --tool racecheck ./demo"

[[run]]
name = "bare"
command = "./demo"
gate = true
"""

README = f"""# demo

```console
{BUILD}
./demo
compute-sanitizer --tool racecheck ./demo
```
"""

RACE = """\
========= COMPUTE-SANITIZER
device: NVIDIA H200 | compute capability 9.0 | warp size 32
mode: buggy
threads | kernel | mismatches | first bad | gated
     32 | k      |          0 |         - | no
    256 | k      |          7 |        64 | no
========= Error: Race reported between Read access at k(float *)+0x10 in demo.cu:4
=========     and Write access at k(float *)+0x20 in demo.cu:4 [120 hazards]
========= 
========= Warning: Race reported between Read access at k(float *)+0x10 in demo.cu:4
=========     and Write access at k(float *)+0x20 in demo.cu:4 [8 hazards]
========= 
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

BARE = """\
device: NVIDIA H200 | compute capability 9.0 | warp size 32
mode: all
threads | kernel | mismatches | first bad | gated
     32 | k      |          0 |         - | no
"""

PROVENANCE = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04",
              "nvcc": "13.0.88", "compute_sanitizer": "2025.3.1.0"}

PAGE = """\
# Demo

{{ evidence demo }}

{{ region demo/demo.cu body highlight=4@race:reports[severity=Error].line }}

racecheck found {{ 2 @ race:#reports }} reports; the error has {{ 120 @ race:reports[severity=Error].hazards }} hazards.
It ends with RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning).

{{ transcript race }}
"""


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Write {relative path: text} under root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def record_set(repo: Path, lesson: str, transcripts: dict[str, str], set_name: str | None = None,
               provenance: dict | None = None, arch: str = "sm_90") -> Path:
    """Write evidence/<set>/ as the refresh would: transcripts, hashes of today's inputs, manifest."""
    from lessonkit.spec import load_spec

    spec = load_spec(repo / "code", lesson)
    set_name = set_name or lesson
    folder = repo / "evidence" / set_name
    folder.mkdir(parents=True, exist_ok=True)
    entries = {}
    for name, text in transcripts.items():
        run = spec.run(name)
        inputs = {BUILD_INPUT: sha256_text(spec.build[arch])}
        for rel in spec.inputs + (run.inputs if run else ()):
            inputs[f"code/{lesson}/{rel}"] = sha256_file(repo / "code" / lesson / rel)
        fmt = "json" if name.endswith("-json") else "text"
        file = f"{name}.{'json' if fmt == 'json' else 'txt'}"
        (folder / file).write_text(text, encoding="utf-8")
        entries[name] = {"file": file, "command": run.command if run else "?", "exit_code": 0,
                         "timed_out": False, "wall_s": 1.5, "date": "2026-11-29T12:00:00Z",
                         "inputs": inputs, "sha256": sha256_file(folder / file), "format": fmt}
    manifest = {"format": 1, "lesson": lesson, "arch": arch, "build": spec.build[arch],
                "refresh": f"python3 scripts/refresh.py {lesson}", "provenance": provenance or PROVENANCE,
                "transcripts": entries}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return folder


def mkdocs_yml(extra: str = "") -> str:
    """A small site config that uses the project's hooks (a fast built-in theme)."""
    return f"""site_name: fixture
theme:
  name: mkdocs
hooks:
  - {HOOKS}
markdown_extensions:
  - admonition
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.highlight
{extra}"""


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    """A repository with one lesson, its recorded evidence and one good page."""
    write_tree(tmp_path, {
        "code/demo/demo.cu": SOURCE, "code/demo/runs.toml": RUNS, "code/demo/README.md": README,
        "docs/index.md": PAGE, "mkdocs.yml": mkdocs_yml(),
    })
    record_set(tmp_path, "demo", {"race": RACE, "bare": BARE})
    return tmp_path


def mkdocs_build(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `mkdocs build` in repo as CI does; returns the finished process."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(repo / "site"), *args],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=120)
