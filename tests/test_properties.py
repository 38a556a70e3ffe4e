"""Property tests: what is written in a real format reads back as written; anything else raises the project's own error.

Each parser test draws valid documents with known values and asserts the parse gives exactly
those values, so a parser that always raised, or always returned nothing, fails it; and it
feeds garbage (pieces of the real formats mixed with random text) and asserts that nothing
but LessonError comes out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence.jsontranscript import parse_json_transcript
from lessonkit.evidence.sets import parse_manifest
from lessonkit.evidence.spec import load_spec, parse_spec
from lessonkit.evidence.transcript import parse_summary, parse_transcript
from lessonkit.pages.page import process_page
from lessonkit.pages.regions import parse_regions

# Day 62's harness output, read by the format its runs.toml declares.
DAY62 = load_spec(Path(__file__).resolve().parent.parent / "code", "day62-racecheck").harness

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
    "threads  kernel  mismatches  first bad  gated", "-------  ------  ----------  ---------  -----",
    "     32  k   0   -  no", "  32  k  x  1  yes", "threads | kernel", "32 | k",
    "device: G | compute capability 9.0 | warp size 32", "device: G | compute capability 9.0",
    "GPU: G (compute capability 9.0), warp size 32", "GPU: G (compute capability)", "device: G | 132 SMs",
    "elements: 8803 (8*1024 + 611)", "elements: 8803", "elements: many",
    "tiling: threads 32 | full tiles 275 | partial tile 3 elements", "tiling: threads 32",
    "mode: all", "mode:", "GATE FAILED: k", "",
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


# Day 62's harness output (`|` between columns), read by its declared format.

counts = st.integers(0, 10**9)
kernels = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True)
gpu_names = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9 .\-]{0,24}[A-Za-z0-9])?", fullmatch=True)
pads = st.integers(0, 3).map(" ".__mul__)
RACE_REPORT = ["========= Error: Race reported between Read access at k(float *)+0x10 in a.cu:4",
               "=========     and Write access at k(float *)+0x20 in a.cu:4 [12 hazards]", "========= "]
ROW_FIELDS = ("threads", "kernel", "mismatches", "first_bad", "gated")


@st.composite
def harness_outputs(draw) -> tuple[list[str], dict[str, Any], list[int]]:
    """(lines, the values they hold, the 0-based indexes of the table's row lines)."""
    gpu, major, minor, warp = draw(gpu_names), draw(st.integers(1, 12)), draw(st.integers(0, 9)), draw(st.integers(1, 1024))
    out = [f"device: {gpu} | compute capability {major}.{minor} | warp size {warp}"]
    elements, mode = draw(counts), draw(st.sampled_from(["all", "buggy", "fixed", "stayalive"]))
    out += [f"elements: {elements}" + draw(st.sampled_from(["", " (8*1024 + 611)", " (8 * 1024 + 611)"])),
            f"mode: {mode}"]
    tiling = draw(st.lists(st.fixed_dictionaries({"threads": counts, "full_tiles": counts, "partial": counts}),
                           max_size=4))
    out += [f"tiling: threads {t['threads']} | full tiles {t['full_tiles']} | partial tile {t['partial']} elements"
            for t in tiling]
    out += draw(st.sampled_from([[], [""]]))
    out.append("threads | kernel | mismatches | first bad | gated")
    rows = draw(st.lists(st.tuples(counts, kernels, counts, st.none() | counts, st.booleans()), min_size=1, max_size=10))
    race_at = draw(st.integers(0, len(rows)))  # compute-sanitizer's report lands anywhere in the table
    gate_failures, row_lines = [], []
    for i, (threads, kernel, mismatches, first_bad, gated) in enumerate(rows):
        if i == race_at:
            out += RACE_REPORT
        cells = [str(threads), kernel, str(mismatches), "-" if first_bad is None else str(first_bad),
                 "yes" if gated else "no"]
        out.append("|".join(draw(pads) + c + draw(pads) for c in cells))
        row_lines.append(len(out) - 1)
        if gated and mismatches and draw(st.booleans()):
            gate_failures.append(f"{kernel} at {threads} threads: {mismatches} mismatches")
            out.append(f"GATE FAILED: {gate_failures[-1]}")
    if race_at == len(rows):
        out += RACE_REPORT
    out += draw(st.sampled_from([[], ["", "fixed kernels: all match the reference"]]))
    scalars = {"tool": None, "gpu": gpu, "compute_capability": f"{major}.{minor}", "warp_size": warp,
               "elements": elements, "mode": mode}
    if gate_failures:
        scalars["gate_failures"] = gate_failures
    values = {"scalars": scalars, "rows": [dict(zip(ROW_FIELDS, r)) for r in rows], "tiling": tiling, "reports": 1}
    return out, values, row_lines


def harness_values(text: str, first: int = 1, last: int | None = None) -> dict[str, Any]:
    """What parse_transcript read from lines first..last, in the shape harness_outputs gives."""
    t = parse_transcript(text, "t.txt", DAY62)
    within = lambda at: first <= at <= (last if last is not None else at)
    strip = lambda items: [{k: v for k, v in it.items() if k != "_line"} for it in items if within(it["_line"])]
    return {"scalars": t.scalars, "rows": strip(t.collections()["rows"]), "tiling": strip(t.collections()["tiling"]),
            "reports": sum(within(r.at) for r in t.reports)}


@settings(max_examples=300, deadline=None)
@given(harness_outputs())
def test_harness_output_reads_back(output):
    out, values, row_lines = output
    assert harness_values(joined(out) + "\n") == values
    t = parse_transcript(joined(out), "t.txt", DAY62)
    assert [r["_line"] for r in t.collections()["rows"]] == [i + 1 for i in row_lines]  # each row its own line


# A row starts with its thread count; in a table, a line that starts otherwise and has no `|` is
# the program's other output (a CUDA error message, say), so the threads column stays a number.
BROKEN_CELLS = {0: ["3.5", "32x"], 1: ["9k", "a-b", ""], 2: ["many", "-1", "7e3", ""], 3: ["?", "n/a"],
                4: ["maybe", "YES", ""]}


@settings(max_examples=300, deadline=None)
@given(harness_outputs(), st.data())
def test_an_unreadable_row_is_an_error_at_its_line(output, data):
    out, _, row_lines = output
    at = data.draw(st.sampled_from(row_lines))
    cells = out[at].split("|")
    column = data.draw(st.integers(0, 4))
    change = data.draw(st.sampled_from(["break", "drop", "add"] if column else ["break", "add"]))
    if change == "break":
        cells[column] = data.draw(st.sampled_from(BROKEN_CELLS[column]))
    elif change == "drop":
        del cells[column]
    else:
        cells.insert(column + 1, data.draw(st.sampled_from(["0", "x", "-"])))
    out[at] = "|".join(cells)
    try:
        parse_transcript(joined(out), "t.txt", DAY62)
    except LessonError as exc:
        assert (exc.path, exc.line) == ("t.txt", at + 1)
        assert exc.message.startswith(f"malformed harness row {out[at].strip()!r}; expected")
        return
    raise AssertionError(f"row {out[at]!r} was dropped without an error")


@settings(max_examples=300, deadline=None)
@given(harness_outputs(), lines, lines)
def test_garbage_around_harness_output_raises_only_lesson_errors(output, before, after):
    out, values, _ = output
    assert harness_values(joined(out)) == values
    head = joined(before) + "\n\n"  # a blank line ends whatever the garbage left open
    first = len(head.splitlines()) + 1
    last = first + len(out) - 1
    text = head + joined(out) + "\n\n" + joined(after)
    try:
        found = harness_values(text, first, last)
    except LessonError as exc:
        assert exc.path == "t.txt" and exc.line is not None
        assert not first <= exc.line <= last, "the valid output itself was refused"
        return
    assert {k: found[k] for k in ("rows", "tiling", "reports")} == {k: values[k] for k in ("rows", "tiling", "reports")}
    parse_transcript(text, "t.txt", DAY62).to_json()  # every parsed record can be shown


# Sanitizer summaries: singular for 1, plural otherwise.

def counted(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@settings(max_examples=300, deadline=None)
@given(counts | st.just(1), counts | st.just(1), counts | st.just(1), st.none() | counts)
def test_sanitizer_summaries_read_back(displayed, errors, warnings, not_printed):
    race = (f"RACECHECK SUMMARY: {counted(displayed, 'hazard')} displayed "
            f"({counted(errors, 'error')}, {counted(warnings, 'warning')})")
    assert parse_summary(race) == (race, (("displayed", displayed), ("errors", errors), ("warnings", warnings)))
    t = parse_transcript(f"========= COMPUTE-SANITIZER\nhello\n========= {race}\n", "r.txt")
    assert (t.scalars["hazards_displayed"], t.scalars["race_errors"], t.scalars["race_warnings"]) == (
        displayed, errors, warnings)
    assert (t.scalars["summary"], t.scalars["tool"], [s.at for s in t.summaries]) == (race, "racecheck", [3])

    sync = [f"========= ERROR SUMMARY: {counted(errors, 'error')}"]
    if not_printed is not None:
        sync.append(f"========= ERROR SUMMARY: {not_printed} {'error was' if not_printed == 1 else 'errors were'} "
                    "not printed. Use --print-limit option to adjust the number of printed errors")
    t = parse_transcript(joined(sync), "s.txt")
    assert t.scalars["error_count"] == errors and t.scalars.get("not_printed") == not_printed
    assert t.scalars["summary"] == f"ERROR SUMMARY: {counted(errors, 'error')}"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["RACECHECK SUMMARY:", "ERROR SUMMARY:"]),
       st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=40))
