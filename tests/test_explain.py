"""`lessonkit explain PAGE`: each sentence that states a figure, and what backs each figure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import BARE, RACE, REPO, record_set

from lessonkit.cli.commands import main as cli
from lessonkit.cli.explain import explain
from lessonkit.site.check import Site

PAGE = ("{{ evidence demo }}\n\nracecheck found {{ 2 @ race:#reports }} reports; the error had\n"
        "{{ 110\u2013130 @ race:reports[severity=Error].hazards }} hazards. It took {{ ~2 @ race:wall_s }} s.\n\n"
        "The GPU was an {{ NVIDIA H200 @ demo:gpu }}.\n")


def test_explain_prints_each_sentence_and_what_backs_each_figure(demo_repo: Path):
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('racecheck ./demo"\n', 'racecheck ./demo"\nrepeat = 3\n'))
    record_set(demo_repo, "demo", {"race": [RACE.replace("[120 hazards]", f"[{n} hazards]") for n in (118, 120, 125)],
                                   "bare": BARE})
    (demo_repo / "docs/p.md").write_text(PAGE)
    lines, errors = explain(demo_repo, demo_repo / "docs/p.md")
    toolkit = "set demo (nvcc 13.0.88, compute-sanitizer 2025.3.1.0)"
    assert errors == []
    assert lines == [
        "docs/p.md:3: racecheck found [2] reports; the error had [110\u2013130] hazards.",
        f"    2: one value every recording gives; the number of reports records; run race of {toolkit}, 3 recordings in 1 session",
        ("    110\u2013130: a range every recording falls in; the field hazards of the reports records where severity "
        f"is Error; run race of {toolkit}, 3 recordings in 1 session"),
        "      recorded, session by session: s1 118\u2013125",
        "docs/p.md:4: It took [~2] s.",
        ("    ~2: a rounded value every recording rounds to ([1.5, 2.5)); the field wall_s, in seconds; "
        f"run race of {toolkit}, 3 recordings in 1 session"),
        "docs/p.md:6: The GPU was an [NVIDIA H200].",
        (f"    NVIDIA H200: as the set records it; the provenance field gpu (the machine and tools the set was "
         f"recorded with); {toolkit}"),
    ]


def test_explain_marks_a_claim_that_does_not_hold_and_exits_1(demo_repo: Path, capsys):
    (demo_repo / "docs/p.md").write_text("{{ evidence demo }}\n\nIt found {{ 3 @ race:#reports }} reports.\n")
    assert cli(["explain", "--repo", str(demo_repo), "docs/p.md"]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines()[1].endswith("(does not hold: see check)")
    assert "docs/p.md:3: claim '3' (race:#reports)" in out.err


def test_each_produced_figure_carries_what_backs_it(demo_repo: Path):
    """The words explain prints are on the page too, on the figure (data-lk-why), for a reader, less the toolkit
    of the page's own set, which the page names above its figures."""
    page = ("{{ evidence demo }}\n\nIt found {{ 2 @ race:#reports }} reports, "
            "{{ value race:reports[severity=Error].hazards }} hazards.\n\n"
            "{{ table race:rows rows=kernel cols=threads cell=mismatches }}\n")
    markdown = Site.load(demo_repo).page(page, "docs/p.md").markdown
    toolkit = "set demo"
    assert "(nvcc 13.0.88, compute-sanitizer 2025.3.1.0)" not in markdown
    assert ('<span class="lk-v" data-lk-why="2: one value every recording gives; the number of reports records; '
            f'run race of {toolkit}, 1 recording in 1 session">2</span>') in markdown
    assert ('data-lk-why="generated from every recording: the field hazards of the reports records where severity '
            f'is Error; run race of {toolkit}, 1 recording in 1 session">120</span>') in markdown
    assert (f'data-lk-why="generated from every recording: the field mismatches; run race of {toolkit}, 1 recording '
            'a run in 1 session; the cell (k, 256)">7</span>') in markdown


def test_explain_shows_a_diagram_s_sentences_as_text_not_markup():
    """A diagram's claims are explained in the words the reader sees, not in the SVG's tags."""
    from lessonkit.cli.explain import explain
    lines, _ = explain(REPO, REPO / "docs/day62-racecheck.md")
    diagram = [line for line in lines if ".svg:" in line]
    assert diagram and not any(mark in line for line in diagram for mark in ("<text", "<tspan", "</", "&lt;"))


def test_explain_says_what_a_claim_derives_from_the_value_found(demo_repo: Path):
    """A claim that adds to or scales what its query finds says so: the bare field would be another meaning."""
    (demo_repo / "docs/p.md").write_text("{{ evidence demo }}\n\nOne more than the hazards: "
                                         "{{ 121 @ race:reports[severity=Error].hazards + 1 }}.\n")
    lines, errors = explain(demo_repo, demo_repo / "docs/p.md")
    assert errors == []
    assert lines[1].startswith("    121: one value every recording gives; the field hazards of the reports records "
                               "where severity is Error, plus 1; run race of set demo")


