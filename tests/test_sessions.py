"""Sets that hold GPU sessions: a refresh adds one per start of a GPU machine, claims hold in every
recording of every kept session, and the refresh knows whether it had the GPU to itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import RACE as RACE_TEXT
from conftest import REPO, checked, mkdocs_yml, record_set, write_tree
from fake_gpu import make_lab, runs_toml

from lessonkit.evidence.sets import load_all_evidence

RUNS = runs_toml(True).replace('name = "slow"', 'name = "slow"\nexclusive = true').replace(
    'name = "race"', 'name = "race"\nrepeat = 2')
APP = "4242, /usr/bin/python3, 1024, GPU-{machine}\n"  # another process on the GPU of machine start `machine`
OTHER_GPU = "4343, /usr/bin/python3, 2048, GPU-elsewhere\n"  # one on another GPU of the machine: not ours


@pytest.fixture
def lab(tmp_path: Path):
    repo, env = make_lab(tmp_path, slow=True)
    (repo / "code/demo/runs.toml").write_text(RUNS)
    return repo, env


def start_machine(env: dict, tmp_path: Path, name: str) -> dict:
    """The environment of a refresh on another start of the GPU machine (another kernel boot id)."""
    boot = tmp_path / f"boot-{name}"
    boot.write_text(f"{name}-0000-0000-0000-000000000000\n")
    return {**env, "LESSONKIT_BOOT_ID_FILE": str(boot), "FAKE_GPU_UUID": f"GPU-{name}"}


def refresh(repo: Path, env: dict, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo), *args],
                          env={**env, **extra}, capture_output=True, text=True, timeout=120)


def manifest(repo: Path) -> dict:
    return json.loads((repo / "evidence/demo/manifest.json").read_text())


def test_each_machine_start_adds_a_session_with_its_own_provenance(lab, tmp_path):
    repo, env = lab
    for name in ("a", "b", "c"):
        done = refresh(repo, start_machine(env, tmp_path, name))
        assert done.returncode == 0, done.stdout + done.stderr
    m = manifest(repo)
    assert list(m["sessions"]) == ["s1", "s2", "s3"]
    prov = [m["sessions"][s]["provenance"] for s in ("s1", "s2", "s3")]
    assert [p["gpu_uuid"] for p in prov] == ["GPU-a", "GPU-b", "GPU-c"]
    assert len({p["boot"] for p in prov}) == 3 and len({p["host"] for p in prov}) == 1
    assert "a-0000" not in json.dumps(m)  # the boot id itself is not recorded, only its hash
    first = prov[0]
    for key in ("pci_bus_id", "sm_clock_mhz_start", "memory_clock_mhz_start", "app_sm_clock_mhz", "max_sm_clock_mhz",
                "max_memory_clock_mhz", "power_limit_w", "temperature_c_start", "temperature_c_end", "ecc_mode",
                "mig_mode", "persistence_mode", "compute_mode", "driver", "started", "ended"):
        assert key in first, key
    assert first["power_limit_w"] == 700.0 and first["temperature_c_start"] == 31 and first["mig_mode"] == "[N/A]"
    assert first["shared"] is False and first["gpu_processes"] == {"slow": {"start": [], "end": []}}
    assert sorted(n for n in m["transcripts"] if n.startswith("s2/")) == ["s2/bare", "s2/race.r1", "s2/race.r2",
                                                                         "s2/slow"]
    ev = load_all_evidence(repo)
    assert ev.errors == [] and ev.sets["demo"].groups["race"] == (
        "s1/race.r1", "s1/race.r2", "s2/race.r1", "s2/race.r2", "s3/race.r1", "s3/race.r2")


def test_a_refresh_on_the_same_machine_start_rerecords_its_session(lab, tmp_path):
    repo, env = lab
    machine = start_machine(env, tmp_path, "a")
    assert refresh(repo, machine).returncode == 0
    done = refresh(repo, machine, "--only", "race", FAKE_HAZARDS="321")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "session s1 re-recorded (the same machine start)" in done.stdout
    m = manifest(repo)
    assert list(m["sessions"]) == ["s1"] and m["sessions"]["s1"]["provenance"]["refreshes"] == 2
    assert "[321 hazards]" in (repo / "evidence/demo/s1/race.r1.txt").read_text()
    assert m["retired"] == []


def test_the_oldest_session_retires_beyond_the_lessons_count(lab, tmp_path):
    repo, env = lab
    runs = repo / "code/demo/runs.toml"
    runs.write_text("sessions = 2\n" + runs.read_text())
    for name in ("a", "b", "c"):
        assert refresh(repo, start_machine(env, tmp_path, name)).returncode == 0
    m = manifest(repo)
    assert list(m["sessions"]) == ["s2", "s3"] and not (repo / "evidence/demo/s1").exists()
    assert [(r["session"], r["why"]) for r in m["retired"]] == [
        ("s1", "older than the 2 latest sessions the lesson keeps (sessions = 2)")]
    assert load_all_evidence(repo).errors == []


def test_changed_inputs_start_a_new_history(lab, tmp_path):
    repo, env = lab
    assert refresh(repo, start_machine(env, tmp_path, "a")).returncode == 0
    assert refresh(repo, start_machine(env, tmp_path, "b")).returncode == 0
    (repo / "code/demo/demo.cu").write_text("// v2\n")
    done = refresh(repo, start_machine(env, tmp_path, "c"))
    assert done.returncode == 0, done.stdout + done.stderr
    m = manifest(repo)
    assert list(m["sessions"]) == ["s3"]
    assert {r["session"] for r in m["retired"]} == {"s1", "s2"}
    assert all(r["why"] == "inputs changed since (code/demo/demo.cu)" for r in m["retired"])
    assert "retire  s1: inputs changed since (code/demo/demo.cu)" in done.stdout
    assert sorted(p.name for p in (repo / "evidence/demo").iterdir()) == ["manifest.json", "s3"]


def test_a_set_of_one_refresh_is_kept_as_session_s0(lab, tmp_path):
    """Format 3 (one refresh, no session provenance) is read as session s0; a refresh on unchanged inputs
    keeps it, moving its recordings, byte for byte, into s0/, and adds its own session beside it."""
    from lessonkit.evidence.manifest import Manifest, Session, manifest_to_text, read_manifest
    repo, env = lab
    assert refresh(repo, start_machine(env, tmp_path, "a")).returncode == 0
    folder = repo / "evidence/demo"
    m = read_manifest(folder, "evidence/demo")
    legacy = {e.recording: e.__class__(**{**e.__dict__, "name": e.recording, "file": e.file.split("/")[1],
                                          "session": "s0"}) for e in m.entries.values()}
    for e in m.entries.values():
        (folder / e.file).rename(folder / e.file.split("/")[1])
    (folder / "s1").rmdir()
    prov = {**m.provenance, "driver": "999.99"}
    (folder / "manifest.json").write_text(manifest_to_text(Manifest(m.lesson, m.arch, m.build, m.refresh, prov, legacy,
                                                                    {"s0": Session("s0", prov)}, format=3)))
    ev = load_all_evidence(repo)
    assert ev.errors == [] and list(ev.sets["demo"].sessions) == ["s0"] and ev.sets["demo"].groups["bare"] == ("bare",)
    hashes = {name: e.sha256 for name, e in legacy.items()}
    done = refresh(repo, start_machine(env, tmp_path, "b"))
    assert done.returncode == 0, done.stdout + done.stderr
    new = manifest(repo)
    assert new["format"] == 4 and list(new["sessions"]) == ["s0", "s1"] and new["retired"] == []
    s0 = new["sessions"]["s0"]["provenance"]
    assert s0["driver"] == "999.99" and "gpu_uuid" not in s0 and "before sessions were kept" in s0["note"]
    assert {n: e["sha256"] for n, e in new["transcripts"].items() if n.startswith("s0/")} == {
        f"s0/{n}": h for n, h in hashes.items()}
    assert sorted(p.name for p in (repo / "evidence/demo").iterdir()) == ["manifest.json", "s0", "s1"]
    assert load_all_evidence(repo).errors == []


# -- claims across sessions -------------------------------------------------------------------------

PAGE = "# P\n\n{{ evidence demo }}\n\nThe error has {{ 120 @ race:reports[severity=Error].hazards }} hazards.\n"


def two_sessions(tmp_path: Path, second: int) -> Path:
    """A site whose set holds two sessions of `race` (two recordings each): 120 hazards in every
    recording of s1; in s2, `second` in its second recording."""
    from conftest import RACE
    repo = tmp_path / "site"
    write_tree(repo, {"mkdocs.yml": mkdocs_yml(), "docs/index.md": "# hi\n", "code/demo/demo.cu": "int main() {}\n",
                      "code/demo/runs.toml": 'lesson = "demo"\ninputs = ["demo.cu"]\n\n[build]\nsm_90 = "nvcc -o demo '
                                             'demo.cu"\n\n[[run]]\nname = "race"\ncommand = "./demo"\nrepeat = 2\n',
                      "code/demo/README.md": "```console\nnvcc -o demo demo.cu\n./demo\n```\n"})
    record_set(repo, "demo", {"race": [RACE, RACE]},
               more_sessions=[{"race": [RACE, RACE.replace("[120 hazards]", f"[{second} hazards]")]}])
    return repo


def test_a_claim_true_in_one_session_and_false_in_one_recording_of_another_fails_naming_them(tmp_path):
    repo = two_sessions(tmp_path, 130)
    assert checked(repo, PAGE) == [
        ("docs/p.md:5: claim '120' (race:reports[severity=Error].hazards) varies across 4 recordings of race in 2 "
        "sessions: 120 to 130 (evidence/demo/s2/race.r2.txt (session s2, 2026-11-29T12:00:00Z), line 7 says '130'); "
        "quote a range")]
    assert checked(two_sessions(tmp_path / "again", 120), PAGE) == []


def test_a_claim_may_name_one_session(tmp_path):
    repo = two_sessions(tmp_path, 130)
    latest = PAGE.replace("@ race:", "@ race[session=latest]:").replace("{{ 120", "{{ 120–130")
    assert checked(repo, latest) == []
    first = PAGE.replace("@ race:", "@ race[session=s1]:")
    assert checked(repo, first) == []
    assert checked(repo, PAGE.replace("@ race:", "@ race[session=s7]:")) == [
        ("docs/p.md:5: 'race[session=s7]' names session 's7', which evidence set 'demo' does not keep; its sessions: "
        "s1, s2 (or latest)")]


def test_explain_says_a_session_claim_rests_on_that_session_alone(tmp_path):
    """`RUN[session=s1]` is backed by that session's recordings, and explain and the tooltip say so."""
    from lessonkit.cli.explain import explain

    repo = two_sessions(tmp_path, 130)
    (repo / "docs/p.md").write_text(PAGE.replace("@ race:", "@ race[session=s1]:"))
    lines, errors = explain(repo, repo / "docs/p.md")
    assert errors == []
    backing = next(line for line in lines if line.startswith("    120:"))
    assert backing.endswith("run race of set demo (nvcc 13.0.88, compute-sanitizer 2025.3.1.0), session s1 only: "
                            "2 recordings in 1 session"), backing


