"""The refresh with --toolkit DIR, and the sets a lesson declares under [[compare]], with fake GPU tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REPO, run_page
from fake_gpu import install, install_toolkit, make_lab, readme, runs_toml

from lessonkit.errors import LessonError
from lessonkit.evidence.manifest import read_manifest, write_manifest
from lessonkit.evidence.sets import load_all_evidence
from lessonkit.evidence.spec import parse_spec
from lessonkit.evidence.toolkit import find_toolkit, leaks

RUNS, README = runs_toml(False), readme(False)


def declare(toolkit_dir: str | None = "/opt/cuda-12.4", release: str = "12.4", name: str = "demo-cuda12.4") -> str:
    text = f'\n[[compare]]\nset = "{name}"\ntoolkit = "{release}"\n'
    return text + (f'toolkit_dir = "{toolkit_dir}"\n' if toolkit_dir else "")


@pytest.fixture
def lab(tmp_path: Path):
    repo, env = make_lab(tmp_path)  # CUDA 13.0's fake tools, first on PATH
    return repo, env, install_toolkit(tmp_path / "cuda-12.4")


def refresh(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo), *args],
                          env=env, capture_output=True, text=True, timeout=120)


def manifest(repo: Path, set_name: str) -> dict:
    return json.loads((repo / "evidence" / set_name / "manifest.json").read_text())


# -- the refresh ------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["subfolder", "bin"])
def test_toolkit_names_the_set_and_records_its_versions(lab, layout):
    repo, env, toolkit = lab
    if layout == "bin":
        shutil.rmtree(toolkit)
        install_toolkit(toolkit, layout="bin")
    done = refresh(repo, env, "--toolkit", str(toolkit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (repo / "evidence/demo").exists()
    data = manifest(repo, "demo-cuda12.4")
    prov = data["provenance"]
    assert prov["nvcc"] == "12.4.131" and prov["compute_sanitizer"] == "2024.1.1.0"
    assert prov["toolkit"] == str(toolkit)
    assert data["refresh"] == f".venv/bin/python scripts/refresh.py demo --toolkit {toolkit}"
    # The run used the toolkit's sanitizer (215 hazards), not the 13.0 one first on the caller's PATH (120).
    assert "[215 hazards]" in (repo / "evidence/demo-cuda12.4/s1/race.txt").read_text()
    assert load_all_evidence(repo).errors == []


def test_without_toolkit_the_path_tools_are_recorded(lab):
    repo, env, _ = lab
    assert refresh(repo, env).returncode == 0
    prov = manifest(repo, "demo")["provenance"]
    assert prov["nvcc"] == "13.0.88" and "toolkit" not in prov
    assert "[120 hazards]" in (repo / "evidence/demo/s1/race.txt").read_text()


def test_set_option_overrides_the_toolkit_name(lab):
    repo, env, toolkit = lab
    assert refresh(repo, env, "--toolkit", str(toolkit), "--set", "demo-old").returncode == 0
    assert manifest(repo, "demo-old")["refresh"] == f".venv/bin/python scripts/refresh.py demo --toolkit {toolkit} --set demo-old"


def test_a_tool_outside_the_toolkit_is_refused_naming_both_paths(lab, tmp_path):
    repo, env, toolkit = lab
    other = tmp_path / "bin" / "compute-sanitizer"
    (repo / "code/demo/runs.toml").write_text(RUNS.replace('command = "compute-sanitizer', f'command = "{other}'))
    done = refresh(repo, env, "--toolkit", str(toolkit))
    assert done.returncode == 2
    assert str(other) in done.stderr and str(toolkit / "compute-sanitizer" / "compute-sanitizer") in done.stderr
    assert "run 'race'" in done.stderr and "nothing was run" in done.stderr
    assert "run     " not in done.stdout and not (repo / "evidence").exists()


def test_a_tool_the_toolkit_lacks_found_on_path_is_refused(lab, tmp_path):
    repo, env, toolkit = lab
    (tmp_path / "bin" / "cuobjdump").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "cuobjdump").chmod(0o755)
    (repo / "code/demo/runs.toml").write_text(RUNS + '\n[[run]]\nname = "dump"\ncommand = "cuobjdump -sass demo"\n')
    (repo / "code/demo/README.md").write_text(README.replace("```\n", "cuobjdump -sass demo\n```\n"))
    done = refresh(repo, env, "--toolkit", str(toolkit))
    assert done.returncode == 2
    assert f"resolves to {tmp_path / 'bin' / 'cuobjdump'}, outside the toolkit {toolkit}" in done.stderr
    assert not (repo / "evidence").exists()


def test_a_link_out_of_the_toolkit_is_refused(lab, tmp_path):
    repo, env, toolkit = lab
    (toolkit / "bin" / "nvcc").unlink()
    (toolkit / "bin" / "nvcc").symlink_to(tmp_path / "bin" / "nvcc")  # 13.0's nvcc, reached through 12.4's folder
    done = refresh(repo, env, "--toolkit", str(toolkit))
    assert done.returncode == 2
    assert f"(a link to {tmp_path / 'bin' / 'nvcc'})" in done.stderr and "the build line" in done.stderr


def test_leaks_checks_every_word_with_the_run_path(tmp_path):
    toolkit = find_toolkit(str(install_toolkit(tmp_path / "tk")))
    other = tmp_path / "other"
    install(other)
    env = toolkit.path_env({"PATH": str(other)})
    clean = [("b", "nvcc -o x x.cu"), ("r", "compute-sanitizer --tool racecheck ./x"), ("p", "python3 s.py")]
    assert leaks(toolkit, clean, env) == []
    # The same commands with the toolkit not first on PATH reach the other toolkit.
    found = leaks(toolkit, clean, {"PATH": str(other)})
    assert len(found) == 2 and all(str(other) in line for line in found)
    quoted = leaks(toolkit, [("r", f"sh -c '{other}/compute-sanitizer ./x'")], env)
    assert len(quoted) == 1 and f"{other}/compute-sanitizer" in quoted[0]


def test_a_folder_without_nvcc_is_refused(lab, tmp_path):
    repo, env, _ = lab
    (tmp_path / "empty").mkdir()
    done = refresh(repo, env, "--toolkit", str(tmp_path / "empty"))
    assert done.returncode == 2 and f"no executable {tmp_path / 'empty' / 'bin' / 'nvcc'}" in done.stderr


# -- declared sets ----------------------------------------------------------------------------

def test_the_refresh_refuses_a_declared_set_with_the_wrong_toolkit(lab):
    repo, env, _ = lab
    (repo / "code/demo/runs.toml").write_text(RUNS + declare())
    done = refresh(repo, env, "--set", "demo-cuda12.4")
    assert done.returncode == 2
    assert "code/demo/runs.toml:18 declares set 'demo-cuda12.4' as recorded with CUDA 12.4" in done.stderr
    assert "is nvcc 13.0.88" in done.stderr
    assert ".venv/bin/python scripts/refresh.py demo --toolkit /opt/cuda-12.4" in done.stderr
    assert not (repo / "evidence").exists()


def test_a_set_recorded_with_the_wrong_toolkit_is_refused(lab):
    repo, env, _ = lab
    assert refresh(repo, env, "--set", "demo-cuda12.4").returncode == 0  # CUDA 13.0's tools
    (repo / "code/demo/runs.toml").write_text(RUNS + declare())
    evidence = load_all_evidence(repo)
    messages = [str(e) for e in evidence.errors]
    assert messages == [("evidence/demo-cuda12.4/manifest.json: was recorded with nvcc 13.0.88, but "
                        "code/demo/runs.toml:18 declares it as the CUDA 12.4 set; its claims are not checked; "
                        "re-record it on a GPU machine: .venv/bin/python scripts/refresh.py demo --toolkit /opt/cuda-12.4")]
    assert "demo-cuda12.4" in evidence.unreadable and "demo-cuda12.4" not in evidence.sets
    # Its claims are not reported one by one: the set's error is the cause.
    page = run_page(repo, "{{ 999 @ demo-cuda12.4/race:race_errors }}\n")
    assert page.errors == [] and page.claims[0].skipped


def test_a_declared_set_recorded_without_toolkit_is_refused(lab, tmp_path):
    repo, env, toolkit = lab
    env = {**env, "PATH": f"{toolkit / 'bin'}:{env['PATH']}"}  # the right nvcc, but nothing holds the rest to it
    assert refresh(repo, env, "--set", "demo-cuda12.4").returncode == 0
    (repo / "code/demo/runs.toml").write_text(RUNS + declare())
    messages = [str(e) for e in load_all_evidence(repo).errors]
    assert len(messages) == 1 and "was recorded without --toolkit" in messages[0]


def test_a_missing_declared_set_names_its_refresh_command(lab):
    repo, env, _ = lab
    assert refresh(repo, env).returncode == 0
    (repo / "code/demo/runs.toml").write_text(RUNS + declare())
    evidence = load_all_evidence(repo)
    assert [str(e) for e in evidence.errors] == [
        ("code/demo/runs.toml:18: declares evidence set 'demo-cuda12.4', recorded with CUDA 12.4, for its page to "
        "compare, and evidence/demo-cuda12.4 does not exist; record it on a GPU machine: "
        ".venv/bin/python scripts/refresh.py demo --toolkit /opt/cuda-12.4")]
    page = run_page(repo, "{{ 120 @ demo-cuda12.4/race:race_errors }} and {{ 1 @ demo/race:race_errors }}\n")
    assert page.errors == [] and page.claims[0].skipped


def test_a_stale_declared_set_names_the_declared_refresh_command(lab):
    repo, env, toolkit = lab
    assert refresh(repo, env, "--toolkit", str(toolkit)).returncode == 0
    (repo / "code/demo/runs.toml").write_text(RUNS + declare())
    assert load_all_evidence(repo).errors == []
    (repo / "code/demo/demo.cu").write_text("// v2\n")
    messages = [str(e) for e in load_all_evidence(repo).errors]
    assert len(messages) == 1 and "2 transcripts stale (bare, race)" in messages[0]
    # The lesson's declaration, not the folder this set happened to be recorded from.
    assert messages[0].endswith("refresh on a GPU machine: .venv/bin/python scripts/refresh.py demo --toolkit /opt/cuda-12.4")


def test_the_default_toolkit_set_may_be_declared_too(lab):
    repo, env, toolkit = lab
    assert refresh(repo, env).returncode == 0
    (repo / "code/demo/runs.toml").write_text(RUNS + declare(None, "13.0", "demo") + declare(str(toolkit)))
    assert refresh(repo, env, "--toolkit", str(toolkit)).returncode == 0
    assert load_all_evidence(repo).errors == []
    (repo / "code/demo/runs.toml").write_text(RUNS + declare(None, "12.9", "demo") + declare(str(toolkit)))
    messages = [str(e) for e in load_all_evidence(repo).errors]
    assert messages == [("evidence/demo/manifest.json: was recorded with nvcc 13.0.88, but code/demo/runs.toml:18 "
                        "declares it as the CUDA 12.9 set; its claims are not checked; re-record it on a GPU "
                        "machine: .venv/bin/python scripts/refresh.py demo")]


@pytest.mark.parametrize("table, line, message", [
    ('set = "x"\n', 18, "'toolkit' is missing"),
    ('set = "x"\ntoolkit = "12"\n', 18, "toolkit '12' is not nvcc's release"),
    ('set = "x"\ntoolkit = "12.4"\ntoolkit_dir = "opt/cuda"\n', 18, "must be an absolute path"),
    ('set = "x"\ntoolkit = "12.4"\ndir = "/opt"\n', 21, "unknown key 'dir'; expected one of runs, sanitizer, sanitizer_dir, set, toolkit, toolkit_dir"),
    ('set = "x"\ntoolkit = "12.4"\ntoolkit_dri = "/opt"\n', 21, "unknown key 'toolkit_dri'; did you mean 'toolkit_dir'?"),
    ('set = "X Y"\ntoolkit = "12.4"\n', 18, "is not a set name"),
])
def test_a_malformed_declaration_names_file_and_line(table, line, message):
    with pytest.raises(LessonError) as info:
        parse_spec(RUNS + "\n[[compare]]\n" + table, "code/demo/runs.toml")
    assert info.value.line == line and message in info.value.message


def test_refresh_py_help_names_the_toolkit_option():
    done = subprocess.run([sys.executable, str(REPO / "scripts/refresh.py"), "--help"], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "200"})
    assert "--toolkit DIR" in done.stdout


def test_recordings_name_the_refresh_that_made_them(lab):
    repo, env, _ = lab
    assert refresh(repo, env).returncode == 0
    first = manifest(repo, "demo")["transcripts"]
    assert first["s1/bare"]["refresh_id"] == first["s1/race"]["refresh_id"]
    assert refresh(repo, env, "--only", "race").returncode == 0
    second = manifest(repo, "demo")["transcripts"]
    assert second["s1/bare"]["refresh_id"] == first["s1/bare"]["refresh_id"]  # kept as recorded
    assert second["s1/race"]["refresh_id"] != first["s1/race"]["refresh_id"]


def test_only_refuses_to_mix_toolkits_in_one_set(lab):
    repo, env, toolkit = lab
    assert refresh(repo, env, "--set", "demo-cuda12.4").returncode == 0  # 13.0's tools
    before = (repo / "evidence/demo-cuda12.4/manifest.json").read_bytes()
    done = refresh(repo, env, "--toolkit", str(toolkit), "--only", "race")
    assert done.returncode == 2
    assert "--only would mix toolkits in evidence/demo-cuda12.4: it was recorded with nvcc '13.0.88'" in done.stderr
    assert (repo / "evidence/demo-cuda12.4/manifest.json").read_bytes() == before


def test_the_refresh_refuses_a_declared_toolkit_set_without_toolkit(lab):
    repo, env, toolkit = lab
    (repo / "code/demo/runs.toml").write_text(RUNS + declare())
    env = {**env, "PATH": f"{toolkit / 'bin'}:{env['PATH']}"}  # nvcc 12.4 first, but no --toolkit
    done = refresh(repo, env, "--set", "demo-cuda12.4")
    assert done.returncode == 2
    assert ("declares set 'demo-cuda12.4' as recorded with the toolkit in /opt/cuda-12.4; record it with "
            "--toolkit") in done.stderr
    assert not (repo / "evidence").exists()


# -- crossed toolkits: one toolkit's nvcc, another's compute-sanitizer ---------------------------

def test_sanitizer_from_builds_with_one_toolkit_and_runs_the_others_sanitizer(lab, tmp_path):
    repo, env, old = lab
    new = install_toolkit(tmp_path / "cuda-13.0", release="13.0", patch="88", sanitizer="2025.3.1.0", hazards="333")
    done = refresh(repo, env, "--toolkit", str(old), "--sanitizer-from", str(new))
    assert done.returncode == 0, done.stdout + done.stderr
    data = manifest(repo, "demo-cuda12.4-sanitizer2025.3")
    prov = data["provenance"]
    assert (prov["nvcc"], prov["compute_sanitizer"]) == ("12.4.131", "2025.3.1.0")
    assert (prov["toolkit"], prov["sanitizer_toolkit"]) == (str(old), str(new))
    assert data["refresh"] == f".venv/bin/python scripts/refresh.py demo --toolkit {old} --sanitizer-from {new}"
    # 13.0's sanitizer ran (333 hazards), not the 12.4 toolkit's own (215) nor the PATH's (120).
    assert "[333 hazards]" in (repo / "evidence/demo-cuda12.4-sanitizer2025.3/s1/race.txt").read_text()


def test_sanitizer_from_needs_a_sanitizer_folder(lab, tmp_path):
    repo, env, old = lab
    bare = install_toolkit(tmp_path / "stock", layout="bin")
    done = refresh(repo, env, "--toolkit", str(old), "--sanitizer-from", str(bare))
    assert done.returncode == 2
    assert done.stderr == (f"refresh: --sanitizer-from {bare}: no executable {bare}/compute-sanitizer/compute-sanitizer; "
                           "the sanitizer must sit in the toolkit's compute-sanitizer/ folder, which holds nothing "
                           "of nvcc\n")


def test_a_crossed_set_records_only_its_declared_runs_and_is_held_to_its_sanitizer(lab, tmp_path):
    repo, env, old = lab
    new = install_toolkit(tmp_path / "cuda-13.0", release="13.0", patch="88", sanitizer="2025.3.1.0")
    name = "demo-cuda12.4-sanitizer2025.3"
    spec = repo / "code/demo/runs.toml"
    spec.write_text(spec.read_text() + declare(str(old), "12.4", name)
                    + f'sanitizer = "2025.3"\nsanitizer_dir = "{new}"\nruns = ["race"]\n')
    done = refresh(repo, env, "--toolkit", str(old), "--sanitizer-from", str(new))
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(manifest(repo, name)["transcripts"]) == {"s1/race"}
    ev = load_all_evidence(repo)
    assert ev.errors == []  # no "run 'bare' has no transcript": the declaration lists race only
    # Recorded with the 12.4 toolkit's own sanitizer instead: refused by the refresh, and by the check.
    done = refresh(repo, env, "--toolkit", str(old), "--set", name)
    assert done.returncode == 2
    assert "declares set 'demo-cuda12.4-sanitizer2025.3' as recorded with compute-sanitizer 2025.3 from" in done.stderr
    folder = repo / "evidence" / name  # a set recorded without --sanitizer-from, as the refresh would write it
    m = read_manifest(folder, f"evidence/{name}")
    write_manifest(folder, replace(m, provenance={k: v for k, v in m.provenance.items() if k != "sanitizer_toolkit"}))
    messages = [e.message for e in load_all_evidence(repo).errors]
    assert any("without --sanitizer-from, but code/demo/runs.toml:" in m for m in messages), messages


def test_a_crossed_declaration_names_runs_that_exist():
    text = runs_toml(False) + declare() + 'sanitizer = "2025.3"\nsanitizer_dir = "/usr/local/cuda"\nruns = ["rase"]\n'
    with pytest.raises(LessonError) as err:
        parse_spec(text, "code/demo/runs.toml")
    assert str(err.value) == ("code/demo/runs.toml:18: [[compare]] of set 'demo-cuda12.4': runs names 'rase', which "
                              "is no run of this file; runs: bare, race")
