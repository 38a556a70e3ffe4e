"""The manifest module: what is written parses back equal; what is malformed raises LessonError only."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lessonkit.errors import LessonError
from lessonkit.evidence.manifest import (
    Manifest,
    Session,
    TranscriptEntry,
    entry_digest,
    entry_name,
    manifest_to_text,
    parse_manifest,
    read_manifest,
    recording_file,
    recording_name,
    write_manifest,
)

_names = st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}", fullmatch=True)
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@st.composite
def manifests(draw) -> Manifest:
    groups = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    numbers = draw(st.lists(st.integers(1, 40), min_size=1, max_size=3, unique=True))
    entries = {}
    sessions = {}
    for number in sorted(numbers):
        sid = f"s{number}"
        mine = draw(st.lists(st.sampled_from(groups), min_size=1, max_size=len(groups), unique=True))
        sessions[sid] = Session(sid, draw(st.dictionaries(_text, st.one_of(_text, st.integers(), st.booleans()),
                                                          max_size=4)))
        for group in mine:
            repeats = draw(st.integers(1, 4))
            for k in range(1, repeats + 1):
                name = entry_name(sid, recording_name(group, k, repeats))
                started = draw(st.floats(0, 2e9, allow_nan=False))
                wall_s = draw(st.floats(0, 1e4, allow_nan=False))
                timed_out = draw(st.booleans())
                entries[name] = TranscriptEntry(
                    name=name, file=f"{sid}/" + recording_file(f"{group}.txt", k, repeats), command=draw(_text),
                    exit_code=None if timed_out else draw(st.integers(-255, 255)), timed_out=timed_out,
                    wall_s=wall_s, date=_second(started),
                    inputs=draw(st.dictionaries(_text, _text, max_size=3)), sha256=draw(_text),
                    format=draw(st.sampled_from(["text", "json", "xml"])), group=group, repeat=k,
                    repeats=repeats, exclusive=draw(st.booleans()), started=started, ended=started + wall_s,
                    refresh_id=draw(st.one_of(st.none(), _text)), session=sid)
    retired = tuple(draw(st.lists(st.fixed_dictionaries({"session": _text, "why": _text}), max_size=2)))
    return Manifest(draw(_text), draw(_text), draw(_text), draw(_text),
                    draw(st.dictionaries(_text, st.one_of(_text, st.integers()), max_size=4)), entries,
                    sessions, retired)


def _second(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@given(manifests())
@settings(max_examples=150, deadline=None)
def test_a_written_manifest_parses_back_equal(m: Manifest):
    parsed = parse_manifest(manifest_to_text(m), "evidence/s")
    assert parsed == m
    assert manifest_to_text(parsed) == manifest_to_text(m)
    assert sorted(n for names in parsed.groups().values() for n in names) == sorted(m.entries)


@given(manifests(), st.data())
@settings(max_examples=150, deadline=None)
def test_a_damaged_manifest_raises_lesson_error_only(m: Manifest, data):
    raw = json.loads(manifest_to_text(m))
    victims = ["format", "lesson", "provenance", "transcripts"]
    entry_keys = ["file", "exit_code", "repeat", "repeats", "group", "started", "inputs", "digest", "wall_s", "date"]
    if raw["transcripts"]:
        victims += [f"entry:{k}" for k in entry_keys]
    victim = data.draw(st.sampled_from(victims))
    junk = data.draw(st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                               st.integers(-3, 0)))
    if victim.startswith("entry:"):
        name = data.draw(st.sampled_from(sorted(raw["transcripts"])))
        raw["transcripts"][name][victim[6:]] = junk
    else:
        raw[victim] = junk
    try:
        parse_manifest(json.dumps(raw), "evidence/s")
    except LessonError as exc:
        assert str(exc).startswith("evidence/s/manifest.json")


@given(st.binary(max_size=200))
@settings(max_examples=100, deadline=None)
def test_garbage_raises_lesson_error_only(blob: bytes):
    with pytest.raises(LessonError):
        parse_manifest(blob.decode("latin-1") + "}", "evidence/s")


def test_a_damaged_manifest_is_refused_with_its_field():
    raw = json.loads(text_of(entry()))
    raw["transcripts"]["s1/a"]["repeat"] = "1"
    with pytest.raises(LessonError) as info:
        parse_manifest(json.dumps(raw), "evidence/s")
    assert str(info.value) == ("evidence/s/manifest.json: transcript 's1/a': field 'repeat' is missing or of the "
                               "wrong type")


# -- digests: the refresh writes one per entry; a hand edit of any field is refused ---------------

REFRESH = ".venv/bin/python scripts/refresh.py l"
STARTED = 1_795_953_600.25  # a moment into 2026-11-29T12:00:00Z


def entry(name: str = "a", session: str = "s1", **changes) -> TranscriptEntry:
    """A recording of session `session` as the refresh writes it: finished with exit 0, 1.5 s, started a
    moment into its date."""
    made = TranscriptEntry(name=f"{session}/{name}", file=f"{session}/{name}.txt", command="./demo", exit_code=0,
                           timed_out=False, wall_s=1.5, date="2026-11-29T12:00:00Z",
                           inputs={"build line": "b" * 64}, sha256="c" * 64, format="text", group=name,
                           started=STARTED, ended=STARTED + 1.5, refresh_id="2026-11-29T11:59:58Z/42",
                           session=session)
    return replace(made, **changes)


SESSION = {"gpu_uuid": "GPU-1", "started": "2026-11-29T11:59:58Z"}


def text_of(*entries: TranscriptEntry) -> str:
    sessions = {e.session: Session(e.session, SESSION) for e in entries}
    return manifest_to_text(Manifest("l", "sm_90", "b", REFRESH, {}, {e.name: e for e in entries}, sessions))


def refused(text: str) -> str:
    with pytest.raises(LessonError) as info:
        parse_manifest(text, "evidence/s")
    return str(info.value)


def test_an_entry_written_by_the_writer_is_read_back(tmp_path):
    m = Manifest("l", "sm_90", "b", REFRESH, {"gpu": "G"},
                 {"s1/a": entry(), "s1/b": entry("b", timed_out=True, exit_code=None)}, {"s1": Session("s1", SESSION)})
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path, "evidence/s") == m
    raw = json.loads((tmp_path / "manifest.json").read_text())
    assert raw["format"] == 4 and raw["transcripts"]["s1/a"]["digest"] == entry_digest("s1/a", raw["transcripts"]["s1/a"])


EDITED = "evidence/s/manifest.json: transcript 's1/a' does not match its digest: the entry was edited after it " \
         f"was recorded; evidence is written only by the refresh: {REFRESH}"


@pytest.mark.parametrize("key, value", [
    ("file", "b.txt"), ("command", "./demo --fast"), ("exit_code", 1), ("timed_out", True), ("wall_s", 1.49),
    ("date", "2026-11-29T12:00:01Z"), ("inputs", {"build line": "d" * 64}), ("sha256", "d" * 64),
    ("format", "json"), ("group", "b"), ("repeat", 2), ("repeats", 2), ("exclusive", True),
    ("started", STARTED + 0.001), ("ended", STARTED + 1.501), ("refresh_id", "another"), ("added", 1)])
def test_a_hand_edited_entry_is_refused(key, value):
    raw = json.loads(text_of(entry()))
    raw["transcripts"]["s1/a"][key] = value
    assert refused(json.dumps(raw)) == EDITED


@pytest.mark.parametrize("key, value", [("lesson", "m"), ("arch", "sm_80"), ("build", "nvcc -O3"),
                                        ("provenance", {"gpu": "NVIDIA B200"}), ("set_digest", "0" * 64),
                                        ("retired", [{"session": "s0", "why": "hidden"}])])
def test_a_hand_edited_set_field_is_refused(key, value):
    raw = json.loads(text_of(entry()))
    raw[key] = value
    assert refused(json.dumps(raw)) == SET_EDITED


SET_EDITED = ("evidence/s/manifest.json: the set's fields (lesson, arch, build, refresh, provenance, the sessions' "
              "names and retired) do not match its set_digest: the manifest was edited after it was recorded; "
              f"evidence is written only by the refresh: {REFRESH}")


def test_a_session_removed_by_hand_is_refused():
    raw = json.loads(text_of(entry(), entry(session="s2")))
    del raw["sessions"]["s2"]
    del raw["transcripts"]["s2/a"]
    assert refused(json.dumps(raw)) == SET_EDITED


@pytest.mark.parametrize("key, value", [("gpu_uuid", "GPU-2"), ("shared", False), ("started", "2026-11-30T00:00:00Z")])
def test_a_hand_edited_session_is_refused(key, value):
    raw = json.loads(text_of(entry(), entry(session="s2")))
    raw["sessions"]["s2"]["provenance"][key] = value
    assert refused(json.dumps(raw)) == (
        "evidence/s/manifest.json: session 's2' does not match its digest: its provenance was edited after it "
        f"was recorded; evidence is written only by the refresh: {REFRESH}")


def test_an_entry_moved_to_another_session_is_refused():
    raw = json.loads(text_of(entry(), entry("b", session="s2")))
    moved = raw["transcripts"].pop("s2/b")
    raw["transcripts"]["s1/b"] = {**moved, "session": "s1", "file": "s1/b.txt"}
    assert refused(json.dumps(raw)) == EDITED.replace("'s1/a'", "'s1/b'")


def test_an_entry_moved_to_another_name_is_refused():
    raw = json.loads(text_of(entry()))
    raw["transcripts"]["s1/b"] = raw["transcripts"].pop("s1/a")
    assert refused(json.dumps(raw)) == EDITED.replace("'s1/a'", "'s1/b'")


def test_an_entry_without_a_digest_is_refused():
    raw = json.loads(text_of(entry()))
    del raw["transcripts"]["s1/a"]["digest"]
    assert refused(json.dumps(raw)) == \
        "evidence/s/manifest.json: transcript 's1/a': field 'digest' is missing or of the wrong type"


@pytest.mark.parametrize("fmt", [1, 2])
def test_a_manifest_from_before_digests_is_refused_with_the_refresh_command(fmt):
    raw = json.loads(text_of(entry()))
    raw["format"] = fmt
    for fields in raw["transcripts"].values():
        del fields["digest"]
    assert refused(json.dumps(raw)) == (f"evidence/s/manifest.json: format {fmt}: recorded before entries carried "
                                        f"a digest; re-record the set: {REFRESH}")


def test_a_manifest_of_an_unknown_format_is_refused():
    raw = json.loads(text_of(entry()))
    raw["format"] = 5
    assert refused(json.dumps(raw)) == "evidence/s/manifest.json: format 5 is not 4; re-record the set"


def test_a_manifest_of_one_refresh_is_read_as_one_session():
    old = replace(entry(session="s0"), name="a", file="a.txt")
    text = manifest_to_text(Manifest("l", "sm_90", "b", REFRESH, {"gpu": "G"}, {"a": old},
                                     {"s0": Session("s0", {"gpu": "G"})}, format=3))
    raw = json.loads(text)
    assert raw["format"] == 3 and "sessions" not in raw and "session" not in raw["transcripts"]["a"]
    m = parse_manifest(text, "evidence/s")
    assert list(m.sessions) == ["s0"] and m.entries["a"].session == "s0" and m.groups() == {"a": ("a",)}


# -- sense: what the refresh wrote agrees with itself --------------------------------------------------

FIX = f"re-record the set: {REFRESH}"


def test_wall_time_must_agree_with_start_and_end():
    assert refused(text_of(entry(wall_s=1.7))) == (
        "evidence/s/manifest.json: transcript 's1/a': wall_s 1.7 disagrees with ended - started = 1.500 s "
        f"(allowed: 0.058 s apart); {FIX}")


def test_wall_time_within_the_roundings_and_the_margin_is_accepted():
    # the largest gap measured in the recorded sets was 0.005 s; 0.05 s more is allowed, and the roundings
    for wall_s, took in ((1.5, 1.555), (1.5, 1.445), (100.0, 100.15)):
        assert parse_manifest(text_of(entry(wall_s=wall_s, ended=STARTED + took)), "evidence/s").entries["s1/a"]


def test_wall_time_must_not_be_negative():
    assert refused(text_of(entry(wall_s=-1.0, ended=STARTED - 1.0))) == \
        f"evidence/s/manifest.json: transcript 's1/a': wall_s -1.0 is negative; {FIX}"


def test_a_timed_out_run_has_no_exit_code():
    assert refused(text_of(entry(timed_out=True, exit_code=137))) == (
        "evidence/s/manifest.json: transcript 's1/a': timed_out is true but exit_code is 137; a run that timed "
        f"out has no exit code (null); {FIX}")


def test_a_finished_run_has_an_exit_code():
    assert refused(text_of(entry(exit_code=None))) == (
        "evidence/s/manifest.json: transcript 's1/a': timed_out is false but exit_code is null; a run that "
        f"finished has an integer exit code; {FIX}")


@pytest.mark.parametrize("date", ["2026-11-29 12:00:00", "2026-11-29T12:00:00+00:00", "2026-13-29T12:00:00Z",
                                  "2026-11-29T1:00:00Z", "2026-11-29T12:00:00Z\n", "2026-02-30T12:00:00Z",
                                  "2026-11-29T24:00:00Z", "2026-11-29T23:59:60Z"])
def test_the_date_is_a_utc_time(date):
    assert refused(text_of(entry(date=date))) == (
        f"evidence/s/manifest.json: transcript 's1/a': date {date!r} is not a UTC time YYYY-MM-DDTHH:MM:SSZ; {FIX}")


@pytest.mark.parametrize("date", ["2026-11-29T12:00:02Z", "2026-11-29T11:59:59Z"])
def test_the_date_is_the_second_of_started(date):
    assert refused(text_of(entry(date=date))) == (
        f"evidence/s/manifest.json: transcript 's1/a': date {date!r} is not the second of started "
        f"1795953600.250 (2026-11-29T12:00:00Z); {FIX}")


def test_the_date_may_be_the_second_after_started():
    # started is read just before the date: the second may tick between the two readings
    started = STARTED + 0.749
    assert parse_manifest(text_of(entry(date="2026-11-29T12:00:01Z", started=started, ended=started + 1.5)),
                          "evidence/s").entries["s1/a"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_are_refused(number):
    text = text_of(entry()).replace('"wall_s": 1.5', f'"wall_s": {number}')
    line = text[:text.index(number)].count("\n") + 1
    assert refused(text) == (f"evidence/s/manifest.json:{line}: not valid JSON: {number!r} is not a finite "
                             "number; the refresh writes only finite numbers")


def test_the_writer_writes_no_nan():
    with pytest.raises(ValueError):
        text_of(entry(wall_s=float("nan")))


def test_a_rewrite_that_restores_size_and_mtime_gets_a_new_hash(tmp_path):
    import os

    from lessonkit.evidence.manifest import sha256_file
    f = tmp_path / "t.txt"
    f.write_text("aaaa")
    old = os.stat(f)
    os.utime(f, ns=(old.st_atime_ns - 10**10, old.st_mtime_ns - 10**10))  # settled: cacheable
    first = sha256_file(f)
    st = os.stat(f)
    f.write_text("bbbb")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime as before
    assert sha256_file(f) != first


def test_a_duplicated_key_is_refused_at_its_line():
    """json.loads keeps the last of two equal keys; a manifest with one is refused, naming the second's line."""
    text = text_of(entry())
    first = text.index('"exit_code"')
    doubled = text[:first] + '"exit_code": 7,\n      ' + text[first:]
    line = doubled[:doubled.index('"exit_code"', first + 5)].count("\n") + 1
    assert refused(doubled) == (f"evidence/s/manifest.json:{line}: the key 'exit_code' appears twice in one object; "
                                "the refresh writes each key once, so the manifest was edited after it was recorded")


def test_an_equal_key_in_another_object_is_no_duplicate():
    from lessonkit.jsonkeys import duplicate_key_line, loads
    text = '{"a": {"x": 1, "s": "{\\"x\\": 2}"}, "b": [{"x": 1}, {"x": 2}], "x": "x:"}'
    assert duplicate_key_line(text) is None and loads(text)["b"] == [{"x": 1}, {"x": 2}]
