"""Pages: directives expand, claims are checked, every disagreement is reported with page:line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PAGE, RACE, checked, errs, record_set, run_page

from lessonkit.pages.scan import DIRECTIVES
from lessonkit.site.check import Site, check_site, strip_front_matter


def test_good_page_expands(demo_repo: Path):
    result = run_page(demo_repo, PAGE)
    assert result.errors == []
    md = result.markdown
    assert 'linenums="4" title="demo.cu, lines 4\u20135 (body)" hl_lines="1"' in md
    assert 'racecheck found <span class="lk-v">2</span> reports; the error has <span class="lk-v">120</span> hazards,' in md
    assert '\n<div data-lk-slot="0"></div>\n' in md and len(result.blocks) == 1
    html = result.fill(md)
    assert ('<details class="abstract lk-transcript">\n<summary>Transcript demo/race (exit code 0, 1.5 s)</summary>\n'
            '<div class="lk-transcript-body" data-search-exclude>\n') in html
    assert "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" in html
    assert "<code>compute-sanitizer --tool racecheck ./demo</code>" in html
    assert ("Recorded 2026-11-29T12:00:00Z on NVIDIA H200 (compute capability 9.0); driver 580.159.04, "
            "nvcc 13.0.88, compute-sanitizer 2025.3.1.0.") in html
    assert "{{" not in md


def test_claim_that_disagrees(demo_repo: Path):
    assert errs(demo_repo, "\n\nthe error has {{ 121 @ demo/race:reports[severity=Error].hazards }} hazards") == [
        ("docs/p.md:3: claim '121' (demo/race:reports[severity=Error].hazards) disagrees with "
        "evidence/demo/s1/race.txt; it says '120' (line 7)")]


def test_table_cell_claim(demo_repo: Path):
    text = "| threads | mismatches |\n|---|---|\n| 256 | {{ 8 @ demo/race:rows[threads=256,kernel=k].mismatches }} |"
    assert errs(demo_repo, text) == [
        ("docs/p.md:3: claim '8' (demo/race:rows[threads=256,kernel=k].mismatches) disagrees with "
        "evidence/demo/s1/race.txt; it says '7' (line 6)")]


def test_count_and_provenance_claims(demo_repo: Path):
    assert errs(demo_repo, "{{ 2 @ demo/race:#reports }} {{ NVIDIA H200 @ demo:gpu }} {{ 0 @ demo/bare:exit_code }}") == []
    assert errs(demo_repo, "{{ NVIDIA H100 @ demo:gpu }}") == [
        "docs/p.md:1: claim 'NVIDIA H100' (demo:gpu) disagrees with evidence/demo/manifest.json; it says 'NVIDIA H200'"]


def test_summary_quote_in_prose_is_checked(demo_repo: Path):
    text = ("{{ evidence demo }}\n{{ transcript race }}\n{{ 2 @ race:#reports }} reports, and it ends with "
            "RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings).")
    assert checked(demo_repo, text) == [
        ("docs/p.md:3: quote 'RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)' is not, verbatim, a "
        "summary line of every recording of a run cited in its sentence; "
        "they say: 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' in evidence/demo/s1/race.txt (line 13)")]


def test_summary_quote_in_code_block_is_checked(demo_repo: Path):
    text = "{{ 2 @ demo/race:#reports }}\n```text\n========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n```"
    assert len(checked(demo_repo, text)) == 1


def test_summary_quote_on_a_page_that_cites_nothing(demo_repo: Path):
    assert checked(demo_repo, "ERROR SUMMARY: 0 errors") == [
        ("docs/p.md:1: quote 'ERROR SUMMARY: 0 errors' belongs to the run cited in its sentence, and its sentence "
        "cites none; cite the run there with a claim, or write the quote as a claim: {{ QUOTE @ RUN:summary }}")]


def test_summary_mention_without_figures_is_not_a_quote(demo_repo: Path):
    assert checked(demo_repo, "the ERROR SUMMARY: line ends every run") == []


def test_unknown_set_and_transcript(demo_repo: Path):
    assert errs(demo_repo, "{{ 1 @ nope/race:summary }}\n{{ 1 @ demo/nope:summary }}") == [
        "docs/p.md:1: no evidence set 'nope'; the sets are: demo",
        "docs/p.md:2: evidence set 'demo' has no transcript 'nope'; it has: bare, race"]


def test_query_errors(demo_repo: Path):
    assert errs(demo_repo, "{{ 1 @ demo/race:reports.hazards }}\n{{ 1 @ demo/race:nothing }}") == [
        ("docs/p.md:1: claim '1' (demo/race:reports.hazards): reports[] selects 2 records in evidence/demo/s1/race.txt, "
        "not exactly one; add filters that single one out, or write KEY=* to claim every record it selects"),
        ("docs/p.md:2: claim '1' (demo/race:nothing): evidence/demo/s1/race.txt has no value 'nothing'; it has: "
        "#barriers, #hazards, #reports, #rows, #uninitialized, command, compute_capability, compute_sanitizer, date, day, "
        "driver, exclusive, exit_code, gpu, gpu_uuid, hazards_displayed, mode, nvcc, race_errors, race_warnings, "
        "repeats, started, summary, timed_out, tool, wall_s, warp_size")]
    assert errs(demo_repo, "{{ 1 @ demo/race:hazard_displayed }}") == [
        ("docs/p.md:1: claim '1' (demo/race:hazard_displayed): evidence/demo/s1/race.txt has no value "
        "'hazard_displayed'; did you mean 'hazards_displayed'?")]


def test_unreadable_token(demo_repo: Path):
    assert errs(demo_repo, "a {{ 2 race }} b") == [
        ("docs/p.md:1: cannot read '{{ 2 race }}'; expected {{ VALUE @ REF:QUERY }} or a directive: "
        "region, transcript, evidence, provenance, commands, table, diagram")]


def test_escaped_braces_are_left_alone(demo_repo: Path):
    result = run_page(demo_repo, r"write \{{ 2 @ demo/race:#reports }} to claim")
    assert result.errors == [] and result.markdown == "write {{ 2 @ demo/race:#reports }} to claim"


def test_highlight_outside_region(demo_repo: Path):
    assert errs(demo_repo, "{{ region demo/demo.cu body highlight=7@demo/race:rows[threads=256].mismatches }}") == [
        "docs/p.md:1: highlighted line 7 is outside region 'body' of code/demo/demo.cu (lines 4-5)"]
    assert errs(demo_repo, "{{ region demo/demo.cu body highlight=@body+3 }}") == [
        ("docs/p.md:1: highlight '@body+3' is line 6, past the end of region 'body' (lines 4-5); count from its "
         "marker: +1 is its first line")]


def test_a_plain_highlighted_line_number_is_refused(demo_repo: Path):
    assert errs(demo_repo, "{{ region demo/demo.cu body highlight=4 }}") == [
        ("docs/p.md:1: highlight '4' is a plain line number, which goes stale when the file's lines move; bind it: "
         "4@RUN:reports[...].line (a report names it) or @MARKER+N (the Nth line after a snippet marker)")]


def test_a_highlight_bound_to_a_snippet_marker_follows_the_file(demo_repo: Path):
    result = run_page(demo_repo, "{{ region demo/demo.cu body highlight=@body+2 }}")
    assert result.errors == [] and 'linenums="4"' in result.markdown and 'hl_lines="2"' in result.markdown
    source = demo_repo / "code/demo/demo.cu"
    source.write_text("// one more line at the top\n" + source.read_text())
    result = run_page(demo_repo, "{{ region demo/demo.cu body highlight=@body+2 }}")
    assert 'linenums="5"' in result.markdown and 'hl_lines="2"' in result.markdown
    assert "a[threadIdx.x] *= 2.0f;" in result.markdown


@pytest.mark.parametrize("text", ["the race is at racecheck.cu:52.", "see `demo.cu:4` and", "at *demo.cu*:4",
                                  "| demo.cu:4 |", "(sweep.py:10)"])
def test_a_typed_line_reference_in_prose_is_refused(demo_repo: Path, text: str):
    """The audit's allow-list refuses it as it refuses any typed figure, and says why a line's number
    in particular must be a claim."""
    found = checked(demo_repo, f"para\n\n{text}\n")
    assert len(found) == 1 and found[0].startswith("docs/p.md:3: ") and "is a line reference typed by hand" in found[0]


def test_a_line_reference_as_a_claim_passes_and_fails_when_the_line_moves(demo_repo: Path):
    claim = "see {{ demo.cu:4 @ race:reports[severity=Error].location }}"
    assert errs(demo_repo, "{{ evidence demo }}\n\n" + claim) == []
    assert "'demo.cu:4'" in errs(demo_repo, "{{ evidence demo }}\n\n" + claim.replace(":4 @", ":5 @"))[0]
    assert errs(demo_repo, "```text\ndemo.cu:4\n```\n") == []


def test_highlight_checked_against_evidence(demo_repo: Path):
    assert errs(demo_repo, "{{ region demo/demo.cu body highlight=5@demo/race:reports[severity=Error].line }}") == [
        ("docs/p.md:1: claim '5' (demo/race:reports[severity=Error].line) disagrees with evidence/demo/s1/race.txt; "
        "it says '4' (line 7)")]


def test_region_errors_on_a_page(demo_repo: Path):
    assert errs(demo_repo, "\n{{ region demo/demo.cu nope }}\n{{ region ../etc/passwd x }}") == [
        "docs/p.md:2: no region 'nope' in 'code/demo/demo.cu'; the regions there are: body",
        "docs/p.md:3: source path '../etc/passwd' leaves code/ through '..'; asked for by region 'x'"]


def test_a_region_shows_only_code_that_ran(demo_repo: Path):
    """A copy of the lesson's source, changed, shown as if it were the code the transcripts come from."""
    copy = (demo_repo / "code/demo/demo.cu").read_text().replace("int", "long")
    (demo_repo / "code/notes").mkdir()
    (demo_repo / "code/notes/demo.cu").write_text(copy)
    (demo_repo / "code/demo/extra.cu").write_text(copy)
    assert errs(demo_repo, "{{ region notes/demo.cu body }}\n\n{{ region demo/extra.cu body }}") == [
        ("docs/p.md:1: code/notes/demo.cu is not an input of a recording: evidence/notes does not exist; a page "
         "shows only code that ran, so that what it shows is what the transcripts come from: list the file under "
         "inputs in code/notes/runs.toml and refresh the evidence"),
        ("docs/p.md:3: code/demo/extra.cu is not an input of any recording in evidence/demo; a page shows only "
         "code that ran, so that what it shows is what the transcripts come from: list the file under inputs in "
         "code/demo/runs.toml and refresh the evidence")]
    assert errs(demo_repo, "{{ region demo/demo.cu body }}") == []


