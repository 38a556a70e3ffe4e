"""Transcript parsing: every compute-sanitizer shape the pages quote, and Day 62's harness output as
its runs.toml declares it (the declaration mechanism itself: test_harness.py)."""

from __future__ import annotations

import pytest
from conftest import RACE, REPO

from lessonkit.errors import LessonError
from lessonkit.evidence.jsontranscript import parse_json_transcript
from lessonkit.evidence.spec import load_spec
from lessonkit.evidence.transcript import parse_summary, parse_transcript

DAY62 = load_spec(REPO / "code", "day62-racecheck").harness


def day62(text: str, source: str = "b.txt"):
    """`text` parsed as a transcript of Day 62, its program lines read by its declared format."""
    return parse_transcript(text, source, DAY62)


def rows(t) -> list[dict]:
    return list(t.collections()["rows"])

ANALYSIS_REVERSED = """\
========= COMPUTE-SANITIZER
========= Warning: Race reported between Read access at k(float *)+0x10 in demo.cu:4
=========     and Write access at k(float *)+0x20 in demo.cu:4 [8 hazards]
========= 
========= Error: Race reported between Read access at k(float *)+0x10 in demo.cu:4
=========     and Write access at k(float *)+0x20 in demo.cu:4 [120 hazards]
========= 
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

HAZARD = """\
========= COMPUTE-SANITIZER
========= Warning: (Warp Level Programming) Potential WAR hazard detected at __shared__ 0x404 in block (91,0,0) :
=========     Read Thread (2,0,0) at scanTileRacy+0x1a0 in racecheck.cu:52
=========     Write Thread (1,0,0) at scanTileRacy+0x1c0 in racecheck.cu:52
=========     Current Value : 0, Incoming Value : 0
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: run() [0xa1eb] in racecheck
========= 
========= Error: Potential RAW hazard detected at __shared__ 0x8 in block (3,0,0) :
=========     Write Thread (40,0,0) at scanTileRacy+0x1c0 in racecheck.cu:52
=========     Read Thread (72,0,0) at scanTileRacy+0x1a0 in racecheck.cu:52
=========     Current Value : 5
========= 
========= RACECHECK SUMMARY: 100 hazards displayed (56584 errors, 248332 warnings)
"""

SYNCCHECK = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp.
=========     at reverseTilesDivergentBarrier+0x300 in racecheck.cu:88
=========     by thread (96,0,0) in block (8,0,0)
=========     Saved host backtrace up to driver entry point at kernel launch time
========= 
========= Barrier error detected. Divergent thread(s) in block.
=========     at k(int)+0x30 in k.cu:9
=========     by thread (1,0,0) in block (0,0,0)
========= 
========= ERROR SUMMARY: 2 errors
========= ERROR SUMMARY: 7 errors were not printed. Use --print-limit option to adjust the number of printed errors
"""

# initcheck with --initcheck-address-space shared: the shapes of compute-sanitizer's manual and
# of the records it prints for __global__ memory, with a line of a shape not read here.
INITCHECK = """\
========= COMPUTE-SANITIZER
========= Uninitialized __shared__ memory read of size 4 bytes
=========     at reverseTilesDivergentBarrier+0x2f0 in racecheck.cu:91
=========     by thread (96,0,0) in block (7,0,0)
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: run() [0xa1eb] in racecheck
========= 
========= Uninitialized __global__ memory read of size 8 bytes
=========     at k(double *)+0x30 in k.cu:9
=========     by thread (1,0,0) in block (0,0,0)
========= 
========= Some future kind of report the parser does not know
=========     at k(double *)+0x40 in k.cu:10
========= 
========= ERROR SUMMARY: 2 errors
"""

INFO_LEVEL = """\
========= COMPUTE-SANITIZER
========= Info: Race reported between Write access at k+0x10 in k.cu:4
=========     and Read access at k+0x20 in k.cu:5 [2 hazards]
========= 
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 0 warnings, 1 info)
"""


