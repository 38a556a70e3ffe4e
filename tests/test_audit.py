"""The rendered-page audit (lessonkit.pages.audit): what a reader sees, against the evidence cited.

Each refused class has a fixture page; each test fails when the mechanism it covers is removed:
the figure rule, the report-line rule, the code-block rule, the Unicode folding, the produced()
marks and the contexts of claims that cannot carry one, the refusal of the core's marks in a
page's own markup, the narrative declarations, and the three places the audit runs (the hooks,
lessonkit.site.mdext, verify-site).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import markdown
import pytest
from conftest import REPO, checked, errs, run_page

from lessonkit.cache import Store
from lessonkit.errors import LessonErrors
from lessonkit.pages.fold import shown, skeleton
from lessonkit.pages.frontmatter import read_front_matter
from lessonkit.pages.marks import Marks
from lessonkit.pages.readertext import read_html
from lessonkit.site.check import Site, check_site
from lessonkit.site.mdext import LessonkitExtension
from lessonkit.site.rendered import Renderer
from lessonkit.site.verdict import rendering_key
from lessonkit.site.verify import CHECKED_MARK, START_MARK, verify_site

ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", PYTHONPATH=str(REPO))
HEAD = "{{ evidence demo }}\n\n"
CLAIM_120 = "{{ 120 @ race:reports[severity=Error].hazards }}"
FIGURE_120 = ("docs/p.md:3: figure '120' is typed, not produced: the evidence says 120 (in demo/race: "
              "reports.hazards); write it as a claim, {{ 120 @ RUN:QUERY }}, or on the program's constant that fixes it, {{ 120 @ FILE:NAME }}, or, if it names or numbers "
              "something rather than measuring it, declare the words around it in the front matter: "
              'narrative: {"has 120 hazards": "why"}')
FIGURE_121 = ("docs/p.md:3: figure '121' is typed, not produced: no claim, directive or table produced it; "
              "write it as a claim, {{ 121 @ RUN:QUERY }}, or on the program's constant that fixes it, {{ 121 @ FILE:NAME }}, or, if it names or numbers something rather than "
              'measuring it, declare the words around it in the front matter: narrative: {"has 121 hazards": "why"}')


def audit(repo: Path, text: str) -> list[str]:
    """Every error of `text` as the page docs/p.md, its Markdown's and its rendered HTML's, as
    `lessonkit check` reports them."""
    return checked(repo, text)


# -- figures -------------------------------------------------------------------------------------

def test_a_typed_figure_is_refused_whether_or_not_the_evidence_holds_it(demo_repo: Path):
    """An allow-list: a figure is produced or declared; a wrong figure fails as a true one does."""
    assert audit(demo_repo, HEAD + "The error has 120 hazards.\n") == [FIGURE_120]
    assert audit(demo_repo, HEAD + f"The error has {CLAIM_120} hazards.\n") == []
    assert audit(demo_repo, HEAD + "The error has 121 hazards.\n") == [FIGURE_121]  # not the evidence's
    assert audit(demo_repo, HEAD + "In every recording it counted 203,517 hazards.\n")[0].startswith(
        "docs/p.md:3: figure '203,517' is typed, not produced: no claim, directive or table produced it")


def test_every_page_is_audited_not_only_those_that_cite_evidence(demo_repo: Path):
    assert audit(demo_repo, "# Home\n\nThe course found 42 races.\n")[0].startswith(
        "docs/p.md:3: figure '42' is typed, not produced")


@pytest.mark.parametrize("typed", [
    "The error has **1**20 hazards.",                 # markup splits it for the Markdown, not for a reader
    "The error has 1<b>20</b> hazards.",
    "The error has 𝟏𝟐𝟎 hazards.",                    # mathematical bold digits: NFKC reads 120
    "The error has １２０ hazards.",                  # fullwidth digits
    "The error has 120\n hazards.",
    "![the error has 120 hazards](x.png)",            # alt text
    '<abbr title="the error has 120 hazards">h</abbr>',
    '<svg viewBox="0 0 10 10"><text x="0" y="5">120 hazards</text></svg>',
])
def test_a_figure_is_read_as_a_reader_sees_it(demo_repo: Path, typed: str):
    assert any("figure '120' is typed, not produced: the evidence says 120" in e
               for e in audit(demo_repo, HEAD + typed + "\n")), audit(demo_repo, HEAD + typed + "\n")


@pytest.mark.parametrize("text", [
    f"The error has {CLAIM_120} hazards.",
    f"The error has `{CLAIM_120} hazards` in code.",          # no span in a code span: its context is kept
    f"```text\nthe error has {CLAIM_120} hazards\n```",       # nor in a code block
    f"A `code span over\ntwo lines, {CLAIM_120} hazards` too.",  # nor in a code span a line opened
])
def test_a_claimed_figure_passes_wherever_it_stands(demo_repo: Path, text: str):
    assert audit(demo_repo, HEAD + text + "\n") == []


def test_a_narrative_phrase_covers_its_own_words_and_nothing_else(demo_repo: Path):
    page = HEAD + "Day 120 of the course: the error has 120 hazards.\n"
    front = "---\nnarrative:\n  {}\n---\n"
    assert audit(demo_repo, front.format('"day 120": the course day') + page) == [FIGURE_120.replace(":3:", ":7:")]
    assert audit(demo_repo, front.format('"Day  120 of": the course day') + page) == [
        FIGURE_120.replace(":3:", ":7:")]  # white space is any white space
    assert audit(demo_repo, front.format('"day 120": \'\'') + page)[0] == (
        "docs/p.md:3: narrative phrase 'day 120' needs a reason: \"day 120\": \"what it names, and why no "
        "recording holds it\"")
    assert audit(demo_repo, front.format('"day 121": never shown') + page)[-1] == (
        "docs/p.md:3: narrative figure 'day 121' is declared, but the page shows it nowhere outside a claim; "
        "remove the declaration")


def test_a_figure_alone_is_no_narrative_key(demo_repo: Path):
    """A bare number would cover that number wherever it stands: every lone 120 on the page."""
    page = HEAD + "Day 120 of the course: the error has 120 hazards.\n"
    errors = audit(demo_repo, '---\nnarrative:\n  "120": the course day\n---\n' + page)
    assert errors[0] == ("docs/p.md:3: narrative key '120' is a figure without a word: it would cover that figure "
                         "wherever it stands; write the words around it, as the reader reads them ('32 threads "
                         "a block', 'day 27')")
    assert any(e.startswith("docs/p.md:7: figure '120' is typed") for e in errors)


def test_no_course_phrase_covers_an_index_a_recording_names(demo_repo: Path):
    """The course's own phrases (narrative.yml) name days, steps, predictions and the like, never a
    thread, warp or lane: those indexes are what a tool's records print ("thread 64", "warp 3"), so a
    page declares the words it explains one with, and a sentence reading one off a record is refused."""
    (demo_repo / "narrative.yml").write_text((REPO / "narrative.yml").read_text(encoding="utf-8"))
    for sentence in ("The first record names thread 0.", "No record names warp 3.", "It stopped at lane 5."):
        errors = audit(demo_repo, HEAD + sentence + "\n")
        assert len(errors) == 1 and errors[0].startswith("docs/p.md:3: figure '"), (sentence, errors)
    assert audit(demo_repo, HEAD + "Day 27 came first.\n") == []  # the course's phrases still hold
    declared = '---\nnarrative:\n  Only thread 0 reads: the one thread of a block the branch picks\n---\n'
    assert audit(demo_repo, declared + HEAD + "Only thread 0 reads the flag.\n") == []
    assert audit(demo_repo, declared + HEAD + "Only thread 0 reads the flag. The record names thread 0.\n") != []


def test_the_course_declares_its_phrases_once(demo_repo: Path):
    page = HEAD + "Day 120 of the course: the error has {{ 120 @ race:reports[severity=Error].hazards }} hazards.\n"
    assert audit(demo_repo, page)[0].startswith("docs/p.md:3: figure '120' is typed")
    (demo_repo / "narrative.yml").write_text("day N: a day of the course\n")
    assert audit(demo_repo, page) == []
    assert audit(demo_repo, page.replace("Day 120 of", "Week 120 of"))[0].startswith("docs/p.md:3: figure '120'")


@pytest.mark.parametrize(("text", "error"), [
    ("N: any figure\n", "narrative.yml:1: narrative phrase 'N' is N without a word: it would cover every figure"),
    ("day N: ''\n", "narrative.yml:1: narrative phrase 'day N' needs a reason"),
    ("day: a day\n", "narrative.yml:1: narrative phrase 'day' holds no figure"),
    ("- day N\n", "narrative.yml:1: must map each phrase to the reason"),
    ("day N: [\n", "narrative.yml:2: cannot read"),
])
def test_a_broken_course_file_is_one_located_error(demo_repo: Path, text: str, error: str):
    (demo_repo / "narrative.yml").write_text(text)
    found = [str(e) for e in check_site(demo_repo, store=Store(None)) if not e.warning]
    assert len(found) == 1 and found[0].startswith(error), found


def test_a_toolkit_is_named_with_a_version_the_evidence_was_recorded_with(demo_repo: Path):
    assert audit(demo_repo, HEAD + "Recorded with CUDA 13.0 and nvcc 13.0.88.\n") == []
    assert audit(demo_repo, HEAD + "Checked by compute-sanitizer 2025.3 (Compute Sanitizer 2025.3.1.0).\n") == []
    (wrong,) = audit(demo_repo, HEAD + "Checked by compute-sanitizer 2024.1.\n")
    assert wrong.startswith("docs/p.md:3: 'compute-sanitizer 2024.1' names a version no evidence set was recorded "
                            "with; the sets were recorded with compute-sanitizer 2025.3.1.0")
    (wrong,) = audit(demo_repo, HEAD + "Recorded with CUDA 11.8.\n")
    assert wrong.startswith("docs/p.md:3: 'CUDA 11.8' names a version no evidence set was recorded with; the sets "
                            "were recorded with CUDA 13.0.88")
    declared = '---\nnarrative:\n  "CUDA 11.8 removed": a release the page names, documented by NVIDIA\n---\n'
    assert audit(demo_repo, declared + HEAD + "CUDA 11.8 removed it.\n") == []


def test_a_gpu_is_named_as_the_evidence_was_recorded_on_it(demo_repo: Path):
    """The demo set was recorded on an NVIDIA H200: naming another GPU beside the results is refused,
    unless a claim produced the name or a declared phrase names it on purpose."""
    assert audit(demo_repo, HEAD + "On the H200 the race showed.\n") == []
    (wrong,) = audit(demo_repo, HEAD + "On the H100 the race showed.\n")
    assert wrong == ("docs/p.md:3: the GPU 'H100' is named, but the site's evidence was recorded on H200: a reader "
                     "takes a GPU named beside the results for the one they were recorded on; produce the name from "
                     "the evidence, {{ NAME @ SET:gpu }}, or, if the page names another GPU on purpose, declare the "
                     'phrase: narrative: {"the H100 the": "why"}')
    assert audit(demo_repo, HEAD + "On the {{ NVIDIA H200 @ demo:gpu }} the race showed.\n") == []
    declared = '---\nnarrative:\n  "on a T4": a build hint for another GPU\n---\n'
    assert audit(demo_repo, declared + HEAD + "Build with sm_75 on a T4.\n") == []
    assert audit(demo_repo, HEAD + "Build with sm_75 on a T4.\n")[0].startswith(
        "docs/p.md:3: the GPU 'T4' is named, but the site's evidence was recorded on H200")
    assert audit(demo_repo, HEAD + "Write `\\{{ NVIDIA A100 @ demo:gpu }}` as an example.\n") == []


@pytest.mark.parametrize(("text", "word"), [
    ("All three reports came from one launch.", "three"),
    ("The run gave two racy reports.", "two"),
    ("A hundred launches passed.", "hundred"),
    ("The hundred-launch test passed.", "hundred"),
])
def test_a_count_word_before_a_counted_noun_is_a_figure(demo_repo: Path, text: str, word: str):
    errors = audit(demo_repo, HEAD + text + "\n")
    assert len(errors) == 1 and errors[0].startswith(f"docs/p.md:3: the count {word!r} before"), errors


def test_a_count_word_holds_as_a_claim(demo_repo: Path):
    assert audit(demo_repo, HEAD + "Both, {{ two @ race:#reports }} reports, came from one launch.\n") == []
    assert "claim 'three'" in audit(demo_repo, HEAD + "All {{ three @ race:#reports }} reports.\n")[0]


@pytest.mark.parametrize(("text", "what"), [
    ("![a chart](chart.png)", "a <img> (chart.png) shows the reader text no check can read"),
    ('<video src="chart.mp4"></video>', "a <video> (chart.mp4) shows the reader text"),
    ("See [the chart](chart.svg).", "the link to chart.svg opens a file whose text no check can read"),
    ("## Races {: data-toc-label=\"Races (3 found)\" }", "data-toc-label names the heading otherwise"),
])
def test_places_the_audit_cannot_read_are_refused(demo_repo: Path, text: str, what: str):
    errors = audit(demo_repo, HEAD + text + "\n")
    assert any(e.startswith("docs/p.md:3: " + what) for e in errors), errors


def test_a_checkbox_is_a_verdict_no_check_reads_and_is_refused(demo_repo: Path):
    """A ticked box reads as "held" whatever the evidence says: refused, written as a task list
    (pymdownx.tasklist) or as HTML in the page."""
    message = "a checkbox shows the reader a verdict, ticked or not, that no check can read"
    errors = audit(demo_repo, HEAD + "Predictions:\n\n- one\n- <input type=\"checkbox\" checked disabled> two\n")
    assert [e for e in errors if message in e] == [(f"docs/p.md:6: {message} (its state is no text); say in words "
                                                   "what held and what did not, with the claim that shows it, "
                                                   "and leave the box out")], errors
    config = demo_repo / "mkdocs.yml"
    config.write_text(config.read_text().replace("  - pymdownx.details\n", "  - pymdownx.details\n  - pymdownx.tasklist\n"))
    errors = audit(demo_repo, HEAD + "Predictions:\n\n- [ ] one\n- [x] two\n")
    assert [e.split(": ", 1)[0] for e in errors if message in e] == ["docs/p.md:5"], errors


def test_the_title_is_audited(demo_repo: Path):
    errors = audit(demo_repo, "---\ntitle: 120 hazards found\n---\n" + HEAD + "Text.\n")
    assert errors[0].startswith("docs/p.md:2: the title '120 hazards found' shows the figure '120'"), errors


def test_a_digit_of_another_script_is_refused(demo_repo: Path):
    assert audit(demo_repo, HEAD + "The error has ১২০ hazards.\n") == [
        ("docs/p.md:3: the digit '১' (BENGALI DIGIT ONE) is of another script: a reader may read it as another "
         "figure; write the figure in the digits 0 to 9")]


def test_a_finding_names_the_line_its_text_comes_from(demo_repo: Path):
    text = HEAD + f"Some {CLAIM_120} hazards.\n\nNo figure here.\n\nAgain, 120 hazards.\n"
    assert [e.split(":")[1] for e in audit(demo_repo, text)] == ["7"]


# -- report and summary lines --------------------------------------------------------------------

@pytest.mark.parametrize("typed", [
    "> ========= Error: Race reported between Read access",      # a blockquote
    "<pre>Error: Race reported between Read access</pre>",       # raw <pre>, no prefix
    "racecheck said: Barrier error detected.",
    "Potential RAW hazard detected at __shared__ 0x8.",
    "𝐑ace reported between Read access and Write access",  # a mathematical bold R
])
def test_a_typed_report_line_is_refused_whatever_carries_it(demo_repo: Path, typed: str):
    found = [e for e in audit(demo_repo, HEAD + typed + "\n") if "compute-sanitizer output" in e]
    assert len(found) == 1 and found[0].startswith("docs/p.md:3: a reader sees compute-sanitizer output")


@pytest.mark.parametrize("typed", [
    "𝐑𝐀𝐂𝐄𝐂𝐇𝐄𝐂𝐊 SUMMARY: 2 hazards displayed (1 error, 1 warning)",   # mathematical bold letters
    "ERR0R SUMMARY: 0 errors",                                           # a digit zero for a capital O
    "RACECHECK SUMMARY: 2 hazards displayed (𝟏 error, 1 warning)",  # (the Markdown's rule sees this one)
])
def test_a_disguised_summary_line_is_refused(demo_repo: Path, typed: str):
    errors = audit(demo_repo, HEAD + "The {{ 2 @ race:#reports }} reports end with " + typed + "\n")
    assert len(errors) == 1 and errors[0].startswith("docs/p.md:3: "), errors
    assert "a reader sees the summary line" in errors[0] or "is not, verbatim, a summary line" in errors[0]


def test_a_quoted_summary_of_the_evidence_passes_and_a_recorded_transcript_is_no_typed_output(demo_repo: Path):
    text = HEAD + ("racecheck found {{ 2 @ race:#reports }} reports and ended with "
                   "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning).\n\n{{ transcript race }}\n")
    assert audit(demo_repo, text) == []


def test_folding(demo_repo: Path):
    assert shown("𝐑𝐀𝐂𝐄 ２") == "RACE 2"
    assert skeleton("ERR0R SUMMARY") == skeleton("error summary") == "error summary"
    assert skeleton("RАСЕ") == "race"  # Cyrillic А, С, Е


# -- code that looks like a region ---------------------------------------------------------------

CUDA = "a[threadIdx.x] += 2.5f;"


@pytest.mark.parametrize("block", [
    f'```cuda linenums="4"\n{CUDA}\n```',
    f'```cu\n{CUDA}\n```',
    f'```cpp\n{CUDA}\n```',
    f'```c++\n{CUDA}\n```',
    f'~~~{{.cuda linenums="4"}}\n{CUDA}\n~~~',
    f'<pre><code class="language-cuda">{CUDA}</code></pre>',
])
def test_code_in_the_lessons_language_comes_from_a_region(demo_repo: Path, block: str):
    errors = audit(demo_repo, HEAD + block + "\n")
    assert [e.split(": ", 1)[0] for e in errors] == ["docs/p.md:3"], errors
    assert re.search(r"a (cuda|cu|cpp|c\+\+) code block that no region directive produced looks like the lesson's "
                     "program", errors[0])


def test_a_sketch_says_so_and_a_region_passes(demo_repo: Path):
    assert audit(demo_repo, HEAD + f'```cuda title="sketch, not the lesson\'s program"\n{CUDA}\n```\n') == []
    assert audit(demo_repo, HEAD + "{{ region demo/demo.cu body }}\n") == []
    # no .py input in this lesson, so no region is expected, but its figure is typed like any other
    assert [e[:40] for e in audit(demo_repo, HEAD + f"```python\n{CUDA}\n```\n")] == [
        "docs/p.md:4: figure '2.5' is typed, not "]


@pytest.mark.parametrize("forged, refused", [
    (f'```{{.cuda .lk-region linenums="4"}}\n{CUDA}\n```', "code block that no region directive produced"),
    ('<span class="lk-v">120</span> hazards', "figure '120' is typed, not produced"),
    ('<details class="lk-transcript"><pre>========= Error: Race reported between</pre></details>',
     "compute-sanitizer output '========= Error: Race reported between' that no transcript produced"),
    ('<p class="lk-v">The error has 120 hazards.</p>', "figure '120' is typed, not produced"),
    ('<span class="lk-v" data-lk-why="2: one value every recording gives">see</span>', None),
    ('<div data-lk-slot="0"></div>', None),
])
def test_a_page_cannot_forge_the_cores_marks(demo_repo: Path, forged: str, refused: str | None):
    """The audit trusts only the marks in band (lessonkit.pages.marks): what a core class would have passed
    is refused as what it is, and an element bearing the core's class or attribute outside every mark
    is refused too (the site's script acts on it: a tooltip saying what backs nothing)."""
    errors = audit(demo_repo, HEAD + forged + "\n")
    assert any("is a mark of what lessonkit produced from the evidence" in e for e in errors), errors
    assert refused is None or any(refused in e for e in errors), errors


# -- where the audit runs ------------------------------------------------------------------------

def test_the_markdown_extension_audits_the_page(demo_repo: Path):
    (demo_repo / "docs/p.md").write_text(HEAD + "The error has 120 hazards.\n")
    ext = LessonkitExtension(repo=str(demo_repo), page="docs/p.md")
    with pytest.raises(LessonErrors) as caught:
        markdown.markdown(HEAD + "The error has 120 hazards.\n", extensions=[ext])
    assert [str(e) for e in caught.value.errors] == [FIGURE_120]


def test_verify_site_audits_a_built_page(demo_repo: Path, tmp_path: Path):
    source = (demo_repo / "docs/index.md").read_text()
    assert checked(demo_repo, source, "docs/index.md") == []
    result = Site.load(demo_repo).page(source, "docs/index.md")
    renderer = Renderer(rendering_key(demo_repo))
    site = tmp_path / "site"
    (site / "search").mkdir(parents=True)
    (site / "search/search_index.json").write_text('{"docs": [{"location": ""}]}')  # the build's list of pages
    page = f"<html><nav>Day 120</nav>{START_MARK}{result.fill(renderer.render(result))}{CHECKED_MARK}</html>"
    (site / "index.html").write_text(page)
    (site / "evidence/demo/s1").mkdir(parents=True)  # the recording the page shows, as a build publishes it
    (site / "evidence/demo/s1/race.txt").write_bytes((demo_repo / "evidence/demo/s1/race.txt").read_bytes())
    assert verify_site(site, demo_repo) == []
    (site / "index.html").write_text(page.replace(CHECKED_MARK, "<p>It had 120 hazards.</p>" + CHECKED_MARK))
    # The audit reads the repository's rendering, with its marks; text the built page has and that
    # rendering lacks is reported without a line: the engine added it, or a hand after the build.
    assert [str(e) for e in verify_site(site, demo_repo)] == [(
        f"{(site / 'index.html').as_posix()}: was changed after the build: it shows '<p> It had 120 hazards. </p>', "
        "which its Markdown does not render; build the site again from the repository")]


def test_the_build_fails_on_what_only_the_audit_sees(demo_repo: Path):
    page = demo_repo / "docs/index.md"
    page.write_text(page.read_text() + "\n> ========= Error: Race reported between Read access\n")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(demo_repo / "site")],
                          cwd=demo_repo, capture_output=True, text=True, env=ENV, timeout=180, check=False)
    assert done.returncode != 0
    assert ("docs/index.md:12: a reader sees compute-sanitizer output '========= Error: Race reported "
            "between Read access' that no transcript produced") in done.stderr, done.stderr


