"""Claims across sets (`in A = B`, `in A vs B`) and ratios of runs recorded together (`RUN:Q / RUN:Q`)."""

from __future__ import annotations

import io
from argparse import Namespace
from pathlib import Path

import pytest
from conftest import BARE, PROVENANCE, RACE, checked, commit, errs, record_set, run_page

from lessonkit.cli import accept
from lessonkit.pages.marks import strip

B_PROVENANCE = {**PROVENANCE, "nvcc": "12.4.131", "compute_sanitizer": "2024.1.1.0"}
RACE_B = RACE.replace("[120 hazards]", "[215 hazards]")


def two_sets(repo: Path, race_b: str = RACE_B, bare_b: str = BARE, repeats: int = 3) -> None:
    record_set(repo, "demo", {"race": [RACE] * repeats, "bare": BARE})
    record_set(repo, "demo", {"race": [race_b] * repeats, "bare": bare_b}, set_name="demo-b",
               provenance=B_PROVENANCE)


SAME_TABLE = "{{ same @ race:rows[threads=*,kernel=*].mismatches in demo = demo-b }}\n"
DIFFERS = "{{ 120 vs 215 @ race:reports[severity=Error].hazards in demo vs demo-b }}\n"


# -- sameness ---------------------------------------------------------------------------------

def test_same_in_both_holds_record_for_record(demo_repo):
    two_sets(demo_repo)
    page = run_page(demo_repo, SAME_TABLE + "{{ 2 @ race:#reports in demo = demo-b }}\n"
                    "{{ RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) @ race:summary in demo = demo-b }}\n")
    assert page.errors == []
    assert page.markdown.splitlines()[0] == '<span class="lk-v">same</span>'
    assert {("demo", "race"), ("demo-b", "race")} <= page.cited
    assert page.claims[0].sets == ("demo", "demo-b")


def test_same_in_both_fails_when_one_set_changes(demo_repo):
    two_sets(demo_repo, race_b=RACE.replace("    256 | k      |          7 |", "    256 | k      |          9 |"))
    (message,) = errs(demo_repo, SAME_TABLE)
    assert ("is not the same in both at threads=256, kernel=k: evidence/demo gives '7'; evidence/demo-b gives '9' "
            "(3 and 3 recordings)") in message
    assert message.endswith("7 vs 9 @ race:rows[threads=256,kernel=k].mismatches in demo vs demo-b")
    assert run_page(demo_repo, SAME_TABLE).claims[0].fix is None


def test_same_fails_when_values_vary_within_one_set(demo_repo):
    record_set(demo_repo, "demo", {"race": [RACE, RACE.replace("[120 hazards]", "[121 hazards]")], "bare": BARE})
    record_set(demo_repo, "demo", {"race": [RACE, RACE], "bare": BARE}, set_name="demo-b")
    (message,) = errs(demo_repo, "{{ same @ race:reports[severity=Error].hazards in demo = demo-b }}\n")
    assert "evidence/demo gives 120 to 121; evidence/demo-b gives '120'" in message


def test_same_is_record_for_record_not_a_multiset(demo_repo):
    # The same mismatch figures, swapped between the two rows: a multiset would not see it.
    swapped = RACE.replace("     32 | k      |          0 |         - | no\n    256 | k      |          7 |",
                           "     32 | k      |          7 |         - | no\n    256 | k      |          0 |")
    two_sets(demo_repo, race_b=swapped)
    (message,) = errs(demo_repo, SAME_TABLE)
    assert "at threads=32, kernel=k: evidence/demo gives '0'; evidence/demo-b gives '7'" in message


def test_same_with_a_value_checks_the_value_too(demo_repo):
    two_sets(demo_repo)
    (message,) = errs(demo_repo, "{{ 3 @ race:#reports in demo = demo-b }}\n")
    assert "disagrees with 6 recordings of race in demo and demo-b; each says '2'" in message
    assert run_page(demo_repo, "{{ 3 @ race:#reports in demo = demo-b }}\n").claims[0].fix == "2"


