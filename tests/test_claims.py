"""Claims over every recording (exact, range, rounded, KEY=*), the escape routes of issue 10, transcripts."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from conftest import BARE, RACE, checked, errs, record_set, run_page

from lessonkit.errors import LessonErrors
from lessonkit.pages.claims import (
    ClaimValueError,
    Found,
    Sample,
    accepted_value,
    number,
    parse_claim_value,
)
from lessonkit.site.check import Site

ERROR_HAZARDS = (118, 120, 125, 121, 119)


def racing(n: int) -> str:
    return RACE.replace("[120 hazards]", f"[{n} hazards]")


@pytest.fixture
def repeats(demo_repo: Path) -> Path:
    """The demo with race recorded five times: the Error's hazards vary, everything else agrees."""
    record_set(demo_repo, "demo", {"race": [racing(n) for n in ERROR_HAZARDS], "bare": BARE})
    return demo_repo


def sample(*texts: str) -> Sample:
    return Sample(tuple(Found(t, f"evidence/x/run.r{k}.txt", 7) for k, t in enumerate(texts, 1)), "run", len(texts))


# -- claim values, as data --------------------------------------------------------------------

@pytest.mark.parametrize("text, low, high", [
    ("~30", "25", "35"), ("~0.06", "0.055", "0.065"), ("~300", "250", "350"), ("~0", "-0.5", "0.5"),
    ("~3.0", "2.95", "3.05"), ("~1.8e9", "1.75e9", "1.85e9"), ("~195,000", "194500", "195500"),
])
def test_rounded_means_its_last_significant_digit(text: str, low: str, high: str):
    value = parse_claim_value(text)
    assert (value.kind, value.low, value.high) == ("rounded", Decimal(low), Decimal(high))


@pytest.mark.parametrize("text, message", [
    ("", "the value is empty; write the value you expect before the '@'"),
    ("~abc", "cannot read 'abc' as a number; a rounded claim is ~V, e.g. ~30 or ~0.06"),
    ("193700\u2013abc", "cannot read 'abc' as a number; a range is LOW\u2013HIGH with numbers, e.g. 193700\u2013197060"),
    ("197060\u2013193700", "the range's low end 197060 is above its high end 193700; write LOW\u2013HIGH"),
    ("5\u20135", "a range needs two different ends; write 5"),
    ("~\u09ea0", "'\u09ea' (BENGALI DIGIT FOUR) looks like a digit but is not 0-9; write the value with ASCII digits"),
    ("1\u09ea0000\u20132\u09ea0000",
     "'\u09ea' (BENGALI DIGIT FOUR) looks like a digit but is not 0-9; write the value with ASCII digits"),
    ("\uff12", "'\uff12' (FULLWIDTH DIGIT TWO) looks like a digit but is not 0-9; write the value with ASCII digits"),
])
def test_malformed_claim_values(text: str, message: str):
    with pytest.raises(ClaimValueError) as exc:
        parse_claim_value(text)
    assert str(exc.value) == message


def test_text_with_an_en_dash_is_an_exact_claim():
    assert parse_claim_value("Read\u2013Write").kind == "exact"


@pytest.mark.parametrize("text, value", [("193,700", Decimal(193700)), ("0.0579", Decimal("0.0579")),
                                         ("9.37e+10", Decimal("9.37e10")), ("19,37", None), ("-", None)])
def test_numbers_a_page_may_write(text: str, value):
    assert number(text) == value


@pytest.mark.parametrize("claim, values, fix", [
    ("195308", ("193700", "197060", "195924"), "180000\u2013210000"),
    ("195,308", ("193700", "197060"), "180,000\u2013210,000"),
    ("5\u20136", ("7", "7"), "7"),
    ("~30", ("36.2", "38.9"), "~40"),
    ("~30", ("36.2", "48.9"), "30\u201360"),
    ("0.057", ("0.0559", "0.0579"), "0.053\u20130.061"),
    ("9.4e+10", ("9.37e+10", "9.62e+10"), "8e10\u20131.1e11"),
    ("Error", ("Warning", "Warning"), "Warning"),
    ("28.19", ("28.4", "31.2"), "25\u201334"),
    ("Error", ("Warning", "Error"), None),
    # a stale range keeps its ends that lie further out (it held for the earlier recordings)
    ("0.000024–0.000029", ("0.0000223", "0.0000235"), "0.000021–0.000029"),
    ("5,400–6,100", ("6,150", "6,180"), "5,400–6,500"),
    # as much of it as a range at most half its upper end wide allows (whatever the next spread)
    ("1–2", ("40", "41"), "22–44"),
    ("30–45", ("55.69", "58.43"), "31–62"),          # hazard-mode wall times on a slower lease
    ("0.9–1.8", ("1.59", "2.2"), "1.4–2.8"),         # not 0.9–2.9: "too loose" once the spread shrank
    ("3e9–6e9", ("2912637709.6", "3131252571.2"), "2.9e9–5.8e9"),
    # values that span more than a factor of two: the widened values, leaning on their spread
    ("~30", ("36.2", "88.9"), "0–150"),
])
def test_the_value_accept_writes(claim: str, values: tuple[str, ...], fix):
    assert accepted_value(parse_claim_value(claim), sample(*values)) == fix


@pytest.mark.parametrize("values, fix", [(("28.19",), "~30"), (("2.9", "3.3"), "~3"), (("2.4", "3.6"), "2.1\u20134.2")])
def test_the_value_accept_writes_for_a_timing(values: tuple[str, ...], fix: str):
    timing = Sample(sample(*values).values, "run", len(values), timing=True)
    assert accepted_value(parse_claim_value("28.19"), timing) == fix


# -- exact, range and rounded over recordings ---------------------------------------------------------

