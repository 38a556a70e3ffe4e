"""Evidence sets: integrity (hand edits, missing and stray files) and freshness (changed inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import rewrite_entry

from lessonkit.errors import LessonError
from lessonkit.evidence.sets import load_all_evidence, load_evidence_set

FIX = "refresh on a GPU machine: .venv/bin/python scripts/refresh.py demo --only"


def errors(repo: Path) -> list[str]:
    return [str(e) for e in load_all_evidence(repo).errors]


def test_recorded_set_is_clean(demo_repo: Path):
    ev = load_all_evidence(demo_repo)
    assert ev.errors == [] and set(ev.sets["demo"].entries) == {"s1/race", "s1/bare"}


def test_hand_edited_transcript(demo_repo: Path):
    path = demo_repo / "evidence/demo/s1/race.txt"
    path.write_text(path.read_text().replace("[120 hazards]", "[121 hazards]"))
    assert errors(demo_repo) == [
        ("evidence/demo/s1/race.txt: does not match the sha256 in the manifest: it was edited after it was "
        "recorded; evidence is written only by the refresh: .venv/bin/python scripts/refresh.py demo --only race")]


def test_missing_transcript(demo_repo: Path):
    (demo_repo / "evidence/demo/s1/bare.txt").unlink()
    assert errors(demo_repo) == [
        "evidence/demo/s1/bare.txt: transcript 's1/bare' is missing; re-record it: .venv/bin/python scripts/refresh.py demo --only bare"]


def test_file_not_in_manifest(demo_repo: Path):
    (demo_repo / "evidence/demo/extra.txt").write_text("hand made")
    assert errors(demo_repo) == [
        ("evidence/demo/extra.txt: is not in the manifest: the refresh did not write it; remove it or "
        "re-record the set: .venv/bin/python scripts/refresh.py demo")]


def test_missing_manifest(demo_repo: Path):
    (demo_repo / "evidence/demo/manifest.json").unlink()
    assert errors(demo_repo) == [
        "evidence/demo/manifest.json: the manifest is missing; the set was not written by the refresh"]


def test_unparseable_manifest_names_the_line(demo_repo: Path):
    (demo_repo / "evidence/demo/manifest.json").write_text('{\n  "format": 1,\n  "lesson": \n}\n')
    assert errors(demo_repo) == [
        "evidence/demo/manifest.json:4: not valid JSON: Expecting value (column 1)"]


def test_manifest_field_of_wrong_type(demo_repo: Path):
    path = demo_repo / "evidence/demo/manifest.json"
    data = json.loads(path.read_text())
    data["transcripts"]["s1/race"]["exit_code"] = "zero"
    path.write_text(json.dumps(data))
    assert errors(demo_repo) == [
        "evidence/demo/manifest.json: transcript 's1/race': field 'exit_code' is missing or of the wrong type"]


def test_hand_edited_manifest_entry(demo_repo: Path):
    path = demo_repo / "evidence/demo/manifest.json"
    data = json.loads(path.read_text())
    data["transcripts"]["s1/race"]["wall_s"] = 0.5
    path.write_text(json.dumps(data))
    assert errors(demo_repo) == [
        ("evidence/demo/manifest.json: transcript 's1/race' does not match its digest: the entry was edited after it "
         "was recorded; evidence is written only by the refresh: .venv/bin/python scripts/refresh.py demo")]


def test_manifest_of_format_two_is_refused(demo_repo: Path):
    path = demo_repo / "evidence/demo/manifest.json"
    data = json.loads(path.read_text())
    data["format"] = 2
    for entry in data["transcripts"].values():
        del entry["digest"]
    path.write_text(json.dumps(data))
    assert errors(demo_repo) == [
        ("evidence/demo/manifest.json: format 2: recorded before entries carried a digest; re-record the set: "
         ".venv/bin/python scripts/refresh.py demo")]


@pytest.mark.parametrize("exit_code, ended", [(1, "exited 1"), (None, "timed out")])
def test_a_gated_run_must_have_exited_0(demo_repo: Path, exit_code: int | None, ended: str):
    rewrite_entry(demo_repo, "s1/bare", exit_code=exit_code, timed_out=exit_code is None)
    rewrite_entry(demo_repo, "s1/race", exit_code=1)  # not gated: a failure is evidence too
    assert errors(demo_repo) == [
        (f"evidence/demo/manifest.json: transcript 's1/bare' {ended}, but its run is gated (gate = true in "
         "code/demo/runs.toml) and a gated run must exit 0; fix the program, then re-record it: "
         ".venv/bin/python scripts/refresh.py demo --only bare")]


def test_repeats_need_every_recording(demo_repo: Path):
    from conftest import RACE, record_set
    record_set(demo_repo, "demo", {"race": [RACE] * 3, "bare": "x\n"})
    path = demo_repo / "evidence/demo/manifest.json"
    data = json.loads(path.read_text())
    del data["transcripts"]["s1/race.r2"]
    path.write_text(json.dumps(data))
    assert errors(demo_repo) == [
        "evidence/demo/manifest.json: group 'race' has 2 recordings in session 's1' but they say 3 repeats"]


def test_recording_names_follow_their_repeat(demo_repo: Path):
    from conftest import RACE, record_set
    record_set(demo_repo, "demo", {"race": [RACE] * 2, "bare": "x\n"})
    rewrite_entry(demo_repo, "s1/race.r2", repeat=1)
    assert errors(demo_repo) == [
        ("evidence/demo/manifest.json: transcript 's1/race.r2': expected the name 's1/race.r1' for recording 1 of 2 "
        "of 'race'")]


@pytest.mark.parametrize("data, message", [
    (b"ok\nbad \xff here\n", ("evidence/demo/s1/race.txt:2:5: not valid UTF-8 (byte 0xff); expected UTF-8 text (the "
                              "refresh writes only UTF-8, so it did not write this file)")),
    (b"ok\nmode: \x00all\n", ("evidence/demo/s1/race.txt:2:7: holds a NUL byte (0x00); expected the text a run "
                             "printed, which has none")),
], ids=["invalid UTF-8", "NUL byte"])
def test_a_bad_byte_in_a_transcript_is_an_error_at_its_place(demo_repo: Path, data: bytes, message: str):
    ev = load_evidence_set(demo_repo, "demo")
    (demo_repo / "evidence/demo/s1/race.txt").write_bytes(data)
    with pytest.raises(LessonError) as info:
        ev.transcript_text("s1/race")
    assert str(info.value) == message


def test_no_such_set(demo_repo: Path):
    with pytest.raises(LessonError) as info:
        load_evidence_set(demo_repo, "nope")
    assert str(info.value) == "evidence/nope: no such evidence set"


def test_source_change_makes_the_set_stale(demo_repo: Path):
    src = demo_repo / "code/demo/demo.cu"
    src.write_text(src.read_text() + "// one more line\n")
    found = errors(demo_repo)
    # One cause, one error, naming every transcript it makes stale and the one command that fixes it.
    assert len(found) == 1
    assert found[0].startswith("evidence/demo/manifest.json: code/demo/demo.cu has sha256 ")
    assert found[0].endswith(": 2 transcripts stale (bare, race); refresh on a GPU machine: "
                             ".venv/bin/python scripts/refresh.py demo")


def test_one_stale_error_per_changed_input_with_repeats(demo_repo: Path):
    from conftest import RACE, record_set
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"', 'name = "race"\nrepeat = 4'))
    record_set(demo_repo, "demo", {"race": [RACE] * 4, "bare": "x\n"})
    assert errors(demo_repo) == []
    src = demo_repo / "code/demo/demo.cu"
    src.write_text(src.read_text() + "// one more line\n")
    found = errors(demo_repo)
    assert len(found) == 1 and ": 2 transcripts stale (bare, race);" in found[0]


def test_partial_staleness_names_the_runs_to_refresh(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "bare"', 'name = "bare"\ninputs = ["extra.txt"]'))
    (demo_repo / "code/demo/extra.txt").write_text("v1")
    found = errors(demo_repo)
    assert found == [
        ("evidence/demo/manifest.json: code/demo/extra.txt is a new input (sha256 "
        f"{__import__('hashlib').sha256(b'v1').hexdigest()[:12]} today, not recorded): 1 transcript stale "
        f"(bare); {FIX} bare")]


def test_build_line_change_makes_the_set_stale(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace("-arch=sm_90", "-O3 -arch=sm_90"))
    found = errors(demo_repo)
    assert len(found) == 1 and found[0].startswith("evidence/demo/manifest.json: build line has sha256")


def test_command_change_makes_the_transcript_stale(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('command = "./demo"', 'command = "./demo all"'))
    found = [e for e in errors(demo_repo) if "manifest.json" in e]
    assert found == [
        ("evidence/demo/manifest.json: transcript 'bare' is stale: recorded with './demo', "
        f"code/demo/runs.toml now says './demo all'; {FIX} bare")]


def test_repeat_change_makes_the_transcript_stale(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"', 'name = "race"\nrepeat = 3'))
    assert errors(demo_repo) == [
        ("evidence/demo/manifest.json: transcript 'race' is stale: recorded 1 time(s), code/demo/runs.toml "
        f"now asks for repeat = 3; {FIX} race")]


def test_run_without_transcript(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text() + '\n[[run]]\nname = "new"\ncommand = "./demo new"\n')
    assert "evidence/demo/manifest.json: run 'new' of code/demo/runs.toml has no transcript; record it: "\
           ".venv/bin/python scripts/refresh.py demo --only new" in errors(demo_repo)


def test_lesson_readme_must_show_every_command(demo_repo: Path):
    from lessonkit.site.check import check_lesson_readmes
    readme = demo_repo / "code/demo/README.md"
    readme.write_text(readme.read_text().replace("\n./demo\n", "\n./demo --fast\n"))
    assert [str(e) for e in check_lesson_readmes(demo_repo)] == [
        ("code/demo/README.md: does not show the run 'bare' of code/demo/runs.toml: './demo'; copy it "
        "verbatim so readers run what the evidence ran")]




SYMLINK = ("is a symbolic link; evidence is the files the refresh wrote, never a link to another file: remove it "
           "and re-record: .venv/bin/python scripts/refresh.py demo")


def test_a_transcript_that_is_a_symlink_is_refused(demo_repo: Path, tmp_path_factory):
    race = demo_repo / "evidence/demo/s1/race.txt"
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "race.txt"
    elsewhere.write_bytes(race.read_bytes())  # the very bytes the manifest hashed
    race.unlink()
    race.symlink_to(elsewhere)
    assert errors(demo_repo) == [f"evidence/demo/s1/race.txt: {SYMLINK} --only race"]
    with pytest.raises(LessonError) as info:
        load_evidence_set(demo_repo, "demo").transcript_text("s1/race")
    assert str(info.value) == f"evidence/demo/s1/race.txt: {SYMLINK} --only race"


def test_a_manifest_that_is_a_symlink_is_refused(demo_repo: Path, tmp_path_factory):
    manifest = demo_repo / "evidence/demo/manifest.json"
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "manifest.json"
    elsewhere.write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(elsewhere)
    assert errors(demo_repo) == [f"evidence/demo/manifest.json: {SYMLINK}"]


def test_a_run_whose_exclusive_changed_is_stale(demo_repo: Path):
    """A run recorded sharing the GPU says nothing about one that must have it to itself: stale."""
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"', 'name = "race"\nexclusive = true'))
    ev = load_all_evidence(demo_repo)
    assert [str(e) for e in ev.errors] == [
        ("evidence/demo/manifest.json: run 'race' is stale: recorded without the GPU to itself, code/demo/runs.toml now "
        "says exclusive = true; refresh on a GPU machine: .venv/bin/python scripts/refresh.py demo --only race")]
