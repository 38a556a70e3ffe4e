"""runs.toml: the lesson's commands; malformed files fail with the file named."""

from __future__ import annotations

import pytest

from lessonkit.errors import LessonError
from lessonkit.evidence.spec import parse_spec

HEAD = 'lesson = "a"\ninputs = ["a.cu"]\n'
BUILD = '\n[build]\nsm_90 = "nvcc -o a a.cu"\n'


def test_real_spec_parses():
    from pathlib import Path

    from lessonkit.evidence.spec import load_spec
    spec = load_spec(Path(__file__).resolve().parent.parent / "code", "day62-racecheck")
    assert spec.run("bare-all").gate and spec.run("sweep-results").name == "sweep"
    assert "-lineinfo" in spec.build["sm_90"] and "-lineinfo" in spec.build["sm_75"]


@pytest.mark.parametrize("text, message", [
    (HEAD + "run = [1]\n" + BUILD, "r.toml:3: [[run]] number 1: expected a table"),
    ('lesson = "a"\ninputs = [1]\nrun = []\n' + BUILD, "r.toml:2: top level: every entry of 'inputs' must be a string"),
    (HEAD + 'run = [{name = "x", command = "c", timeout = "soon"}]\n' + BUILD,
     'r.toml:3: [[run]] number 1: \'timeout\' is a string "soon"; expected a number'),
    (HEAD + 'run = [{name = "Bad", command = "c"}]\n' + BUILD,
     "r.toml:3: [[run]] number 1: name 'Bad' must be lowercase letters, digits and '-'"),
    (HEAD + 'run = [{name = "x", command = "c"}, {name = "x", command = "d"}]\n' + BUILD,
     "r.toml:3: [[run]] number 2: duplicate run name 'x'"),
    (HEAD + "run = []\n", "r.toml: top level: 'build' is missing; expected a table"),
    # Each type error at its key's line, with the type found and the type expected.
    (HEAD + BUILD + '\n[[run]]\nname = "x"\ncommand = "c"\nrepeat = "5"\n',
     'r.toml:10: [[run]] number 1: \'repeat\' is a string "5"; expected an integer'),
    (HEAD + BUILD + '\n[[run]]\nname = "x"\ncommand = "c"\n\n[[run]]\nname = "y"\ncommand = "d"\nexclusive = 1\n',
     "r.toml:14: [[run]] number 2: 'exclusive' is an integer 1; expected true or false"),
    (HEAD + BUILD + '\n[[run]]\ncommand = "c"\n', "r.toml:7: [[run]] number 1: 'name' is missing; expected a string"),
    (HEAD + BUILD + '\n[[run]]\nname = "x"\ncommand = "c"\nsets = ["Not a set"]\n',
     'r.toml:10: [[run]] number 1: \'sets\' must be a non-empty list of evidence set names, e.g. ["day62-racecheck"]'),
    (HEAD + "sessions = 0\nrun = []\n" + BUILD,
     "r.toml:3: top level: 'sessions' must be from 1 to 20 (the GPU sessions each evidence set keeps), not 0"),
    (HEAD + 'sessions = "3"\nrun = []\n' + BUILD, 'r.toml:3: top level: \'sessions\' is a string "3"; expected an integer'),
])
def test_malformed_spec(text, message):
    with pytest.raises(LessonError) as info:
        parse_spec(text, "r.toml")
    assert str(info.value) == message


def test_toml_syntax_error_names_the_line():
    with pytest.raises(LessonError) as info:
        parse_spec('lesson = "a"\ninputs = [\n', "r.toml")
    assert str(info.value).startswith("r.toml:") and "not valid TOML" in str(info.value)


RUN = '\n[[run]]\nname = "x"\ncommand = "./a"\n'