def test_a_ratio_pairs_within_each_session_and_spans_them(tmp_path):
    from conftest import RACE
    repo = tmp_path / "site"
    write_tree(repo, {"mkdocs.yml": mkdocs_yml(), "docs/index.md": "# hi\n", "code/demo/demo.cu": "int main() {}\n",
                      "code/demo/runs.toml": 'lesson = "demo"\ninputs = ["demo.cu"]\n\n[build]\nsm_90 = "nvcc -o demo '
                                             'demo.cu"\n\n[[run]]\nname = "race"\ncommand = "./demo"\n\n[[run]]\n'
                                             'name = "bare"\ncommand = "./demo x"\n',
                      "code/demo/README.md": "```console\nnvcc -o demo demo.cu\n./demo\n./demo x\n```\n"})
    record_set(repo, "demo", {"race": RACE, "bare": RACE}, walls={"race": [3.0], "bare": [1.5]},
               refresh_ids={"race": ["r1"], "bare": ["r1"]}, more_sessions=[{"race": RACE, "bare": RACE}])
    # s1: 3.0 / 1.5 = 2; s2 (record_set's default walls): 1.5 / 1.5 = 1
    page = "# P\n\n{{ evidence demo }}\n\nIt took {{ 1–2 @ race:wall_s / bare:wall_s }} times as long.\n"
    assert checked(repo, page) == []
    assert checked(repo, page.replace("1–2 @", "2 @")) == [
        ("docs/p.md:5: claim '2' (race:wall_s / bare:wall_s) is a timing, which changes from run to run even when "
        "nothing else does; quote it rounded (~V) or as a range (LOW–HIGH): 2 recordings of race / bare (paired by "
        "repeat) in 2 sessions give 1 to 2")]