def test_initcheck_records():
    t = parse_transcript(INITCHECK, "i")
    got = [u.fields() for u in t.uninitialized]
    assert [(u["space"], u["size"], u["kernel"], u["line"], u["thread"], u["block"]) for u in got] == [
        ("__shared__", 4, "reverseTilesDivergentBarrier", 91, "(96,0,0)", "(7,0,0)"),
        ("__global__", 8, "k", 9, "(1,0,0)", "(0,0,0)")]
    assert t.collections()["uninitialized"][0]["location"] == "racecheck.cu:91"
    assert t.scalars["error_count"] == 2 and not t.barriers and not t.reports
    assert t.to_json()["uninitialized"][1]["line_in_transcript"] == 8


def test_initcheck_record_with_an_unreadable_location():
    bad = "========= Uninitialized __shared__ memory read of size 4 bytes\n=========     at ???\n"
    with pytest.raises(LessonError) as exc:
        parse_transcript(bad, "i.txt")
    assert (exc.value.line, "cannot read the access location in '???'" in str(exc.value)) == (2, True)


def test_info_level_race_reports_and_summary():
    t = parse_transcript(INFO_LEVEL, "r")
    assert [(r.fields()["severity"], r.fields()["hazards"]) for r in t.reports] == [("Info", 2)]
    assert (t.scalars["hazards_displayed"], t.scalars["race_infos"]) == (1, 1)
    assert parse_summary("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")[1] == (
        ("displayed", 0), ("errors", 0), ("warnings", 0))


def test_analysis_reports():
    t = parse_transcript(RACE, "t.txt")
    by_severity = {r.severity: r.fields() for r in t.reports}
    assert by_severity["Error"] == {
        "severity": "Error", "kernel": "k", "file": "demo.cu", "line": 4, "location": "demo.cu:4",
        "access": "Read", "accesses": "Read/Write", "pairs": 1, "hazards": 120, "_line": 7}
    assert by_severity["Warning"]["hazards"] == 8
    assert t.scalars["summary"] == "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)"
    assert (t.scalars["hazards_displayed"], t.scalars["race_errors"], t.scalars["race_warnings"]) == (2, 1, 1)
    assert t.summaries[0].at == 13


def test_report_order_does_not_matter():
    a = parse_transcript(RACE, "a").reports
    b = parse_transcript(ANALYSIS_REVERSED, "b").reports
    key = lambda r: (r.severity, r.fields()["hazards"])
    assert sorted(map(key, a)) == sorted(map(key, b))


def test_several_and_lines_add_up():
    text = ("========= Error: Race reported between Write access at f+0x1 in a.cu:3\n"
            "=========     and Read access at f+0x2 in a.cu:4 [5 hazards]\n"
            "=========     and Write access at f+0x3 in a.cu:5 [1 hazard]\n")
    (report,) = parse_transcript(text, "t").reports
    assert report.fields()["hazards"] == 6 and report.fields()["accesses"] == "Write/Read/Write"


def test_access_without_lineinfo():
    text = "========= Error: Race reported between Write access at f(int)+0x1\n=========     and Read access at f(int)+0x2 [5 hazards]\n"
    (report,) = parse_transcript(text, "t").reports
    assert report.fields()["location"] is None and report.fields()["kernel"] == "f"


def test_hazard_records():
    t = parse_transcript(HAZARD, "h")
    assert [h.fields()["severity"] for h in t.hazards] == ["Warning", "Error"]
    warn, err = (h.fields() for h in t.hazards)
    assert (warn["type"], warn["warp_level"], warn["block"], warn["location"]) == ("WAR", True, "(91,0,0)", "racecheck.cu:52")
    assert (err["type"], err["warp_level"], err["address"]) == ("RAW", False, "0x8")
    assert t.scalars["race_errors"] == 56584 and t.scalars["hazards_displayed"] == 100


