"""A lesson's harness format, declared in its runs.toml: read generically, its mistakes located.

The harness below is made up for these tests (no lesson prints it, and lessonkit has never
heard of it): declaring it in runs.toml is all it takes for transcripts and pages to use it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BUILD, README, SOURCE, mkdocs_yml, record_set, wait_settled, write_tree
from test_cache import check

from lessonkit.errors import LessonError
from lessonkit.evidence.sets import load_all_evidence
from lessonkit.evidence.spec import parse_spec
from lessonkit.evidence.transcript import parse_transcript
from lessonkit.site.check import CheckedSite, Site

HEAD = f"""\
lesson = "trials"
inputs = ["demo.cu"]

[build]
sm_90 = "{BUILD}"

[[run]]
name = "bare"
command = "./demo"
"""

# A trial log: a block of trials under a header, a rule, a blank line to end it; a seed line; a
# note that may come several times; a per-size line that is one record each.
HARNESS = r"""
[harness.types]
trial = "int"
wrong = "int"
of = "int"
max_err = "float"
passed = "yes-no"
seed = "int"
size = "int"
ms = "float"

[[harness.table]]
name = "trial"
collection = "trials"
starts = '^trial\b'
header = '^trial \s+ wrong \s+ of \s+ max\ err \s+ passed$'
header_form = "'trial  wrong  of  max err  passed'"
skip = '^-+(\s+-+)*$'
row = '''
    ^(?P<trial>\d+) \s+ (?P<wrong>\d+) \s+ (?P<of>\d+) \s+
    (?:n/a|(?P<max_err>[0-9.]+)) \s+ (?P<passed>yes|no)$'''
row_form = "'TRIAL WRONG OF MAX_ERR|n/a yes|no'"

[[harness.line]]
name = "seed"
starts = '^seed'
pattern = '^seed\ =\ (?P<seed>\d+)$'
form = "'seed = N'"

[[harness.line]]
many = true
pattern = '^note:\ (?P<notes>.*)$'

[[harness.line]]
collection = "sizes"
pattern = '^size\ (?P<size>\d+):\ (?P<ms>[0-9.]+)\ ms$'
"""

LOG = """\
seed = 62
note: warm-up launch discarded
trial  wrong  of  max err  passed
-----  -----  --  -------  ------
    1      0  100      n/a     yes
    2      5  100     0.25      no