@pytest.mark.parametrize("typed, error", [
    ("The error had 120 hazards.", FIGURE_120.replace("docs/p.md:3", "docs/index.md:12").replace("has 120", "had 120")),
    ("> ========= Error: Race reported between Read access",
     ("docs/index.md:12: a reader sees compute-sanitizer output '========= Error: Race reported between Read "
      "access' that no transcript produced; show what a run printed with {{ transcript RUN }}")),
])
def test_check_fails_on_what_only_the_audit_sees(demo_repo: Path, typed: str, error: str):
    """`lessonkit check` renders each page and audits it as the build does: a page edit that no rule
    of the Markdown refuses fails check, named at its line, from cold and from the cache."""
    from test_cli import cli_run

    page = demo_repo / "docs/index.md"
    assert errs(demo_repo, page.read_text() + "\n" + typed + "\n") == []  # the Markdown's rules pass it
    page.write_text(page.read_text() + "\n" + typed + "\n")
    for args in (("--no-cache",), (), ()):  # the second plain run answers from the cache on disk
        done = cli_run("check", "--repo", str(demo_repo), *args)
        assert done.returncode == 1 and done.stderr.splitlines() == [error, "1 error found"], done.stderr


def test_a_row_label_beside_a_claim_is_refused_with_the_table_and_without_claims_is_a_typed_figure(demo_repo: Path):
    table = ("| threads | mismatches |\n| ---: | ---: |\n"
             "| 256 | {{ 7 @ race:rows[threads=256,kernel=k].mismatches }} |\n")
    assert [e.split(": ", 1)[1][:35] for e in audit(demo_repo, HEAD + table)] == [
        "a claim in a table written by hand:", "figure '256' is typed, not produced"]
    unbound = table.replace("{{ 7 @ race:rows[threads=256,kernel=k].mismatches }}", "some")
    assert [e.split(": ", 1)[1][:14] for e in audit(demo_repo, HEAD + unbound)] == ["figure '256' i"]


