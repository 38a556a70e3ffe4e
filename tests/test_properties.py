"""Property tests: the parsers raise nothing but the project's own errors, whatever the input."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence import parse_manifest
from lessonkit.jsontranscript import parse_json_transcript
from lessonkit.page import process_page
from lessonkit.regions import parse_regions
from lessonkit.spec import parse_spec
from lessonkit.transcript import parse_transcript

# Pieces of the real formats, so that generated text reaches deep into the parsers.
FRAGMENTS = [
    "// snippet: a", "// snippet: b", "// end snippet", "# snippet: c", "// snippet:", "x = 1;",
    "========= ", "=========     ", "========= COMPUTE-SANITIZER",
    "========= Error: Race reported between Read access at k(float *)+0x10 in a.cu:4",
    "=========     and Write access at k+0x20 in a.cu:4 [12 hazards]", "=========     and Read access at",
    "========= Warning: (Warp Level Programming) Potential WAR hazard detected at __shared__ 0x4 in block (1,0,0) :",
    "=========     Read Thread (2,0,0) at k+0x1a0 in r.cu:52", "=========     Write Thread (1,0,0) at",
    "========= Barrier error detected. Divergent thread(s) in warp.", "=========     at k+0x300 in r.cu:88",
    "=========     by thread (96,0,0) in block (8,0,0)", "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)",
    "========= RACECHECK SUMMARY:", "========= ERROR SUMMARY: 3 errors", "========= ERROR SUMMARY: 2 errors were not printed.",
    "threads | kernel | mismatches | first bad | gated", "   32 | k | 0 | - | no", "  32 | k | x | 1 | yes",
    "device: G | compute capability 9.0 | warp size 32", "mode: all", "GATE FAILED: k", "",
    "{{ 1 @ s/t:summary }}", "{{ region a/b.cu x }}", "{{ transcript s/t }}", "{{", "}}", "@", "\\{{",
]
lines = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), max_size=30)


def joined(parts: list[str]) -> str:
    return "\n".join(parts)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_region_parser_raises_only_its_own_errors(parts):
    try:
        regions = parse_regions(joined(parts), "code/x.cu")
    except LessonErrors as exc:
        assert exc.errors and all(isinstance(e, LessonError) and e.line for e in exc.errors)
        return
    for r in regions.values():
        assert 1 <= r.first and r.last >= r.first - 1


@settings(max_examples=300, deadline=None)
@given(lines)
def test_transcript_parser_raises_only_its_own_errors(parts):
    try:
        t = parse_transcript(joined(parts), "t.txt")
    except LessonError as exc:
        assert exc.path == "t.txt" and exc.line is not None
        return
    t.to_json()  # every parsed record can be shown


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_json_transcript_parser_raises_only_its_own_errors(text):
    try:
        parse_json_transcript(text, "s.json")
    except LessonError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.sampled_from(['{"format": 1}', "[]", '{"format": 1, "lesson": "a", "arch": "x", "build": "b", "refresh": "r", "provenance": {}, "transcripts": {"t": 3}}'])))
def test_manifest_parser_raises_only_its_own_errors(text):
    try:
        parse_manifest(text, "s", Path("/nonexistent"))
    except LessonError:
        pass


TOML = ['lesson = "a"', 'inputs = ["a.cu"]', "inputs = [1]", "inputs = 3", "[build]", 'sm_90 = "nvcc"', "[[run]]",
        'name = "x"', 'name = "Bad Name"', "name = 3", 'command = "./a"', "gate = true", 'timeout = "soon"',
        "timeout = 5", "run = [1]", 'artifacts = [{ name = "r", file = "r.json" }]', "artifacts = [3]", 'inputs = ["b.py"]']


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(TOML), max_size=14).map("\n".join)))
def test_spec_parser_raises_only_its_own_errors(text):
    try:
        parse_spec(text, "code/x/runs.toml")
    except LessonError:
        pass


@settings(max_examples=200, deadline=None)
@given(lines)
def test_page_processing_reports_instead_of_raising(parts):
    result = process_page(joined(parts), "docs/p.md", Path("/nonexistent"), {})
    assert all(isinstance(e, LessonError) and e.path == "docs/p.md" for e in result.errors)