size 1024: 0.5 ms
note: done
size 4096: 1.75 ms
"""


def harness(text: str = HARNESS):
    return parse_spec(HEAD + text, "code/trials/runs.toml").harness


def test_a_declared_format_reads_a_log_the_core_never_heard_of():
    t = parse_transcript(LOG, "t.txt", harness())
    assert t.scalars == {"tool": None, "seed": 62, "notes": ["warm-up launch discarded", "done"]}
    assert t.collections()["trials"] == (
        {"trial": 1, "wrong": 0, "of": 100, "max_err": None, "passed": True, "_line": 5},
        {"trial": 2, "wrong": 5, "of": 100, "max_err": 0.25, "passed": False, "_line": 6})
    assert t.collections()["sizes"] == ({"size": 1024, "ms": 0.5, "_line": 8}, {"size": 4096, "ms": 1.75, "_line": 10})
    assert list(t.to_json())[-2:] == ["trials", "sizes"]  # in the order runs.toml declares them


def test_equal_declarations_are_equal():
    assert harness() == harness() and hash(harness()) == hash(harness())
    assert harness() != harness(HARNESS.replace('"sizes"', '"times"'))


def test_without_a_declaration_there_is_no_harness():
    assert parse_spec(HEAD, "code/trials/runs.toml").harness is None


def transcript_error(text: str) -> str:
    with pytest.raises(LessonError) as info:
        parse_transcript(text, "t.txt", harness())
    return str(info.value)


def test_a_header_with_other_columns_is_refused():
    assert transcript_error("trial  wrong  of  passed\n") == (
        "t.txt:1: unreadable trial table header 'trial  wrong  of  passed'; "
        "expected 'trial  wrong  of  max err  passed'")


def test_a_row_that_does_not_match_is_refused_at_its_line():
    log = LOG.replace("    2      5  100     0.25      no", "    2      5  100     0.25")
    assert transcript_error(log) == ("t.txt:6: malformed trial row '2      5  100     0.25'; "
                                     "expected 'TRIAL WRONG OF MAX_ERR|n/a yes|no'")


def test_a_row_outside_a_table_is_refused():
    assert transcript_error("seed = 1\n3  0  100  n/a  yes\n") == (
        "t.txt:2: trial row '3  0  100  n/a  yes' has no table header above it; expected the header "
        "'trial  wrong  of  max err  passed' first (a blank line ends a table)")


def test_a_line_meant_but_unreadable_is_refused():
    assert transcript_error("seed: 62\n") == "t.txt:1: unreadable seed line 'seed: 62'; expected 'seed = N'"


def test_a_value_that_is_not_of_its_type_is_refused():
    assert transcript_error("size 1024: 0.5.1 ms\n") == (
        "t.txt:1: ms '0.5.1' in 'size 1024: 0.5.1 ms' is not a number, as code/trials/runs.toml "
        "declares it; narrow the pattern or change the type")


def declaration_error(text: str) -> str:
    with pytest.raises(LessonError) as info:
        parse_spec(HEAD + text, "code/trials/runs.toml")
    assert info.value.rank == 0  # a cause: reported before what it breaks
    return str(info.value)


def line_of(text: str, needle: str) -> int:
    """The 1-based line of runs.toml (HEAD + text) holding `needle`."""
    lines = (HEAD + text).splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_a_bad_regex_is_named_at_its_key():
    text = HARNESS.replace("pattern = '^seed\\ =\\ (?P<seed>\\d+)$'", "pattern = '^seed\\ =\\ (?P<seed>\\d+$'")
    assert declaration_error(text) == (
        f"code/trials/runs.toml:{line_of(text, '(?P<seed>')}: [[harness.line]] number 1: 'pattern' is not a "
        "valid regular expression: missing ), unterminated subpattern at position 10 of the pattern")


def test_a_bad_regex_over_several_lines_is_named_at_its_own_line():
    text = HARNESS.replace("(?:n/a|(?P<max_err>[0-9.]+))", "(?:n/a|(?P<max_err>[0-9.+))")
    message = declaration_error(text)
    assert message.startswith(f"code/trials/runs.toml:{line_of(text, '(?P<max_err>')}: [[harness.table]] "
                              "number 1: 'row' is not a valid regular expression: ")


def test_an_unknown_type():
    text = HARNESS.replace('passed = "yes-no"', 'passed = "bool"')
    assert declaration_error(text) == (
        f"code/trials/runs.toml:{line_of(text, 'passed = ')}: [harness.types]: group 'passed' has unknown "
        "type 'bool'; expected one of str, int, float, yes-no")


def test_a_type_for_a_group_no_pattern_has():
    text = HARNESS.replace('ms = "float"', 'ms = "float"\nmillis = "float"')
    assert declaration_error(text) == (
        f"code/trials/runs.toml:{line_of(text, 'millis')}: [harness.types]: group 'millis' is in no pattern; "
        "the patterns name max_err, ms, notes, of, passed, seed, size, trial, wrong")


def test_a_pattern_without_a_named_group():
    text = HARNESS.replace("'^note:\\ (?P<notes>.*)$'", "'^note:\\ (.*)$'").replace("many = true\n", "")
    assert declaration_error(text) == (
        f"code/trials/runs.toml:{line_of(text, 'note:')}: [[harness.line]] number 2: 'pattern' names no group; "
        "write each value as (?P<name>...), the name being how pages query it")


def test_an_inline_types_table_is_located_at_its_key():
    text = '\n[harness]\ntypes = { passed = "bool" }\n\n' + HARNESS[HARNESS.index("[[harness.table]]"):]
    assert declaration_error(text) == (
        f"code/trials/runs.toml:{line_of(text, 'types = ')}: [harness.types]: group 'passed' has unknown "
        "type 'bool'; expected one of str, int, float, yes-no")


@pytest.mark.parametrize("change, needle, message", [
    (("skip = ", "skips = "), "skips = ",
     "[[harness.table]] number 1: unknown key 'skips'; did you mean 'skip'?"),
    (("skip = ", "zzz = "), "zzz = ",
     ("[[harness.table]] number 1: unknown key 'zzz'; expected one of collection, header, header_form, name, "
     "row, row_form, row_starts, skip, starts")),
    (("many = true", "many = 1"), "many = 1", "[[harness.line]] number 2: 'many' must be true or false"),
    (('collection = "sizes"', 'many = true\ncollection = "sizes"'), 'many = true\ncollection = "sizes"',
     "[[harness.line]] number 3: 'many' is for scalars; a collection already holds one record per line"),
    (('collection = "trials"', 'collection = "trial list"'), "trial list",
     ("[[harness.table]] number 1: collection 'trial list' must be a name of letters, digits and '_' (a query "
     "writes it as NAME[...])")),
])
def test_other_declaration_mistakes(change, needle, message):
    text = HARNESS.replace(*change)
    line = line_of(text, needle.split("\n")[-1]) - needle.count("\n")  # a needle's first line
    assert declaration_error(text) == f"code/trials/runs.toml:{line}: {message}"


def test_a_table_without_a_row_pattern():
    text = HARNESS.replace("row = '''", "rows = '''").replace("rows = '''", "row_x = '''")
    assert declaration_error(text).endswith("unknown key 'row_x'; did you mean 'row'?")
    lines = [line for line in HARNESS.split("\n[[harness.line]]")[0].splitlines() if not line.startswith("row")]
    cut = "\n".join(line for line in lines if not line.startswith(("    ^(?P<trial>", "    (?:n/a")))
    assert declaration_error(cut) == (
        f"code/trials/runs.toml:{line_of(cut, '[[harness.table]]')}: [[harness.table]] number 1: 'row' is "
        "missing; expected a regular expression")


def test_an_empty_declaration():
    assert declaration_error("\n[harness]\n") == (
        f"code/trials/runs.toml:{line_of(chr(10) + '[harness]', '[harness]')}: [harness]: declares no "
        "[[harness.line]] and no [[harness.table]]; declare how the program's lines are read, or remove "
        "[harness]")


# The whole path: a lesson the core never heard of, its evidence, a page quoting it.

PAGE = """\
# Trials