def test_exact_claim_that_varies_fails_with_the_spread(repeats: Path):
    assert errs(repeats, "{{ 120 @ demo/race:reports[severity=Error].hazards }}") == [
        ("docs/p.md:1: claim '120' (demo/race:reports[severity=Error].hazards) varies across 5 recordings of "
        "race: 118 to 125; quote a range")]


def test_a_look_alike_digit_is_refused_on_the_page(repeats: Path):
    assert errs(repeats, "{{ ~1\u09ea0 @ demo/race:reports[severity=Error].hazards }}") == [
        ("docs/p.md:1: claim '~1\u09ea0' (demo/race:reports[severity=Error].hazards): '\u09ea' (BENGALI DIGIT FOUR) "
        "looks like a digit but is not 0-9; write the value with ASCII digits")]


def test_a_rounded_zero_at_the_units_place_still_means_zero(repeats: Path):
    assert errs(repeats, "{{ ~0 @ demo/race:reports[severity=Error].hazards }}")[0].startswith(
        "docs/p.md:1: claim '~0' (demo/race:reports[severity=Error].hazards)")


def test_exact_claim_every_recording_agrees_with_passes(repeats: Path):
    assert errs(repeats, "{{ 8 @ demo/race:reports[severity=Warning].hazards }} {{ 2 @ demo/race:#reports }}") == []


def test_exact_claim_every_recording_contradicts(repeats: Path):
    assert errs(repeats, "{{ 9 @ demo/race:reports[severity=Warning].hazards }}") == [
        ("docs/p.md:1: claim '9' (demo/race:reports[severity=Warning].hazards) disagrees with 5 recordings of race; "
        "each says '8' (evidence/demo/s1/race.r1.txt, line 10)")]


def test_range_that_holds_every_recording_passes_and_shows_as_written(repeats: Path):
    result = run_page(repeats, "between {{ 115\u2013130 @ demo/race:reports[severity=Error].hazards }} hazards")
    assert result.errors == [] and result.markdown == 'between <span class="lk-v">115\u2013130</span> hazards'


def test_range_that_misses_a_recording(repeats: Path):
    assert errs(repeats, "{{ 118\u2013124 @ demo/race:reports[severity=Error].hazards }}") == [
        ("docs/p.md:1: claim '118\u2013124' (demo/race:reports[severity=Error].hazards) does not hold: 5 recordings "
        "of race give 118 to 125; 125 (evidence/demo/s1/race.r3.txt, line 7) is outside it")]


def test_range_too_loose(repeats: Path):
    assert errs(repeats, "{{ 0\u20131000 @ demo/race:reports[severity=Error].hazards }}") == [
        ("docs/p.md:1: claim '0\u20131000' (demo/race:reports[severity=Error].hazards) is too loose: it is 1000 wide, "
        "and a range may be at most 500 wide here (the larger of 28, four times the observed spread of 7, and 500, "
        "half its larger end); 5 recordings of race give 118 to 125")]


def test_range_as_wide_as_half_its_end_passes(repeats: Path):
    assert errs(repeats, "{{ 65\u2013130 @ demo/race:reports[severity=Error].hazards }}") == []


def test_range_written_with_a_hyphen(repeats: Path):
    assert errs(repeats, "{{ 118-125 @ demo/race:reports[severity=Error].hazards }}") == [
        ("docs/p.md:1: claim '118-125' (demo/race:reports[severity=Error].hazards) varies across 5 recordings of "
        "race: 118 to 125; quote a range; a range is written with an en dash (U+2013): 118\u2013125")]


def test_range_on_text(repeats: Path):
    assert errs(repeats, "{{ 1\u20132 @ demo/race:reports[severity=Error].severity }}") == [
        ("docs/p.md:1: claim '1\u20132' (demo/race:reports[severity=Error].severity) is a range, but 5 recordings of "
        "race gives 'Error' (evidence/demo/s1/race.r1.txt, line 7), which is not a number")]


def test_rounded_claims(repeats: Path):
    assert errs(repeats, "{{ ~1.5 @ demo/race:wall_s }} {{ ~2 @ demo/race:wall_s }} "
                "{{ ~8 @ demo/race:reports[severity=Warning].hazards }}") == []
    assert errs(repeats, "{{ ~1 @ demo/race:wall_s }}\n{{ ~120 @ demo/race:reports[severity=Error].hazards }}") == [
        ("docs/p.md:1: claim '~1' (demo/race:wall_s) does not hold: 5 recordings of race all say '1.5'; "
        "~1 means [0.5, 1.5)"),
        ("docs/p.md:2: claim '~120' (demo/race:reports[severity=Error].hazards) does not hold: 5 recordings of "
        "race give 118 to 125; ~120 means [115, 125)")]


@pytest.mark.parametrize("claim, meaning, width, widest, spread, four, half", [
    ("~100 @ demo/race:reports[severity=Error].hazards", "[50, 150)", "100", "75", "7", "28", "75"),
    ("~0e1 @ demo/race:#hazards", "[-5, 5)", "10", "2.5", "0", "0", "2.5"),
    ("~0 @ demo/race:#hazards", "[-0.5, 0.5)", "1", "0.25", "0", "0", "0.25"),
])
def test_a_rounded_claim_is_no_looser_than_a_range(repeats: Path, claim: str, meaning: str, width: str,
                                                  widest: str, spread: str, four: str, half: str):
    """~V holds only when what it admits is no wider than a range over the values may be: ~100 over
    118 to 125 admits [50, 150), which says less than the range 100–150 would be allowed to."""
    value, _, ref = claim.partition(" @ ")
    [error] = errs(repeats, "{{ " + claim + " }}")
    assert error.startswith(f"docs/p.md:1: claim '{value}' ({ref}) is too loose: {value} admits {meaning}, {width} "
                            f"wide, and a rounded figure may admit at most {widest} here, as a range may (the larger "
                            f"of {four}, four times the observed spread of {spread}, and {half}, half its larger end); "
                            "write it with two significant digits, or as a range; "), error