@pytest.mark.parametrize("text, message", [
    (HEAD + "inptus = []\n" + BUILD + RUN, "r.toml:3: top level: unknown key 'inptus'; did you mean 'inputs'?"),
    (HEAD + BUILD + RUN + "repaet = 5\n", "r.toml:10: [[run]] number 1: unknown key 'repaet'; did you mean 'repeat'?"),
    (HEAD + BUILD + RUN + RUN.replace('"x"', '"y"') + "exclusve = true\n",
     "r.toml:14: [[run]] number 2: unknown key 'exclusve'; did you mean 'exclusive'?"),
    (HEAD + BUILD + RUN + "zzz = 1\n",
     ("r.toml:10: [[run]] number 1: unknown key 'zzz'; expected one of artifacts, command, exclusive, gate, "
      "inputs, max_output, name, repeat, sets, timeout")),
    (HEAD + BUILD + RUN + 'artifacts = [\n  { name = "r", file = "r.json", fromat = "json" },\n]\n',
     "r.toml:11: [[run]] number 1, artifact 1: unknown key 'fromat'; did you mean 'format'?"),
    (HEAD + 'run = [{name = "x", command = "c"},\n       {name = "y", comand = "d"}]\n' + BUILD,
     "r.toml:4: [[run]] number 2: unknown key 'comand'; did you mean 'command'?"),
    (HEAD + BUILD + RUN + "\n[labls.run]\nx = \"the run\"\n",
     "r.toml:11: top level: unknown key 'labls'; did you mean 'labels'?"),
    (HEAD + BUILD + RUN + '\n[[compare]]\nset = "a-cuda12.4"\ntolkit = "12.4"\n',
     "r.toml:13: [[compare]] number 1: unknown key 'tolkit'; did you mean 'toolkit'?"),
])
def test_unknown_keys_are_refused_at_their_line(text, message):
    with pytest.raises(LessonError) as info:
        parse_spec(text, "r.toml")
    assert str(info.value) == message


@pytest.mark.parametrize("value, message", [
    ("0", "r.toml:10: [[run]] number 1: 'max_output' must be a positive number of bytes, e.g. 16_777_216 (16 MiB), not 0"),
    ('"8 MB"', 'r.toml:10: [[run]] number 1: \'max_output\' is a string "8 MB"; expected an integer'),
])
def test_malformed_max_output(value, message):
    with pytest.raises(LessonError) as info:
        parse_spec(HEAD + BUILD + RUN + f"max_output = {value}\n", "r.toml")
    assert str(info.value) == message


def test_max_output_in_bytes_with_a_default_above_every_recorded_transcript():
    spec = parse_spec(HEAD + BUILD + RUN + RUN.replace('"x"', '"y"') + "max_output = 1_000\n", "r.toml")
    assert [r.max_output for r in spec.runs] == [16 * 1024 * 1024, 1000]
    from pathlib import Path
    largest = max(p.stat().st_size for p in (Path(__file__).resolve().parent.parent / "evidence").glob("*/*"))
    assert largest * 4 < spec.runs[0].max_output


def test_every_lessons_runs_toml_has_only_known_keys():
    from pathlib import Path

    from lessonkit.evidence.spec import load_spec
    code = Path(__file__).resolve().parent.parent / "code"
    for folder in sorted(code.glob("*/runs.toml")):
        assert load_spec(code, folder.parent.name).lesson == folder.parent.name


def test_a_run_may_name_the_sets_that_record_it():
    text = (HEAD + BUILD + '\n[[run]]\nname = "x"\ncommand = "c"\n\n[[run]]\nname = "y"\ncommand = "d"\n'
            'sets = ["a"]\n\n[[compare]]\nset = "a-cuda12.4"\ntoolkit = "12.4"\n')
    spec = parse_spec(text, "r.toml")
    assert [r.name for r in spec.runs_of_set("a")] == ["x", "y"]
    assert [r.name for r in spec.runs_of_set("a-cuda12.4")] == ["x"]
    assert spec.sessions == 3
    assert parse_spec(HEAD + "sessions = 5\nrun = []\n" + BUILD, "r.toml").sessions == 5