# -- front matter ----------------------------------------------------------------------------------

def test_a_front_matter_key_that_is_not_text_is_refused_naming_its_line():
    source = '---\nnarrative:\n  day 62: the day\n  32: a block size\n  "64": another\n  0.50: a ratio\n---\n# P\n'
    front = read_front_matter(source, "docs/p.md")
    assert [str(e) for e in front.errors] == [
        ("docs/p.md:4: front-matter key '32' is read by YAML as a number, not as text (Zensical refuses the "
        "page: 'metadata mapping keys must be strings'); quote it: \"32\": ..."),
        ("docs/p.md:6: front-matter key '0.50' is read by YAML as a number, not as text (Zensical refuses the "
        "page: 'metadata mapping keys must be strings'); quote it: \"0.50\": ...")]
    quoted = read_front_matter(source.replace("  32:", '  "32":').replace("  0.50:", '  "0.50":'), "docs/p.md")
    assert quoted.errors == () and quoted.lines == 7
    assert quoted.meta == {"narrative": {"day 62": "the day", "32": "a block size", "64": "another",
                                         "0.50": "a ratio"}}


def test_a_bare_number_key_is_one_error_naming_its_cause(demo_repo: Path):
    page = HEAD + "Day 120 of the course: the error has 120 hazards.\n"
    assert audit(demo_repo, "---\nnarrative:\n  120: the course day\n---\n" + page)[0] == (
        "docs/p.md:3: front-matter key '120' is read by YAML as a number, not as text (Zensical refuses the "
        "page: 'metadata mapping keys must be strings'); quote it: \"120\": ...")