def test_a_rounded_claim_with_two_significant_digits_or_values_that_spread_is_not_loose(repeats: Path):
    assert errs(repeats, "{{ ~0.12e3 @ demo/race:reports[severity=Error].hazards }}") == [  # outside, not loose
        ("docs/p.md:1: claim '~0.12e3' (demo/race:reports[severity=Error].hazards) does not hold: 5 recordings of "
        "race give 118 to 125; ~0.12e3 means [115, 125)")]
    record_set(repeats, "demo", {"race": [racing(n) for n in (100, 120, 140)], "bare": BARE})
    assert errs(repeats, "{{ ~100 @ demo/race:reports[severity=Error].hazards }}") == []  # 4 × 40 ≥ 100


def test_a_timing_is_never_exact(repeats: Path):
    assert errs(repeats, "{{ 1.5 @ demo/race:wall_s }}") == [
        ("docs/p.md:1: claim '1.5' (demo/race:wall_s) is a timing, which changes from run to run even when nothing "
        "else does; quote it rounded (~V) or as a range (LOW\u2013HIGH): 5 recordings of race all say '1.5'")]


def test_thousands_separators_keep_the_authors_text(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": racing(195308), "bare": BARE})
    result = run_page(demo_repo, "{{ 195,308 @ demo/race:reports[severity=Error].hazards }}")
    assert result.errors == [] and result.markdown == '<span class="lk-v">195,308</span>'


# -- KEY=* ---------------------------------------------------------------------------------------------

def test_wildcard_selects_every_record_of_every_recording(repeats: Path):
    assert errs(repeats, "{{ 0\u20137 @ demo/race:rows[threads=*].mismatches }} {{ 2 @ demo/race:#rows[kernel=*] }}") == []
    assert errs(repeats, "{{ 0 @ demo/race:rows[kernel=*].mismatches }}") == [
        ("docs/p.md:1: claim '0' (demo/race:rows[kernel=*].mismatches) varies across the 10 records it selects in "
        "5 recordings of race: 0 to 7; quote a range")]


def test_wildcard_key_must_exist(demo_repo: Path):
    assert errs(demo_repo, "{{ 0 @ demo/race:rows[thread=*].mismatches }}") == [
        ("docs/p.md:1: claim '0' (demo/race:rows[thread=*].mismatches): filter key 'thread' is not a field of rows "
        "in evidence/demo/s1/race.txt; did you mean 'threads'? its fields: first_bad, gated, kernel, mismatches, threads")]


def test_several_records_without_a_wildcard(demo_repo: Path):
    assert errs(demo_repo, "{{ 0 @ demo/race:rows[kernel=k].mismatches }}") == [
        ("docs/p.md:1: claim '0' (demo/race:rows[kernel=k].mismatches): rows[kernel=k] selects 2 records in "
        "evidence/demo/s1/race.txt, not exactly one; add filters that single one out, or write KEY=* to claim every "
        "record it selects")]


# -- filters are validated -------------------------------------------------------------------------------

def test_unknown_filter_key(demo_repo: Path):
    assert errs(demo_repo, "{{ 0 @ demo/race:#reports[no_such_key=x] }}") == [
        ("docs/p.md:1: claim '0' (demo/race:#reports[no_such_key=x]): filter key 'no_such_key' is not a field of "
        "reports in evidence/demo/s1/race.txt; its fields: access, accesses, file, hazards, kernel, line, location, "
        "pairs, severity")]


def test_misspelt_filter_value_gets_a_suggestion(demo_repo: Path):
    assert errs(demo_repo, "{{ 0 @ demo/race:#reports[severity=error] }}") == [
        ("docs/p.md:1: claim '0' (demo/race:#reports[severity=error]): filter severity='error' matches no record of "
        "reports in evidence/demo/s1/race.txt, nor any record of the set with a 'severity'; did you mean 'Error'?")]


def test_filter_value_nothing_resembles(demo_repo: Path):
    assert errs(demo_repo, "{{ 0 @ demo/race:#rows[threads=7777] }}") == [
        ("docs/p.md:1: claim '0' (demo/race:#rows[threads=7777]): filter threads='7777' matches no record of rows in "
        "evidence/demo/s1/race.txt, nor any record of the set with a 'threads'; its values there: '256', '32'")]


def test_a_count_of_zero_over_a_well_formed_filter(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE + "     64 | k      |          0 |         - | no\n"})
    # Each value exists (Error and 8 in race; 64 in bare's rows); the combinations select nothing.
    assert errs(demo_repo, "{{ 0 @ demo/race:#reports[severity=Error,hazards=8] }} "
                "{{ 0 @ demo/race:#rows[threads=64] }}") == []


def test_filter_on_a_collection_no_run_has(demo_repo: Path):
    assert errs(demo_repo, "{{ 0 @ demo/race:#barriers[kernel=k] }} {{ 0 @ demo/race:#barriers }}") == [
        ("docs/p.md:1: claim '0' (demo/race:#barriers[kernel=k]): barriers has no records in "
        "evidence/demo/s1/race.txt nor in any run of the set, so filter key 'kernel' cannot be checked; claim the "
        "count without filters: #barriers")]


