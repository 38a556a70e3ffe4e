"""The manifest module: what is written parses back equal; what is malformed raises LessonError only."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lessonkit.errors import LessonError
from lessonkit.evidence.manifest import (
    Manifest,
    TranscriptEntry,
    manifest_to_text,
    parse_manifest,
    recording_file,
    recording_name,
)

_names = st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}", fullmatch=True)
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@st.composite
def manifests(draw) -> Manifest:
    groups = draw(st.lists(_names, min_size=0, max_size=4, unique=True))
    entries = {}
    for group in groups:
        repeats = draw(st.integers(1, 4))
        for k in range(1, repeats + 1):
            name = recording_name(group, k, repeats)
            started = draw(st.floats(0, 2e9, allow_nan=False))
            entries[name] = TranscriptEntry(
                name=name, file=recording_file(f"{group}.txt", k, repeats), command=draw(_text),
                exit_code=draw(st.one_of(st.none(), st.integers(-255, 255))), timed_out=draw(st.booleans()),
                wall_s=draw(st.floats(0, 1e4, allow_nan=False)), date=draw(_text),
                inputs=draw(st.dictionaries(_text, _text, max_size=3)), sha256=draw(_text),
                format=draw(st.sampled_from(["text", "json", "xml"])), group=group, repeat=k, repeats=repeats,
                exclusive=draw(st.booleans()), started=started,
                ended=draw(st.one_of(st.none(), st.floats(0, 2e9, allow_nan=False))))
    return Manifest(draw(_text), draw(_text), draw(_text), draw(_text),
                    draw(st.dictionaries(_text, st.one_of(_text, st.integers()), max_size=4)), entries)


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
    entry_keys = ["file", "exit_code", "repeat", "repeats", "group", "started", "inputs"]
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
    m = Manifest("l", "sm_90", "b", "r", {}, {"a": TranscriptEntry(
        "a", "a.txt", "c", 0, False, 1.0, "d", {}, "s", group="a")})
    raw = json.loads(manifest_to_text(m))
    raw["transcripts"]["a"]["repeat"] = "1"
    with pytest.raises(LessonError) as info:
        parse_manifest(json.dumps(raw), "evidence/s")
    assert str(info.value) == ("evidence/s/manifest.json: transcript 'a': field 'repeat' is missing or of the "
                               "wrong type")


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