def test_check_refuses_a_page_whose_front_matter_has_a_key_that_is_not_text(demo_repo: Path):
    page = demo_repo / "docs" / "index.md"
    page.write_text("---\nnarrative:\n  120: the course day\n---\n" + page.read_text(encoding="utf-8"),
                    encoding="utf-8")
    assert [str(e) for e in check_site(demo_repo, store=Store(None)) if not e.warning] == [
        ("docs/index.md:3: front-matter key '120' is read by YAML as a number, not as text (Zensical refuses "
        "the page: 'metadata mapping keys must be strings'); quote it: \"120\": ...")]


def test_a_count_word_is_declared_with_the_words_around_it(demo_repo: Path):
    page = HEAD + "The two races of the sketch.\n"
    assert audit(demo_repo, '---\nnarrative:\n  "two races of the sketch": races in the drawing, not a run\n---\n'
                 + page) == []
    assert "is a figure without a word" in audit(demo_repo, '---\nnarrative:\n  "two": a count\n---\n' + page)[0]


def test_a_summary_whose_every_figure_is_a_claim_passes(demo_repo: Path):
    claimed = ("It ends with RACECHECK SUMMARY: {{ 2 @ race:hazards_displayed }} hazards displayed "
               "({{ 1\u20132 @ race:#reports[severity=Error] }} error, {{ 1 @ race:#reports[severity=Warning] }} "
               "warning).\n")  # a range, as over recordings that vary: not the summary verbatim
    assert audit(demo_repo, HEAD + claimed) == []
    typed = claimed.replace("{{ 1 @ race:#reports[severity=Warning] }}", "3")  # not the recorded summary
    assert "is not, verbatim, a summary line" in audit(demo_repo, HEAD + typed)[0]