def test_synccheck_barrier_errors_and_not_printed():
    t = parse_transcript(SYNCCHECK, "s")
    assert [b.fields()["what"] for b in t.barriers] == ["Divergent thread(s) in warp", "Divergent thread(s) in block"]
    first = t.barriers[0].fields()
    assert (first["kernel"], first["line"], first["thread"], first["block"]) == (
        "reverseTilesDivergentBarrier", 88, "(96,0,0)", "(8,0,0)")
    assert t.scalars["error_count"] == 2 and t.scalars["not_printed"] == 7
    assert t.scalars["summary"] == "ERROR SUMMARY: 2 errors"


@pytest.mark.parametrize("line, values", [
    ("RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)", {"displayed": 1, "errors": 0, "warnings": 1}),
    ("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)", {"displayed": 0, "errors": 0, "warnings": 0}),
    ("RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)", {"displayed": 3, "errors": 2, "warnings": 1}),
    ("ERROR SUMMARY: 1 error", {"errors": 1}),
    ("ERROR SUMMARY: 0 errors", {"errors": 0}),
    ("ERROR SUMMARY: 1 error was not printed.", {"not_printed": 1}),
])
def test_summary_forms(line, values):
    assert parse_summary(line) == (line, tuple(values.items()))


def test_memcheck_clean():
    t = parse_transcript("========= COMPUTE-SANITIZER\nhello\n========= ERROR SUMMARY: 0 errors\n", "m")
    assert t.scalars["error_count"] == 0 and not t.reports and not t.barriers


def test_harness_table():
    text = ("device: NVIDIA H200 | compute capability 9.0 | warp size 32\nmode: all\n"
            "threads | kernel | mismatches | first bad | gated\n"
            "     32 | scanTileRacy |  0 |    - | no\n"
            "    256 | scanTileFixed | 3 | 17 | yes\n"
            "GATE FAILED: scanTileFixed at 256 threads: 3 mismatches, first bad index 17 (got 1.0, want 2.0)\n")
    t = day62(text, "b")
    assert [(r["threads"], r["kernel"], r["mismatches"], r["first_bad"], r["gated"]) for r in rows(t)] == [
        (32, "scanTileRacy", 0, None, False), (256, "scanTileFixed", 3, 17, True)]
    assert t.scalars["gpu"] == "NVIDIA H200" and t.scalars["mode"] == "all"
    assert t.scalars["gate_failures"] == ["scanTileFixed at 256 threads: 3 mismatches, first bad index 17 (got 1.0, want 2.0)"]


def test_table_rows_interleaved_with_tool_reports():
    t = day62(RACE, "r")
    assert [(r["threads"], r["mismatches"]) for r in rows(t)] == [(32, 0), (256, 7)]


TODAY = """\
device: NVIDIA H200 | compute capability 9.0 | warp size 32
elements: 8803 (8*1024 + 611)
mode: all
tiling: threads 32 | full tiles 275 | partial tile 3 elements
tiling: threads 256 | full tiles 34 | partial tile 99 elements
threads | kernel | mismatches | first bad | gated
     32 | scanTileRacy |  0 | - | no
    256 | reverseTilesDivergentBarrier | 99 | 8704 | no
    256 | scanTileFixed | 0 | - | yes

fixed kernels: all match the reference
"""


def test_todays_layout():
    t = day62(TODAY, "b.txt")
    assert rows(t) == [
        {"threads": 32, "kernel": "scanTileRacy", "mismatches": 0, "first_bad": None, "gated": False, "_line": 7},
        {"threads": 256, "kernel": "reverseTilesDivergentBarrier", "mismatches": 99, "first_bad": 8704,
         "gated": False, "_line": 8},
        {"threads": 256, "kernel": "scanTileFixed", "mismatches": 0, "first_bad": None, "gated": True, "_line": 9}]
    assert t.scalars == {"tool": None, "gpu": "NVIDIA H200", "compute_capability": "9.0", "warp_size": 32,
                         "elements": 8803, "mode": "all"}
    assert t.collections()["tiling"] == (
        {"threads": 32, "full_tiles": 275, "partial": 3, "_line": 4},
        {"threads": 256, "full_tiles": 34, "partial": 99, "_line": 5})


