"""Claims on a program's constants ({{ 4 @ demo.cu:kTiles }}): read from the lesson's source, an
input of its recordings, so that editing the constant fails the page at the claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonkit.cli.explain import explain
from lessonkit.pages.constants import constant_value, parse_constants, shown_value
from tests.conftest import SOURCE, checked, errs, run_page

CONSTANTS = """\
#define kLaunches 100
constexpr int kTiles = 4;          // tiles a block walks
constexpr int kBlockSizes[] = {32, 256};
static const unsigned kElements = 8u * 1024u + 611u;
enum Mode { kBare, kStayAlive = 3, kFixed };
"""


def _with_constants(repo: Path, extra: str = "") -> None:
    (repo / "code/demo/demo.cu").write_text(CONSTANTS + extra + SOURCE)


def test_parse_reads_defines_constexpr_arrays_expressions_and_enums():
    found = parse_constants(CONSTANTS + "__global__ void k() { constexpr int kInside = 9; }\n", "demo.cu")
    assert {n: c.value for n, c in found.items()} == {
        "kLaunches": 100, "kTiles": 4, "kBlockSizes": (32, 256), "kElements": 8803,
        "kBare": 0, "kStayAlive": 3, "kFixed": 4}
    assert found["kTiles"].line == 2 and found["kTiles"].text == "constexpr int kTiles = 4;"
    assert "kInside" not in found  # a function's own constant is not the program's


def test_python_module_constants_and_indexing():
    found = parse_constants("LARGE = 1 << 22\nSIZES = (32, 64, LARGE)\ndef f():\n    X = 3\n", "sweep.py")
    assert constant_value(found, "SIZES[2]", "sweep.py")[0] == 4194304
    assert "X" not in found
    assert shown_value(2.0) == "2" and shown_value(0.5) == "0.5"


def test_unknown_name_suggests_the_nearest(demo_repo):
    _with_constants(demo_repo)
    found = parse_constants((demo_repo / "code/demo/demo.cu").read_text(), "demo.cu")
    with pytest.raises(ValueError, match="did you mean 'kTiles'"):
        constant_value(found, "kTile", "code/demo/demo.cu")
    with pytest.raises(ValueError, match=r"array of 2; name an element, kBlockSizes\[0\]"):
        constant_value(found, "kBlockSizes", "code/demo/demo.cu")


def test_a_claim_on_a_constant_holds_and_shows_its_value(demo_repo):
    _with_constants(demo_repo)
    text = ("{{ evidence demo }}\n\nEach block walks {{ 4 @ demo.cu:kTiles }} tiles of "
            "{{ 256 @ demo/demo.cu:kBlockSizes[1] }} threads, {{ 8803 @ demo.cu:kElements }} elements.\n")
    result = run_page(demo_repo, text)
    assert [str(e) for e in result.errors] == []
    assert "demo/demo.cu" in result.sources
    assert [c.backing for c in result.claims] == [
        "the constant kTiles of code/demo/demo.cu, line 2: constexpr int kTiles = 4;",
        "the constant kBlockSizes[1] of code/demo/demo.cu, line 3: constexpr int kBlockSizes[] = {32, 256};",
        ("the constant kElements of code/demo/demo.cu, line 4: "
         "static const unsigned kElements = 8u * 1024u + 611u;")]


def test_editing_the_constant_fails_the_claim_at_its_line(demo_repo):
    _with_constants(demo_repo)
    (demo_repo / "code/demo/demo.cu").write_text(CONSTANTS.replace("kTiles = 4", "kTiles = 8") + SOURCE)
    found = errs(demo_repo, "{{ evidence demo }}\n\nEach block walks {{ 4 @ demo.cu:kTiles }} tiles.\n")
    assert len(found) == 1
    assert found == ["docs/p.md:3: claim '4' (demo.cu:kTiles) disagrees with code/demo/demo.cu; it says '8' (line 2)"]


def test_a_file_that_did_not_run_backs_no_figure(demo_repo):
    (demo_repo / "code/demo/other.cu").write_text(CONSTANTS)
    found = errs(demo_repo, "{{ evidence demo }}\n\nEach block walks {{ 4 @ other.cu:kTiles }} tiles.\n")
    assert len(found) == 1 and "code/demo/other.cu is not an input of any recording in evidence/demo" in found[0]


def test_a_source_claim_without_a_lesson_says_how_to_name_one(demo_repo):
    _with_constants(demo_repo)
    found = errs(demo_repo, "Each block walks {{ 4 @ demo.cu:kTiles }} tiles.\n")
    assert found == [("docs/p.md:1: 'demo.cu' names no lesson, and the page names no evidence set its lesson could "
                     "be taken from; write LESSON/demo.cu, e.g. day62-racecheck/racecheck.cu")]
    assert errs(demo_repo, "Each block walks {{ 4 @ demo/demo.cu:kTiles }} tiles.\n") == []


def test_the_checked_page_passes_and_explain_names_the_line(demo_repo):
    _with_constants(demo_repo)
    text = "{{ evidence demo }}\n\nEach block walks {{ 4 @ demo.cu:kTiles }} tiles.\n"
    assert checked(demo_repo, text) == []
    (demo_repo / "docs/p.md").write_text(text)
    lines, errors = explain(demo_repo, demo_repo / "docs/p.md")
    assert errors == []
    out = "\n".join(lines)
    assert "4: one value, the program's own; the constant kTiles of code/demo/demo.cu, line 2" in out


BOUND_PAGE = """\
---
constants:
  4 tiles a block: demo/demo.cu:kTiles
  32 and 256 threads: demo/demo.cu:kBlockSizes