def test_a_summary_line_reads_to_its_numbers_or_raises(tool, rest):
    line = f"{tool} {rest}".strip()
    try:
        t = parse_transcript(f"========= {line}\n", "r.txt")
    except LessonError as exc:
        assert (exc.path, exc.line, exc.message) == ("r.txt", 1, f"unreadable summary line {line!r}")
        return
    (summary,) = t.summaries
    assert line.startswith(summary.text) and all(str(n) in summary.text for _, n in summary.values)
    assert parse_summary(line) == (summary.text, summary.values)


# JSON transcripts: top-level scalars are scalars, top-level lists of objects are collections.

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
json_records = st.lists(st.dictionaries(st.text(max_size=8), json_scalars, max_size=4), max_size=4)
json_dropped = (st.lists(json_scalars, min_size=1, max_size=3)
                | st.dictionaries(st.text(max_size=5), json_scalars, max_size=3))


@st.composite
def json_documents(draw) -> tuple[dict[str, Any], dict[str, Any], dict[str, tuple]]:
    """(a results object, the scalars it holds, the collections it holds)."""
    document, scalars, records = {}, {}, {}
    for key in draw(st.lists(st.text(max_size=10), min_size=1, max_size=8, unique=True)):
        kind = draw(st.sampled_from(["scalar", "records", "dropped"]))
        document[key] = draw({"scalar": json_scalars, "records": json_records, "dropped": json_dropped}[kind])
        if kind == "scalar":
            scalars[key] = document[key]
        elif kind == "records":
            records[key] = tuple(document[key])
    return document, scalars, records