@pytest.mark.parametrize("query, message", [
    ("rows[threads=32]", "name the field to quote: rows[...].FIELD"),
    ("#rows.threads", "a count (#rows) takes no field; drop '.threads'"),
    ("rows[threads].kernel", "filter 'threads' is not KEY=VALUE (KEY=* selects every record with KEY)"),
    ("rows[threads=32,threads=256].kernel", "filter key 'threads' appears twice"),
    ("rows[threads=32", ("cannot read query 'rows[threads=32'; expected NAME, COLLECTION[KEY=VALUE,...].FIELD "
     "or #COLLECTION[KEY=VALUE,...]")),
])
def test_malformed_queries(demo_repo: Path, query: str, message: str):
    assert errs(demo_repo, f"{{{{ 1 @ demo/race:{query} }}}}") == [f"docs/p.md:1: claim '1' (demo/race:{query}): {message}"]


# -- claims and directives over several lines; nothing unchecked ---------------------------------------

def test_a_claim_wrapped_over_two_lines_is_checked(demo_repo: Path):
    text = "the Warning had {{ 999999 @\ndemo/race:reports[severity=Warning].hazards }} hazards.\nNext line."
    assert errs(demo_repo, text) == [
        ("docs/p.md:1: claim '999999' (demo/race:reports[severity=Warning].hazards) disagrees with "
        "evidence/demo/s1/race.txt; it says '8' (line 10)")]
    result = run_page(demo_repo, text.replace("999999", "8"))
    assert result.errors == [] and result.markdown == 'the Warning had <span class="lk-v">8</span> hazards.\nNext line.'


def test_a_directive_over_two_lines(demo_repo: Path):
    result = run_page(demo_repo, 'before\n{{ transcript demo/race\n   title="racecheck, the demo" }}\nafter')
    assert result.errors == [] and result.markdown == 'before\n\n<div data-lk-slot="0"></div>\n\nafter'
    assert "<summary>racecheck, the demo (exit code 0, 1.5 s)</summary>" in result.blocks[0]


def test_unclosed_braces_before_the_paragraph_ends(demo_repo: Path):
    assert errs(demo_repo, "a {{ 2 @ demo/race:#reports\n\nnext") == [
        ("docs/p.md:1: '{{ 2 @ demo/race:#reports' is never closed: no '}}' before the end of its paragraph "
        "(line 1); close it, or write \\{{ for literal braces")]


def test_unclosed_braces_before_the_next_claim(demo_repo: Path):
    assert errs(demo_repo, "a {{ 2 @ demo/race:#reports and {{ 2 @ demo/race:#reports }}") == [
        ("docs/p.md:1: '{{ 2 @ demo/race:#reports and {{ 2 @ demo/race:#reports }}' is never closed: no '}}' "
        "before the next '{{' (line 1); close it, or write \\{{ for literal braces")]


def test_unclosed_braces_at_the_end_of_the_page(demo_repo: Path):
    assert errs(demo_repo, "text\n{{ transcript race") == [
        ("docs/p.md:2: '{{ transcript race' is never closed: no '}}' before the end of the page; close it, "
        "or write \\{{ for literal braces")]


@pytest.mark.alone  # timed
def test_a_megabyte_line_of_open_braces_is_one_error_at_its_line_in_linear_time(demo_repo: Path):
    """One error, at its line; and the time grows with the line, not its square: ten times the braces
    take well under thirty times as long (a quadratic scan takes a hundred), each size timed at its
    best of three so that a busy machine slows both alike."""
    import time

    site = Site.load(demo_repo)

    def page(braces: int) -> str:
        return "intro\n" * 887 + "{{" * braces + "\n\nafter: {{ 2 @ demo/race:#reports }} reports\n"

    def best(text: str) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            site.page(text, "docs/p.md")
            times.append(time.perf_counter() - start)
        return min(times)

    text = page(500_000)
    errors = [str(e) for e in site.page(text, "docs/p.md").errors]
    assert best(text) < 30 * best(page(50_000)) and best(text) < 5.0
    assert errors == [(f"docs/p.md:888: '{'{' * 60}' is never closed: no '}}}}' before the next '{{{{' (line 888); "
                      "close it, or write \\{{ for literal braces")]


def test_unclosed_braces_are_one_error_per_line(demo_repo: Path):
    assert errs(demo_repo, "a {{ x {{ y\nb {{ z\n") == [
        ("docs/p.md:1: '{{ x {{ y' is never closed: no '}}' before the next '{{' (line 1); close it, or write "
        "\\{{ for literal braces"),
        ("docs/p.md:2: '{{ z' is never closed: no '}}' before the end of the page; close it, or write \\{{ for "
        "literal braces")]


def test_a_directive_that_does_not_stand_alone(demo_repo: Path):
    assert errs(demo_repo, "see {{ transcript demo/race }}") == [
        "docs/p.md:1: 'transcript' must stand alone on its line(s): '{{ transcript demo/race }}'"]


def test_an_unknown_transcript_option(demo_repo: Path):
    assert errs(demo_repo, "{{ transcript demo/race closed }}") == [
        "docs/p.md:1: unknown transcript option 'closed'; expected open or title=\"…\""]


def test_a_recording_is_not_a_citation(repeats: Path):
    assert errs(repeats, "{{ 2 @ demo/race.r2:#reports }}") == [
        "docs/p.md:1: 'race.r2' is recording 2 of 5 of 'race'; cite the run 'race': a claim holds for every recording"]


def test_page_errors_rank_after_their_causes(demo_repo: Path):
    assert [e.rank for e in run_page(demo_repo, "{{ 9 @ demo/race:#reports }}").errors] == [2]