def test_device_line_without_warp_size():
    t = day62("device: NVIDIA H200 | compute capability 9.0\n", "sweep.txt")
    assert t.scalars == {"tool": None, "gpu": "NVIDIA H200", "compute_capability": "9.0"}


def test_other_programs_device_lines_are_not_the_harness():
    t = day62("device: NVIDIA H200 | 132 SMs | seed 62\n", "campaign.txt")
    assert t.scalars == {"tool": None}


def test_gate_failures_inside_a_table():
    text = ("threads | kernel | mismatches | first bad | gated\n"
            "    256 | scanTileFixed | 3 | 17 | yes\n"
            "GATE FAILED: scanTileFixed at 256 threads: 3 mismatches\n"
            "    256 | reverseTilesFixed | 0 | - | yes\n")
    t = day62(text)
    assert [(r["kernel"], r["first_bad"]) for r in rows(t)] == [("scanTileFixed", 17), ("reverseTilesFixed", None)]
    assert t.scalars["gate_failures"] == ["scanTileFixed at 256 threads: 3 mismatches"]


def test_without_a_harness_format_program_lines_are_not_read():
    t = parse_transcript(TODAY, "b.txt")
    assert t.scalars == {"tool": None} and "rows" not in t.collections() and "tiling" not in t.collections()


def test_a_table_cut_off_by_a_hang_has_no_rows():
    text = "mode: stayalive\nthreads | kernel | mismatches | first bad | gated\n"
    assert day62(text, "b.txt").collections()["rows"] == ()


def test_a_blank_line_ends_the_table():
    text = "threads | kernel | mismatches | first bad | gated\n32 | k | 0 | - | no\n\n3 fixed kernel runs failed\n"
    assert [r["threads"] for r in rows(day62(text, "b.txt"))] == [32]


def errors(text: str) -> str:
    with pytest.raises(LessonError) as info:
        day62(text, "b.txt")
    return str(info.value)


def test_malformed_harness_row():
    text = "threads | kernel | mismatches | first bad | gated\n   32 | k | many | - | no\n"
    assert errors(text) == ("b.txt:2: malformed harness row '32 | k | many | - | no'; expected "
                            "'THREADS | KERNEL | MISMATCHES | FIRST_BAD|- | yes|no'")


def test_harness_row_with_a_missing_column():
    text = "threads | kernel | mismatches | first bad | gated\n   32 | k | 0 | no\n"
    assert errors(text) == ("b.txt:2: malformed harness row '32 | k | 0 | no'; expected "
                            "'THREADS | KERNEL | MISMATCHES | FIRST_BAD|- | yes|no'")


def test_harness_header_with_other_columns():
    text = "threads | kernel | mismatches | gated\n 32 | k | 0 | no\n"
    assert errors(text) == ("b.txt:1: unreadable harness table header 'threads | kernel | mismatches | gated'; "
                            "expected 'threads | kernel | mismatches | first bad | gated'")


def test_harness_row_without_a_header():
    text = "threads | kernel | mismatches | first bad | gated\n32 | k | 0 | - | no\n\n64 | k | 0 | - | no\n"
    assert errors(text) == ("b.txt:4: harness row '64 | k | 0 | - | no' has no table header above it; expected "
                            "the header 'threads | kernel | mismatches | first bad | gated' first (a blank line "
                            "ends a table)")


def test_unreadable_device_line():
    assert errors("device: NVIDIA H200 | compute capability nine | warp size 32\n") == (
        "b.txt:1: unreadable device line 'device: NVIDIA H200 | compute capability nine | warp size 32'; "
        "expected 'device: NAME | compute capability X.Y | warp size N'")


def test_unreadable_elements_line():
    assert errors("mode: all\nelements: 8k\n") == (
        "b.txt:2: unreadable elements line 'elements: 8k'; expected 'elements: N' or 'elements: N (HOW)'")


def test_unreadable_tiling_line():
    assert errors("tiling: threads 32 | full tiles 275\n") == (
        "b.txt:1: unreadable tiling line 'tiling: threads 32 | full tiles 275'; "
        "expected 'tiling: threads N | full tiles N | partial tile N elements'")