def test_explain_lists_every_other_figure_a_reader_sees_with_what_stands_behind_it(demo_repo: Path):
    """Figures no claim produced are listed too: generated values and table cells, declared phrases,
    the course's phrases, examples."""
    (demo_repo / "docs/p.md").write_text(
        '---\nnarrative:\n  "7 threads a warp": a made-up example\n---\n{{ evidence demo }}\n\n'
        "Found {{ value race:reports[severity=Error].hazards }} hazards, with 7 threads a warp, as `\\{{ 5 @ x:y }}`.\n")
    lines, errors = explain(demo_repo, demo_repo / "docs/p.md")
    assert errors == []
    at = lines.index("Every other figure a reader sees, and what stands behind it:")
    rest = lines[at + 1:]
    assert rest[0].startswith("docs/p.md:7: 120: generated from every recording: the field hazards of the reports "
                              "records where severity is Error; run race of set demo")
    assert rest[1] == "docs/p.md:7: 7: declared by the page (phrase '7 threads a warp'): a made-up example"
    assert rest[2] == "docs/p.md:7: 5: inside a directive shown as an example, braces and all"
    assert len(rest) == 3


def test_explain_names_both_runs_of_a_ratio(demo_repo: Path):
    """A ratio divided by the wrong run must read wrong: its backing names the numerator's run and the
    denominator's."""
    (demo_repo / "docs/p.md").write_text("{{ evidence demo }}\n\nThe tool cost {{ 1 @ race:wall_s / bare:wall_s }} times.\n")
    lines, _ = explain(demo_repo, demo_repo / "docs/p.md")
    (backing,) = [line for line in lines if line.startswith("    1: a ratio;")]
    assert "numerator: run race of set demo" in backing and "denominator: run bare of set demo" in backing


def _no_toolkit(text: str) -> str:
    """`text` without the toolkits in parentheses: a tooltip leaves out its page's own set's toolkit."""
    return re.sub(r" \(nvcc [^)]*\)", "", text)


@pytest.mark.parametrize("page", sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")))
def test_every_figure_a_reader_sees_on_a_page_is_in_explain(page: str, monkeypatch):
    """The reviewer's view is complete: every figure of the page as rendered (outside a region's code and
    a recording's text, which show their file and recording above them) is listed by explain, a produced
    one with what backs it (its tooltip's text), any other with its phrase, constant or example."""
    from collections import Counter

    from lessonkit.cache import Store
    from lessonkit.pages import audit
    from lessonkit.pages.figures import FIGURE_RE
    from lessonkit.site.check import CheckedSite

    seen = []
    read = audit.read_html
    monkeypatch.setattr(audit, "read_html", lambda html, records=None: seen.append(read(html, records)) or seen[-1])
    lines, errors = explain(REPO, REPO / page)
    assert errors == []
    text = seen[-1]  # the page as the audit read it, with what it marked produced
    listed = "\n".join(lines)
    site = CheckedSite(REPO, store=Store(None), keep="errors")
    site.refresh()
    others = Counter(figure for _, figure, _ in site.figures((REPO / page).read_text(encoding="utf-8"), page))
    unlisted, unbacked = [], []
    for line in text.lines:
        if line.code is not None and text.blocks[line.code].produced:
            continue
        for m in FIGURE_RE.finditer(line.text):
            if line.is_produced(m.start(), m.end()):
                why = line.backing(m.start(), m.end())
                if why is None or _no_toolkit(why.split(";")[0]) not in _no_toolkit(listed):
                    unbacked.append((m.group(), line.text[:80]))
            elif others[m.group()] > 0:
                others[m.group()] -= 1
            else:
                unlisted.append((m.group(), line.text[:80]))
    assert unbacked == [] and unlisted == [], (unbacked[:5], unlisted[:5])


def test_a_backing_names_the_sessions_only_where_the_run_lacks_some():
    """Every figure's backing says how many sessions hold its recordings; naming each one on every
    figure of a page was a fortieth of the page, so they are named only where they are not all the
    sessions the set keeps."""
    from types import SimpleNamespace

    from lessonkit.pages.meaning import _in_sessions
    kept = SimpleNamespace(sessions={"s1": None, "s2": None, "s3": None})
    assert _in_sessions(kept, ["s1", "s2", "s3"]) == " in 3 sessions"
    assert _in_sessions(kept, ["s3"]) == " in 1 session (s3)"
    assert _in_sessions(kept, ["s2", "s3"]) == " in 2 sessions (s2, s3)"
    assert _in_sessions(kept, []) == ""


def test_a_ratios_values_are_listed_by_the_session_its_pair_names():
    """A ratio's value comes from a pair of recordings of one session, which its value carries
    (crossclaims.ratio); the session-by-session list reads it there."""
    from lessonkit.pages.claims import Found, Sample, recorded_spread

    path = "evidence/x/manifest.json"
    pairs = Sample((Found("6.035", path, session_id="s1"), Found("7.212", path, session_id="s1"),
                    Found("11.05", path, session_id="s3")), "a / b", 3)
    assert recorded_spread(pairs) == "s1 6.035\u20137.212; s3 11.05"
    assert recorded_spread(Sample((Found("yes", "p"),), "g", 1)) == ""