def test_an_unreadable_manifest_is_the_only_error(demo_repo: Path):
    (demo_repo / "evidence/demo/manifest.json").write_text("{ not json")
    site = Site.load(demo_repo)
    page = (demo_repo / "docs/index.md").read_text()
    assert site.page(page, "docs/index.md").errors == []
    assert [str(e) for e in site.site_errors()] == [
        "evidence/demo/manifest.json:1: not valid JSON: Expecting property name enclosed in double quotes (column 3)"]
    assert "1 error found" in LessonErrors(site.site_errors()).report()


# -- sanitizer summaries, whatever their shape, checked against their section ------------------------------

SECTION = "# Demo\n\n{{ evidence demo }}\n\n## racecheck\n\n{{ transcript race }}\n\n"
CITE = "With {{ 2 @ race:#reports }} reports, "  # a quote belongs to the run its own sentence cites


@pytest.mark.parametrize("quote, shown", [
    ("RACECHECK SUMMARY: 7 hazards displayed (7 errors and 0 warnings).",
     "RACECHECK SUMMARY: 7 hazards displayed (7 errors and 0 warnings)"),
    ("RACECHECK SUMMARY: 9 hazards displayed", "RACECHECK SUMMARY: 9 hazards displayed"),
    ("racecheck summary: 2 hazards displayed (1 error, 1 warning)",
     "racecheck summary: 2 hazards displayed (1 error, 1 warning)"),
    ("RACECHECK SUMMARY: {{ 2 @ race:hazards_displayed }} hazards displayed (5 errors, 1 warning)",
     "RACECHECK SUMMARY: 2 hazards displayed (5 errors, 1 warning)"),
    ("It ended with RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) and more",
     "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) and more"),
])
def test_racecheck_summary_shapes(demo_repo: Path, quote: str, shown: str):
    assert checked(demo_repo, SECTION + CITE + quote) == [
        (f"docs/p.md:9: quote {shown!r} is not, verbatim, a summary line of every recording of a run cited in its "
        "sentence; they say: 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' in "
        "evidence/demo/s1/race.txt (line 13)")]


@pytest.mark.parametrize("quote, shown", [
    ("ERROR SUMMARY:3 errors", "ERROR SUMMARY:3 errors"),
    ("ERROR SUMMARY: 3 errors were found", "ERROR SUMMARY: 3 errors were found"),
    ("error summary: 0 errors", "error summary: 0 errors"),
])
def test_error_summary_shapes(demo_repo: Path, quote: str, shown: str):
    assert checked(demo_repo, SECTION + CITE + quote) == [
        (f"docs/p.md:9: quote {shown!r} is not, verbatim, a summary line of every recording of a run cited in its "
        "sentence; they say: no summary of that kind")]


@pytest.mark.parametrize("quote, shown", [
    ("It ended with RACECHECK\nSUMMARY: 3 hazards displayed (1 error, 2 warnings).",
     "RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)"),
    ("It ended with RACECHECK SUMMARY:\n  3 hazards displayed (1 error, 2 warnings).",
     "RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)"),
    ("It ended with RACECHECK&nbsp;SUMMARY: 3 hazards displayed (1 error, 2 warnings).",
     "RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)"),  # as a reader sees it
])
def test_a_summary_wrapped_or_spaced_is_still_a_quote(demo_repo: Path, quote: str, shown: str):
    assert checked(demo_repo, SECTION + CITE + quote) == [
        (f"docs/p.md:9: quote {shown!r} is not, verbatim, a summary line of every recording of a run cited in its "
        "sentence; they say: 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' in "
        "evidence/demo/s1/race.txt (line 13)")]


@pytest.mark.parametrize("quote", [
    "It ended with RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning).",
    "It ended with RACECHECK\nSUMMARY: 2 hazards displayed (1 error,\n1 warning). And then",
    "- RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n- another item",
    "racecheck: `RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)`, twice",
    "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)",
    "(RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning))",
    "RACECHECK SUMMARY: {{ 2 @ race:hazards_displayed }} hazards displayed (1 error, 1 warning)",
    "{{ RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) @ race:summary }}",
    "the RACECHECK SUMMARY: line comes last",
    "RACECHECK  SUMMARY: 2 hazards displayed (1 error, 1 warning)",  # a reader sees one space: the summary itself
    "It ended with RACECHECK&nbsp;SUMMARY: 2 hazards displayed (1 error, 1 warning).",
])
def test_summaries_that_are_the_runs_own(demo_repo: Path, quote: str):
    assert checked(demo_repo, SECTION + CITE + quote) == []


def test_a_right_summary_attached_to_the_wrong_run(demo_repo: Path):
    fixed = "========= COMPUTE-SANITIZER\n" + BARE + "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE, "race-fixed": fixed})
    text = ("{{ evidence demo }}\n\n## Fixed kernels\n\n{{ commands demo race-fixed }}\n\n"
            "On the fixed kernels ({{ 0 @ race-fixed:hazards_displayed }} hazards) racecheck ended with "
            "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning). The buggy kernels had "
            "{{ 2 @ race:#reports }} reports.\n\n## Buggy kernels\n\n{{ transcript race }}\n")
    assert checked(demo_repo, text) == [
        ("docs/p.md:7: quote 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' is not, verbatim, a "
        "summary line of every recording of a run cited in its sentence; they say: "
        "'RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)' in evidence/demo/s1/race-fixed.txt (line 6)")]


def test_a_section_that_cites_nothing(demo_repo: Path):
    assert checked(demo_repo, SECTION + "## Elsewhere\n\nERROR SUMMARY: 0 errors\n") == [
        ("docs/p.md:11: quote 'ERROR SUMMARY: 0 errors' belongs to the run cited in its sentence, and its "
        "sentence cites none; cite the run there with a claim, or write the quote as a claim: "
        "{{ QUOTE @ RUN:summary }}")]


