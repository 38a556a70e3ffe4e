"""Figures generated from the evidence: `{{ value QUERY [sig=N] }}` (lessonkit.pages.values)."""

from __future__ import annotations

import io
from argparse import Namespace
from pathlib import Path

from conftest import BARE, RACE, commit, errs, record_set, run_page

from lessonkit.cli import accept

RACE_2 = RACE.replace("[120 hazards]", "[130 hazards]")
HAZARDS = "race:reports[severity=Error].hazards"


def shown(repo: Path, page: str) -> str:
    result = run_page(repo, "{{ evidence demo }}\n\n" + page)
    assert result.errors == []
    return result.markdown.split("\n", 2)[2]


def walls(repo: Path, race: list[float], bare: list[float]) -> None:
    record_set(repo, "demo", {"race": [RACE] * len(race), "bare": [BARE] * len(bare)},
               walls={"race": race, "bare": bare},
               refresh_ids={"race": ["refresh-1"] * len(race), "bare": ["refresh-1"] * len(bare)})


def test_a_value_every_recording_gives_is_shown_exact_and_marked_produced(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": [RACE, RACE], "bare": BARE})
    assert shown(demo_repo, f"Found {{{{ value {HAZARDS} }}}} hazards.\n") == \
        'Found <span class="lk-v">120</span> hazards.\n'


def test_a_value_that_differs_between_recordings_is_a_range(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": [RACE, RACE_2], "bare": BARE})
    assert shown(demo_repo, f"Found {{{{ value {HAZARDS} }}}} hazards.\n") == \
        'Found <span class="lk-v">120\u2013130</span> hazards.\n'


def test_sig_rounds_a_fraction(demo_repo: Path):
    walls(demo_repo, [30.0, 30.0], [7.0, 7.0])
    assert shown(demo_repo, "{{ value race:wall_s / bare:wall_s sig=2 }} times\n") == \
        '<span class="lk-v">~4.3</span> times\n'
    assert shown(demo_repo, "{{ value race:wall_s / bare:wall_s }} times\n") == \
        '<span class="lk-v">~4</span> times\n'


def test_a_ratio_pairs_recordings_by_repeat(demo_repo: Path):
    # Paired r1/r1 and r2/r2 every ratio is 6; crossed, they would run from 3 to 12.
    walls(demo_repo, [30.0, 60.0], [5.0, 10.0])
    assert shown(demo_repo, "{{ value demo/race:wall_s / demo/bare:wall_s }} times\n") == \
        '<span class="lk-v">~6</span> times\n'


def test_an_unknown_run_or_query_is_a_located_error(demo_repo: Path):
    page = "{{ evidence demo }}\n\nFound {{ value nosuch:wall_s }}.\n\nAnd {{ value race:nofield }}.\n"
    first, second = errs(demo_repo, page)
    assert "docs/p.md:3" in first and "no transcript 'nosuch'" in first
    assert "docs/p.md:5" in second and "value 'race:nofield'" in second
    (bad_sig,) = errs(demo_repo, f"{{{{ evidence demo }}}}\n\n{{{{ value {HAZARDS} sig=9 }}}}\n")
    assert "docs/p.md:3" in bad_sig and "sig='9'" in bad_sig


def test_accept_leaves_a_generated_value_alone(demo_repo: Path):
    walls(demo_repo, [30.0], [5.0])
    page = "# x\n\n{{ evidence demo }}\n\nGenerated {{ value race:wall_s }} s, typed {{ 30 @ race:wall_s }} s.\n"
    (demo_repo / "docs/index.md").write_text(page)
    out = io.StringIO()
    commit(demo_repo)
    code = accept.run(Namespace(repo=demo_repo, yes=True, confirm=["docs/index.md:5"]), stdin=io.StringIO(), out=out)
    assert code == 0, out.getvalue()
    written = (demo_repo / "docs/index.md").read_text()
    assert written.startswith("# x\n\n{{ evidence demo }}\n\nGenerated {{ value race:wall_s }} s, typed {{ ")
    assert "{{ 30 @" not in written  # accept ran, and rewrote the typed claim only
