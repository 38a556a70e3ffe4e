"""`lessonkit accept`: only stale values change, byte for byte; idempotent; broken claims refused;
drift is written on confirmation, a change of meaning only when the author names it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import BARE, PAGE, RACE, commit, record_set

from lessonkit.cli.accept import (
    EXIT_DONE,
    EXIT_REFUSED,
    EXIT_UNCONFIRMED,
    apply_edits,
    classify,
    main,
    plan_accept,
)
from lessonkit.site.check import check_site

STALE = "{{ 120 @ race:reports[severity=Error].hazards }}"
SPREAD = "one value became a range: the recordings no longer agree"
SENTENCE = ("racecheck found 2 reports; the error has [{}] hazards, and it ends with RACECHECK SUMMARY: "
            "2 hazards displayed (1 error, 1 warning).")


def listed(where: str, old: str, new: str, meaning: str = "") -> str:
    """accept's three lines for one change of the demo page's hazards claim."""
    kind = f"change of meaning: {meaning}" if meaning else "drift"
    return (f"{where}: {old} -> {new} ({kind})\n  before: {SENTENCE.format(old)}\n"
            f"  after:  {SENTENCE.format(new)}\n")


class Terminal(io.StringIO):
    """A stdin that says it is a terminal, with the author's answer in it."""

    def isatty(self) -> bool:
        return True


def racing(n: int) -> str:
    return RACE.replace("[120 hazards]", f"[{n} hazards]")


def accept(repo: Path, *args: str, stdin: io.StringIO | None = None) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--repo", str(repo), *args], stdin=stdin or io.StringIO(""), out=out)
    return code, out.getvalue()


@pytest.fixture
def rerecorded(demo_repo: Path) -> Path:
    """The demo, committed, after a refresh: five recordings of race whose Error hazards vary (118 to 125),
    where the page says every recording gives 120 (a change of meaning: one value became a range)."""
    commit(demo_repo)
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('racecheck ./demo"\n', 'racecheck ./demo"\nrepeat = 5\n'))
    record_set(demo_repo, "demo", {"race": [racing(n) for n in (118, 120, 125, 121, 119)], "bare": BARE})
    return demo_repo


@pytest.fixture
def drifted(rerecorded: Path) -> Path:
    """The demo whose committed page says 110–130 over five recordings, after a refresh that gives 128
    to 135: a range that drifted, the same claim of the same kind."""
    page = rerecorded / "docs/index.md"
    page.write_text(PAGE.replace(STALE, "{{ 110\u2013130 @ race:reports[severity=Error].hazards }}"))
    commit(rerecorded)
    record_set(rerecorded, "demo", {"race": [racing(n) for n in (128, 131, 135, 129, 133)], "bare": BARE})
    return rerecorded


def test_only_the_stale_value_changes(drifted: Path):
    page = drifted / "docs/index.md"
    before = page.read_bytes()
    assert accept(drifted, "--yes") == (EXIT_DONE, (
        listed("docs/index.md:7", "110\u2013130", "110\u2013150")
        + "rewrote 1 claim value in 1 page; review with git diff, then run .venv/bin/python -m lessonkit check\n"))
    assert page.read_bytes() == before.replace("{{ 110\u2013130 @".encode(), "{{ 110\u2013150 @".encode())
    assert check_site(drifted) == []


