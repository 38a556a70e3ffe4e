"""Tables and verdicts drawn from the evidence (lessonkit.tables, lessonkit.verdicts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BARE, RACE, RUNS, errs, record_set, run_page

from lessonkit.errors import LessonError
from lessonkit.evidence.spec import parse_spec

DISPLAY = """
[names]
kernel = "kernel"
mismatches = "elements wrong"

[labels.kernel]
k = "the demo kernel"

[labels.run]
race = "racecheck"
bare = "output check"

[formats]
threads = "{} threads"
"""

RACE_2 = RACE.replace("[120 hazards]", "[130 hazards]").replace("7 |        64", "9 |        64")


def _with_display(repo: Path) -> Path:
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text() + DISPLAY)
    return repo


def test_table_rows_columns_and_labels(demo_repo: Path):
    _with_display(demo_repo)
    page = "{{ evidence demo }}\n\n{{ table race:rows rows=kernel cols=threads cell=mismatches }}\n"
    result = run_page(demo_repo, page)
    assert result.errors == []
    lines = [line for line in result.markdown.splitlines() if line.startswith("|")]
    assert lines[0] == ('| kernel | <span class="lk-v">32 threads</span> | <span class="lk-v">256 threads</span> |')
    assert lines[2] == ('| <span class="lk-v">the demo kernel</span> | <span class="lk-v">0</span> | '
                        '<span class="lk-v">7</span> |')


def test_table_cell_that_varies_is_a_range(demo_repo: Path):
    """The smallest and largest the recordings hold (120 and 130), not a range widened past them."""
    record_set(demo_repo, "demo", {"race": [RACE, RACE_2], "bare": RACE})
    page = "{{ evidence demo }}\n\n{{ table race:reports rows=severity cell=hazards }}\n"
    result = run_page(demo_repo, page)
    assert result.errors == []
    assert '| <span class="lk-v">Error</span> | <span class="lk-v">120\u2013130</span> |' in result.markdown


def test_table_template_leaves_out_a_part_whose_field_is_none(demo_repo: Path):
    page = ('{{ evidence demo }}\n\n{{ table race:rows rows=threads cell="{mismatches}[, from {first_bad}]" }}\n')
    md = run_page(demo_repo, page).markdown
    assert '| <span class="lk-v">32</span> | <span class="lk-v">0</span> |' in md
    assert '| <span class="lk-v">256</span> | <span class="lk-v">7, from 64</span> |' in md


def test_table_template_may_not_type_a_figure(demo_repo: Path):
    page = '{{ evidence demo }}\n\n{{ table race:rows rows=threads cell="{mismatches} of 8" }}\n'
    assert any("types a figure" in e for e in errs(demo_repo, page))


def test_table_side_by_side_verdicts(demo_repo: Path):
    _with_display(demo_repo)
    page = "{{ evidence demo }}\n\n{{ table bare:verdicts race:verdicts rows=kernel cols=run cell=verdict }}\n"
    result = run_page(demo_repo, page)
    assert result.errors == []
    assert ('| <span class="lk-v">the demo kernel</span> | <span class="lk-v">right</span> | '
            '<span class="lk-v">1 error, 1 warning at line 4</span> |') in result.markdown
    assert '<span class="lk-v">output check</span> | <span class="lk-v">racecheck</span>' in result.markdown


def test_verdict_claims(demo_repo: Path):
    page = ("{{ evidence demo }}\n\nracecheck said {{ 1 error, 1 warning at line 4 @ race:verdict[kernel=k] }};"
            " bare, the kernel was {{ right @ bare:verdict[kernel=k] }}.\n")
    assert errs(demo_repo, page) == []
    wrong = "{{ evidence demo }}\n\nracecheck was {{ silent @ race:verdict[kernel=k] }}.\n"
    assert any("'1 error, 1 warning at line 4'" in e for e in errs(demo_repo, wrong))


def test_label_shared_by_two_values_is_refused():
    text = RUNS + '\n[labels.kernel]\nk = "scan"\nj = "scan"\n'
    with pytest.raises(LessonError, match="a label must stand for one value"):
        parse_spec(text, "code/demo/runs.toml")
    assert parse_spec(RUNS + '\n[labels.kernel]\nk = "scan"\n', "x").display.label("kernel", "k") == "scan"


def test_produced_values_are_marked_except_where_markdown_shows_text_as_typed(demo_repo: Path):
    import markdown

    claim = "{{ 2 @ race:#reports }}"
    page = (f"{{{{ evidence demo }}}}\n\n## {claim} reports\n\n| run | reports |\n| --- | --- |\n| race | {claim} |\n\n"
            f"[{claim} reports](#x), `{claim}` and ![{claim}](x.png)\n\n```text\n{claim}\n```\n")
    result = run_page(demo_repo, page)
    assert result.errors == []
    md = result.markdown
    assert md.count('<span class="lk-v">2</span>') == 3  # the heading, the table cell, the link text
    assert "`2`" in md and "![2](x.png)" in md and "```text\n2\n```" in md
    html = markdown.markdown(md, extensions=["tables"])
    assert '<h2><span class="lk-v">2</span> reports</h2>' in html
    assert '<td><span class="lk-v">2</span></td>' in html
    assert '<a href="#x"><span class="lk-v">2</span> reports</a>' in html


def test_a_pages_result_depends_on_its_lessons_display_declarations(demo_repo: Path):
    from lessonkit.site.check import CheckedSite

    site = CheckedSite(demo_repo)
    page = "{{ evidence demo }}\n\n{{ table race:rows rows=kernel cols=threads cell=mismatches }}\n"
    site.refresh()
    assert "the demo kernel" not in site.page(page, "docs/p.md").markdown
    _with_display(demo_repo)
    site.refresh()
    assert "the demo kernel" in site.page(page, "docs/p.md").markdown


@pytest.mark.parametrize("table, message", [
    ('[labels.n]\n4194304 = "2^22 elements"\n', "types the figure '2'"),
    ('[labels.run]\nrace = "racecheck at 64 threads"\n', "types the figure '64'"),
    ('[labels.run]\nnope = "a run"\n', "'nope' is not a run of this lesson"),
])
def test_a_label_may_not_type_a_figure_of_its_own(table: str, message: str):
    with pytest.raises(LessonError, match=message):
        parse_spec(RUNS + "\n" + table, "code/demo/runs.toml")
    assert parse_spec(RUNS + '\n[labels.run]\nrace = "racecheck"\n', "x").display.label("run", "race") == "racecheck"


@pytest.mark.parametrize("table, message", [
    # two runs' labels swapped: each names the other's tool
    ('[labels.run]\nrace = "output check"\nbare = "racecheck"\n',
     "bare = 'racecheck': 'racecheck' names 'race' .*, not 'bare'"),
    # two kernels' labels swapped: each names the other kernel
    ('[labels.kernel]\nscanTileRacy = "fixed scan"\nscanTileFixed = "racy scan"\n',
     "scanTileRacy = 'fixed scan': 'fixed' names 'scanTileFixed', not 'scanTileRacy'"),
])
def test_a_label_names_what_it_labels_not_another(table: str, message: str):
    with pytest.raises(LessonError, match=message):
        parse_spec(RUNS + "\n" + table, "code/demo/runs.toml")
    right = '[labels.kernel]\nscanTileRacy = "racy scan"\nscanTileFixed = "fixed scan"\n'
    assert parse_spec(RUNS + "\n" + right, "x").display.label("kernel", "scanTileFixed") == "fixed scan"


def test_large_figures_in_cells_read_as_a_reader_expects(demo_repo: Path):
    import json

    rows = [{"config": "a", "instances": 24092082176, "count": 108192, "rate_per_s": 3.1e10}]
    record_set(demo_repo, "demo", {"race": RACE, "bare": RACE, "res-json": json.dumps({"rows": rows})})
    page = "{{ evidence demo }}\n\n{{ table res-json:rows rows=config cell=count cell=rate_per_s }}\n"
    md = run_page(demo_repo, page).markdown
    assert '<span class="lk-v">108,192</span>' in md and '<span class="lk-v">~3e10</span>' in md


def test_a_verdict_that_differs_between_recordings_says_how_many_say_each(demo_repo: Path):
    other = RACE.replace("demo.cu:4", "demo.cu:5")
    record_set(demo_repo, "demo", {"race": [RACE, other, RACE], "bare": BARE})
    page = "{{ evidence demo }}\n\n{{ table race:verdicts rows=kernel cell=verdict }}\n"
    result = run_page(demo_repo, page)
    assert result.errors == []
    assert ('1 error, 1 warning at line 4 (2 of 3 recordings); 1 error, 1 warning at line 5 (1 of 3 recordings)'
            in result.markdown)
    claim = "{{ evidence demo }}\n\nracecheck: {{ 1 error, 1 warning at line 4 @ race:verdict[kernel=k] }}.\n"
    assert any("varies across 3 recordings of race" in e for e in errs(demo_repo, claim))


@pytest.mark.parametrize("change, verdict", [
    ({"timed_out": True, "exit_code": None}, "hung"),
    ({"exit_code": 255}, "failed, exit code 255"),
    ({}, "-"),
])
def test_a_run_that_printed_no_row_is_judged_by_how_it_ended(demo_repo: Path, change: dict, verdict: str):
    import json

    record_set(demo_repo, "demo", {"race": RACE, "bare": "device: NVIDIA H200 | compute capability 9.0 | warp size 32\n"})
    path = demo_repo / "evidence/demo/manifest.json"
    data = json.loads(path.read_text())
    data["transcripts"]["s1/bare"].update(change)
    path.write_text(json.dumps(data))
    assert errs(demo_repo, f"{{{{ evidence demo }}}}\n\nBare: {{{{ {verdict} @ bare:verdict }}}}.\n") == []


@pytest.mark.parametrize("directive, message", [
    ("{{ table race:rows rows=kernel cell=mismatches colour=red }}", "unknown option 'colour=red'"),
    ("{{ table rows=kernel cell=mismatches }}", "name at least one source"),
    ("{{ table race:rows cell=mismatches }}", "say which key makes the rows"),
    ("{{ table race:rows rows=kernel cols=threads cell=mismatches cell=first_bad }}", "one column per cell="),
    ("{{ table race:nope rows=kernel cell=mismatches }}", "has no collection 'nope'"),
    ("{{ table race:rows rows=colour cell=mismatches }}", "no record of the sources has a field 'colour'"),
])
def test_a_table_that_cannot_be_drawn_is_one_error(demo_repo: Path, directive: str, message: str):
    found = errs(demo_repo, "{{ evidence demo }}\n\n" + directive + "\n")
    assert len(found) == 1 and found[0].startswith("docs/p.md:3: table: ") and message in found[0]


def test_sig_rounds_a_fraction_as_a_rounded_claim_would(demo_repo: Path):
    import json

    rows = [{"config": "a", "ci_high": 3.68881e-05, "share": 0.999816, "n": 100}]
    record_set(demo_repo, "demo", {"race": RACE, "bare": RACE, "res-json": json.dumps({"rows": rows})})
    page = "{{ evidence demo }}\n\n{{ table res-json:rows rows=config cell=ci_high cell=share cell=n sig=2 }}\n"
    md = run_page(demo_repo, page).markdown
    assert ('| <span class="lk-v">a</span> | <span class="lk-v">~0.000037</span> | <span class="lk-v">~1.00</span> | '
            '<span class="lk-v">100</span> |') in md
    assert "sig='x'" in errs(demo_repo, page.replace("sig=2", "sig=x"))[0]


# -- what a run never launched -------------------------------------------------------------------------

BARE_K2 = BARE + "     32 | k2     |          3 |         5 | no\n"  # the output check runs a second kernel


@pytest.fixture
def two_kernels(demo_repo: Path) -> Path:
    """racecheck launched kernel k alone; the output check launched k and k2."""
    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE_K2})
    return demo_repo


def test_a_zero_count_over_a_kernel_the_run_never_launched_is_refused(two_kernels: Path):
    claim = "{{ 0 @ race:#reports[kernel=k2] }}"
    assert errs(two_kernels, "{{ evidence demo }}\n\nracecheck found " + claim + " reports in k2.\n") == [
        ("docs/p.md:3: claim '0' (race:#reports[kernel=k2]): reports[kernel=k2] counts the records of kernel 'k2', "
         "which evidence/demo/s1/race.txt never names: the run did not launch it there (it names k), so a count of 0 "
         "says nothing about k2; cite a run that launched it")]
    # A kernel the run launched: its zero is a finding. A count of what the run did launch stands too.
    assert errs(two_kernels, "{{ evidence demo }}\n\n{{ 0 @ race:#rows[kernel=k,mismatches=3] }} "
                             "and {{ 1 @ bare:#rows[kernel=k2] }}.\n") == []
    # The same over a comparison of sets and a generated figure.
    record_set(two_kernels, "demo", {"race": RACE, "bare": BARE_K2}, set_name="demo-b")
    assert "never names" in errs(two_kernels, "{{ evidence demo }}\n\n{{ 0 @ race:#reports[kernel=k2] in demo = "
                                              "demo-b }}\n")[0]
    assert "never names" in errs(two_kernels, "{{ evidence demo }}\n\n{{ value race:#reports[kernel=k2] }}\n")[0]


def test_a_cell_whose_run_never_launched_its_kernel_says_not_run(two_kernels: Path):
    page = "{{ evidence demo }}\n\n{{ table race:rows rows=kernel:k|k2 cols=threads cell=mismatches }}\n"
    result = run_page(two_kernels, page)
    assert result.errors == []
    assert '| <span class="lk-v">k2</span> | <span class="lk-v">not run</span> | <span class="lk-v">not run</span> |' \
        in result.markdown
    # A kernel the run launched, with no record at that size: the empty text, not "not run".
    result = run_page(two_kernels, page.replace("race:rows", "bare:rows").replace("cols=threads", "cols=threads:32|256"))
    assert result.errors == []
    assert '| <span class="lk-v">k2</span> | <span class="lk-v">3</span> | \u2013 |' in result.markdown


@pytest.mark.parametrize("empty, said", [
    ("none", "'none'"), ("0", "'0'"), ("zero", "'zero'"), ("no reports", "'no'"),
])
def test_an_empty_text_that_states_a_count_is_refused(two_kernels: Path, empty: str, said: str):
    page = f'{{{{ evidence demo }}}}\n\n{{{{ table bare:rows rows=kernel cols=threads cell=mismatches empty="{empty}" }}}}\n'
    assert errs(two_kernels, page) == [
        (f"docs/p.md:3: table: empty={empty!r} states a count ({said}) in a cell that selects no record: no record is "
        "not a count of zero; say what happened, or keep the default empty=\u2013")]


def test_an_empty_text_may_not_say_not_run(two_kernels: Path):
    page = '{{ evidence demo }}\n\n{{ table bare:rows rows=kernel cols=threads cell=mismatches empty="not run" }}\n'
    assert errs(two_kernels, page) == [
        ("docs/p.md:3: table: empty='not run' says 'not run': the table writes 'not run' itself in a cell whose run "
        "never launched its kernel; empty= is for the cells of a kernel the run launched")]
    assert errs(two_kernels, page.replace("not run", "not recorded at this size")) == []