{{ evidence trials }}

Trial {{ 2 @ bare:trials[trial=2].trial }} got {{ 5 @ bare:trials[trial=2].wrong }} of {{ 100 @ bare:trials[trial=2].of }} wrong
(largest error {{ 0.25 @ bare:trials[trial=2].max_err }}); seed {{ 62 @ bare:seed }}, and
{{ 1.75 @ bare:sizes[size=4096].ms }} ms at the larger size.
"""


@pytest.fixture
def trials_repo(tmp_path: Path) -> Path:
    write_tree(tmp_path, {
        "code/trials/demo.cu": SOURCE, "code/trials/runs.toml": HEAD + HARNESS,
        "code/trials/README.md": README.replace("compute-sanitizer --tool racecheck ./demo\n", ""),
        "docs/index.md": PAGE, "mkdocs.yml": mkdocs_yml()})
    record_set(tmp_path, "trials", {"bare": LOG})
    return tmp_path


def test_a_page_quotes_a_harness_the_core_never_heard_of(trials_repo: Path):
    site = Site.load(trials_repo)
    assert site.site_errors() == []
    assert [str(e) for e in site.page(PAGE, "docs/index.md").errors] == []
    wrong = site.page(PAGE.replace("{{ 5 @", "{{ 6 @"), "docs/index.md").errors
    assert [e.message.split(";")[0] for e in wrong] == [
        "claim '6' (bare:trials[trial=2].wrong) disagrees with evidence/trials/s1/bare.txt"]


def test_changing_the_declaration_does_not_make_evidence_stale(trials_repo: Path):
    spec = trials_repo / "code/trials/runs.toml"
    spec.write_text(spec.read_text().replace('"sizes"', '"timings"'))
    assert load_all_evidence(trials_repo).errors == []
    errors = [str(e) for e in Site.load(trials_repo).page(PAGE, "docs/index.md").errors]
    assert len(errors) == 1 and "no collection 'sizes'" in errors[0], errors


def test_a_cached_check_sees_a_changed_declaration(trials_repo: Path):
    wait_settled(trials_repo)
    assert check(trials_repo) == []
    spec = trials_repo / "code/trials/runs.toml"
    spec.write_text(spec.read_text().replace('"sizes"', '"timings"'))
    wait_settled(trials_repo)
    fresh = check(trials_repo, "--no-cache")
    assert fresh and any("sizes" in line for line in fresh)
    assert check(trials_repo) == fresh
    checked = CheckedSite(trials_repo)
    checked.refresh()
    assert [str(e) for e in checked.errors([("docs/index.md", trials_repo / "docs/index.md")])] == fresh[:-1]


def test_without_a_declared_form_a_message_shows_the_pattern_on_one_line():
    text = HARNESS.replace("row_form = \"'TRIAL WRONG OF MAX_ERR|n/a yes|no'\"\n", "")
    spec = parse_spec(HEAD + text, "code/trials/runs.toml")
    with pytest.raises(LessonError) as info:
        parse_transcript("trial  wrong  of  max err  passed\n1 0\n", "t.txt", spec.harness)
    assert str(info.value) == (
        "t.txt:2: malformed trial row '1 0'; expected '^(?P<trial>\\\\d+) \\\\s+ (?P<wrong>\\\\d+) \\\\s+ "
        "(?P<of>\\\\d+) \\\\s+ (?:n/a|(?P<max_err>[0-9.]+)) \\\\s+ (?P<passed>yes|no)$'")


def test_a_misspelt_kind_of_declaration_is_named_at_its_header():
    text = HARNESS.replace("[[harness.line]]\nmany", "[[harness.lines]]\nmany")
    assert declaration_error(text) == (
        f"code/trials/runs.toml:{line_of(text, '[[harness.lines]]')}: [harness]: unknown key 'lines'; did you mean "
        "'line'?")


def test_harness_that_is_not_a_table():
    with pytest.raises(LessonError) as info:
        parse_spec('harness = "yes"\n' + HEAD, "code/trials/runs.toml")
    assert str(info.value) == (
        "code/trials/runs.toml: 'harness' must be a table: [harness.types], [[harness.line]], [[harness.table]]")