def test_a_summary_that_differs_between_recordings(demo_repo: Path):
    other = RACE.replace(": 2 hazards", ": 3 hazards")
    record_set(demo_repo, "demo", {"race": [RACE, RACE, other], "bare": BARE})
    assert checked(demo_repo, SECTION + CITE + "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)") == [
        ("docs/p.md:9: quote 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' is not, verbatim, a "
        "summary line of every recording of a run cited in its sentence; they say: "
        "'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' in 2 of 3 recordings of race "
        "(evidence/demo/s1/race.r1.txt, line 13); 'RACECHECK SUMMARY: 3 hazards displayed (1 error, 1 warning)' in "
        "1 of 3 recordings of race (evidence/demo/s1/race.r3.txt, line 13)")]
    # A claim may stand for the figures that vary; each must hold for that figure in every recording.
    # (A figure whose plural changes between recordings cannot be quoted this way: the words differ.)
    varying = "RACECHECK SUMMARY: {{ 2\u20133 @ race:hazards_displayed }} hazards displayed (1 error, 1 warning)"
    assert checked(demo_repo, SECTION + varying) == []
    assert checked(demo_repo, SECTION + varying.replace("1 warning", "2 warnings")) == [
        ("docs/p.md:9: quote 'RACECHECK SUMMARY: 2\u20133 hazards displayed (1 error, 2 warnings)' is not, verbatim, "
        "a summary line of every recording of a run cited in its sentence; they say: "
        "'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' in 2 of 3 recordings of race "
        "(evidence/demo/s1/race.r1.txt, line 13); 'RACECHECK SUMMARY: 3 hazards displayed (1 error, 1 warning)' in "
        "1 of 3 recordings of race (evidence/demo/s1/race.r3.txt, line 13)")]


# -- tables the page writes by hand ------------------------------------------------------------------
# A claim's row label and column header would be bound to nothing: a table of claims is drawn from the
# evidence ({{ table … }}, tests/test_tables.py). Each table the label binding once checked is refused,
# once, at its first claim, whether its labels agree with the claims or not.

TABLE = """\
| threads | kernel | mismatches |
| ---: | --- | ---: |
| 32 | `k` | {{ 0 @ demo/race:rows[threads=32,kernel=k].mismatches }} |
| 256 | `k` | {{ 7 @ demo/race:rows[threads=256,kernel=k].mismatches }} |
"""

HAND_TABLE = ("a claim in a table written by hand: nothing binds the table's row labels and column headers to "
              "what the claim selects, so a label can name another row's records; draw the table from the "
              "evidence, {{ table … }}, or state the figure in a sentence")


@pytest.mark.parametrize("table", [
    TABLE,
    TABLE.replace("| 256 |", "| 257 threads |"),  # a label that is not what its claims select
    TABLE.replace("| threads | kernel | mismatches |", "| block | kernel | mismatches |"),  # a header naming no key
    ("| kernel | 256 | 32 |\n| --- | ---: | ---: |\n| k | {{ 0 @ demo/race:rows[threads=32,kernel=k].mismatches }} | "
    "{{ 7 @ demo/race:rows[threads=256,kernel=k].mismatches }} |\n"),  # swapped columns
    "| a | b |\n| --- | --- |\n| 129 | {{ 2 @ demo/race:#reports }} |\n",  # a label beside one claim
])
def test_a_claim_in_a_hand_written_table_is_refused_once_at_its_first_claim(demo_repo: Path, table: str):
    first = next(k for k, line in enumerate(table.split("\n"), 1) if "{{" in line)
    assert f"docs/p.md:{first}: {HAND_TABLE}" in checked(demo_repo, table)
    assert sum(HAND_TABLE in e for e in checked(demo_repo, table)) == 1


def test_a_row_labelled_with_another_rows_words_is_refused(demo_repo: Path):
    """No figure in the labels for the allow-list to refuse: the table's claims are the cause."""
    table = ("Above the table.\n\n| severity | hazards |\n| --- | ---: |\n"
             "| Warning | {{ 120 @ demo/race:reports[severity=Error].hazards }} |\n"
             "| Error | {{ 8 @ demo/race:reports[severity=Warning].hazards }} |\n")
    assert checked(demo_repo, table) == [f"docs/p.md:5: {HAND_TABLE}"]
    prose = ("{{ 120 @ demo/race:reports[severity=Error].hazards }} hazards in its error report and "
             "{{ 8 @ demo/race:reports[severity=Warning].hazards }} in its warning.\n")
    assert checked(demo_repo, prose) == []


def test_a_table_without_claims_and_a_table_drawn_from_the_evidence_pass(demo_repo: Path):
    assert checked(demo_repo, "| kernel | what it does |\n| --- | --- |\n| `k` | reverses a tile |\n") == []
    assert checked(demo_repo, "{{ table demo/race:reports rows=severity cell=hazards }}\n") == []


# -- transcripts ---------------------------------------------------------------------------------------

def test_every_recording_is_listed_the_first_shown_the_others_linked(repeats: Path):
    result = run_page(repeats, '{{ transcript demo/race title="racecheck on the demo" }}')
    html = result.blocks[0]
    assert result.errors == []
    assert ("<summary>racecheck on the demo (5 recordings, exit code 0 in each, 1.5\u20131.5 s)</summary>") in html
    assert html.count('<section class="lk-recording">') == 1 and html.count("<details") == 1  # no box in the box
    assert '<section class="lk-recording">\n<p class="lk-recording-head">Recording 1 of 5 (exit code 0, 1.5 s)</p>' in html
    # The table's row for each recording: its number, a link to its file, then its session and status.
    assert ('<tr><td><a class="lk-evidence" href="evidence/demo/s1/race.r5.txt">5</a></td><td>s1</td>'
            '<td>exit code 0</td><td>1.50 s</td>') in html
    assert html.index('<table class="lk-recordings">') < html.index('<section class="lk-recording">')
    # The first recording's text is on the page; the others are linked, not inlined.
    assert "[118 hazards]" in html and "[125 hazards]" not in html
    assert html.count("<tr><td>") == 5  # the table of recordings lists all five
    assert "Recorded 5 times; claims on this run hold for every recording." in html
    assert "NumPy" not in html and "compute-sanitizer 2025.3.1.0" in html
    assert [p.path for p in result.published] == [f"evidence/demo/s1/race.r{k}.txt" for k in range(1, 6)]
    assert all(p.source == repeats / "evidence/demo" / p.file for p in result.published)