@pytest.mark.parametrize("value, message", [
    ("100\u2013130", "a sameness claim states one exact value for both sets, or 'same'"),
    ("120 vs 215", "'VALUE_A vs VALUE_B' states a difference: name the sets with 'in SET_A vs SET_B' (not =)"),
])
def test_sameness_takes_one_exact_value(demo_repo, value, message):
    two_sets(demo_repo)
    (error,) = errs(demo_repo, f"{{{{ {value} @ race:reports[severity=Error].hazards in demo = demo-b }}}}\n")
    assert message in error


# -- difference -------------------------------------------------------------------------------

def test_differs_holds_with_each_side_checked(demo_repo):
    two_sets(demo_repo)
    page = run_page(demo_repo, DIFFERS)
    assert page.errors == [] and page.markdown.startswith('<span class="lk-v">120 vs 215</span>')
    (message,) = errs(demo_repo, DIFFERS.replace("215", "216"))
    assert "its second side (demo-b) disagrees with 3 recordings of race; each says '215'" in message


def test_a_difference_that_disappears_fails_and_says_what_to_write(demo_repo):
    two_sets(demo_repo, race_b=RACE)
    (message,) = errs(demo_repo, DIFFERS)
    assert ("states a difference that is gone: evidence/demo gives '120' and evidence/demo-b gives '120', which "
            "meet; they are the same now: say so in the prose and write the claim as 120 @ "
            "race:reports[severity=Error].hazards in demo = demo-b") in message
    assert run_page(demo_repo, DIFFERS).claims[0].fix is None
    # Overlapping spans that are not one value: neither form holds, and the message says so.
    record_set(demo_repo, "demo", {"race": [RACE, RACE.replace("[120 hazards]", "[240 hazards]")], "bare": BARE},
               set_name="demo-b")
    (message,) = errs(demo_repo, DIFFERS)
    assert "evidence/demo-b gives 120 to 240, which meet; the two sets' values overlap" in message


def test_a_direction_word_is_held_to_the_comparison(demo_repo):
    """'fewer' (or 'more', 'lower', ...) before a vs comparison is what the reader reads: it holds when every
    value of the first set lies below (above) every value of the second, and fails read the wrong way round."""
    two_sets(demo_repo)
    fewer = "The error had {{ fewer @ race:reports[severity=Error].hazards in demo vs demo-b }} hazards.\n"
    page = run_page(demo_repo, fewer)
    assert page.errors == [] and '<span class="lk-v">fewer</span>' in page.markdown
    (message,) = errs(demo_repo, fewer.replace("fewer @", "more @"))
    assert ("says 'more', but demo's values lie below demo-b's in every recording (evidence/demo gives '120' and "
            "evidence/demo-b gives '215'): the comparison runs the other way") in message
    assert errs(demo_repo, fewer.replace("fewer @", "higher @").replace("demo vs demo-b", "demo-b vs demo")) == []
    record_set(demo_repo, "demo", {"race": [RACE, RACE.replace("[120 hazards]", "[240 hazards]")], "bare": BARE},
               set_name="demo-b")
    (message,) = errs(demo_repo, fewer)
    assert "says 'fewer', but the two sets' values overlap" in message


def test_ranges_that_meet_state_no_difference(demo_repo):
    two_sets(demo_repo)
    (message,) = errs(demo_repo, "{{ 100\u2013150 vs 140\u2013220 @ race:reports[severity=Error].hazards "
                                 "in demo vs demo-b }}\n")
    assert "states two values that overlap (100\u2013150 and 140\u2013220)" in message


def test_a_difference_needs_both_sides(demo_repo):
    two_sets(demo_repo)
    (message,) = errs(demo_repo, "{{ 120 @ race:reports[severity=Error].hazards in demo vs demo-b }}\n")
    assert "states each side's value: VALUE_A vs VALUE_B" in message


def test_a_compared_run_names_no_set(demo_repo):
    two_sets(demo_repo)
    (message,) = errs(demo_repo, "{{ same @ demo/race:#reports in demo = demo-b }}\n")
    assert "names a set; a comparison names the run alone" in message


# -- accept -----------------------------------------------------------------------------------