def test_the_audit_reads_every_run_a_figure_says_backs_it(demo_repo: Path):
    """Each mark's record lists every run its text was drawn from, as the page read them (not parsed
    from the tooltip's words): a generated table's cells the runs of its sources, a claim or a figure
    its one run; the summary rule reads them from the reader's lines."""
    page = (HEAD + "{{ 7 @ race:rows[threads=256].mismatches }} and {{ value race:hazards_displayed }}\n\n"
            "{{ table race:rows bare:rows rows=threads cell=mismatches }}\n")
    result = run_page(demo_repo, page)
    assert result.errors == [], result.errors
    values = [m.runs for m in result.marks if m.kind == "value"]
    cells = [m.runs for m in result.marks if m.kind == "cell"]
    assert values == [(("demo", "race"),), (("demo", "race"),)]
    assert cells and all(r == (("demo", "race"), ("demo", "bare")) for r in cells), cells
    lines = read_html(result.marked, result.marks).lines
    assert lines[0].runs[0][2] == (("demo", "race"),) and lines[-1].runs[-1][2] == (("demo", "race"), ("demo", "bare"))


def test_a_claim_in_a_code_span_excuses_its_own_place_only(demo_repo: Path):
    """Its context excuses one place: the same words typed elsewhere are a typed figure."""
    claimed = f"In code: `the error has {CLAIM_120} hazards` it says.\n"
    assert audit(demo_repo, HEAD + claimed) == []
    copied = claimed + "\nAnd in prose, the error has 120 hazards too.\n"
    assert any("figure '120' is typed" in e for e in audit(demo_repo, HEAD + copied))