@settings(max_examples=300, deadline=None)
@given(json_documents(), st.none() | st.integers(0, 4), st.text(max_size=200),
       st.recursive(json_scalars, lambda c: st.lists(c, max_size=3)))
def test_json_transcript_reads_back_and_refuses_the_rest(written, indent, garbage, not_an_object):
    document, scalars, records = written
    t = parse_json_transcript(json.dumps(document, indent=indent), "s.json")
    assert (t.scalars, t.records) == (scalars, records)

    try:
        parse_json_transcript(json.dumps(not_an_object), "s.json")
    except LessonError as exc:
        assert exc.path == "s.json" and exc.message.endswith("; expected a JSON object of results and lists of records")
    else:
        raise AssertionError(f"{not_an_object!r} at the top level was taken for an object")

    try:
        parse_json_transcript(garbage, "s.json")
    except LessonError as exc:
        assert exc.path == "s.json"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.sampled_from(['{"format": 1}', "[]", '{"format": 1, "lesson": "a", "arch": "x", "build": "b", "refresh": "r", "provenance": {}, "transcripts": {"t": 3}}'])))
def test_manifest_parser_raises_only_its_own_errors(text):
    try:
        parse_manifest(text, "s", Path("/nonexistent"))
    except LessonError:
        pass


# runs.toml: what a lesson's author writes reads back as the run specification.

names = st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}", fullmatch=True)
toml_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)