def test_a_change_of_meaning_is_written_only_when_named(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    before = page.read_bytes()
    assert accept(rerecorded, "--yes") == (EXIT_REFUSED, (
        listed("docs/index.md:7", "120", "110\u2013140", SPREAD)
        + "not written without your confirmation by name (1): read each sentence, then run accept again "
          "with --confirm docs/index.md:7\n"))
    assert page.read_bytes() == before
    assert accept(rerecorded, "--yes", "--confirm", "docs/index.md:8")[0] == EXIT_REFUSED
    assert page.read_bytes() == before
    code, out = accept(rerecorded, "--yes", "--confirm", "docs/index.md:7")
    assert code == EXIT_DONE and out.endswith("rewrote 1 claim value in 1 page; review with git diff, then run "
                                              ".venv/bin/python -m lessonkit check\n")
    assert page.read_bytes() == before.replace(b"{{ 120 @", "{{ 110\u2013140 @".encode())
    assert check_site(rerecorded) == []


def test_a_naming_that_matches_nothing_is_said(rerecorded: Path):
    code, out = accept(rerecorded, "--yes", "--confirm", "docs/index.md:7", "--confirm", "docs/index.md:99")
    assert code == EXIT_REFUSED
    assert "--confirm docs/index.md:99: no change of meaning is listed at docs/index.md:99\n" in out


def test_a_claim_moved_to_another_field_is_a_change_of_meaning(drifted: Path):
    """The author points the committed count of reports at the warning's hazards: 2 -> 8 looks like
    drift, but accept may not state the new field's value for them."""
    page = drifted / "docs/index.md"
    page.write_text(page.read_text().replace("{{ 2 @ race:#reports }}",
                                             "{{ 2 @ race:reports[severity=Warning].hazards }}"))
    code, out = accept(drifted, "--yes")
    assert code == EXIT_REFUSED and "{{ 2 @ race:reports[severity=Warning].hazards }}" in page.read_text()
    assert "docs/index.md:7: 2 -> 8 (change of meaning: the claim's reference or query is not where it was" in out
    assert "docs/index.md:7: 110\u2013130 -> 110\u2013150 (drift)" in out


def test_a_claim_whose_reference_stands_where_it_was_is_drift_even_after_prose_edits(drifted: Path):
    page = drifted / "docs/index.md"
    page.write_text("# A new title line\n\nSome new prose.\n\n" + page.read_text())
    code, out = accept(drifted, "--yes")
    assert code == EXIT_DONE and "(drift)" in out


def test_without_a_commit_every_change_needs_its_name(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": racing(121), "bare": BARE})
    code, out = accept(demo_repo, "--yes")
    assert code == EXIT_REFUSED and "120 -> 121 (change of meaning: the claim's reference or query is not" in out


@pytest.mark.parametrize(("old", "new", "why"), [
    ("120", "121", ""),
    ("110\u2013130", "110\u2013140", ""),
    ("~30", "~40", ""),
    ("96 vs 128", "97 vs 130", ""),
    ("Error", "Warning", "a word changed"),
    ("1", "0", "a count went from nonzero to zero"),
    ("0", "3", "a zero became nonzero"),
    ("0\u20133", "1\u20133", "a range no longer reaches zero"),
    ("110\u2013130", "120", "a range collapsed to one value"),
    ("120", "110\u2013130", "one value became a range"),
    ("110\u2013130", "10\u2013400", "the range widened past"),
    ("96 vs 128", "130 vs 128", "the difference changed direction"),
    ("same", "96 vs 128", "a difference became a sameness, or the reverse"),
])
def test_each_change_is_drift_or_a_change_of_meaning(old: str, new: str, why: str):
    said = classify(old, new)
    assert said.startswith(why) if why else said == ""


def test_accept_is_idempotent(drifted: Path):
    rerecorded = drifted
    accept(rerecorded, "--yes")
    page = rerecorded / "docs/index.md"
    after = page.read_bytes()
    assert accept(rerecorded, "--yes") == (EXIT_DONE, "every claim holds; nothing to accept\n")
    assert page.read_bytes() == after


def test_without_a_terminal_or_yes_it_only_lists(drifted: Path):
    rerecorded = drifted
    before = (rerecorded / "docs/index.md").read_bytes()
    assert accept(rerecorded) == (EXIT_UNCONFIRMED, (
        listed("docs/index.md:7", "110\u2013130", "110\u2013150")
        + "nothing written: confirm with --yes (there is no terminal to ask)\n"))
    assert (rerecorded / "docs/index.md").read_bytes() == before


def test_the_author_confirms_or_declines_at_a_terminal(drifted: Path):
    rerecorded = drifted
    before = (rerecorded / "docs/index.md").read_bytes()
    code, out = accept(rerecorded, stdin=Terminal("n\n"))
    assert code == EXIT_UNCONFIRMED and out.endswith("rewrite 1 claim value in 1 page? [y/N] "
                                                     "nothing written: not confirmed\n")
    assert (rerecorded / "docs/index.md").read_bytes() == before
    code, out = accept(rerecorded, stdin=Terminal("y\n"))
    assert code == EXIT_DONE and "{{ 110\u2013150 @" in (rerecorded / "docs/index.md").read_text()


def test_a_claim_that_holds_and_prose_are_never_touched(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    text = ("---\ntitle: demo\n---\n\n" + PAGE
            + "\nThe 120 in prose stays, as does {{ 2 @ race:#reports }} and {{ 110\u2013130 @ "
              "race:reports[severity=Error].hazards }}.\r\nA Windows line end stays too.\n")
    page.write_bytes(text.encode())
    commit(rerecorded)
    accept(rerecorded, "--yes", "--confirm", "docs/index.md:11")
    assert page.read_bytes() == text.replace("{{ 120 @", "{{ 110\u2013140 @").encode()


def test_a_stale_value_in_a_claim_over_two_lines(drifted: Path):
    page = drifted / "docs/index.md"
    page.write_text(page.read_text().replace("{{ 110\u2013130 @ race", "{{ 110\u2013130 @\n  race"))
    commit(drifted)
    assert accept(drifted, "--yes")[0] == EXIT_DONE
    assert "{{ 110\u2013150 @\n  race:reports[severity=Error].hazards }}" in page.read_text()


def test_broken_references_are_refused_and_left_alone(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    page.write_text(PAGE + "\n{{ 3 @ race:#nope }} {{ 3 @ nowhere/race:#reports }} {{ 9 @ race:#reports }}\n")
    commit(rerecorded)
    before = page.read_bytes()
    code, out = accept(rerecorded, "--yes", "--confirm", "docs/index.md:7")
    assert code == EXIT_REFUSED
    assert out == (
        listed("docs/index.md:7", "120", "110\u2013140", SPREAD)
        + "docs/index.md:12: 9 -> 2 (drift)\n"
        "  before: 3 3 [9]\n  after:  3 3 [2]\n"
        "not accepted (2; fix by hand):\n"
        "  docs/index.md:12: claim '3' (race:#nope): evidence/demo/s1/race.r1.txt has no collection 'nope'; it has: "
        "barriers, hazards, reports, rows, uninitialized\n"
        "  docs/index.md:12: no evidence set 'nowhere'; the sets are: demo\n"
        "rewrote 2 claim values in 1 page; review with git diff, then run .venv/bin/python -m lessonkit check\n")
    assert page.read_bytes() == before.replace(b"{{ 120 @", "{{ 110\u2013140 @".encode()).replace(
        b"{{ 9 @ race:#reports", b"{{ 2 @ race:#reports")


def test_values_no_claim_can_state_are_refused(rerecorded: Path):
    mixed = [RACE] * 4 + [RACE.replace("Error: Race", "Warning: Race", 1)]
    record_set(rerecorded, "demo", {"race": mixed, "bare": BARE})
    page = rerecorded / "docs/index.md"
    page.write_text("{{ Error @ demo/race:reports[line=4,hazards=120].severity }}\n")
    assert accept(rerecorded, "--yes") == (EXIT_REFUSED, (
        "not accepted (1; fix by hand):\n"
        "  docs/index.md:1: claim 'Error' (demo/race:reports[line=4,hazards=120].severity) varies across 5 "
        "recordings of race: 'Error', 'Warning'; no one value holds for all of them\n"))


def test_claims_on_evidence_with_errors_are_refused(rerecorded: Path):
    (rerecorded / "evidence/demo/s1/race.r1.txt").write_text(racing(1))  # edited after recording
    page = rerecorded / "docs/index.md"
    before = page.read_bytes()
    code, out = accept(rerecorded, "--yes")
    assert (code, out) == (EXIT_REFUSED, ("evidence/demo: 1 claim on it not accepted while the set has errors "
                           "(.venv/bin/python -m lessonkit check lists them); fix or refresh it, then accept\n"))
    assert page.read_bytes() == before


def test_a_highlighted_line_that_moved(demo_repo: Path):
    commit(demo_repo)
    record_set(demo_repo, "demo", {"race": RACE.replace("demo.cu:4\n", "demo.cu:5\n"), "bare": BARE})
    page = demo_repo / "docs/index.md"
    assert accept(demo_repo, "--yes")[0] == EXIT_DONE
    assert "highlight=5@race:reports[severity=Error].line" in page.read_text()
    assert check_site(demo_repo) == []


def test_rounded_claims_stay_rounded(demo_repo: Path):
    page = demo_repo / "docs/index.md"
    page.write_text("{{ evidence demo }}\nIt took {{ ~4 @ race:wall_s }} s.\n")
    commit(demo_repo)
    assert accept(demo_repo, "--yes")[0] == EXIT_DONE
    assert page.read_text() == "{{ evidence demo }}\nIt took {{ ~2 @ race:wall_s }} s.\n"


def test_the_command_line_runs_accept(rerecorded: Path, capsys):
    from lessonkit.cli.commands import main as cli
    assert cli(["accept", "--repo", str(rerecorded), "--yes", "--confirm", "docs/index.md:7"]) == EXIT_DONE
    assert capsys.readouterr().out.startswith(f"docs/index.md:7: 120 -> 110\u2013140 (change of meaning: {SPREAD})\n")
    assert cli(["accept", "--repo", str(rerecorded)]) == EXIT_DONE
    assert capsys.readouterr().out == "every claim holds; nothing to accept\n"


def test_a_refresh_that_moves_the_sources_lines_leaves_no_stale_line_reference(demo_repo: Path):
    """One comment line added at the top of the source: every line reference follows it after accept."""
    page = ("{{ evidence demo }}\n\n"
            "{{ region demo/demo.cu body highlight=4@race:reports[severity=Error].line,@body+2 }}\n\n"
            "The race is at {{ demo.cu:4 @ race:reports[severity=Error].location }}.\n")
    (demo_repo / "docs/index.md").write_text(page)
    assert plan_accept(demo_repo).edits == []
    source = demo_repo / "code/demo/demo.cu"
    source.write_text("// one more line\n" + source.read_text())
    record_set(demo_repo, "demo", {"race": RACE.replace("demo.cu:4", "demo.cu:5"), "bare": BARE})
    plan = plan_accept(demo_repo)
    assert sorted((e.old, e.new) for e in plan.edits) == [("4", "5"), ("demo.cu:4", "demo.cu:5")]
    apply_edits(demo_repo, plan.edits)
    assert plan_accept(demo_repo).edits == [] and plan_accept(demo_repo).refused == []
    text = (demo_repo / "docs/index.md").read_text()
    assert "highlight=5@race:reports[severity=Error].line,@body+2" in text and "{{ demo.cu:5 @" in text