@pytest.mark.parametrize("directive, message", [
    ('{{ transcript demo/bare title="racecheck on the demo" }}',
     ("transcript title 'racecheck on the demo' says 'racecheck', but the run it shows is './demo'; title it by "
     "what this run did")),
    ('{{ transcript demo/race title="the demo at 64 threads" }}',
     ("transcript title 'the demo at 64 threads' says '64', but the run it shows is "
     "'compute-sanitizer --tool racecheck ./demo'; title it by what this run did")),
    ('{{ transcript demo/race title="racecheck on all three kernels" }}',
     ("transcript title 'racecheck on all three kernels' says 'three' (3), but the run it shows is "
     "'compute-sanitizer --tool racecheck ./demo'; title it by what this run did")),
    ('{{ transcript demo/race title="RACECHECK SUMMARY: 0 hazards displayed" }}',
     ("transcript title 'RACECHECK SUMMARY: 0 hazards displayed' quotes a summary, which a title cannot check; "
     "quote it in the text, next to the transcript")),
])
def test_a_transcript_title_that_says_what_the_run_did_not_do(demo_repo: Path, directive: str, message: str):
    assert errs(demo_repo, directive) == [f"docs/p.md:1: {message}"]


def test_transcript_titles_in_the_runs_own_words_pass(demo_repo: Path):
    assert errs(demo_repo, '{{ transcript demo/bare title="The bare run of the demo" }}\n\n'
                           '{{ transcript demo/race title="racecheck, with --tool" }}') == []


def test_the_figures_that_differ_between_recordings_are_tabled(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": [RACE, RACE.replace(": 2 hazards", ": 3 hazards")], "bare": BARE})
    html = run_page(demo_repo, "{{ transcript demo/race }}").blocks[0]
    link = '<a class="lk-evidence" href="evidence/demo/s1/race.r{}.txt">{}</a>'
    assert ('<thead><tr><th>recording</th><th>session</th><th>status</th><th>wall time</th><th>hazards_displayed</th>'
            f"</tr></thead>\n<tbody>\n<tr><td>{link.format(1, 1)}</td><td>s1</td><td>exit code 0</td><td>1.50 s</td>"
            f"<td>2</td></tr>\n<tr><td>{link.format(2, 2)}</td><td>s1</td><td>exit code 0</td><td>1.50 s</td><td>3</td>"
            "</tr>\n</tbody>") in html


def test_a_hang_is_shown_as_stopped_by_its_timeout(demo_repo: Path):
    from conftest import rewrite_entry
    rewrite_entry(demo_repo, "s1/race", timed_out=True, exit_code=None)
    result = run_page(demo_repo, "{{ transcript demo/race }}")
    assert "<summary>Transcript demo/race (stopped by its timeout, 1.5 s)</summary>" in result.blocks[0]


def test_a_large_first_recording_shows_its_first_lines_and_links_the_file(demo_repo: Path):
    big = RACE + "".join(f"program line {i}\n" for i in range(30000))
    record_set(demo_repo, "demo", {"race": big, "bare": BARE})
    result = run_page(demo_repo, "{{ transcript demo/race }}")
    html = result.blocks[0]
    assert result.errors == [] and len(html) < 8_000
    lines = big.count("\n")
    start = html.index('<pre class="lk-transcript-text"><samp>') + len('<pre class="lk-transcript-text"><samp>')
    shown = html[start:html.index("</samp></pre>")].replace("&lt;", "<")
    # Whole lines from the start, as many as INLINE_BYTES holds.
    from lessonkit.pages.render import INLINE_BYTES
    assert big.startswith(shown + "\n") and len(shown.encode()) <= INLINE_BYTES
    next_line = big[len(shown) + 1:].split("\n", 1)[0]
    assert len(f"{shown}\n{next_line}\n".encode()) > INLINE_BYTES
    kept = shown.count("\n") + 1
    assert (f'<p class="lk-transcript-more" data-lk-lines="{lines}">The first {kept} lines of {lines}; '
            f'{lines - kept} more in <a class="lk-evidence" href="evidence/demo/s1/race.txt">evidence/demo/s1/race.txt</a> '
            f"({len(big.encode()) / 1024:.0f} KiB).</p>") in html
    assert next_line not in html and "program line 29999" not in html
    assert [p.path for p in result.published] == ["evidence/demo/s1/race.txt"]


def test_links_to_recordings_are_made_relative_to_where_the_page_is_built(repeats: Path):
    result = run_page(repeats, "{{ transcript demo/race }}")
    assert 'href="evidence/demo/s1/race.r2.txt"' in result.fill(result.markdown)
    assert 'href="../evidence/demo/s1/race.r2.txt"' in result.fill(result.markdown, "../")
    assert 'href="../../evidence/demo/s1/race.r2.txt"' in result.fill(result.markdown, "../../")


def test_a_recording_line_that_looks_like_a_link_is_shown_as_text(demo_repo: Path):
    line = '<a class="lk-evidence" href="evidence/demo/s1/race.txt">x</a>'
    record_set(demo_repo, "demo", {"race": RACE + line + "\n", "bare": BARE})
    result = run_page(demo_repo, "{{ transcript demo/race }}")
    html = result.fill(result.markdown, "../")
    assert html.count('<a class="lk-evidence"') == 0  # the whole text is inline: no link needed
    assert "&lt;a class=&quot;lk-evidence&quot; href=&quot;evidence/demo/s1/race.txt&quot;&gt;x&lt;/a&gt;" in html


# -- a figure must stand apart from what is typed beside it -----------------------------------------

@pytest.mark.parametrize("text, side, char, seen", [
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}0 hazards", "after", "'0'", "80"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}k hazards", "after", "'k'", "8k"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}.5 hazards", "after", "'.'", "8.5"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}<b>0</b> hazards", "after", "'0'", "80"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}*0* hazards", "after", "'0'", "80"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}<sup>5</sup> hazards", "after", "'5'", "85"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}&nbsp;000 hazards", "after", "a space that groups digits",
     "8 000"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}\u202f000 hazards", "after", "a space that groups digits",
     "8 000"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}\u00b2 hazards", "after", "'2'", "82"),
    ("{{ 8 @ demo/race:reports[severity=Warning].hazards }}{{ 2 @ demo/race:#reports }} hazards", "after",
     "the figure of the next claim", "82"),
    ("1{{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards", "before", "'1'", "18"),
    ("-{{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards", "before", "'-'", "-8"),
    ("\u2212{{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards", "before", "'\u2212'", "\u22128"),
    ("&minus;{{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards", "before", "'\u2212'", "\u22128"),
    ("<i>1</i>{{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards", "before", "'1'", "18"),
])
def test_a_figure_that_runs_into_what_a_reader_sees_beside_it(demo_repo: Path, text: str, side: str, char: str,
                                                              seen: str):
    """Read on the page as a reader sees it: markup, emphasis and character references between them
    join the figures as they do in the browser. One error, at the claim's line, for the joined figure."""
    punctuation = " or punctuation" if side == "after" else ""
    assert checked(demo_repo, f"# T\n\nIt has\n{text}.\n") == [(
        f"docs/p.md:4: the figure '8' a claim produced runs into {char} right {side} it, so a reader sees {seen!r}, "
        f"a number no claim checked; put a space{punctuation} between them, or write the whole figure inside the claim")]