def toml(value: Any) -> str:
    """A TOML value for a string, bool, number or list of these."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string for text without control characters
    if isinstance(value, list):
        return "[" + ", ".join(map(toml, value)) + "]"
    return repr(value)


@st.composite
def run_specs(draw) -> tuple[str, dict[str, Any]]:
    """(runs.toml text, the values it holds; None where a key was left to its default)."""
    spec = {"lesson": draw(names), "inputs": draw(st.lists(toml_text, max_size=3)),
            "build": draw(st.dictionaries(st.from_regex(r"sm_[0-9]{2,3}", fullmatch=True), toml_text, max_size=3))}
    out = [f"lesson = {toml(spec['lesson'])}", f"inputs = {toml(spec['inputs'])}", "", "[build]"]
    out += [f"{k} = {toml(v)}" for k, v in spec["build"].items()]
    spec["runs"] = []
    for name in draw(st.lists(names, min_size=1, max_size=4, unique=True)):
        run = {"name": name, "command": draw(toml_text),
               "timeout": draw(st.none() | st.integers(1, 10**6) | st.floats(0.5, 1e6)),
               "gate": draw(st.none() | st.booleans()), "inputs": draw(st.none() | st.lists(toml_text, max_size=2)),
               "repeat": draw(st.none() | st.integers(1, 50)), "exclusive": draw(st.none() | st.booleans()),
               "artifacts": draw(st.lists(st.tuples(names, toml_text.filter(lambda f: "/" not in f),
                                                    st.none() | st.sampled_from(["json", "xml", "text"])), max_size=2))}
        out += ["", "[[run]]"] + [f"{k} = {toml(v)}" for k, v in run.items() if v is not None and k != "artifacts"]
        if run["artifacts"]:
            out.append("artifacts = [" + ", ".join(
                "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in zip(("name", "file", "format"), a) if v is not None) + " }"
                for a in run["artifacts"]) + "]")
        spec["runs"].append(run)
    return joined(out) + "\n", spec


@settings(max_examples=300, deadline=None)
@given(run_specs(), st.one_of(st.text(max_size=200), st.lists(st.sampled_from([
    'lesson = "a"', 'inputs = ["a.cu"]', "inputs = [1]", "inputs = 3", "[build]", 'sm_90 = "nvcc"', "[[run]]",
    'name = "x"', 'name = "Bad Name"', "name = 3", 'command = "./a"', "gate = true", 'timeout = "soon"',
    "timeout = 5", "run = [1]", 'artifacts = [{ name = "r", file = "r.json" }]', "artifacts = [3]",
    'inputs = ["b.py"]', "repeat = 0", "repeat = 3", "exclusive = 1", "exclusive = true"]), max_size=14).map(joined)))
def test_runs_toml_reads_back_and_refuses_the_rest(written, garbage):
    text, spec = written
    parsed = parse_spec(text, "code/x/runs.toml")
    assert (parsed.lesson, parsed.inputs, parsed.build, parsed.path) == (
        spec["lesson"], tuple(spec["inputs"]), spec["build"], "code/x/runs.toml")
    assert [(r.name, r.command, r.timeout, r.gate, r.inputs, r.repeat, r.exclusive,
             [(a.name, a.file, a.format) for a in r.artifacts]) for r in parsed.runs] == [
        (r["name"], r["command"], float(300 if r["timeout"] is None else r["timeout"]), bool(r["gate"]),
         tuple(r["inputs"] or ()), r["repeat"] or 1, bool(r["exclusive"]),
         [(n, f, fmt or "text") for n, f, fmt in r["artifacts"]]) for r in spec["runs"]]

    try:
        parse_spec(garbage, "code/x/runs.toml")
    except LessonError as exc:
        assert exc.path == "code/x/runs.toml"


@settings(max_examples=200, deadline=None)
@given(lines)
def test_page_processing_reports_instead_of_raising(parts):
    result = process_page(joined(parts), "docs/p.md", Path("/nonexistent"), {})
    assert all(isinstance(e, LessonError) and e.path == "docs/p.md" for e in result.errors)


# -- fast paths that must say what their plain definitions say ---------------------------------------

# The page checks read a page in time linear in its length (tests/test_fuzz.py times a megabyte): each
# fast path below is held to the plain definition it replaced, which read line by line or tried a
# regular expression at every place.

_PAGE_ALPHABET = ["a", " ", "\n", "`", "``", "```", "~~~", "[", "]", "(", ")", "![", "](", "<b>", "<", ">", "&amp;",
                  "&#82;", "\u200b", "\u00e9", "*", "\\", "|", "-", ":", "1", ".", "error summary 2", "\t"]


@given(st.lists(st.sampled_from(["`", "``", "```", "a", " ", "\n"]), max_size=16).map("".join))
def test_code_spans_are_those_the_regular_expression_finds(text):
    from lessonkit.pages.scan import CODE_SPAN_RE, code_spans
    assert code_spans(text) == [m.span() for m in CODE_SPAN_RE.finditer(text)]


def _visible_by_regex(text: str) -> str:
    """visible_text() as it was first written: one regular expression, every form tried at every place."""
    import html
    import re

    from lessonkit.pages.fold import is_invisible
    from lessonkit.pages.markdowntext import _BREAKING_TAG_RE, CHAR_REF_RE
    from lessonkit.pages.scan import CODE_SPAN_RE
    token = re.compile(
        rf"""(?P<code>{CODE_SPAN_RE.pattern}) | (?P<image>!\[[^\]]*\]\([^()]*\))
          | (?P<link>\[(?=[^\]]*\]\([^()]*\))|\]\([^()]*\)) | (?P<tag><[^<>]*>) | (?P<mark>[*_`\\])
          | (?P<ref>{CHAR_REF_RE.pattern}) | (?P<other>[^\x00-\x7f])""", re.VERBOSE)
    shown: list[str] = []
    i = 0
    for m in token.finditer(text):
        shown.append(text[i:m.start()])
        i = m.end()
        kind = m.lastgroup
        if kind == "code":
            ticks = len(m.group("ticks"))
            shown.append(text[m.start() + ticks:m.end() - ticks])
        elif kind == "ref" and len(html.unescape(m.group())) == 1 and not is_invisible(html.unescape(m.group())):
            shown.append(html.unescape(m.group()))
        elif kind == "tag" and _BREAKING_TAG_RE.match(m.group()) or kind == "other" and not is_invisible(m.group()):
            shown.append(" " if kind == "tag" else m.group())
    shown.append(text[i:])
    return "".join(shown)


@settings(max_examples=1000)
@given(st.one_of(st.lists(st.sampled_from(_PAGE_ALPHABET), max_size=24).map("".join),
                 st.lists(st.sampled_from(["[", "]", "(", ")", "![", "](", "a", "*", "`"]), max_size=24).map("".join)))
def test_the_visible_text_is_what_one_regular_expression_finds(text):
    from lessonkit.pages.markdowntext import visible_text
    assert visible_text(text) == _visible_by_regex(text)


def _lines(parts: list[tuple[str, bool]]):
    """The page's lines; a line holds no line end (the alphabet's newline becomes a space)."""
    from lessonkit.pages.scan import Lines, OutLine
    return Lines.of([OutLine(i, text.replace("\n", " "), generated=generated)
                     for i, (text, generated) in enumerate(parts)])


_LINE_PARTS = st.lists(st.tuples(st.lists(st.sampled_from(_PAGE_ALPHABET + ["````", "~~~~", "```x```", "  ```"]),
                                          max_size=6).map("".join), st.booleans()), max_size=14)


@given(_LINE_PARTS)
def test_fenced_lines_are_those_a_line_by_line_reading_finds(parts):
    from lessonkit.pages.scan import FENCE_RE as _FENCE_RE
    from lessonkit.pages.scan import fenced
    out = _lines(parts)
    want, fence = [], ""
    for line in out:  # the reading fenced() replaced
        m = _FENCE_RE.match(line.text)
        if line.generated:
            want.append(False)
        elif fence:
            want.append(True)
            if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                    and not line.text.strip().strip(fence[0]):
                fence = ""
        else:
            want.append(bool(m))
            fence = m.group("fence") if m else ""
    assert fenced(out) == want


@given(_LINE_PARTS, st.sampled_from([r"error", r"^[ \t]*`{3}", r"[&<]", r"\d", r"^(?:[^=\n]*=){2}"]))
def test_the_lines_a_search_over_the_page_finds_are_those_a_line_by_line_search_finds(parts, pattern):
    import re
    out = _lines(parts)
    want = [i for i, (text, generated) in enumerate(parts)
            if not generated and re.compile(pattern).search(text.replace("\n", " "))]
    assert list(out.find(re.compile(pattern, re.MULTILINE))) == want


@given(st.text(alphabet="ab\n", max_size=30), st.lists(st.integers(0, 30), max_size=10))
def test_a_line_index_answers_as_the_table_of_line_starts_does(text, offsets):
    import bisect

    from lessonkit.pages.scan import LineIndex
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    lines = LineIndex(text)
    for offset in (min(o, len(text)) for o in offsets):  # forward and back, as a scan may ask
        assert lines.line(offset) == bisect.bisect_right(starts, offset) - 1