def run_accept(repo: Path) -> tuple[int, str]:
    out = io.StringIO()
    commit(repo)  # accept tells drift from a claim written since the last commit
    code = accept.run(Namespace(repo=repo, yes=True, confirm=None), stdin=io.StringIO(), out=out)
    return code, out.getvalue()


def test_accept_rewrites_each_side_of_a_difference(demo_repo):
    two_sets(demo_repo, race_b=RACE.replace("[120 hazards]", "[230 hazards]"), repeats=1)
    (demo_repo / "docs/index.md").write_text("# x\n\nCount: " + DIFFERS)
    code, out = run_accept(demo_repo)
    assert code == 0, out
    assert (demo_repo / "docs/index.md").read_text() == "# x\n\nCount: {{ 120 vs 230 @ " \
        "race:reports[severity=Error].hazards in demo vs demo-b }}\n"


def test_accept_refuses_a_vanished_difference_and_says_why(demo_repo):
    two_sets(demo_repo, race_b=RACE, repeats=1)
    page = "# x\n\nCount: " + DIFFERS
    (demo_repo / "docs/index.md").write_text(page)
    code, out = run_accept(demo_repo)
    assert code == accept.EXIT_REFUSED and "states a difference that is gone" in out
    assert (demo_repo / "docs/index.md").read_text() == page


def test_accept_holds_back_a_comparison_on_a_set_with_errors(demo_repo):
    two_sets(demo_repo, repeats=1)
    (demo_repo / "evidence/demo-b/s1/race.txt").write_text("edited\n")
    (demo_repo / "docs/index.md").write_text("# x\n\n{{ 3 @ race:#reports in demo = demo-b }}\n")
    code, out = run_accept(demo_repo)
    assert code == accept.EXIT_REFUSED and "evidence/demo-b: 1 claim on it not accepted" in out


# -- ratios -----------------------------------------------------------------------------------

def ratio_set(repo: Path, race_walls: list[float], bare_walls: list[float], ids: list[str | None] | None = None,
              bare_ids: list[str | None] | None = None, set_name: str = "demo") -> None:
    ids = ids if ids is not None else ["refresh-1"] * len(race_walls)
    record_set(repo, "demo", {"race": [RACE] * len(race_walls), "bare": [BARE] * len(bare_walls)},
               set_name=set_name, walls={"race": race_walls, "bare": bare_walls},
               refresh_ids={"race": ids, "bare": bare_ids if bare_ids is not None else ids[:len(bare_walls)]})


RATIO = "{{ ~6 @ race:wall_s / bare:wall_s }}\n"


def test_a_ratio_pairs_recordings_by_repeat(demo_repo):
    # Paired r1/r1 and r2/r2 every ratio is 6; crossed, the ratios would run from 3 to 12.
    ratio_set(demo_repo, [30.0, 60.0], [5.0, 10.0])
    assert errs(demo_repo, "{{ evidence demo }}\n" + RATIO) == []
    ratio_set(demo_repo, [30.0, 60.0], [10.0, 5.0])
    (message,) = errs(demo_repo, "{{ evidence demo }}\n" + RATIO)
    assert "2 recordings of race / bare (paired by repeat) give 3 to 12" in message


def test_a_ratio_of_timings_is_never_exact(demo_repo):
    ratio_set(demo_repo, [30.0, 30.0], [5.0, 5.0])
    (message,) = errs(demo_repo, "{{ 6 @ demo/race:wall_s / demo/bare:wall_s }}\n")
    assert "is a timing" in message
    assert run_page(demo_repo, "{{ 6 @ demo/race:wall_s / demo/bare:wall_s }}\n").claims[0].fix == "~6"


def test_a_run_recorded_once_pairs_with_every_recording(demo_repo):
    ratio_set(demo_repo, [30.0, 36.0], [6.0])
    assert errs(demo_repo, "{{ 5\u20136 @ demo/race:wall_s / demo/bare:wall_s }}\n") == []