def test_unreadable_summary():
    with pytest.raises(LessonError) as info:
        parse_transcript("========= RACECHECK SUMMARY: lots\n", "r.txt")
    assert str(info.value) == "r.txt:1: unreadable summary line 'RACECHECK SUMMARY: lots'"


def test_continuation_without_report():
    with pytest.raises(LessonError) as info:
        parse_transcript("=========     and Read access at k+0x1 in a.cu:1 [1 hazard]\n", "r.txt")
    assert str(info.value).startswith("r.txt:1: race continuation")


def test_json_transcript():
    t = parse_json_transcript('{"wall_s": 3.5, "cells": [{"kernel": "k", "threads": 32}], "meta": {}, "ids": [1]}',
                              "s.json")
    assert t.scalars == {"wall_s": 3.5} and t.collections()["cells"] == ({"kernel": "k", "threads": 32},)
    assert "meta" not in t.collections() and "ids" not in t.collections()


def json_error(text: str) -> str:
    with pytest.raises(LessonError) as info:
        parse_json_transcript(text, "s.json")
    return str(info.value)


def test_json_transcript_not_json():
    assert json_error('{\n"a": }') == "s.json:2: not valid JSON: Expecting value (column 6)"


def test_json_transcript_not_an_object():
    assert json_error("[1, 2]") == ("s.json: the top level is an array; expected a JSON object of results "
                                    "and lists of records")


def test_json_transcript_nested_too_deeply():
    assert json_error("[" * 100_000) == ("s.json: nested too deeply to read; expected a JSON object of results "
                                         "and lists of records")


# A device-debug (-G) build prints where an access is as `0xOFFSET in FILE:LINE:FUNCTION`.
DEBUG_BUILD = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at 0x1f20 in scan.hpp:249:scanTile(int *, int)
=========     and Read access at 0x1f80 in scan.hpp:251:scanTile(int *, int) [12 hazards]
========= 
========= Error: Potential RAW hazard detected at __shared__ 0x8 in block (0,0,0) :
=========     Write Thread (1,0,0) at 0x1f20 in scan.hpp:249:scanTile(int *, int)
=========     Read Thread (2,0,0) at 0x1f80 in scan.hpp:251:scanTile(int *, int)
========= 
========= Barrier error detected. Divergent thread(s) in warp.
=========     at 0x400 in /src/lesson/racecheck.cu:91:reverseTiles(float *, int)
=========     by thread (3,0,0) in block (0,0,0)
========= 
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""


def test_access_locations_of_a_debug_build():
    t = parse_transcript(DEBUG_BUILD, "g.txt")
    (report,) = t.reports
    assert (report.first.kernel, report.first.offset, report.first.location) == ("scanTile", "1f20", "scan.hpp:249")
    assert [(a.signature, a.location, n) for a, n in report.others] == [("scanTile(int *, int)", "scan.hpp:251", 12)]
    assert [(a.location, thread) for a, thread in t.hazards[0].accesses] == [
        ("scan.hpp:249", "1,0,0"), ("scan.hpp:251", "2,0,0")]
    assert t.barriers[0].fields()["location"] == "/src/lesson/racecheck.cu:91"
    assert t.barriers[0].fields()["kernel"] == "reverseTiles"


def test_an_unreadable_access_location_names_both_forms():
    with pytest.raises(LessonError) as info:
        parse_transcript("========= Error: Race reported between Write access at 0x1f20 somewhere\n", "g.txt")
    assert str(info.value) == ("g.txt:1: cannot read the access location in '0x1f20 somewhere'; expected "
                               "'KERNEL(ARGS)+0xOFFSET[ in FILE:LINE]' or, from a -G build, "
                               "'0xOFFSET in FILE:LINE:KERNEL(ARGS)'")


