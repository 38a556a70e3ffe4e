"""Units declared once, scaled claims, and a unit typed beside a claim (lessonkit.units)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BARE, RACE, RUNS, checked, errs, record_set, run_page

from lessonkit.errors import LessonError
from lessonkit.evidence.spec import parse_spec

RESULTS = json.dumps({"rows": [{"config": "mp", "rate": 0.041, "per_100k": 4100, "wall_s": 2.5}]})


@pytest.fixture
def rates(demo_repo: Path) -> Path:
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text() + '\n[units]\nrate = "fraction"\nper_100k = "per 100000"\nwall_s = "s"\n')
    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE, "res-json": RESULTS})
    return demo_repo


def page(text: str) -> str:
    return "{{ evidence demo }}\n\n" + text + "\n"


def test_a_scaled_claim_on_a_fraction(rates: Path):
    assert errs(rates, page("weak in {{ 4.1 @ res-json:rows[config=mp].rate as percent }}% of runs")) == []
    assert errs(rates, page("weak in {{ 4.1 % @ res-json:rows[config=mp].rate }} of runs")) == []
    assert errs(rates, page("{{ 4100 @ res-json:rows[config=mp].rate as per 100000 }} per 100,000")) == []
    wrong = errs(rates, page("weak in {{ 4.2 @ res-json:rows[config=mp].rate as percent }}% of runs"))
    assert len(wrong) == 1 and "it says '4.1'" in wrong[0]


def test_a_percent_typed_after_a_fraction_is_refused(rates: Path):
    found = checked(rates, page("weak in {{ 0.041 @ res-json:rows[config=mp].rate }}% of runs"))
    assert len(found) == 1 and found[0].startswith("docs/p.md:3: ") and "shows a fraction, and '%'" in found[0]
    assert checked(rates, page("weak in {{ 0.041 @ res-json:rows[config=mp].rate }} of runs")) == []


def test_another_unit_typed_after_a_declared_one_is_refused(rates: Path):
    assert len(checked(rates, page("{{ 4100 @ res-json:rows[config=mp].per_100k }} % of runs"))) == 1
    assert [e for e in checked(rates, page("{{ 4100 @ res-json:rows[config=mp].per_100k }} per 100,000"))
            if "after it" in e] == []  # its unit; the typed 100,000 is the audit's own, other, error
    assert len(checked(rates, page("{{ ~2.5 @ res-json:rows[config=mp].wall_s }} ms"))) == 1
    assert checked(rates, page("{{ ~2.5 @ res-json:rows[config=mp].wall_s }} s")) == []
    # Markup between the figure and the unit does not hide it from a reader, nor from the check.
    assert len(checked(rates, page("{{ ~2.5 @ res-json:rows[config=mp].wall_s }} <b>ms</b>"))) == 1


def test_scaling_a_field_not_declared_a_fraction_is_refused(rates: Path):
    found = errs(rates, page("{{ 410000 @ res-json:rows[config=mp].per_100k as percent }}"))
    assert len(found) == 1 and "not declared a fraction" in found[0]


def test_an_offset_states_a_derived_figure(rates: Path):
    assert errs(rates, page("the tile before: {{ 6 @ race:rows[threads=256].mismatches - 1 }}")) == []
    assert len(errs(rates, page("the tile before: {{ 7 @ race:rows[threads=256].mismatches - 1 }}"))) == 1


def test_a_derived_figure_by_multiplication_or_division(rates: Path):
    assert errs(rates, page("{{ 14 @ race:rows[threads=256].mismatches * 2 }} and {{ 3.5 @ race:rows[threads=256].mismatches / 2 }}")) == []
    assert len(errs(rates, page("{{ 15 @ race:rows[threads=256].mismatches * 2 }}"))) == 1


def test_derivations_apply_in_turn(rates: Path):
    assert errs(rates, page("{{ 13 @ race:rows[threads=256].mismatches * 2 - 1 }}")) == []
    assert len(errs(rates, page("{{ 14 @ race:rows[threads=256].mismatches * 2 - 1 }}"))) == 1


def test_a_text_claim_that_ends_in_a_percent_sign_is_not_scaled(rates: Path):
    assert errs(rates, page("it said {{ RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) @ race:summary }}")) == []
    found = errs(rates, page("{{ share 4% @ res-json:rows[config=mp].config }}"))
    assert len(found) == 1 and "not declared a fraction" not in found[0] and "'mp'" in found[0]


# -- a field's unit from its name, and the unit words beside its figures -----------------------------

NAMED = json.dumps({"rows": [{"config": "mp", "launch_us": 311.5, "weak_per_100k": 4100, "o00_fraction": 0.041,
                              "instances_per_s": 2.5e9}]})


@pytest.fixture
def named(demo_repo: Path) -> Path:
    """Fields whose names say their units; runs.toml declares none."""
    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE, "res-json": NAMED})
    return demo_repo


@pytest.mark.parametrize("claim, after, unit", [
    ("~310 @ res-json:rows[config=mp].launch_us", " ms a launch", "'ms'"),
    ("~310 @ res-json:rows[config=mp].launch_us", " s", "'s'"),
    ("4100 @ res-json:rows[config=mp].weak_per_100k", " per million", "'per million'"),
    ("4100 @ res-json:rows[config=mp].weak_per_100k", "%", "'%'"),
    ("~2.5e9 @ res-json:rows[config=mp].instances_per_s", " s", "'s'"),
])
def test_a_unit_its_name_says_is_the_unit_beside_its_claim(named: Path, claim: str, after: str, unit: str):
    shown = {"launch_us": "microseconds", "weak_per_100k": "a rate per 100,000", "instances_per_s": "a rate per second"}
    field = claim.rsplit(".", 1)[1]
    value = claim.split(" @ ")[0]
    assert checked(named, page("{{ " + claim + " }}" + after)) == [
        (f"docs/p.md:3: {value!r}, produced from the evidence: the figure shows {shown[field]}, and {unit} after it "
        "is another unit")]


@pytest.mark.parametrize("text", [
    "{{ ~310 @ res-json:rows[config=mp].launch_us }} \u00b5s", "{{ ~310 @ res-json:rows[config=mp].launch_us }} us",
    "{{ ~310 @ res-json:rows[config=mp].launch_us }} microseconds",
    "{{ 4100 @ res-json:rows[config=mp].weak_per_100k }} per 100,000 instances",
    "{{ 4100 @ res-json:rows[config=mp].weak_per_100k }} per hundred thousand",
    "{{ ~2.5e9 @ res-json:rows[config=mp].instances_per_s }} per second",
    "{{ 4.1 @ res-json:rows[config=mp].o00_fraction as percent }}%",
])
def test_the_unit_its_name_says_passes(named: Path, text: str):
    assert errs(named, page(text)) == []
    assert [e for e in checked(named, page(text)) if "after it" in e] == []


def test_a_fraction_by_its_name_takes_no_unit_and_scales(named: Path):
    [error] = checked(named, page("{{ 0.041 @ res-json:rows[config=mp].o00_fraction }}% of instances"))
    assert error.startswith("docs/p.md:3: '0.041', produced") and "the figure shows a fraction, and '%'" in error


def test_a_time_by_its_name_is_a_timing(named: Path):
    # A generated figure of a timing is never exact either: one recording's 311.5 shows as ~300.
    assert '<span class="lk-v">~300</span> \u00b5s' in run_page(
        named, page("{{ value res-json:rows[config=mp].launch_us }} \u00b5s")).markdown
    assert errs(named, page("{{ 311.5 @ res-json:rows[config=mp].launch_us }} \u00b5s")) == [
        ("docs/p.md:3: claim '311.5' (res-json:rows[config=mp].launch_us) is a timing, which changes from run to run "
        "even when nothing else does; quote it rounded (~V) or as a range (LOW\u2013HIGH): "
        "evidence/demo/s1/res-json.json says '311.5'")]


def test_a_count_takes_no_unit(named: Path):
    assert errs(named, page("{{ 2 @ race:#reports }} reports")) == []
    assert checked(named, page("{{ 2 @ race:#reports }} ms")) == [
        ("docs/p.md:3: '2', produced from the evidence: the figure has no unit (a count, or a ratio of two values "
        "in one unit), and 'ms' after it gives it one; remove the unit, or claim a field in that unit")]


def test_a_generated_figure_takes_its_fields_unit(named: Path):
    assert errs(named, page("{{ value res-json:rows[config=mp].launch_us }} \u00b5s")) == []
    assert checked(named, page("{{ value res-json:rows[config=mp].launch_us }} ms")) == [
        ("docs/p.md:3: '~300', produced from the evidence: the figure shows microseconds, "
        "and 'ms' after it is another unit")]


def test_a_unit_typed_in_a_cell_template_is_the_fields(named: Path):
    table = "{{ table res-json:rows rows=config cell=\"{launch_us} ms\" }}"
    assert errs(named, page(table)) == [
        ("docs/p.md:3: table: cell template '{launch_us} ms', after {launch_us}: the figure shows microseconds, "
        "and 'ms' after it is another unit")]
    assert errs(named, page(table.replace(" ms", " \u00b5s"))) == []


def _runs_with(repo: Path, extra: str) -> Path:
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text() + extra)
    return runs


def test_a_header_names_its_fields_unit(named: Path):
    from test_cli import cli_run

    runs = _runs_with(named, '\n[names]\nconfig = "configuration"\nlaunch_us = "ms a launch (median)"\n')
    line = runs.read_text().splitlines().index('launch_us = "ms a launch (median)"') + 1
    done = cli_run("check", "--no-cache", "--repo", str(named))
    assert done.returncode == 1 and (
        f"code/demo/runs.toml:{line}: [names]: launch_us = 'ms a launch (median)' names the unit 'ms', but "
        "'launch_us' shows microseconds; a header's unit is its field's") in done.stderr.splitlines(), done.stderr
    runs.write_text(runs.read_text().replace("ms a launch", "\u00b5s a launch"))
    assert "[names]" not in cli_run("check", "--no-cache", "--repo", str(named)).stderr


@pytest.mark.parametrize("names, message", [
    ('launches = "launches per second"', "names the unit 'per second', but 'launches' has no unit (a count or a name)"),
    ('weak_per_100k = "weak per million"', "names the unit 'per million', but 'weak_per_100k' shows a rate per 100,000"),
    ('ci = "97.5% upper bound per 100,000"', "names the unit 'per 100,000', but 'ci' has no unit (a count or a name)"),
])
def test_a_header_with_another_unit_is_refused(names: str, message: str):
    text = RUNS + f"\n[names]\n{names}\n"
    with pytest.raises(LessonError) as info:
        parse_spec(text, "code/demo/runs.toml")
    assert str(info.value).startswith(f"code/demo/runs.toml:{text.splitlines().index(names) + 1}: [names]: ")
    assert message in str(info.value)


def test_a_units_declaration_may_not_contradict_the_name():
    declared = 'launch_us = "s"'
    text = RUNS + f"\n[units]\n{declared}\n"
    with pytest.raises(LessonError) as info:
        parse_spec(text, "code/demo/runs.toml")
    assert str(info.value) == (
        f"code/demo/runs.toml:{text.splitlines().index(declared) + 1}: [units]: launch_us = 's', but its "
        "name says '\u00b5s'; a field's unit is what its name says: remove the declaration, or rename the field")


# -- a prediction's verdict ----------------------------------------------------------------------

def test_a_prediction_held_where_every_recording_lies_in_its_range(demo_repo: Path):
    """The race's hazard count (120 in every recording) against two predictions: 'at least 100'
    held, 'fewer than 50' died; the wrong word is refused, and explain's backing shows the range."""
    assert errs(demo_repo, "{{ held @ demo/race:reports[severity=Error].hazards within 100–1000 }}") == []
    assert errs(demo_repo, "{{ died @ demo/race:reports[severity=Error].hazards within 0–49 }}") == []
    wrong = errs(demo_repo, "{{ held @ demo/race:reports[severity=Error].hazards within 0–49 }}")
    assert len(wrong) == 1 and "'held'" in wrong[0] and "died" in wrong[0], wrong
    result = run_page(demo_repo, "{{ died @ demo/race:reports[severity=Error].hazards within 0–49 }}")
    assert [c.derived for c in result.claims] == ["'held' where it lies from 0 to 49, 'died' where it does not"]


def test_a_prediction_that_holds_in_some_recordings_only_is_neither(demo_repo: Path):
    """Two recordings of one run, 7 and 0 mismatches at 256 threads: a range that holds one of them
    is no verdict, and the error names both words."""
    record_set(demo_repo, "demo", {"race": [RACE, RACE.replace("          7 |", "          0 |")], "bare": BARE})
    for word in ("held", "died"):
        found = errs(demo_repo, "{{ " + word + " @ demo/race:rows[threads=256].mismatches within 0–0 }}")
        assert len(found) == 1 and "held" in found[0] and "died" in found[0], found


def test_a_verdict_range_must_be_figures_low_end_first(demo_repo: Path):
    found = errs(demo_repo, "{{ held @ demo/race:reports[severity=Error].hazards within 1000–100 }}")
    assert len(found) == 1 and "no range of figures, low end first" in found[0], found