def test_a_ratio_needs_runs_recorded_together(demo_repo):
    ratio_set(demo_repo, [30.0, 36.0], [5.0, 6.0], ids=["refresh-1", "refresh-2"], bare_ids=["refresh-1", "refresh-1"])
    (message,) = errs(demo_repo, "{{ ~6 @ demo/race:wall_s / demo/bare:wall_s }}\n")
    assert "s1/race.r2 and s1/bare.r2 come from different refreshes; a ratio compares runs recorded together" in message
    assert message.endswith("re-record both: .venv/bin/python scripts/refresh.py demo")
    ratio_set(demo_repo, [30.0, 36.0], [5.0, 6.0], ids=[None, None])
    (message,) = errs(demo_repo, "{{ ~6 @ demo/race:wall_s / demo/bare:wall_s }}\n")
    assert "race.r1 was recorded before the refresh noted which recordings it made together" in message


def test_a_ratio_divides_runs_of_one_set(demo_repo):
    ratio_set(demo_repo, [30.0], [5.0])
    ratio_set(demo_repo, [30.0], [5.0], set_name="demo-b")
    (message,) = errs(demo_repo, "{{ ~6 @ demo/race:wall_s / demo-b/bare:wall_s }}\n")
    assert "a ratio divides two runs of one set (recorded together), not 'demo' by 'demo-b'" in message


def test_ratios_compared_across_sets(demo_repo):
    ratio_set(demo_repo, [30.0, 33.0], [5.0, 5.5])
    record_set(demo_repo, "demo", {"race": [RACE_B] * 2, "bare": [BARE] * 2}, set_name="demo-b",
               walls={"race": [40.0, 44.0], "bare": [5.0, 5.5]}, refresh_ids={"race": ["x", "x"], "bare": ["x", "x"]})
    claim = "{{ ~6 vs ~8 @ race:wall_s / bare:wall_s in demo vs demo-b }}\n"
    assert errs(demo_repo, claim) == []
    (message,) = errs(demo_repo, claim.replace("~8", "~6"))
    assert "states two values that overlap (~6 and ~6)" in message


def test_a_comparison_on_a_missing_declared_set_is_not_checked(demo_repo):
    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE})
    with open(demo_repo / "code/demo/runs.toml", "a") as f:
        f.write('\n[[compare]]\nset = "demo-b"\ntoolkit = "12.4"\ntoolkit_dir = "/opt/cuda-12.4"\n')
    page = run_page(demo_repo, DIFFERS)
    assert page.errors == [] and page.claims[0].skipped
    from lessonkit.site.check import Site
    (site_error,) = [str(e) for e in Site.load(demo_repo).site_errors()]
    assert ".venv/bin/python scripts/refresh.py demo --toolkit /opt/cuda-12.4 --set demo-b" in site_error


def test_a_comparison_claim_in_a_hand_written_table_is_refused(demo_repo):
    two_sets(demo_repo)
    table = ("| threads | 13.0 and 12.4 |\n| --- | --- |\n"
             "| 32 | {{ 0 @ race:rows[threads=32,kernel=k].mismatches in demo = demo-b }} |\n"
             "| 128 | {{ 7 @ race:rows[threads=256,kernel=k].mismatches in demo = demo-b }} |\n")
    assert errs(demo_repo, table) == []  # each claim holds
    found = [e for e in checked(demo_repo, table) if "a claim in a table written by hand" in e]
    assert [e.split(": a claim")[0] for e in found] == ["docs/p.md:3"]


def test_a_transcript_says_which_toolkit_recorded_it(demo_repo):
    two_sets(demo_repo)
    record_set(demo_repo, "demo", {"race": RACE_B, "bare": BARE}, set_name="demo-b",
               provenance={**B_PROVENANCE, "toolkit": "/opt/cuda-12.4"})
    page = run_page(demo_repo, "{{ transcript demo-b/race }}\n\n{{ provenance demo-b }}\n")
    assert page.errors == []
    assert "nvcc 12.4.131, compute-sanitizer 2024.1.1.0, CUDA toolkit folder /opt/cuda-12.4." in page.blocks[0]
    assert ("<tr><td>CUDA toolkit folder</td><td><span class=\"lk-v\" data-lk-why=\"generated from the provenance of set "
            "demo-b: the field toolkit, as its manifest records it\">/opt/cuda-12.4</span></td></tr>") in strip(page.blocks[1])