def test_transcript_is_escaped(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": RACE + "<script>alert(1)</script>\n", "bare": "x"})
    result = run_page(demo_repo, "{{ transcript demo/race }}")
    html = result.fill(result.markdown)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html


def test_all_errors_of_a_page_are_reported(demo_repo: Path):
    text = "{{ 9 @ demo/race:#reports }}\n{{ 9 @ demo/race:hazards_displayed }}\n{{ region demo/demo.cu zzz }}"
    assert len(errs(demo_repo, text)) == 3


def test_front_matter_keeps_line_numbers(demo_repo: Path):
    body, offset = strip_front_matter("---\ntitle: x\n---\n\n{{ 9 @ demo/race:#reports }}\n")
    result = Site.load(demo_repo).page(body, "docs/p.md", offset)
    assert str(result.errors[0]).startswith("docs/p.md:5: claim '9'")


def test_check_site_on_the_demo(demo_repo: Path):
    assert check_site(demo_repo) == []
    (demo_repo / "docs/bad.md").write_text("{{ 3 @ demo/race:#reports }}\n")
    assert [str(e) for e in check_site(demo_repo)] == [
        "docs/bad.md:1: claim '3' (demo/race:#reports) disagrees with evidence/demo/s1/race.txt; it says '2'"]


def test_a_lesson_can_have_several_sets(demo_repo: Path):
    record_set(demo_repo, "demo", {"race": RACE.replace("[120 hazards]", "[90 hazards]"), "bare": "x"},
               set_name="demo-t4", provenance={"gpu": "Tesla T4"})
    text = ("{{ 120 @ demo/race:reports[severity=Error].hazards }} on {{ NVIDIA H200 @ demo:gpu }}, "
            "{{ 90 @ demo-t4/race:reports[severity=Error].hazards }} on {{ Tesla T4 @ demo-t4:gpu }}")
    assert errs(demo_repo, text) == []
    assert check_site(demo_repo) == []


def test_a_line_reference_inside_literal_braces_is_an_example(demo_repo: Path):
    assert errs(demo_repo, r"write `\{{ demo.cu:4 @ race:reports[severity=Error].location }}`") == []


ESCAPED = """\
# Demo

\\{{ evidence demo }}

Where the race is:

  \\{{ region demo/demo.cu body }}

A mention in prose, `\\{{ transcript race }}`, and one inside a line: see \\{{ transcript race }}.

```markdown
\\{{ transcript race }}
```
"""


def test_an_escaped_directive_at_a_line_start_is_a_warning(demo_repo: Path):
    result = Site.load(demo_repo).page(ESCAPED, "docs/day5.md", 2)
    assert [(str(e), e.warning) for e in result.errors] == [
        (("docs/day5.md:5: warning: '\\{{ evidence demo }}' is escaped and shows as text; remove the backslash "
          "to expand it (\\{{ writes literal braces: the evidence directive is not run)"), True),
        (("docs/day5.md:9: warning: '\\{{ region demo/demo.cu body }}' is escaped and shows as text; remove the "
          "backslash to expand it (\\{{ writes literal braces: the region directive is not run)"), True)]
    assert "{{ region demo/demo.cu body }}" in result.markdown  # shown as text, as the warning says
    unescaped = Site.load(demo_repo).page(ESCAPED.replace("\\{{ evidence", "{{ evidence").replace(
        "\\{{ region", "{{ region"), "docs/day5.md")
    assert unescaped.errors == []


@pytest.mark.parametrize("word", DIRECTIVES)
def test_every_directive_escaped_is_warned_alike(demo_repo: Path, word: str):
    """One list of directives (lessonkit.pages.scan.DIRECTIVES): an escaped diagram is warned as an
    escaped table is (the copies of the list had drifted apart)."""
    result = Site.load(demo_repo).page(f"\\{{{{ {word} demo }}}}\n", "docs/day5.md")
    assert [e.message.split(";")[0] for e in result.errors if e.warning] == [
        f"'\\{{{{ {word} demo }}}}' is escaped and shows as text"]


def test_a_reference_page_shows_directives_as_text(demo_repo: Path):
    assert Site.load(demo_repo).page(ESCAPED, "docs/reference/writing.md").errors == []


def test_an_escaped_directive_fails_a_strict_check(demo_repo: Path):
    from test_cli import cli_run

    (demo_repo / "docs" / "day5.md").write_text(ESCAPED)
    done = cli_run("check", "--repo", str(demo_repo), "--strict")
    assert done.returncode == 1 and "docs/day5.md:3: warning: '\\{{ evidence demo }}' is escaped" in done.stderr
    assert cli_run("check", "--repo", str(demo_repo), "--no-strict").returncode == 0


def test_every_directive_the_scanner_knows_has_one_reader():
    """One registry: the scanner's list of directive words and the readers that expand them are the
    same set, so a word cannot be recognised and then fall through, nor a reader go unreachable."""
    from lessonkit.pages.directives import REGISTRY
    from lessonkit.pages.scan import DIRECTIVES

    assert set(REGISTRY) == set(DIRECTIVES) and len(DIRECTIVES) == len(set(DIRECTIVES))