def test_a_joined_figure_is_named_at_its_claims_line_of_the_file(demo_repo: Path):
    """The line counts the front matter, and is the claim's own line in a paragraph over several."""
    page = ("---\ntitle: T\n---\n# T\n\nFirst line,\nthen {{ 2 @ demo/race:#reports }} reports and\n"
            "{{ 8 @ demo/race:reports[severity=Warning].hazards }}0 hazards.\n")
    [error] = checked(demo_repo, page)
    assert error.startswith("docs/p.md:8: the figure '8' a claim produced runs into '0' right after it"), error


def test_a_figure_beside_punctuation_or_a_unit_sign_passes(demo_repo: Path):
    for text in ("({{ 8 @ demo/race:reports[severity=Warning].hazards }}).",
                 "x{{ Warning @ demo/race:reports[severity=Warning].severity }}y",
                 "{{ 8 @ demo/race:reports[severity=Warning].hazards }}\u00d7, {{ 8 @ demo/race:reports[severity=Warning].hazards }}:",
                 "the {{ 2 @ demo/race:#reports }}nd report, in {{ 8 @ demo/race:reports[severity=Warning].hazards }}s"):
        assert checked(demo_repo, f"# T\n\n{text}\n") == [], text


def test_the_line_an_unclosed_brace_names_counts_the_front_matter(demo_repo: Path):
    """The error's own line and the line it names are both lines of the page's file, front matter and all."""
    page = "---\nnarrative:\n  thread N: a thread\n---\n# N\n\nIt has {{ 2 @ demo/race:#reports {{ 2 @ demo/race:#reports }} }}.\n"
    assert errs(demo_repo, page) == [
        ("docs/p.md:7: '{{ 2 @ demo/race:#reports {{ 2 @ demo/race:#reports }} }}.' is never closed: no '}}' "
         "before the next '{{' (line 7); close it, or write \\{{ for literal braces")]


@pytest.mark.parametrize(("text", "marked"), [
    # A code span may run over a paragraph's lines: the claim inside it is code, shown as its value.
    ("A `code span over\ntwo lines, {{ 8 @ demo/race:reports[severity=Warning].hazards }}` too.", False),
    # A backtick that no run of as many closes in the paragraph opens nothing: the claim after it is text.
    ("A lone ` backtick, then {{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards.", True),
    # Nor does a blank line let a span close in the next paragraph.
    ("A ` here.\n\nThen {{ 8 @ demo/race:reports[severity=Warning].hazards }} hazards `.", True),
    # A run of two is closed only by a run of two.
    ("A ``b` c\nd {{ 8 @ demo/race:reports[severity=Warning].hazards }}`` e.", False),
])
def test_a_claim_is_marked_as_produced_unless_a_code_span_holds_it(demo_repo: Path, text: str, marked: bool):
    """Python-Markdown reads a paragraph's code spans over its lines, with exactly as many backticks
    on each side: one scanner (lessonkit.pages.scan.CodeSpans) says where they are, so a produced value
    is wrapped as HTML exactly where HTML will not be shown as code."""
    result = run_page(demo_repo, text)
    assert result.errors == []
    assert ('<span class="lk-v">8</span>' in result.markdown) == marked, result.markdown
    if not marked:  # no element can go in code: the marks alone carry it (lessonkit.pages.marks)
        assert "\U000f00008\U000ffffd" in result.marked, result.marked