---
{{ evidence demo }}

Each block walks 4 tiles a block, at 32 and 256 threads.
"""


def test_a_phrase_bound_to_a_constant_covers_its_figures(demo_repo):
    _with_constants(demo_repo)
    assert checked(demo_repo, BOUND_PAGE) == []


def test_a_bound_phrase_whose_figure_the_program_no_longer_has_is_an_error_at_its_line(demo_repo):
    _with_constants(demo_repo)
    (demo_repo / "code/demo/demo.cu").write_text(CONSTANTS.replace("{32, 256}", "{64, 256}") + SOURCE)
    found = checked(demo_repo, BOUND_PAGE)
    assert ("docs/p.md:4: constants phrase '32 and 256 threads' says 32, 256, but demo/demo.cu:kBlockSizes is "
            "64, 256 (code/demo/demo.cu:3: constexpr int kBlockSizes[] = {64, 256};); write the phrase with its "
            "values, or bind it to the constant that fixes what it says") in found


def test_a_bound_phrase_must_name_a_constant_of_a_file_that_ran(demo_repo):
    _with_constants(demo_repo)
    (demo_repo / "code/demo/other.cu").write_text(CONSTANTS)
    text = BOUND_PAGE.replace("demo/demo.cu:kTiles", "demo/other.cu:kTiles").replace(
        "demo/demo.cu:kBlockSizes", "demo/demo.cu:kBlockSize")
    found = checked(demo_repo, text)
    assert any(f.startswith("docs/p.md:3: constants phrase '4 tiles a block' is bound to demo/other.cu:kTiles: "
                            "code/demo/other.cu is not an input of any recording in evidence/demo") for f in found)
    assert any(f.startswith("docs/p.md:4: constants phrase '32 and 256 threads' is bound to "
                            "demo/demo.cu:kBlockSize: code/demo/demo.cu defines no constant 'kBlockSize' at its "
                            "top level; did you mean 'kBlockSizes'?") for f in found)


def test_a_count_word_in_a_bound_phrase_is_its_figure(demo_repo):
    _with_constants(demo_repo)
    text = BOUND_PAGE.replace("4 tiles a block", "four tiles a block")
    assert checked(demo_repo, text) == []
    assert any("says 5, but demo/demo.cu:kTiles is 4" in f
               for f in checked(demo_repo, text.replace("four", "five")))


def test_a_page_checked_before_is_checked_again_when_its_constant_changes(demo_repo, tmp_path):
    """The page's result kept on disk depends on the file whose constant it quotes: a later check, in
    another process, with only that file changed, does not serve the earlier result."""
    from lessonkit.cache import Store
    from lessonkit.site.check import CheckedSite
    from tests.conftest import wait_settled
    _with_constants(demo_repo)
    (demo_repo / "docs/index.md").write_text("{{ evidence demo }}\n\nEach block walks {{ 4 @ demo.cu:kTiles }} tiles.\n")
    wait_settled(demo_repo)
    store = tmp_path / "cache"
    assert not [e for e in CheckedSite(demo_repo, store=Store(store), keep="errors").check() if "kTiles" in str(e)]
    (demo_repo / "code/demo/demo.cu").write_text(CONSTANTS.replace("kTiles = 4", "kTiles = 5") + SOURCE)
    wait_settled(demo_repo)
    again = CheckedSite(demo_repo, store=Store(store), keep="errors")
    assert any("claim '4' (demo.cu:kTiles) disagrees with code/demo/demo.cu; it says '5' (line 2)" in str(e)
               for e in again.check())


def test_a_constant_computed_in_a_form_not_read_is_named_with_its_line():
    found = parse_constants("constexpr int kThreads = 256;\nconstexpr int kSteps = __builtin_ctz(kThreads);\n"
                            "constexpr int kTwice = kSteps * 2;\n", "scan.cu")
    with pytest.raises(ValueError, match=r"scan.cu defines kSteps at line 2 \(constexpr int kSteps = "
                                         r"__builtin_ctz\(kThreads\);\), in a form lessonkit does not work out"):
        constant_value(found, "kSteps", "scan.cu")
    with pytest.raises(ValueError, match="defines kTwice at line 3"):
        constant_value(found, "kTwice", "scan.cu")
    assert constant_value(found, "kThreads", "scan.cu")[0] == 256


def test_a_bound_phrase_may_name_a_file_of_the_page_s_own_lesson_alone(demo_repo):
    _with_constants(demo_repo)
    assert checked(demo_repo, BOUND_PAGE.replace("demo/demo.cu:", "demo.cu:")) == []
    found = checked(demo_repo, BOUND_PAGE.replace("demo/demo.cu:", "demo.cu:").replace("{{ evidence demo }}\n", ""))
    assert any("constants phrase '4 tiles a block' is bound to demo.cu:kTiles: 'demo.cu:kTiles' names no constant; "
               "write LESSON/FILE:NAME" in f for f in found), found


def test_a_lesson_whose_runs_toml_cannot_be_read_is_one_error_not_one_per_claim(demo_repo):
    """Claims on the constants of a lesson whose runs.toml is refused wait for it: its error is the one."""
    from lessonkit.cache import Store
    from lessonkit.site.check import CheckedSite
    from tests.conftest import README, RUNS, write_tree
    runs = RUNS.replace('lesson = "demo"', 'lesson = "scan"').replace('inputs = ["demo.cu"]',
                                                                      'inputs = ["demo.cu"]\nrepaet = 3')
    write_tree(demo_repo, {
        "code/scan/demo.cu": CONSTANTS + SOURCE, "code/scan/runs.toml": runs, "code/scan/README.md": README,
        "docs/scan.md": ("---\nconstants:\n  4 tiles: demo.cu:kTiles\n---\n# Scan\n\n{{ evidence scan }}\n\n"
                         "Each block walks 4 tiles, {{ 4 @ demo.cu:kTiles }} of them.\n\n{{ region scan/demo.cu body }}\n")})
    found = [str(e) for e in CheckedSite(demo_repo, store=Store(None), keep="errors").check()]
    assert found == [("code/scan/runs.toml:3: top level: unknown key 'repaet'; expected one of build, compare, "
                     "formats, harness, inputs, labels, lesson, names, run, sessions, units")]


def test_a_reference_page_quotes_lessonkit_s_own_constant_from_the_running_core(demo_repo, tmp_path, monkeypatch):
    """`lessonkit/FILE.py:NAME` is read from the core that runs the check, so what a reference page says
    of lessonkit (a size, a default) fails the page when the core changes it."""
    from lessonkit.pages import claimcheck, constants, render

    kib = render.INLINE_BYTES // 1024
    text = f"A box shows up to {{{{ {kib} @ lessonkit/pages/render.py:INLINE_BYTES / 1024 }}}} KiB whole.\n"
    result = run_page(demo_repo, text)
    assert [str(e) for e in result.errors] == []
    line = next(k for k, s in enumerate(Path(render.__file__).read_text().splitlines(), 1) if s.startswith("INLINE_BYTES"))
    assert result.claims[0].backing.startswith(f"the constant INLINE_BYTES of lessonkit/pages/render.py, line {line}: ")
    core = tmp_path / "core"
    (core / "lessonkit/pages").mkdir(parents=True)
    (core / "lessonkit/pages/render.py").write_text("INLINE_BYTES = 8 * 1024\n")
    monkeypatch.setattr(constants, "CORE_ROOT", core)
    monkeypatch.setattr(claimcheck, "CORE_ROOT", core)
    assert errs(demo_repo, text) == [(f"docs/p.md:1: claim '{kib}' (lessonkit/pages/render.py:INLINE_BYTES) disagrees with "
                                     "lessonkit/pages/render.py; it says '8' (line 1)")]
    assert errs(demo_repo, "{{ 6 @ lessonkit/pages/nothing.py:X }} KiB.\n") == [
        (f"docs/p.md:1: claim '6' (lessonkit/pages/nothing.py:X): lessonkit/pages/nothing.py is no file of "
        f"lessonkit's source ({core / 'lessonkit'})")]
