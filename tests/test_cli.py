"""The command line: check, regions, transcript; reading files strictly as UTF-8; and the real site's own check."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, write_tree

from lessonkit.cli import commands as cli
from lessonkit.errors import LessonError
from lessonkit.repo import find_repo
from lessonkit.textio import decode_utf8, read_text


def cli_run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lessonkit", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_the_real_site_checks_clean():
    done = cli_run("check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: every page, region, claim and evidence set")


def test_check_lists_every_error_and_exits_1(demo_repo: Path):
    (demo_repo / "docs/index.md").write_text("{{ 9 @ demo/race:#reports }}\n{{ 8 @ demo/race:#reports }}\n")
    done = cli_run("check", "--repo", str(demo_repo))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "docs/index.md:1: claim '9' (demo/race:#reports) disagrees with evidence/demo/s1/race.txt; it says '2'",
        "docs/index.md:2: claim '8' (demo/race:#reports) disagrees with evidence/demo/s1/race.txt; it says '2'",
        "2 errors found"]


def test_a_broken_runs_toml_is_the_one_error_not_the_claims_on_its_sets(demo_repo: Path):
    from conftest import BARE, RACE, record_set

    record_set(demo_repo, "demo", {"race": RACE, "bare": BARE}, set_name="demo-b")
    (demo_repo / "docs/index.md").write_text(
        "# Demo\n\n{{ evidence demo }}\n\n"
        "At the largest block {{ 7 @ race:rows[threads=256].mismatches }} elements were wrong.\n\n"
        "{{ table bare:rows rows=kernel cols=threads cell=mismatches }}\n\n"
        "racecheck: `{{ RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) @ race:summary in demo = demo-b }}`.\n")
    assert cli_run("check", "--no-cache", "--repo", str(demo_repo)).returncode == 0
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace("gate = true\n", "gate = true\nrepaet = 5\n"))
    done = cli_run("check", "--no-cache", "--repo", str(demo_repo))
    assert (done.returncode, done.stderr.splitlines()) == (1, [
        "code/demo/runs.toml:15: [[run]] number 2: unknown key 'repaet'; did you mean 'repeat'?", "1 error found"])


def test_check_finds_the_repository_from_a_folder_inside_it(demo_repo: Path):
    (demo_repo / "docs/index.md").write_text("{{ 9 @ demo/race:#reports }}\n")
    done = cli_run("check", cwd=demo_repo / "code" / "demo")
    assert (done.returncode, done.stderr) == (1, ("docs/index.md:1: claim '9' (demo/race:#reports) disagrees "
                                                 "with evidence/demo/s1/race.txt; it says '2'\n1 error found\n"))


def test_find_repo_walks_up_to_mkdocs_yml(tmp_path: Path):
    write_tree(tmp_path, {"site/mkdocs.yml": "", "site/code/a/a.cu": "", "site/docs/deep/er/p.md": ""})
    assert find_repo(tmp_path / "site/docs/deep/er") == (tmp_path / "site").resolve()


def test_find_repo_skips_a_mkdocs_yml_without_code_or_evidence(tmp_path: Path):
    write_tree(tmp_path, {"mkdocs.yml": "", "evidence/x/manifest.json": "", "docs/mkdocs.yml": "", "docs/p.md": ""})
    assert find_repo(tmp_path / "docs") == tmp_path.resolve()


def test_check_outside_any_repository(tmp_path: Path):
    done = cli_run("check", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"{tmp_path.resolve()}: is not inside a course repository: no folder from here up "
                           "holds mkdocs.yml beside code/ or evidence/; run from inside one, or name it with "
                           "--repo PATH\n")


def test_regions_as_json(tmp_path: Path):
    (tmp_path / "a.cu").write_text("int x;\n// snippet: one\nx = 1;\n// end snippet\n// snippet: two\n"
                                   "x = 2;\nx = 3;\n// end snippet\n")
    done = cli_run("regions", str(tmp_path / "a.cu"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"name": "one", "first": 3, "last": 3}, {"name": "two", "first": 6, "last": 7}]


def test_regions_of_the_real_lesson():
    done = cli_run("regions", "code/day62-racecheck/racecheck.cu")
    assert {"racy-step", "fixed-step"} <= {r["name"] for r in json.loads(done.stdout)}


def test_regions_of_a_broken_file(tmp_path: Path):
    (tmp_path / "b.cu").write_text("// snippet: a\n")
    done = cli_run("regions", str(tmp_path / "b.cu"))
    assert done.returncode == 1 and "region 'a' is never closed" in done.stderr


def first_kept(set_name: str) -> str:
    """The oldest session the committed set keeps (a refresh retires the one before it)."""
    return next(iter(json.loads((REPO / "evidence" / set_name / "manifest.json").read_text())["sessions"]))


def test_transcript_as_json():
    done = cli_run("transcript", f"evidence/day62-racecheck/{first_kept('day62-racecheck')}/racecheck-buggy-analysis.r1.txt")
    data = json.loads(done.stdout)
    assert {r["severity"] for r in data["reports"]} == {"Error", "Warning"}
    assert data["summary"] == "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)"


def test_transcript_of_an_evidence_file_reads_its_lesson_s_harness():
    data = json.loads(cli_run("transcript", f"evidence/day62-racecheck/{first_kept('day62-racecheck')}/bare-all.r1.txt").stdout)
    assert (data["gpu"], data["warp_size"], len(data["rows"]), len(data["tiling"])) == ("NVIDIA H100 80GB HBM3", 32, 8, 2)


def test_transcript_read_by_a_lesson_s_harness(tmp_path: Path):
    (tmp_path / "out.txt").write_text(
        "device: NVIDIA H200 | compute capability 9.0 | warp size 32\n"
        "threads | kernel | mismatches | first bad | gated\n"
        "     32 | scanTileRacy |          0 |         - | no\n")
    done = cli_run("transcript", str(tmp_path / "out.txt"), "--lesson", "day62-racecheck")
    data = json.loads(done.stdout)
    assert (data["gpu"], data["compute_capability"], data["warp_size"]) == ("NVIDIA H200", "9.0", 32)
    assert data["rows"] == [{"threads": 32, "kernel": "scanTileRacy", "mismatches": 0, "first_bad": None,
                             "gated": False, "line_in_transcript": 3}]
    plain = cli_run("transcript", str(tmp_path / "out.txt"))  # no lesson named: only the tool's lines are read
    assert (plain.returncode, plain.stdout) == (1, "")
    assert plain.stderr.splitlines() == [
        (f"note: {tmp_path}/out.txt is not in an evidence set, so no lesson's [harness] reads the program's own "
        "lines; give --lesson LESSON for its values"),
        (f"{tmp_path}/out.txt: holds no compute-sanitizer output (no line starts =========) and no harness format "
        "was given to read the program's lines; expected a transcript of a compute-sanitizer run, or --lesson "
        "LESSON to read the program's lines by code/LESSON/runs.toml's [harness]")]


def test_transcript_outside_evidence_with_tool_lines_notes_the_lesson_option(tmp_path: Path):
    (tmp_path / "t.txt").write_text("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n")
    done = cli_run("transcript", str(tmp_path / "t.txt"))
    assert (done.returncode, json.loads(done.stdout)["error_count"]) == (0, 0)
    assert done.stderr == (f"note: {tmp_path}/t.txt is not in an evidence set, so no lesson's [harness] reads the "
                           "program's own lines; give --lesson LESSON for its values\n")


def test_transcript_of_a_recording_whose_tool_run_holds_no_tool_output(demo_repo: Path):
    from conftest import BARE, record_set
    record_set(demo_repo, "demo", {"race": BARE, "bare": BARE})  # race runs compute-sanitizer; bare, ./demo
    race = cli_run("transcript", "evidence/demo/s1/race.txt", cwd=demo_repo)
    assert (race.returncode, race.stdout) == (1, "")
    assert race.stderr == ("evidence/demo/s1/race.txt: holds no compute-sanitizer output (no line starts =========, "
                           "and no usage it prints when it refuses its command line), yet its run invokes "
                           "compute-sanitizer, which always prints one or the other; expected the transcript of "
                           "that run\n")
    bare = cli_run("transcript", "evidence/demo/s1/bare.txt", cwd=demo_repo)
    assert (bare.returncode, json.loads(bare.stdout)["mode"]) == (0, "all")


def test_transcript_read_by_a_harness_that_reads_nothing_of_it(tmp_path: Path):
    (tmp_path / "t.txt").write_text("hello\n")
    done = cli_run("transcript", str(tmp_path / "t.txt"), "--lesson", "day62-racecheck")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"{tmp_path}/t.txt: holds no compute-sanitizer output (no line starts =========) and "
                           "no line the lesson's [harness] reads; expected a transcript of one of its runs\n")


def test_transcript_with_an_unreadable_table(tmp_path: Path):
    (tmp_path / "t.txt").write_text("threads | kernel | mismatches | first bad | gated\n  32 | k | zero | - | no\n")
    done = cli_run("transcript", str(tmp_path / "t.txt"), "--lesson", "day62-racecheck")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"{tmp_path}/t.txt:2: malformed harness row '32 | k | zero | - | no'; expected "
                           "'THREADS | KERNEL | MISMATCHES | FIRST_BAD|- | yes|no'\n")


def test_transcript_with_an_unknown_lesson(tmp_path: Path):
    (tmp_path / "t.txt").write_text("hello\n")
    done = cli_run("transcript", str(tmp_path / "t.txt"), "--lesson", "day99-nothing")
    assert (done.returncode, done.stderr) == (1, ("code/day99-nothing/runs.toml: cannot read the lesson's run "
                                                 "specification: No such file or directory\n"))


def test_transcript_of_a_missing_file():
    done = cli_run("transcript", "nope.txt")
    assert (done.returncode, done.stderr) == (1, "nope.txt: cannot read: No such file or directory\n")


def test_transcript_that_is_not_utf8(tmp_path: Path):
    (tmp_path / "t.txt").write_bytes(b"mode: all\nelements: 8803 \xb1 1\n")
    done = cli_run("transcript", str(tmp_path / "t.txt"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"{tmp_path}/t.txt:2:16: not valid UTF-8 (byte 0xb1); expected UTF-8 text (the "
                           "refresh writes only UTF-8, so it did not write this file)\n")


def test_transcript_into_a_closed_pipe_ends_quietly(tmp_path: Path):
    rows = "".join(f"{i:7d} | k{i} | 0 | - | no\n" for i in range(20_000))  # far more than a pipe holds
    (tmp_path / "big.txt").write_text("threads | kernel | mismatches | first bad | gated\n" + rows)
    proc = subprocess.Popen([sys.executable, "-m", "lessonkit", "transcript", str(tmp_path / "big.txt"),
                             "--lesson", "day62-racecheck"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.stdout.read(10) == b'{\n  "sourc'  # what `head` reads, then it exits
    proc.stdout.close()
    assert (proc.wait(timeout=60), proc.stderr.read()) == (cli.EXIT_BROKEN_PIPE, b"")
    proc.stderr.close()


def test_a_subcommand_is_one_entry(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("who")

    def hello(args: argparse.Namespace) -> int:
        print(f"hello {args.who}")
        return 0

    monkeypatch.setitem(cli.COMMANDS, "hello", cli.Command("say hello", add, hello))
    assert cli.main(["hello", "world"]) == 0
    assert capsys.readouterr().out == "hello world\n"


# Reading files: strictly UTF-8, located errors.

def not_utf8(data: bytes) -> str:
    with pytest.raises(LessonError) as info:
        decode_utf8(data, "evidence/s/t.txt")
    assert info.value.rank == 0  # a file that cannot be read comes before what depends on it
    return str(info.value)


def test_invalid_start_byte():
    assert not_utf8(b"ok\nab\xffc\n") == (
        "evidence/s/t.txt:2:3: not valid UTF-8 (byte 0xff); save the file as UTF-8")


def test_columns_count_characters_not_bytes():
    assert not_utf8("héé ".encode() + b"\xc3(") == (
        "evidence/s/t.txt:1:5: not valid UTF-8 (byte 0xc3); save the file as UTF-8")


def test_latin1_file():
    assert not_utf8("threads\r\nkernel: caf\xe9\r\n".encode("latin-1")) == (
        "evidence/s/t.txt:2:12: not valid UTF-8 (byte 0xe9); save the file as UTF-8")


def test_truncated_sequence_at_the_end():
    assert not_utf8(b"a\n\n" + "€".encode()[:2]) == (
        "evidence/s/t.txt:3:1: not valid UTF-8 (byte 0xe2); save the file as UTF-8")


def test_encoded_surrogate_is_not_utf8():
    assert not_utf8(b"x\xed\xa0\x80") == (
        "evidence/s/t.txt:1:2: not valid UTF-8 (byte 0xed); save the file as UTF-8")


REFRESH_ONLY = "expected UTF-8 text (the refresh writes only UTF-8, so it did not write this file)"


@pytest.mark.parametrize("file, message", [
    ("docs/index.md", "docs/index.md:3:4: not valid UTF-8 (byte 0xff); save the file as UTF-8"),
    ("code/demo/runs.toml", "code/demo/runs.toml:3:4: not valid UTF-8 (byte 0xff); save the file as UTF-8"),
    ("code/demo/README.md", "code/demo/README.md:3:4: not valid UTF-8 (byte 0xff); save the file as UTF-8"),
    ("code/demo/demo.cu", "code/demo/demo.cu:3:4: not valid UTF-8 (byte 0xff); save the file as UTF-8"),
    ("mkdocs.yml", "mkdocs.yml:3:4: not valid UTF-8 (byte 0xff); save the file as UTF-8"),
    ("evidence/demo/manifest.json", f"evidence/demo/manifest.json:3:4: not valid UTF-8 (byte 0xff); {REFRESH_ONLY}"),
    ("evidence/demo/s1/race.txt", f"evidence/demo/s1/race.txt:3:4: not valid UTF-8 (byte 0xff); {REFRESH_ONLY}"),
])
def test_check_names_the_first_bad_byte_of_any_file(demo_repo: Path, file: str, message: str):
    path = demo_repo / file
    lines = path.read_bytes().split(b"\n")
    k = next(k for k, line in enumerate(lines) if k >= 2 and len(line) >= 3)  # the third line, or after
    lines[k] = lines[k][:3] + b"\xff" + lines[k][3:]
    path.write_bytes(b"\n".join(lines))
    message = message.replace(":3:4:", f":{k + 1}:4:")
    done = cli_run("check", "--no-cache", "--repo", str(demo_repo))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    # A transcript's bytes are first an edit the manifest did not record; the claims on it name the byte.
    assert any(line == message or line.endswith(": " + message) for line in done.stderr.splitlines())


def test_read_text_gives_newlines_as_path_read_text_does(tmp_path: Path):
    path = tmp_path / "t.txt"
    path.write_bytes("a\r\nb\rc\n€\n".encode())
    assert read_text(path, "t.txt") == path.read_text(encoding="utf-8") == "a\nb\nc\n€\n"


def test_read_text_leaves_a_missing_file_to_the_caller(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "nope.txt", "nope.txt")


def test_transcript_of_a_run_shows_every_recording(demo_repo, capsys):
    import json as _json

    from conftest import RACE, record_set

    from lessonkit.cli.commands import main as cli_main
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('name = "race"', 'name = "race"\nrepeat = 3'))
    record_set(demo_repo, "demo", {"race": [RACE, RACE.replace("[120 hazards]", "[125 hazards]"), RACE],
                                   "bare": "x\n"})
    assert cli_main(["transcript", "demo/race", "--repo", str(demo_repo)]) == 0
    out = _json.loads(capsys.readouterr().out)
    assert [r["recording"] for r in out] == ["s1/race.r1", "s1/race.r2", "s1/race.r3"]
    assert [r["reports"][0]["hazards"] for r in out] == [120, 125, 120]
    assert out[1]["file"] == "evidence/demo/s1/race.r2.txt" and out[1]["repeats"] == 3


def test_transcript_of_an_unknown_run_names_the_runs(demo_repo, capsys):
    from lessonkit.cli.commands import main as cli_main
    assert cli_main(["transcript", "demo/nope", "--repo", str(demo_repo)]) == 1
    assert capsys.readouterr().err.strip() == "demo/nope: set 'demo' has no run 'nope'; it has: bare, race"


# Help for readers, every argument described, a message on every non-zero exit.

def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_help_is_written_for_readers():
    done = cli_run("--help")
    assert done.returncode == 0
    text = done.stdout
    assert "COMMANDS" not in text and "subcommand" not in text  # no notes for the code's readers
    assert text.startswith("usage: python -m lessonkit [-h] COMMAND ...\n\nCheck the course site against its evidence")
    for name in cli.COMMANDS:
        assert f"\n    {name}" in text, name
    assert "exit status:\n  0    everything agrees (notes" in text and "\n  1    errors found" in text
    assert "unless check --strict" not in text and "mkdocs.yml sets 'strict: true'" in text
    assert "  .venv/bin/python -m lessonkit check\n" in text


@pytest.mark.parametrize("argv0, prog", [
    ("/repo/.venv/bin/lessonkit", "lessonkit"), ("/repo/lessonkit/__main__.py", "python -m lessonkit"),
    ("-m", "python -m lessonkit"), ("lessonkit", "lessonkit"),
])
def test_usage_names_the_program_as_it_was_run(argv0, prog):
    assert cli.program_name(argv0) == prog


def test_the_console_script_says_usage_lessonkit(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    monkeypatch.setattr(sys, "argv", ["/repo/.venv/bin/lessonkit", "--help"])
    with pytest.raises(SystemExit):
        cli.main()
    assert capsys.readouterr().out.startswith("usage: lessonkit [-h] COMMAND ...\n")


def test_every_command_and_argument_is_described():
    for name, sub in _subparsers(cli.build_parser()).items():
        # `NAME --help` says more than the one line of the command list.
        assert len(sub.description) > 2 * len(cli.command(name).help), name
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_regions_help_describes_its_argument():
    done = cli_run("regions", "--help")
    assert done.returncode == 0
    assert "  FILE        a source file with region markers, e.g.\n" in done.stdout
    assert "Print the named regions of a source file as JSON" in done.stdout


@pytest.mark.parametrize("argv", [
    [], ["nonsense"], ["check", "--repo", "{tmp}/nowhere"], ["check", "--repo", "{tmp}"],
    ["regions", "{tmp}/missing.cu"], ["transcript", "{tmp}/missing.txt"], ["transcript", "nope/run"],
    ["verify-site", "{tmp}"], ["verify-site", "{tmp}/nowhere"], ["accept", "--repo", "{tmp}/nowhere"],
    ["transcript", "demo/race", "--repo", "{tmp}/nowhere"],
])
def test_every_failure_says_why(tmp_path: Path, argv: list[str], capsys):
    argv = [a.format(tmp=tmp_path) for a in argv]
    with pytest.raises(SystemExit) if len(argv) < 1 or argv[0] == "nonsense" else _returns() as status:
        status.value = cli.main(argv)
    out = capsys.readouterr()
    code = status.value.code if isinstance(status.value, SystemExit) else status.value
    assert code != 0, argv
    assert (out.err + out.out).strip(), f"{argv} exits {code} saying nothing"


class _returns:
    """A context that keeps the value the block assigns (pytest.raises' twin for a return)."""

    value: object = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def test_check_with_a_python_that_lacks_the_site_s_packages_names_that_python(demo_repo: Path):
    """One message, about the interpreter and the README's command, not about mkdocs.yml's extensions."""
    code = ("import sys; sys.modules['markdown'] = None; from lessonkit.cli.commands import main; "
            f"sys.exit(main(['check', '--repo', {str(demo_repo)!r}, '--no-cache']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, (
        f"{sys.executable}: this Python lacks the package 'markdown', which the site's pages are rendered with, so "
        "it cannot check them; run the check with the project's environment, as the README sets it up: "
        ".venv/bin/python -m lessonkit check\n"))
