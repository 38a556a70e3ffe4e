"""The benchmark's verdict on issue 17's bounds: each bound can fail, and fails the benchmark."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("bench_build", REPO / "scripts/bench_build.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

WITHIN = {"lessonkit_s": 1.4, "build_s_with": 22.0, "check_s": 0.45, "check_s_cold": 3.1,
          "check_s_cold_baseline": 3.3, "reload_missed_errors": 0}


def test_medians_within_every_bound_hold():
    assert all(bench.bounds(WITHIN).values())


@pytest.mark.parametrize("field, value, bound", [
    ("lessonkit_s", 2.3, "lessonkit at most 10% of the build"),
    ("check_s", 0.51, "warm check at most 0.5 s"),
    ("check_s_cold", 3.31, "cold check no slower than the baseline's"),
    ("reload_missed_errors", 1, "every injected error reported on reload"),
])
def test_each_bound_fails_alone(field: str, value: float, bound: str):
    verdict = bench.bounds(dict(WITHIN, **{field: value}))
    assert [name for name, holds in verdict.items() if not holds] == [bound]


def test_without_a_baseline_the_cold_bound_is_not_judged():
    assert bench.bounds(dict(WITHIN, check_s_cold=9.0, check_s_cold_baseline=None))[
        "cold check no slower than the baseline's"]