@pytest.mark.parametrize(("front", "kind"), [("- narrative\n- thread N: a thread\n", "a list"),
                                             ("just a line\n", "a line of text")])
def test_front_matter_that_is_not_a_mapping_is_one_error_at_its_line(demo_repo: Path, front: str, kind: str):
    """MkDocs drops such front matter and shows it as text: one error, its cause, not the errors that follow."""
    assert audit(demo_repo, f"---\n{front}---\n" + HEAD + "It has 120 hazards.\n") == [
        (f"docs/p.md:2: the front matter is {kind}, not a mapping of keys to values; MkDocs would drop it and show "
        "it as the page's text; write each setting as 'key: value' (narrative: then its phrases, indented, as "
        "'phrase: why')")]


def test_a_title_saying_not_the_program_exempts_code_not_output(demo_repo: Path):
    """The mark says the code is a sketch: its literals are the sketch's. Typed output in a block so
    titled is read as any text is."""
    code = HEAD + '```cuda title="sketch, not the lesson\'s program"\nint hazards = 120;\n```\n'
    assert audit(demo_repo, code) == []
    output = HEAD + '```text title="sketch, not the lesson\'s program"\nracecheck: 120 hazards\n```\n'
    errors = audit(demo_repo, output)
    assert len(errors) == 1 and errors[0].startswith("docs/p.md:4: figure '120' is typed, not produced"), errors
    assert "exempts code, and this block's language is text" in errors[0]


