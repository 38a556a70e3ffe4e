"""Units declared once, scaled claims, and a unit typed beside a claim (lessonkit.units)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BARE, RACE, errs, record_set

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
    found = errs(rates, page("weak in {{ 0.041 @ res-json:rows[config=mp].rate }}% of runs"))
    assert len(found) == 1 and found[0].startswith("docs/p.md:3: ") and "shows a fraction, and '%'" in found[0]
    assert errs(rates, page("weak in {{ 0.041 @ res-json:rows[config=mp].rate }} of runs")) == []


def test_another_unit_typed_after_a_declared_one_is_refused(rates: Path):
    assert len(errs(rates, page("{{ 4100 @ res-json:rows[config=mp].per_100k }} % of runs"))) == 1
    assert errs(rates, page("{{ 4100 @ res-json:rows[config=mp].per_100k }} per 100,000")) == []
    assert len(errs(rates, page("{{ ~2.5 @ res-json:rows[config=mp].wall_s }} ms"))) == 1
    assert errs(rates, page("{{ ~2.5 @ res-json:rows[config=mp].wall_s }} s")) == []


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
