"""The refresh, with the GPU tools faked: recording, atomicity, --only, gates, hangs, reporting."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, write_tree
from fake_gpu import install

RUNS = """\
lesson = "demo"
inputs = ["demo.cu"]

[build]
sm_90 = "nvcc -lineinfo -arch=sm_90 -o demo demo.cu"

[[run]]
name = "bare"
command = "./demo all"
gate = true
timeout = 30

[[run]]
name = "race"
command = "compute-sanitizer --tool racecheck ./demo buggy"
timeout = 30

[[run]]
name = "slow"
command = "./demo slow"
timeout = 30
"""

README = """```console
nvcc -lineinfo -arch=sm_90 -o demo demo.cu
./demo all
compute-sanitizer --tool racecheck ./demo buggy
./demo slow
```
"""


@pytest.fixture
def lab(tmp_path: Path):
    repo = tmp_path / "repo"
    write_tree(repo, {"code/demo/demo.cu": "// v1\n", "code/demo/runs.toml": RUNS,
                      "code/demo/README.md": README, "docs/index.md": "# hi\n"})
    env = install(tmp_path / "bin")
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    return repo, env


def refresh(repo: Path, env: dict, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo), *args],
                          env={**env, **extra}, capture_output=True, text=True, timeout=120)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_records_a_set_with_provenance(lab):
    repo, env = lab
    done = refresh(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((repo / "evidence/demo/manifest.json").read_text())
    assert manifest["provenance"]["gpu"] == "Fake GPU" and manifest["provenance"]["driver"] == "999.99"
    assert manifest["provenance"]["compute_sanitizer"] == "2025.3.1.0" and manifest["provenance"]["nvcc"] == "13.0.88"
    race = manifest["transcripts"]["race"]
    assert race["command"] == "compute-sanitizer --tool racecheck ./demo buggy" and race["exit_code"] == 0
    text = (repo / "evidence/demo/race.txt").read_text()
    # stdout of the program and of the tool, in order
    assert text.index("mode: buggy") < text.index("RACECHECK SUMMARY")
    for name in ("bare", "race", "slow"):
        assert f"run     {name}" in done.stdout
    assert "total   3 runs in" in done.stdout and "total/longest = " in done.stdout
    assert "check   every page claim agrees" in done.stdout
    from lessonkit.evidence import load_all_evidence
    assert load_all_evidence(repo).errors == []


def test_second_refresh_changes_only_dates_and_durations(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    time.sleep(1.1)
    assert refresh(repo, env).returncode == 0
    after = snapshot(repo / "evidence/demo")
    assert {k: v for k, v in before.items() if k != "manifest.json"} == \
           {k: v for k, v in after.items() if k != "manifest.json"}

    def strip(m: bytes) -> dict:
        data = json.loads(m)
        for entry in data["transcripts"].values():
            entry.pop("date"), entry.pop("wall_s")
        return data
    assert strip(before["manifest.json"]) == strip(after["manifest.json"])


def test_failed_gate_keeps_the_old_evidence(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    done = refresh(repo, env, FAKE_GATE_FAIL="1", FAKE_HAZARDS="999")
    assert done.returncode == 2
    assert "a gated run failed" in done.stderr and "GATE FAILED: kFixed at 32 threads" in done.stderr
    assert snapshot(repo / "evidence/demo") == before
    assert not list((repo / "evidence").glob(".refresh-*"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_killed_refresh_keeps_the_old_evidence(lab, sig):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo)],
                            env={**env, "FAKE_SLEEP": "20", "FAKE_HAZARDS": "777"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the fast runs are done and only the slow one is left.
    seen = ""
    while "run     race" not in seen or "run     bare" not in seen:
        line = proc.stdout.readline()
        assert line, "the refresh ended early"
        seen += line
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    assert snapshot(repo / "evidence/demo") == before
    if sig != signal.SIGKILL:
        assert not list((repo / "evidence").glob(".refresh-*"))


def test_only_rerecords_one_transcript(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    old = json.loads(before["manifest.json"])
    done = refresh(repo, env, "--only", "race", FAKE_HAZARDS="321")
    assert done.returncode == 0, done.stderr
    after = snapshot(repo / "evidence/demo")
    new = json.loads(after["manifest.json"])
    assert b"[321 hazards]" in after["race.txt"] and after["race.txt"] != before["race.txt"]
    assert after["bare.txt"] == before["bare.txt"] and after["slow.txt"] == before["slow.txt"]
    assert new["transcripts"]["bare"] == old["transcripts"]["bare"]
    assert new["transcripts"]["slow"] == old["transcripts"]["slow"]
    assert "run     bare" not in done.stdout


def test_missing_tools_are_named(lab):
    repo, env = lab
    for tool in ("nvcc", "compute-sanitizer", "nvidia-smi"):
        (Path(env["FAKE_PROGRAM"]).parent / tool).unlink()
    done = refresh(repo, env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "refresh: the refresh needs a GPU machine; not found on PATH: nvcc (the CUDA compiler), nvidia-smi (the "
        "NVIDIA driver's tool (no GPU driver?)), compute-sanitizer (the sanitizer)")
    assert not (repo / "evidence/demo").exists()


def test_a_hang_is_recorded_not_waited_for(lab):
    repo, env = lab
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('command = "./demo slow"\ntimeout = 30', 'command = "./demo slow"\ntimeout = 1'))
    start = time.monotonic()
    done = refresh(repo, env, FAKE_SLEEP="60")
    assert time.monotonic() - start < 30
    assert "run     slow                         timed out" in done.stdout
    entry = json.loads((repo / "evidence/demo/manifest.json").read_text())["transcripts"]["slow"]
    assert entry["timed_out"] is True and entry["exit_code"] is None
    assert "[refresh: no exit after 1 s; the process group was killed]" in (repo / "evidence/demo/slow.txt").read_text()


def test_reports_page_claims_that_no_longer_agree(lab):
    repo, env = lab
    (repo / "docs/index.md").write_text("{{ 120 @ demo/race:reports[severity=Error].hazards }}\n")
    assert refresh(repo, env).returncode == 0
    done = refresh(repo, env, FAKE_HAZARDS="130")
    assert done.returncode == 1
    assert ("docs/index.md:1: claim '120' (demo/race:reports[severity=Error].hazards) disagrees with "
            "evidence/demo/race.txt; it says '130' (line 6)") in done.stdout
