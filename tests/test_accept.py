"""`lessonkit accept`: only stale values change, byte for byte; idempotent; broken claims refused."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import BARE, PAGE, RACE, record_set

from lessonkit.cli.accept import EXIT_DONE, EXIT_REFUSED, EXIT_UNCONFIRMED, main
from lessonkit.site.check import check_site

STALE = "{{ 120 @ race:reports[severity=Error].hazards }}"


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
    """The demo after a refresh: five recordings of race whose Error hazards vary (118 to 125)."""
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('racecheck ./demo"\n', 'racecheck ./demo"\nrepeat = 5\n'))
    record_set(demo_repo, "demo", {"race": [racing(n) for n in (118, 120, 125, 121, 119)], "bare": BARE})
    return demo_repo


def test_only_the_stale_value_changes(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    before = page.read_bytes()
    assert accept(rerecorded, "--yes") == (EXIT_DONE, (
        "docs/index.md:7: 120 -> 110\u2013140\n"
        "rewrote 1 claim value in 1 page; review with git diff, then run python -m lessonkit check\n"))
    assert page.read_bytes() == before.replace(b"{{ 120 @", "{{ 110\u2013140 @".encode())
    assert check_site(rerecorded) == []


def test_accept_is_idempotent(rerecorded: Path):
    accept(rerecorded, "--yes")
    page = rerecorded / "docs/index.md"
    after = page.read_bytes()
    assert accept(rerecorded, "--yes") == (EXIT_DONE, "every claim holds; nothing to accept\n")
    assert page.read_bytes() == after


def test_without_a_terminal_or_yes_it_only_lists(rerecorded: Path):
    before = (rerecorded / "docs/index.md").read_bytes()
    assert accept(rerecorded) == (EXIT_UNCONFIRMED, (
        "docs/index.md:7: 120 -> 110\u2013140\n"
        "nothing written: confirm with --yes (there is no terminal to ask)\n"))
    assert (rerecorded / "docs/index.md").read_bytes() == before


def test_the_author_confirms_or_declines_at_a_terminal(rerecorded: Path):
    before = (rerecorded / "docs/index.md").read_bytes()
    code, out = accept(rerecorded, stdin=Terminal("n\n"))
    assert code == EXIT_UNCONFIRMED and out.endswith("rewrite 1 claim value in 1 page? [y/N] "
                                                     "nothing written: not confirmed\n")
    assert (rerecorded / "docs/index.md").read_bytes() == before
    code, out = accept(rerecorded, stdin=Terminal("y\n"))
    assert code == EXIT_DONE and "{{ 110\u2013140 @" in (rerecorded / "docs/index.md").read_text()


def test_a_claim_that_holds_and_prose_are_never_touched(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    text = ("---\ntitle: demo\n---\n\n" + PAGE
            + "\nThe 120 in prose stays, as does {{ 2 @ race:#reports }} and {{ 110\u2013130 @ "
              "race:reports[severity=Error].hazards }}.\r\nA Windows line end stays too.\n")
    page.write_bytes(text.encode())
    accept(rerecorded, "--yes")
    assert page.read_bytes() == text.replace("{{ 120 @", "{{ 110\u2013140 @").encode()


def test_a_stale_value_in_a_claim_over_two_lines(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    page.write_text(PAGE.replace(STALE, "{{ 120 @\n  race:reports[severity=Error].hazards }}"))
    assert accept(rerecorded, "--yes")[0] == EXIT_DONE
    assert "{{ 110\u2013140 @\n  race:reports[severity=Error].hazards }}" in page.read_text()


def test_broken_references_are_refused_and_left_alone(rerecorded: Path):
    page = rerecorded / "docs/index.md"
    page.write_text(PAGE + "\n{{ 3 @ race:#nope }} {{ 3 @ nowhere/race:#reports }} {{ 9 @ race:#reports }}\n")
    before = page.read_bytes()
    code, out = accept(rerecorded, "--yes")
    assert code == EXIT_REFUSED
    assert out == (
        "docs/index.md:7: 120 -> 110\u2013140\n"
        "docs/index.md:12: 9 -> 2\n"
        "not accepted (2; fix by hand):\n"
        "  docs/index.md:12: claim '3' (race:#nope): evidence/demo/race.r1.txt has no collection 'nope'; it has: "
        "barriers, hazards, reports, rows, uninitialized\n"
        "  docs/index.md:12: no evidence set 'nowhere'; the sets are: demo\n"
        "rewrote 2 claim values in 1 page; review with git diff, then run python -m lessonkit check\n")
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
    (rerecorded / "evidence/demo/race.r1.txt").write_text(racing(1))  # edited after recording
    page = rerecorded / "docs/index.md"
    before = page.read_bytes()
    code, out = accept(rerecorded, "--yes")
    assert (code, out) == (EXIT_REFUSED, ("evidence/demo: 1 claim on it not accepted while the set has errors "
                           "(python -m lessonkit check lists them); fix or refresh it, then accept\n"))
    assert page.read_bytes() == before


def test_a_highlighted_line_that_moved(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": RACE.replace("demo.cu:4\n", "demo.cu:5\n"), "bare": BARE})
    page = demo_repo / "docs/index.md"
    assert accept(demo_repo, "--yes")[0] == EXIT_DONE
    assert "highlight=5@race:reports[severity=Error].line" in page.read_text()
    assert check_site(demo_repo) == []


def test_rounded_claims_stay_rounded(demo_repo: Path):
    page = demo_repo / "docs/index.md"
    page.write_text("{{ evidence demo }}\nIt took {{ ~4 @ race:wall_s }} s.\n")
    assert accept(demo_repo, "--yes")[0] == EXIT_DONE
    assert page.read_text() == "{{ evidence demo }}\nIt took {{ ~2 @ race:wall_s }} s.\n"


def test_the_command_line_runs_accept(rerecorded: Path, capsys):
    from lessonkit.cli.commands import main as cli
    assert cli(["accept", "--repo", str(rerecorded), "--yes"]) == EXIT_DONE
    assert capsys.readouterr().out.startswith("docs/index.md:7: 120 -> 110\u2013140\n")
    assert cli(["accept", "--repo", str(rerecorded)]) == EXIT_DONE
    assert capsys.readouterr().out == "every claim holds; nothing to accept\n"
