"""The refresh, with the GPU tools faked: recording, atomicity, --only, gates, hangs, reporting."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, sigint_as_at_a_terminal, snapshot
from fake_gpu import make_lab, readme, runs_toml

from lessonkit.evidence.manifest import entry_digest
from lessonkit.evidence.runner import utc_now

RUNS, README = runs_toml(True), readme(True)


@pytest.fixture
def lab(tmp_path: Path):
    return make_lab(tmp_path, slow=True)


def refresh(repo: Path, env: dict, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo), *args],
                          env={**env, **extra}, capture_output=True, text=True, timeout=120)


def test_records_a_set_with_provenance(lab):
    repo, env = lab
    done = refresh(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((repo / "evidence/demo/manifest.json").read_text())
    assert manifest["provenance"]["gpu"] == "Fake GPU" and manifest["sessions"]["s1"]["provenance"]["driver"] == "999.99"
    assert manifest["provenance"]["compute_sanitizer"] == "2025.3.1.0" and manifest["provenance"]["nvcc"] == "13.0.88"
    assert manifest["format"] == 4 and list(manifest["sessions"]) == ["s1"]
    assert all(e["digest"] == entry_digest(n, e) for n, e in manifest["transcripts"].items())
    race = manifest["transcripts"]["s1/race"]
    assert race["command"] == "compute-sanitizer --tool racecheck ./demo buggy" and race["exit_code"] == 0
    text = (repo / "evidence/demo/s1/race.txt").read_text()
    # stdout of the program and of the tool, in order
    assert text.index("mode: buggy") < text.index("RACECHECK SUMMARY")
    for name in ("bare", "race", "slow"):
        assert f"run     {name}" in done.stdout
    assert "total   3 recordings in " in done.stdout and "3 concurrent in " in done.stdout
    assert "0 exclusive in " in done.stdout
    assert "check   every page claim agrees" in done.stdout
    from lessonkit.evidence.sets import load_all_evidence
    assert load_all_evidence(repo).errors == []


def test_second_refresh_changes_only_dates_and_durations(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    # The second refresh starts in a later second than the first recorded (polled, not slept), so
    # that a field which follows the clock, and is not stripped below, differs and fails the test.
    last = max(e["date"] for e in json.loads(before["manifest.json"])["transcripts"].values())
    deadline = time.monotonic() + 30
    while utc_now() <= last:
        assert time.monotonic() < deadline, f"the clock stayed at {last} for 30 s"
        time.sleep(0.01)
    assert refresh(repo, env).returncode == 0
    after = snapshot(repo / "evidence/demo")
    assert {k: v for k, v in before.items() if k != "manifest.json"} == \
           {k: v for k, v in after.items() if k != "manifest.json"}

    def strip(m: bytes) -> dict:
        data = json.loads(m)
        for entry in data["transcripts"].values():
            for key in ("date", "wall_s", "started", "ended", "refresh_id", "digest"):
                entry.pop(key)
        for session in data["sessions"].values():  # the second refresh's readings of the same GPU
            session.pop("digest")
            for key in ("started", "ended", "refresh_id", "refreshes"):
                session["provenance"].pop(key, None)
        data.pop("set_digest")
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
    assert not list((repo / "evidence").glob(".refresh*"))


def test_a_run_printing_more_than_its_max_output_records_nothing(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"\n', 'name = "race"\nmax_output = 100\n'))
    done = refresh(repo, env)
    assert (done.returncode, done.stderr) == (2, (
        "refresh: run 'race' printed more than its max_output of 100 bytes (code/demo/runs.toml); it was stopped "
        "there, the old evidence is kept and nothing was recorded; raise max_output there if this much output is "
        "meant\n"))
    assert snapshot(repo / "evidence/demo") == before
    assert not list((repo / "evidence").glob(".refresh*"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_killed_refresh_keeps_the_old_evidence(lab, sig):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    with sigint_as_at_a_terminal():  # SIGINT as Ctrl-C, whatever the runner ignores
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
        assert not list((repo / "evidence").glob(".refresh*"))


def test_only_rerecords_one_transcript(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    old = json.loads(before["manifest.json"])
    done = refresh(repo, env, "--only", "race", FAKE_HAZARDS="321")
    assert done.returncode == 0, done.stderr
    after = snapshot(repo / "evidence/demo")
    new = json.loads(after["manifest.json"])
    assert b"[321 hazards]" in after["s1/race.txt"] and after["s1/race.txt"] != before["s1/race.txt"]
    assert after["s1/bare.txt"] == before["s1/bare.txt"] and after["s1/slow.txt"] == before["s1/slow.txt"]
    assert new["transcripts"]["s1/bare"] == old["transcripts"]["s1/bare"]
    assert new["transcripts"]["s1/slow"] == old["transcripts"]["s1/slow"]
    assert "run     bare" not in done.stdout


def test_missing_tools_are_named(lab):
    repo, env = lab
    for tool in ("nvcc", "compute-sanitizer", "nvidia-smi"):
        (Path(env["FAKE_PROGRAM"]).parent / tool).unlink()
    done = refresh(repo, env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "refresh: the refresh needs a GPU machine; not found on PATH: nvcc (the CUDA compiler), nvidia-smi (the "
        "NVIDIA driver's tool (no GPU driver?)), compute-sanitizer (the sanitizer); without a GPU, "
        "`.venv/bin/python scripts/refresh.py demo --dry-run` builds the program and lists what the refresh would run")
    assert not (repo / "evidence/demo").exists()


def no_gpu(env: dict) -> None:
    """Take the fake GPU away (nvidia-smi and compute-sanitizer); nvcc stays, as on a laptop with the toolkit."""
    for tool in ("compute-sanitizer", "nvidia-smi"):
        (Path(env["FAKE_PROGRAM"]).parent / tool).unlink()


def test_without_a_gpu_the_dry_run_builds_and_lists_every_command(lab):
    repo, env = lab
    no_gpu(env)
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "slow"\n', 'name = "slow"\nrepeat = 5\nexclusive = true\n'))
    plain = refresh(repo, env)
    assert plain.returncode == 2 and plain.stderr.strip().endswith("`.venv/bin/python scripts/refresh.py demo --dry-run` "
                                                                   "builds the program and lists what the refresh "
                                                                   "would run")
    done = refresh(repo, env, "--dry-run")
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    lines = done.stdout.splitlines()
    assert lines[0] == "dry run of the refresh of demo: nothing is run on a GPU and nothing is recorded"
    assert lines[1].startswith("nvcc    ") and lines[1].endswith("(Cuda compilation tools, release 13.0, V13.0.88)")
    assert lines[2] == "note    compute-sanitizer is not on PATH here; the GPU machine needs it for the runs that use it"
    assert lines[3:] == [
        "build   sm_90: nvcc -lineinfo -arch=sm_90 -o demo demo.cu",
        "build   ok (in a scratch folder, removed)",
        "would run bare: ./demo all",
        "          once, shared (alongside the others), timeout 30 s, gate (a failure records nothing)",
        "would run race: compute-sanitizer --tool racecheck ./demo buggy",
        "          once, shared (alongside the others), timeout 30 s",
        "would run slow: ./demo slow",
        "          5 times, exclusive (the GPU to itself), timeout 30 s",
        "would write evidence/demo/ (7 recordings and manifest.json), then check every page against it",
        "to record: run the same command without --dry-run on a machine with an NVIDIA GPU",
    ]
    assert not (repo / "evidence").exists() and sorted(p.name for p in (repo / "code/demo").iterdir()) == [
        "README.md", "demo.cu", "runs.toml"]  # nothing recorded, nothing built in the lesson's folder
    assert list(Path(env["TMPDIR"]).iterdir()) == []  # the scratch build is gone


def test_the_dry_run_fails_when_the_build_does(lab):
    repo, env = lab
    no_gpu(env)
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace("-o demo demo.cu", "demo.cu"))  # the fake nvcc needs -o
    done = refresh(repo, env, "--dry-run", "--only", "race", "--arch", "sm_90")
    assert done.returncode == 2, done.stdout
    assert "build   failed (exit 1); the refresh would stop here and record nothing:" in done.stdout
    assert "ValueError" in done.stdout and "would run" not in done.stdout


def test_the_dry_run_needs_nvcc_and_a_known_build_line(lab):
    repo, env = lab
    no_gpu(env)
    assert refresh(repo, env, "--dry-run", "--arch", "sm_80").stderr == (
        "refresh: code/demo/runs.toml has no build line for sm_80; it has: sm_90\n")
    (Path(env["FAKE_PROGRAM"]).parent / "nvcc").unlink()
    done = refresh(repo, env, "--dry-run")
    assert (done.returncode, done.stderr) == (2, ("refresh: the dry run builds the program, and nvcc (the CUDA "
                                                  "compiler) is not on PATH; install the CUDA toolkit, or name one "
                                                  "with --toolkit DIR\n"))


def test_a_hang_is_recorded_not_waited_for(lab):
    repo, env = lab
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('command = "./demo slow"\ntimeout = 30', 'command = "./demo slow"\ntimeout = 1'))
    start = time.monotonic()
    done = refresh(repo, env, FAKE_SLEEP="60")
    assert time.monotonic() - start < 30
    assert "run     slow                         timed out" in done.stdout
    entry = json.loads((repo / "evidence/demo/manifest.json").read_text())["transcripts"]["s1/slow"]
    assert entry["timed_out"] is True and entry["exit_code"] is None
    assert "[refresh: no exit after 1 s; the process group was killed]" in (repo / "evidence/demo/s1/slow.txt").read_text()


def test_reports_page_claims_that_no_longer_agree(lab):
    repo, env = lab
    (repo / "docs/index.md").write_text("{{ 120 @ demo/race:reports[severity=Error].hazards }}\n")
    assert refresh(repo, env).returncode == 0
    done = refresh(repo, env, FAKE_HAZARDS="130")
    assert done.returncode == 1
    assert ("docs/index.md:1: claim '120' (demo/race:reports[severity=Error].hazards) disagrees with "
            "evidence/demo/s1/race.txt; it says '130' (line 6)") in done.stdout


REPEATS = RUNS.replace('name = "race"', 'name = "race"\nrepeat = 3').replace(
    'name = "slow"', 'name = "slow"\nrepeat = 2\nexclusive = true')


def test_repeats_are_recorded_one_entry_each(lab):
    repo, env = lab
    (repo / "code/demo/runs.toml").write_text(REPEATS)
    done = refresh(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((repo / "evidence/demo/manifest.json").read_text())
    names = sorted(manifest["transcripts"])
    assert names == ["s1/bare", "s1/race.r1", "s1/race.r2", "s1/race.r3", "s1/slow.r1", "s1/slow.r2"]
    for k in (1, 2, 3):
        entry = manifest["transcripts"][f"s1/race.r{k}"]
        assert (entry["group"], entry["repeat"], entry["repeats"], entry["file"]) == ("race", k, 3, f"s1/race.r{k}.txt")
        assert (repo / "evidence/demo" / entry["file"]).is_file()
    assert "total   6 recordings in " in done.stdout and "4 concurrent in " in done.stdout
    assert "2 exclusive in " in done.stdout
    from lessonkit.evidence.sets import load_all_evidence
    ev = load_all_evidence(repo)
    assert ev.errors == [] and ev.sets["demo"].groups["race"] == ("s1/race.r1", "s1/race.r2", "s1/race.r3")


def test_an_exclusive_run_overlaps_no_other(lab):
    repo, env = lab
    (repo / "code/demo/runs.toml").write_text(REPEATS)
    done = refresh(repo, env, FAKE_SLEEP="0.5")
    assert done.returncode == 0, done.stdout + done.stderr
    entries = json.loads((repo / "evidence/demo/manifest.json").read_text())["transcripts"]
    exclusive = [e for e in entries.values() if e["exclusive"]]
    assert len(exclusive) == 2
    for x in exclusive:
        for name, other in entries.items():
            if other is x:
                continue
            assert other["ended"] <= x["started"] or other["started"] >= x["ended"], (x, name, other)
    shared = [e for e in entries.values() if not e["exclusive"]]
    # the shared runs did overlap each other: they ran concurrently
    assert any(a["started"] < b["ended"] and b["started"] < a["ended"]
               for i, a in enumerate(shared) for b in shared[i + 1:])


def test_only_takes_several_runs(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    done = refresh(repo, env, "--only", "race,slow", FAKE_HAZARDS="55")
    assert done.returncode == 0, done.stderr
    after = snapshot(repo / "evidence/demo")
    assert after["s1/bare.txt"] == before["s1/bare.txt"] and b"[55 hazards]" in after["s1/race.txt"]
    assert "run     bare" not in done.stdout and "run     slow" in done.stdout


def test_missing_input_is_named_before_anything_runs(lab):
    repo, env = lab
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "slow"', 'name = "slow"\ninputs = ["gone.py"]'))
    done = refresh(repo, env)
    assert done.returncode == 2
    assert done.stderr.strip() == ("refresh: code/demo/runs.toml names inputs that do not exist: "
                                   "code/demo/gone.py; nothing was run")
    assert "run     " not in done.stdout and not (repo / "evidence/demo").exists()


def test_refresh_does_not_import_the_page_modules():
    code = ("import sys, lessonkit.evidence.refresh; bad = [m for m in ('lessonkit.pages.page', 'lessonkit.site.check', "
            "'lessonkit.pages.query', 'lessonkit.pages.render', 'mkdocs') if m in sys.modules]; print(bad)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_report_ends_with_the_accept_command(lab):
    repo, env = lab
    (repo / "docs/index.md").write_text("{{ 120 @ demo/race:reports[severity=Error].hazards }}\n")
    assert refresh(repo, env).returncode == 0
    done = refresh(repo, env, FAKE_HAZARDS="130")
    assert done.returncode == 1
    assert done.stdout.rstrip().endswith(f".venv/bin/python -m lessonkit accept --repo {repo}")


# -- crashes at every point of the swap, on both paths ---------------------------------------

def _sets_found(repo: Path) -> dict[str, Path]:
    from lessonkit.evidence.sets import set_folders
    return set_folders(repo)


@pytest.mark.parametrize("path,point", [
    ("exchange", "scratch-written"), ("exchange", "exchanged"),
    ("fallback", "scratch-written"), ("fallback", "old-moved"), ("fallback", "new-moved"),
])
def test_a_crash_at_any_swap_point_leaves_exactly_one_set(lab, path, point):
    from lessonkit.evidence.sets import load_all_evidence
    from lessonkit.evidence.swap import CRASH_AT_ENV, NO_EXCHANGE_ENV
    repo, env = lab
    assert refresh(repo, env, FAKE_HAZARDS="111").returncode == 0
    old = snapshot(repo / "evidence/demo")
    extra = {CRASH_AT_ENV: point, "FAKE_HAZARDS": "222"}
    if path == "fallback":
        extra[NO_EXCHANGE_ENV] = "1"
    done = refresh(repo, env, **extra)
    assert done.returncode == 137
    # The build, before any recovery, finds exactly one complete set, old or new.
    found = _sets_found(repo)
    assert list(found) == ["demo"]
    ev = load_all_evidence(repo)
    assert ev.errors == [] and list(ev.sets) == ["demo"]
    race = (found["demo"] / "s1/race.txt").read_bytes()
    new_expected = point in ("exchanged", "new-moved")
    assert (b"[222 hazards]" in race) == new_expected and (b"[111 hazards]" in race) != new_expected
    if not new_expected:
        assert snapshot(found["demo"]) == old
    # The next refresh recovers: one set, no leftovers, and records anew.
    again = refresh(repo, env, FAKE_HAZARDS="333")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(p.name for p in (repo / "evidence").iterdir()) == ["demo"]
    assert b"[333 hazards]" in (repo / "evidence/demo/s1/race.txt").read_bytes()


def test_recover_after_a_completed_fallback_swap_removes_the_old_set(tmp_path):
    from lessonkit.evidence.swap import old_folder, recover
    target = tmp_path / "evidence/demo"
    target.mkdir(parents=True)
    (target / "new").write_text("n")
    old = old_folder(target)
    old.mkdir()
    (old / "old").write_text("o")
    assert recover(target) == ["removed .old.demo (a swap had completed)"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["demo"] and (target / "new").exists()


def test_recover_between_the_renames_restores_the_old_set(tmp_path):
    from lessonkit.evidence.swap import old_folder, recover
    target = tmp_path / "evidence/demo"
    old = old_folder(target)
    old.mkdir(parents=True)
    (old / "old").write_text("o")
    scratch = target.with_name(".refresh.demo.999999999")
    scratch.mkdir()
    assert recover(target) == ["restored demo from .old.demo (a swap was interrupted)",
                               "removed .refresh.demo.999999999 (a refresh that did not finish)"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["demo"] and (target / "old").exists()


def test_scratch_folders_of_other_sets_are_left_alone(tmp_path):
    from lessonkit.evidence.swap import recover
    base = tmp_path / "evidence"
    (base / "day62").mkdir(parents=True)
    other = base / ".refresh.day62-t4.999999999"
    other.mkdir()
    mine = base / ".refresh.day62.999999999"
    mine.mkdir()
    recover(base / "day62")
    assert other.exists() and not mine.exists()


def test_swap_never_deletes_before_the_new_set_is_in_place(tmp_path, monkeypatch):
    """Without an atomic exchange the old set is moved aside, never deleted, until the new one is in place."""
    import lessonkit.evidence.swap as rf
    monkeypatch.setenv(rf.NO_EXCHANGE_ENV, "1")
    target = tmp_path / "evidence/demo"
    target.mkdir(parents=True)
    (target / "f").write_text("old")
    new = tmp_path / "evidence/.refresh.demo.1"
    new.mkdir()
    (new / "f").write_text("new")
    seen: list[list[str]] = []
    real_rename = os.rename

    def watch(a, b):
        real_rename(a, b)
        seen.append(sorted(p.name for p in (tmp_path / "evidence").iterdir()))
    monkeypatch.setattr(rf.os, "rename", watch)
    rf.swap_in(new, target)
    assert seen == [[".old.demo", ".refresh.demo.1"], [".old.demo", "demo"]]
    assert (target / "f").read_text() == "new" and not rf.old_folder(target).exists()


def test_interrupt_after_the_swap_says_the_new_evidence_is_in_place(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    (repo / "code/demo/runs.toml").write_text(RUNS.replace('command = "./demo slow"\ntimeout = 30',
                                                           'command = "./demo slow"\ntimeout = 30\nexclusive = true'))
    # The check after the swap is slowed down so the signal lands after the swap, during the report.
    # The check runs in its own process after the swap: it says it has started, then sleeps.
    slow_check = tmp = repo.parent / "slowcheck"
    tmp.mkdir()
    started = tmp / "check-started"
    (tmp / "sitecustomize.py").write_text(
        "import os, sys, time\n"
        "if (sys.argv[:1] == ['-m'] or 'lessonkit' in ' '.join(sys.argv)) and 'check' in sys.argv:\n"
        "    open(os.environ['CHECK_STARTED'], 'w').close()\n"
        "    time.sleep(60)\n")
    with sigint_as_at_a_terminal():
        proc = subprocess.Popen([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo)],
                                env={**env, "PYTHONPATH": str(slow_check), "CHECK_STARTED": str(started)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "waited 60 s for the check after the swap to start"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert err.strip().endswith("refresh: interrupted after the swap; evidence/demo holds the NEW evidence")


def test_interrupt_before_the_swap_says_the_old_evidence_is_in_place(lab):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    with sigint_as_at_a_terminal():
        proc = subprocess.Popen([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo)],
                                env={**env, "FAKE_SLEEP": "20"}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    seen = ""
    while "run     race" not in seen:
        line = proc.stdout.readline()
        assert line, "the refresh ended early"
        seen += line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert err.strip().endswith("refresh: interrupted before the swap; evidence/demo holds the old evidence, "
                                "untouched")


def test_a_child_started_as_at_a_terminal_takes_sigint_where_the_runner_ignores_it():
    """The tests that send SIGINT (Ctrl-C) start their child with sigint_as_at_a_terminal: under a
    runner that ignores SIGINT (nohup), the child would inherit the ignoring and never stop."""
    probe = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"]
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        with sigint_as_at_a_terminal():
            restored = subprocess.Popen(probe, stdout=subprocess.PIPE, text=True)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(signal.SIGINT, saved)
    assert (inherited.stdout, restored.communicate(timeout=30)[0]) == ("True\n", "False\n")


def test_a_runs_python3_is_the_python_of_the_refresh(lab):
    """Run as .venv/bin/python scripts/refresh.py, a run's own `python3` is that environment's
    Python (the one whose package versions the provenance records), not the system's."""
    repo, env = lab
    assert sys.prefix != sys.base_prefix  # the tests run in the project's .venv
    command = "python3 -c 'import sys; print(sys.prefix)'"
    runs, readme = repo / "code/demo/runs.toml", repo / "code/demo/README.md"
    runs.write_text(runs.read_text() + f'\n[[run]]\nname = "py"\ncommand = "{command}"\ntimeout = 30\n')
    readme.write_text(readme.read_text().replace("./demo slow\n", f"./demo slow\n{command}\n"))
    venv_bin = f"{Path(sys.executable).parent}:"
    assert venv_bin in env["PATH"]
    done = refresh(repo, env, PATH=env["PATH"].replace(venv_bin, ""))  # python3: the system's
    assert done.returncode == 0, done.stdout + done.stderr
    assert sys.prefix + "\n" in (repo / "evidence/demo/s1/py.txt").read_text()


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("point, new", [("scratch-written", False), ("exchanged", True)])
def test_a_signal_at_the_swap_leaves_one_complete_set_and_says_which(lab, sig, point, new):
    """A signal that arrives just before the swap unwinds with the old set in place; one that arrives
    inside it (between the exchange and the tidying) waits until the swap is done: the new set is in
    place, complete, and the message says so. Sent by the process itself at that point (the hook)."""
    from lessonkit.evidence.sets import load_all_evidence
    from lessonkit.evidence.swap import SIGNAL_AT_ENV
    repo, env = lab
    assert refresh(repo, env, FAKE_HAZARDS="111").returncode == 0
    old = snapshot(repo / "evidence/demo")
    with sigint_as_at_a_terminal():
        done = refresh(repo, env, FAKE_HAZARDS="222", **{SIGNAL_AT_ENV: f"{point}:{sig}"})
    code = 128 + getattr(signal, sig)
    assert done.returncode == code, done.stdout + done.stderr
    which = ("interrupted after the swap; evidence/demo holds the NEW evidence" if new else
             "interrupted before the swap; evidence/demo holds the old evidence, untouched")
    assert done.stderr.strip().splitlines()[-1] == f"refresh: {which}"
    assert sorted(p.name for p in (repo / "evidence").iterdir()) == ["demo"]
    ev = load_all_evidence(repo)
    assert ev.errors == [] and list(ev.sets) == ["demo"]
    race = (repo / "evidence/demo/s1/race.txt").read_bytes()
    assert (b"[222 hazards]" in race) == new
    if not new:
        assert snapshot(repo / "evidence/demo") == old