# -- the GPU to itself --------------------------------------------------------------------------------

def test_an_exclusive_run_waits_for_the_gpu_then_refuses_leaving_the_evidence(lab, tmp_path):
    repo, env = lab
    machine = start_machine(env, tmp_path, "a")
    assert refresh(repo, machine).returncode == 0
    before = (repo / "evidence/demo/manifest.json").read_bytes()
    apps = tmp_path / "apps"
    apps.write_text(APP.format(machine="b") + OTHER_GPU)
    done = refresh(repo, start_machine(env, tmp_path, "b"), "--shared-gpu-wait", "0.3", FAKE_GPU_APPS=str(apps))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        "refresh: GPU shared with PID 4242 (python3, 1024 MiB): exclusive run 'slow' needs the GPU to itself, and "
        "waited 0.3 s; the old evidence is kept and nothing was recorded; stop the other process, or record anyway "
        "with --allow-shared-gpu (the session is then marked shared, and backs no timing and no exclusive run's "
        "figure)\n")
    assert "wait    the GPU is shared with PID 4242 (python3, 1024 MiB); exclusive run 'slow' waits up to 0.3 s" \
        in done.stdout
    assert (repo / "evidence/demo/manifest.json").read_bytes() == before


def test_an_exclusive_run_goes_on_once_the_other_process_has_left(lab, tmp_path):
    repo, env = lab
    apps = tmp_path / "apps"
    apps.write_text(APP.format(machine="a"))
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo),
                             "--shared-gpu-wait", "60"], env={**start_machine(env, tmp_path, "a"),
                                                               "FAKE_GPU_APPS": str(apps)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "wait    the GPU is shared" not in seen:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        seen += line
    apps.unlink()  # the other process leaves the GPU
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, seen + out + err
    session = manifest(repo)["sessions"]["s1"]["provenance"]
    assert session["shared"] is False and session["gpu_processes"]["slow"] == {"start": [], "end": []}


def test_a_shared_session_is_marked_and_backs_no_exclusive_runs_figure(lab, tmp_path):
    repo, env = lab
    apps = tmp_path / "apps"
    apps.write_text(APP.format(machine="a"))
    done = refresh(repo, start_machine(env, tmp_path, "a"), "--allow-shared-gpu", FAKE_GPU_APPS=str(apps))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("shared  the GPU is shared with PID 4242 (python3, 1024 MiB) as exclusive run 'slow' starts "
            "(--allow-shared-gpu): the session is marked shared") in done.stdout
    session = manifest(repo)["sessions"]["s1"]["provenance"]
    assert session["shared"] is True
    assert session["gpu_processes"]["slow"]["start"] == [{"pid": 4242, "name": "python3", "memory_mib": 1024}]
    page = "{{ evidence demo }}\n\nIt exited {{ 0 @ demo/slow:exit_code }}; bare {{ 0 @ demo/bare:exit_code }}.\n"
    (repo / "docs/index.md").write_text(page)
    from lessonkit.site.check import check_site
    errors = [str(e) for e in check_site(repo)]
    assert errors == [
        ("docs/index.md:3: claim '0' (demo/slow:exit_code): every recording of slow that is left comes from a session "
        "recorded with the GPU shared (s1), which backs no timing and no exclusive run's figure")]
    # A later session with the GPU its own backs the claim; the shared one stays out of it.
    apps.unlink()
    assert refresh(repo, start_machine(env, tmp_path, "b")).returncode == 0
    assert [str(e) for e in check_site(repo)] == []


def test_a_field_the_driver_does_not_know_is_recorded_as_such(lab, tmp_path):
    repo, env = lab
    done = refresh(repo, start_machine(env, tmp_path, "a"), FAKE_SMI_UNKNOWN="clocks.applications.graphics")
    assert done.returncode == 0, done.stdout + done.stderr
    session = manifest(repo)["sessions"]["s1"]["provenance"]
    assert session["app_sm_clock_mhz"] == "[not a field of this driver's nvidia-smi]"
    assert session["power_limit_w"] == 700.0


def test_explain_says_how_many_sessions_back_a_figure(tmp_path):
    repo = two_sessions(tmp_path, 120)
    (repo / "docs/index.md").write_text(PAGE)
    done = subprocess.run([sys.executable, "-m", "lessonkit", "explain", "docs/index.md", "--repo", str(repo)],
                          cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert "4 recordings in 2 sessions;" in done.stdout or "4 recordings in 2 sessions\n" in done.stdout, done.stdout


def test_the_refresh_polls_no_longer_than_it_waits():
    """The guard's wait is a deadline, polled: it never sleeps past it."""
    from lessonkit.evidence.refresh import GpuGuard, GpuShared
    calls: list[float] = []

    def smi(argv: list[str]) -> str:
        calls.append(time.monotonic())
        return APP.format(machine="x")
    guard = GpuGuard(None, False, lambda s: None, wait_s=0.25, poll_s=0.1, run=smi)
    start = time.monotonic()
    with pytest.raises(GpuShared):
        guard.before("slow")
    assert 0.25 <= time.monotonic() - start < 2 and len(calls) >= 3


def test_a_run_that_now_has_the_gpu_to_itself_starts_its_history_anew(lab, tmp_path):
    repo, env = lab
    assert refresh(repo, start_machine(env, tmp_path, "a")).returncode == 0
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"', 'name = "race"\nexclusive = true'))
    done = refresh(repo, start_machine(env, tmp_path, "b"))
    assert done.returncode == 0, done.stdout + done.stderr
    m = manifest(repo)
    assert sorted({e["session"] for n, e in m["transcripts"].items() if e["group"] == "race"}) == ["s2"]
    assert sorted({e["session"] for n, e in m["transcripts"].items() if e["group"] == "bare"}) == ["s1", "s2"]
    assert m["retired"] == [{"session": "s1", "started": m["sessions"]["s1"]["provenance"]["started"],
                             "why": "recorded without the GPU to itself, runs.toml now says exclusive = true",
                             "by": m["sessions"]["s2"]["provenance"]["started"], "runs": ["race"]}]


def test_a_page_may_say_how_many_sessions_a_set_keeps(tmp_path):
    """`SET:sessions` is the number of sessions the set keeps: a sentence that counts them is a claim."""
    repo = two_sessions(tmp_path, 120)
    page = "# P\n\n{{ evidence demo }}\n\nRecorded in {{ two @ demo:sessions }} sessions.\n"
    assert checked(repo, page) == []
    assert checked(repo, page.replace("two @", "three @")) == [
        "docs/p.md:5: claim 'three' (demo:sessions) disagrees with evidence/demo/manifest.json; it says '2'"]


def test_explain_says_what_a_count_of_sessions_is(tmp_path):
    repo = two_sessions(tmp_path, 120)
    (repo / "docs/index.md").write_text("# P\n\n{{ evidence demo }}\n\nRecorded in {{ two @ demo:sessions }} sessions.\n")
    done = subprocess.run([sys.executable, "-m", "lessonkit", "explain", "docs/index.md", "--repo", str(repo)],
                          cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "two: one value every recording gives; how many GPU sessions the set keeps; set demo" in done.stdout


def test_explain_shows_how_far_the_sessions_differ_beside_how_far_one_sessions_recordings_do(tmp_path):
    """An author choosing a range that the next session will keep needs the spread between sessions,
    not only the whole range: explain lists a varying figure's values session by session."""
    from lessonkit.cli.explain import explain

    repo = two_sessions(tmp_path, 130)
    (repo / "docs/p.md").write_text(PAGE.replace("{{ 120 @", "{{ 120–130 @"))
    lines, errors = explain(repo, repo / "docs/p.md")
    assert errors == []
    assert "      recorded, session by session: s1 120; s2 120\u2013130" in lines, lines
    steady = two_sessions(tmp_path / "steady", 120)
    (steady / "docs/p.md").write_text(PAGE)
    assert not any("session by session" in line for line in explain(steady, steady / "docs/p.md")[0])


def test_a_derived_claim_names_the_session_of_the_recording_it_fails_in(tmp_path):
    """A claim that derives its figure (`+ 1`) says which session's recording breaks it, as a plain
    claim does, and explain lists its derived values session by session."""
    from lessonkit.cli.explain import explain

    repo = two_sessions(tmp_path, 130)
    derived = PAGE.replace("{{ 120 @ race:reports[severity=Error].hazards }}",
                           "{{ 121 @ race:reports[severity=Error].hazards + 1 }}")
    errors = checked(repo, derived)
    assert len(errors) == 1 and "evidence/demo/s2/race.r2.txt (session s2, 2026-11-29T12:00:00Z)" in errors[0], errors
    (repo / "docs/p.md").write_text(derived.replace("{{ 121 @", "{{ 121–131 @"))
    lines, _ = explain(repo, repo / "docs/p.md")
    assert "      recorded, session by session: s1 121; s2 121\u2013131" in lines, lines


# -- figures that move between sessions: generated, bound to the words, shown session by session ---------

HAZ = "race:reports[severity=Error].hazards"


def test_a_table_has_a_row_for_each_kept_session_over_its_recordings_alone(tmp_path):
    """`rows=session` draws each session's own range (a refresh that retires one drops its row) and
    labels it with the session's id and start; the same table over the whole set would give one range."""
    from conftest import run_page

    repo = two_sessions(tmp_path, 130)
    result = run_page(repo, "# P\n\n{{ evidence demo }}\n\n{{ table race:reports[severity=Error] rows=session cell=hazards }}\n")
    assert result.errors == []
    rows = [line for line in result.markdown.splitlines() if line.startswith("| <span")]
    assert [[cell.split(">")[1].split("<")[0] for cell in row.split(" | ")] for row in rows] == [
        ["s1, 2026-11-29 12:00 UTC", "120"], ["s2, 2026-11-29 12:00 UTC", "120\u2013130"]], rows
    # what backs a cell, as its tooltip and explain say it: that session's recordings alone
    from lessonkit.site.check import Site
    shown = Site.load(repo).page("# P\n\n{{ evidence demo }}\n\n{{ table race:reports[severity=Error] rows=session "
                                 "cell=hazards }}\n", "docs/p.md").markdown
    assert "2 recordings a run in 1 session, session s2 only; the cell (s2, 2026-11-29 12:00 UTC)" in shown, shown


def test_rows_of_sessions_draw_from_one_set(tmp_path):
    repo = two_sessions(tmp_path, 130)
    record_set(repo, "demo", {"race": [RACE_TEXT, RACE_TEXT]}, set_name="demo-other")
    page = ("# P\n\n{{ evidence demo }}\n\n{{ table demo/race:reports[severity=Error] "
            "demo-other/race:reports[severity=Error] rows=session cell=hazards }}\n")
    assert checked(repo, page) == [
        ("docs/p.md:5: table: rows or columns of sessions draw from one set: the sessions of two sets are separate "
        "recordings, whatever their ids")]


def test_a_generated_figure_holds_the_bound_its_words_lean_on_in_every_session(tmp_path):
    """`within LOW–HIGH` is not shown; a value of any recording of any session outside it fails the page,
    naming the session, the recording and the value."""
    from conftest import run_page

    repo = two_sessions(tmp_path, 130)
    page = "# P\n\n{{ evidence demo }}\n\nThe error has {{ value %s within 100–%d }} hazards.\n"
    shown = run_page(repo, page % (HAZ, 130))
    assert shown.errors == [] and "has <span class=\"lk-v\">120\u2013130</span> hazards" in shown.markdown
    assert checked(repo, page % (HAZ, 125)) == [
        (f"docs/p.md:5: value '{HAZ} within 100\u2013125': the words around it lean on every value lying from 100 "
        "to 125; 4 recordings of race in 2 sessions give 1 outside it, first 130 (evidence/demo/s2/race.r2.txt "
        "(session s2, 2026-11-29T12:00:00Z), line 7)")]


def test_a_generated_figure_may_be_derived_and_its_range_rounded_outwards(tmp_path):
    from conftest import run_page

    repo = two_sessions(tmp_path, 131)
    page = "# P\n\n{{ evidence demo }}\n\nThat is {{ value %s }} a block.\n"
    assert "<span class=\"lk-v\">240\u2013262</span>" in run_page(repo, page % f"{HAZ} * 2").markdown
    # 120 to 131 at two significant digits: the low end rounded down, the high end up, so the range holds both
    assert "<span class=\"lk-v\">120\u2013140</span>" in run_page(repo, page % f"{HAZ} sig=2").markdown
    assert "<span class=\"lk-v\">12\u201314</span>" in run_page(repo, page % f"{HAZ} / 10 sig=2").markdown


def test_a_range_of_floats_is_never_shown_at_full_precision(tmp_path):
    """Without sig=N, a range whose ends carry a float's every digit is rounded outwards to a readable
    figure that still holds every value; ends of a few digits are shown as recorded."""
    from lessonkit.pages.claims import Found, Sample
    from lessonkit.pages.tables import figure

    def sample(*texts):
        return Sample(tuple(Found(t) for t in texts), "run", len(texts))

    assert figure(sample("4607.825212075677", "5791.850401976399"), "the cell") == "4607\u20135792"
    assert figure(sample("0.04607825212075677", "0.05791850401976399"), "the cell") == "0.04607\u20130.05792"
    assert figure(sample("6.854", "11.96"), "the cell") == "6.854\u201311.96"
    assert figure(sample("120", "131"), "the cell") == "120\u2013131"


def test_explain_gives_each_side_of_a_comparison_of_two_sets_session_by_session(tmp_path):
    """`{{ fewer @ … in A vs B }}`: each set's values, session by session, so a reviewer sees whether the
    two sides lie apart in every session or only over all of them."""
    from lessonkit.cli.explain import explain

    repo = two_sessions(tmp_path, 130)
    record_set(repo, "demo", {"race": [RACE_TEXT.replace("[120 hazards]", "[200 hazards]")] * 2}, set_name="demo-b")
    (repo / "docs/p.md").write_text("# P\n\n{{ evidence demo }}\n\nThe first had {{ fewer @ race:reports[severity=Error]"
                                    ".hazards in demo vs demo-b }} hazards than the second.\n")
    lines, errors = explain(repo, repo / "docs/p.md")
    assert errors == []
    assert "      recorded, session by session: demo: s1 120; s2 120\u2013130 | demo-b: 200" in lines, lines