def test_indented_tool_lines_are_read_as_written_unindented():
    indented = "".join("  " + line + "\n" if line else "\n" for line in RACE.splitlines())
    plain, shifted = day62(RACE), day62(indented)
    assert shifted.to_json() | {"source": "b.txt"} == plain.to_json()
    assert len(shifted.reports) == 2 and shifted.scalars["gpu"] == "NVIDIA H200"
    assert shifted.lines[0] == "  ========= COMPUTE-SANITIZER"  # quoted as written


def test_a_tab_and_spaces_are_no_common_indentation():
    text = "\t========= ERROR SUMMARY: 1 error\n  ========= ERROR SUMMARY: 1 error\n"
    assert parse_transcript(text, "t").summaries == ()


@pytest.mark.parametrize("harness, message", [
    (None, ("t.txt: holds no compute-sanitizer output (no line starts =========) and no harness format was "
           "given to read the program's lines; expected a transcript of a compute-sanitizer run, or --lesson "
           "LESSON to read the program's lines by code/LESSON/runs.toml's [harness]")),
    (DAY62, ("t.txt: holds no compute-sanitizer output (no line starts =========) and no line the lesson's "
            "[harness] reads; expected a transcript of one of its runs")),
])
def test_a_text_with_nothing_to_read_is_an_error_where_output_is_required(harness, message):
    text = "[step 3] ==> running racecheck\nall good\n"
    assert parse_transcript(text, "t.txt", harness).reports == ()  # a recording: what its set says it is
    with pytest.raises(LessonError) as info:
        parse_transcript(text, "t.txt", harness, require_output=True)
    assert str(info.value) == message
    assert parse_transcript("mode: all\n", "t.txt", DAY62, require_output=True).scalars["mode"] == "all"


# In an evidence set: a recording of a run whose runs.toml command invokes compute-sanitizer holds the
# tool's output (it prints its banner and summary, or, refusing its command line, its usage); a
# recording of a plain program may hold none.

REFUSED = ("unrecognised option '--initcheck-address-space'\n"
           "Usage: compute-sanitizer [options] [your-program] [your-program-options]\n")
NO_TOOL = ("evidence/demo/s1/race.txt: holds no compute-sanitizer output (no line starts =========, and no usage it "
           "prints when it refuses its command line), yet its run invokes compute-sanitizer, which always prints one "
           "or the other; expected the transcript of that run; re-record it: ")


def test_a_tool_run_s_recording_without_the_tool_s_output_is_an_error(demo_repo):
    from conftest import BARE, record_set, run_page

    from lessonkit.evidence.sets import load_evidence_set
    record_set(demo_repo, "demo", {"race": BARE, "bare": BARE})  # the race run's program output alone
    ev = load_evidence_set(demo_repo, "demo")
    with pytest.raises(LessonError) as info:
        ev.transcript("s1/race")
    assert str(info.value).startswith(NO_TOOL) and "scripts/refresh.py demo" in str(info.value)
    assert ev.transcript("s1/bare").scalars["mode"] == "all"  # ./demo: its own lines, and no tool
    assert [str(e) for e in run_page(demo_repo, "{{ 2 @ demo/race:#reports }} and {{ all @ demo/bare:mode }}").errors] \
        == [f"docs/p.md:1: claim '2' (demo/race:#reports) cannot be checked: {info.value}"]


def test_a_tool_run_s_recording_of_the_tool_refusing_its_command_line_is_read(demo_repo):
    from conftest import BARE, record_set

    from lessonkit.evidence.sets import load_evidence_set
    record_set(demo_repo, "demo", {"race": REFUSED, "bare": BARE})
    assert load_evidence_set(demo_repo, "demo").transcript("s1/race").reports == ()
    with pytest.raises(LessonError):
        parse_transcript(REFUSED.replace("Usage: compute-sanitizer", "Usage: sanitizer"), "t.txt", require_tool=True)


def test_json_transcript_with_a_duplicated_key():
    assert json_error('{"cells": [{"kernel": "k",\n "wrong": 0,\n "wrong": 5}]}') == (
        "s.json:3: the key 'wrong' appears twice in one object; a value read from it would be only the last of the two")
