"""Evidence sets: integrity (hand edits, missing and stray files) and freshness (changed inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lessonkit.errors import LessonError
from lessonkit.evidence import load_all_evidence, load_evidence_set

FIX = "refresh it on a GPU machine: python3 scripts/refresh.py demo --only"


def errors(repo: Path) -> list[str]:
    return [str(e) for e in load_all_evidence(repo).errors]


def test_recorded_set_is_clean(demo_repo: Path):
    ev = load_all_evidence(demo_repo)
    assert ev.errors == [] and set(ev.sets["demo"].entries) == {"race", "bare"}


def test_hand_edited_transcript(demo_repo: Path):
    path = demo_repo / "evidence/demo/race.txt"
    path.write_text(path.read_text().replace("[120 hazards]", "[121 hazards]"))
    assert errors(demo_repo) == [
        "evidence/demo/race.txt: does not match the sha256 in the manifest: it was edited after it was "
        "recorded; evidence is written only by the refresh: python3 scripts/refresh.py demo --only race"]


def test_missing_transcript(demo_repo: Path):
    (demo_repo / "evidence/demo/bare.txt").unlink()
    assert errors(demo_repo) == [
        "evidence/demo/bare.txt: transcript 'bare' is missing; re-record it: python3 scripts/refresh.py demo --only bare"]


def test_file_not_in_manifest(demo_repo: Path):
    (demo_repo / "evidence/demo/extra.txt").write_text("hand made")
    assert errors(demo_repo) == [
        "evidence/demo/extra.txt: is not in the manifest: the refresh did not write it; remove it or "
        "re-record the set: python3 scripts/refresh.py demo"]


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
    data["transcripts"]["race"]["exit_code"] = "zero"
    path.write_text(json.dumps(data))
    assert errors(demo_repo) == [
        "evidence/demo/manifest.json: transcript 'race': field 'exit_code' is missing or of the wrong type"]


def test_no_such_set(demo_repo: Path):
    with pytest.raises(LessonError) as info:
        load_evidence_set(demo_repo, "nope")
    assert str(info.value) == "evidence/nope: no such evidence set"


def test_source_change_makes_the_set_stale(demo_repo: Path):
    src = demo_repo / "code/demo/demo.cu"
    src.write_text(src.read_text() + "// one more line\n")
    found = errors(demo_repo)
    assert len(found) == 2  # both transcripts were recorded from the old source
    race = next(e for e in found if "'race'" in e)
    assert race.startswith("evidence/demo/manifest.json: transcript 'race' is stale: code/demo/demo.cu has sha256 ")
    assert race.endswith(f"; {FIX} race")


def test_build_line_change_makes_the_set_stale(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace("-arch=sm_90", "-O3 -arch=sm_90"))
    found = errors(demo_repo)
    assert any("transcript 'bare' is stale: build line has sha256" in e for e in found)


def test_command_change_makes_the_transcript_stale(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('command = "./demo"', 'command = "./demo all"'))
    found = [e for e in errors(demo_repo) if "manifest.json" in e]
    assert found == [
        "evidence/demo/manifest.json: transcript 'bare' is stale: recorded with './demo', "
        f"code/demo/runs.toml now says './demo all'; {FIX} bare"]


def test_run_without_transcript(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text() + '\n[[run]]\nname = "new"\ncommand = "./demo new"\n')
    assert "evidence/demo/manifest.json: run 'new' of code/demo/runs.toml has no transcript; record it: "\
           "python3 scripts/refresh.py demo --only new" in errors(demo_repo)


def test_lesson_readme_must_show_every_command(demo_repo: Path):
    from lessonkit.site import check_lesson_readmes
    readme = demo_repo / "code/demo/README.md"
    readme.write_text(readme.read_text().replace("\n./demo\n", "\n./demo --fast\n"))
    assert [str(e) for e in check_lesson_readmes(demo_repo)] == [
        "code/demo/README.md: does not show the run 'bare' of code/demo/runs.toml: './demo'; copy it "
        "verbatim so readers run what the evidence ran"]