@pytest.mark.parametrize(("text", "wrong"), [
    ("See [the bare log](../evidence/demo/s1/race.txt).", "names the run 'bare', and it opens a recording of 'race'"),
    ("See [the second recording](../evidence/demo/s1/race.txt).",
     "names recording 2 ('second recording'), and it opens recording 1"),
    ('See <a href="../evidence/demo/s1/race.txt">the bare run</a>.',
     "names the run 'bare', and it opens a recording of 'race'"),
])
def test_a_link_whose_text_names_another_recording_than_it_opens_is_refused(demo_repo: Path, text: str, wrong: str):
    link = text.split("[", 1)[1].split("]", 1)[0] if "[" in text else "the bare run"
    assert audit(demo_repo, HEAD + text + "\n") == [
        (f"docs/p.md:3: the link {link!r} {wrong} (s1/race.txt of demo); make its text say what it opens, or link "
        "the recording it names")]
    assert audit(demo_repo, HEAD + "See [the race log](../evidence/demo/s1/race.txt).\n") == []


# -- numbered list items and the links that name them ----------------------------------------------

PREDICTIONS = ("1. <span id=\"p-race\"></span>racecheck reports the race.\n"
               "2. <span id=\"p-clean\"></span>The fixed kernel is clean.\n\n")


def test_a_link_names_the_number_the_browser_draws_for_its_item(demo_repo: Path):
    assert audit(demo_repo, HEAD + PREDICTIONS + "[Prediction 1](#p-race) held; [prediction 2](#p-clean) too.\n") == []
    wrong = audit(demo_repo, HEAD + PREDICTIONS + "[Prediction 2](#p-race) held.\n")
    assert wrong == [("docs/p.md:6: link text 'Prediction 2' names 2, and what it leads to, #p-race, is in item 1 of "
                     "its list as the browser numbers it; write 1, or link the item meant")]


def test_swapping_two_items_breaks_the_links_that_number_them(demo_repo: Path):
    """The issue's case: two predictions swap places, and "Prediction 1 held" would point at the other one."""
    page = "{{ evidence demo }}\n\n" + PREDICTIONS + "[Prediction 1](#p-race) held.\n"
    assert audit(demo_repo, page) == []
    lines = PREDICTIONS.split("\n")
    swapped = f"1. {lines[1][3:]}\n2. {lines[0][3:]}\n\n"
    found = audit(demo_repo, HEAD + swapped + "[Prediction 1](#p-race) held.\n")
    assert len(found) == 1 and "is in item 2 of its list" in found[0], found


def test_an_item_numbered_by_hand_is_refused_and_the_hint_says_how_to_link_it(demo_repo: Path):
    found = audit(demo_repo, HEAD + PREDICTIONS + "Prediction 2 held.\n")
    assert found == [("docs/p.md:6: 'Prediction 2' numbers an item by hand: when the items move it names another; "
                     "link it to the item, whose number the browser draws: [Prediction 2](#ID), with id=\"ID\" on the "
                     "item or an element inside it (<span id=\"ID\"></span>)")]


def test_a_lists_start_and_an_items_value_are_drawn_as_the_browser_draws_them(demo_repo: Path):
    page = HEAD + ('<ol start="3"><li>first</li><li id="q-b">second</li><li value="9">third '
                   '<span id="q-c"></span></li></ol>\n\n[Question 4](#q-b) and [question 9](#q-c).\n')
    assert audit(demo_repo, page) == []
    text = read_html('<ol start="3"><li>first</li><li><p>second</p></li></ol><ul><li>dot</li></ul>')
    assert [(line.text, line.produced) for line in text.lines] == [("3. first", [(0, 2)]), ("4. second", [(0, 2)]),
                                                                   ("dot", [])]
    assert text.lines[0].backing(0, 2).startswith("generated by the browser")


@pytest.mark.parametrize(("sentence", "found"), [
    ("Prediction two died.", "'Prediction two' numbers an item by hand: when the items move it names another"),
    ("[Prediction two](#p-race) died.", ("link text 'Prediction two' names 2, and what it leads to, "
                                        "#p-race, is in item 1 of its list")),
    ("[Prediction two](#p-clean) died.", None),
])
def test_an_items_number_in_a_word_is_held_to_its_item_too(demo_repo: Path, sentence: str, found: str | None):
    errors = audit(demo_repo, HEAD + PREDICTIONS + sentence + "\n")
    assert (errors == []) if found is None else (len(errors) == 1 and found in errors[0]), errors


# The hostile trial of the numbered items (each an edit that once passed and misled).

@pytest.mark.parametrize(("sentence", "found"), [
    # a claim's figure in a link's text is held to the item too
    ("[Prediction {{ 2 @ race:hazards_displayed }}](#p-race) held.", "is in item 1 of its list"),
    # ordinals and roman numerals name an item as a figure does
    ("[The second prediction](#p-race) held.", "is in item 1 of its list"),
    ("The second prediction held.", "'second prediction' numbers an item by hand"),
    ("Prediction II held.", "'Prediction II' numbers an item by hand"),
    ("[Prediction II](#p-race) held.", "is in item 1 of its list"),
])
def test_every_way_of_numbering_an_item_is_held_to_it(demo_repo: Path, sentence: str, found: str):
    errors = audit(demo_repo, HEAD + PREDICTIONS + sentence + "\n")
    assert len(errors) == 1 and found in errors[0], errors
    assert audit(demo_repo, HEAD + PREDICTIONS + "[The first prediction](#p-race) and [Prediction II](#p-clean) held.\n") == []


def test_a_page_phrase_cannot_cover_an_items_number(demo_repo: Path):
    """A page that declares "prediction 2 died" would let two items swap under it."""
    page = '---\nnarrative:\n  "prediction 2 died": the second one\n---\n' + HEAD + PREDICTIONS + "Prediction 2 died.\n"
    errors = audit(demo_repo, page)
    assert any("'Prediction 2' numbers an item by hand" in e for e in errors), errors


@pytest.mark.parametrize(("lists", "found"), [
    # a nested list: the theme draws its markers as letters
    ("1. top\n\n    1. a\n    2. <span id=\"p-x\"></span>b\n\n", "with lower alpha markers ('b.')"),
    # a start or value attribute as a browser reads it: leading digits
    ('<ol start="3x"><li>first</li><li><span id="p-x"></span>second</li></ol>\n\n', "is in item 4 of its list"),
    ('<ol><li value="9x"><span id="p-x"></span>nine</li></ol>\n\n', "is in item 9 of its list"),
])
def test_an_item_is_numbered_as_the_theme_and_the_browser_draw_it(demo_repo: Path, lists: str, found: str):
    errors = audit(demo_repo, HEAD + lists + "[Prediction 2](#p-x) held.\n")
    assert len(errors) == 1 and found in errors[0], errors


def test_a_reversed_list_and_a_second_element_with_an_items_id(demo_repo: Path):
    reversed_list = '<ol reversed><li><span id="p-x"></span>a</li><li>b</li></ol>\n\n[Prediction 2](#p-x) held.\n'
    assert any("a reversed list counts down" in e for e in audit(demo_repo, HEAD + reversed_list))
    # a link leads to the first element with its id: one outside the list is no item
    page = HEAD + '<span id="p-clean"></span>\n\n' + PREDICTIONS + "[Prediction 2](#p-clean) died.\n"
    errors = audit(demo_repo, page)
    assert len(errors) == 1 and "'Prediction 2' numbers an item by hand" in errors[0], errors


@pytest.mark.parametrize("markup", ['<input type="text" readonly value="It had 4 errors">',
                                    '<select><option label="It had 4 errors">seen</option></select>',
                                    '<input placeholder="It had 4 errors">'])
def test_text_a_form_field_shows_is_read(demo_repo: Path, markup: str):
    errors = audit(demo_repo, HEAD + "A field: " + markup + "\n")
    assert any("figure '4' is typed" in e for e in errors), errors


def test_an_svg_title_is_read_as_elements_whichever_python_parses_it(monkeypatch):
    """Newer Pythons' HTMLParser (3.11.13, 3.12.11, 3.13.6 on) reads every <title> as text with no tags
    in it. A browser does so for the page's <title>, not for an SVG's: a diagram's title holds
    produced <tspan>s, and read as text their markup was a string of typed figures ('class= lk-v
    data-lk-why= 256: one …', as the GPU machine's Python 3.12 reported). The parser here is made to
    behave as the newer ones do, so the test says the same on every Python."""
    entered: list[str] = []

    def newer_starttag(self, tag, attrs):  # what parse_starttag does after handle_starttag, from 3.11.13 on
        original(self, tag, attrs)
        if tag == "title":
            entered.append(tag)
            self.set_cdata_mode(tag)

    from lessonkit.pages import readertext
    original = readertext._Reader.handle_starttag
    monkeypatch.setattr(readertext._Reader, "handle_starttag", newer_starttag)
    marks = Marks()
    value = marks.wrap('<tspan class="lk-v" data-lk-why="256: one value">256</tspan>', "256: one value")
    svg = f'<svg viewBox="0 0 9 9"><title>at {value} threads</title></svg>'
    lines = [line for line in read_html(svg, marks.records).lines if "threads" in line.text]
    assert entered == ["title"] and [line.text for line in lines] == ["at 256 threads"], lines
    assert lines[0].produced == [(3, 6)]
    page = read_html("<html><head><title>Day <b>62</b></title></head><body><p>x</p></body></html>")
    assert any("<b>62</b>" in line.text for line in page.lines), page.lines  # the page's own title: text
