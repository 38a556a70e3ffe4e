"""Every reader, fed mutations of the repository's own files (bytes flipped, cut short, spans
dropped or doubled, `{{`, `}}`, `[`, NUL, invalid UTF-8 and huge lines put in) and random bytes,
raises nothing but LessonError; and a megabyte of adversarial input is read in under a second of
CPU time (the process's own, so that another process's work is not counted). That is not proof
against a busy machine: on this project's 2-core virtual machine the same megabyte of blank
transcript lines took 0.58 s of CPU time alone and, in one CI run, 1.14 s at best of three, the
host's other work slowing the process's own clock. So the test is `alone` (the test run's CPUs to
itself), and an input over the bound is read again, up to five times in all, its best time
counting: the noise only adds time, so the minimum is the reading to trust (Python's `timeit`
documentation says the same of repeated timings: https://docs.python.org/3/library/timeit.html).

A reader here is what a check does with a file's bytes: strict UTF-8 decoding (lessonkit.textio),
then the parser. A measured run (`pytest -s tests/test_fuzz.py`, 2 shared cores) tried 1,310
inputs (60 pages, 250 for each other reader), the whole file in 11 s; the slowest mutated input took
0.24 s (a page; mkdocs.yml 0.06 s, the rest under 0.01 s). Of the 61 megabytes (21 pages), the
slowest in a run on 2026-12-08 was the Day 27 page repeated, 0.63 s (a megabyte of blank transcript
lines: 0.45 s)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence.jsontranscript import parse_json_transcript
from lessonkit.evidence.manifest import parse_manifest
from lessonkit.evidence.spec import load_spec, parse_spec
from lessonkit.evidence.transcript import parse_transcript
from lessonkit.site.check import Site
from lessonkit.site.config import read_site_config, site_config_errors, site_is_strict
from lessonkit.textio import decode_utf8

DAY62 = load_spec(REPO / "code", "day62-racecheck").harness


def _page(text: str) -> None:
    site = _site()
    result = site.page(text, "docs/p.md")
    assert all(isinstance(e, LessonError) for e in result.errors)


_SITE: list[Site] = []


def _site() -> Site:
    if not _SITE:
        _SITE.append(Site.load(REPO))
    return _SITE[0]


def _config(text: str) -> None:
    site_config_errors(read_site_config(text, "mkdocs.yml", str(REPO)))


READERS: dict[str, tuple[Callable[[str], object], list[Path]]] = {
    "page": (_page, sorted((REPO / "docs").glob("day*.md"), key=lambda p: p.stat().st_size)[:2]),
    "runs.toml": (lambda t: parse_spec(t, "code/x/runs.toml"), sorted((REPO / "code").glob("*/runs.toml"))[:4]),
    "manifest": (lambda t: parse_manifest(t, "evidence/x"), sorted((REPO / "evidence").glob("*/manifest.json"))[:3]),
    "transcript": (lambda t: parse_transcript(t, "evidence/x/t.txt", DAY62),
                   sorted((REPO / "evidence").glob("day62-racecheck/*/*.txt"))[:4]),
    "json": (lambda t: parse_json_transcript(t, "evidence/x/t.json"),
             sorted((REPO / "evidence").glob("*/*.json"))[:1] + sorted((REPO / "evidence").glob("*/*/*.r1.json"))[:2]),
    "mkdocs.yml": (_config, [REPO / "mkdocs.yml"]),
}
EXAMPLES = {"page": 60}  # a page is checked against the whole site: the slowest reader
INSERTS = [b"{{", b"}}", b"{{ ", b" @ ", b"[", b"]", b"[[", b"{", b"}", b"\0", b"\n", b'"', b"=", b"#", b"\\",
           b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"x" * 50_000, b"[" * 5_000, b"{{" * 5_000]


def read(name: str, data: bytes) -> None:
    """What a check does with a file's bytes; LessonError and LessonErrors are the reader's answers."""
    parse, _ = READERS[name]
    try:
        parse(decode_utf8(data, "the file"))
    except (LessonError, LessonErrors):
        pass


@st.composite
def mutated(draw, samples: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(samples)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["flip", "cut", "insert", "drop", "double"]))
        if how == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(st.sampled_from(INSERTS))
        elif how in ("drop", "double"):
            end = min(len(data), at + draw(st.integers(1, 200)))
            data[at:end] = b"" if how == "drop" else data[at:end] * 2
    return bytes(data)


def inputs(name: str) -> st.SearchStrategy[bytes]:
    samples = [p.read_bytes() for p in READERS[name][1]]
    assert samples, name
    return st.one_of(mutated(samples), mutated(samples), st.binary(max_size=500),
                     st.text(max_size=500).map(str.encode))


@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_raises_only_lesson_errors_on_mutated_files(name: str):
    times: list[float] = []

    @settings(max_examples=EXAMPLES.get(name, 250), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(inputs(name))
    def fuzz(data: bytes) -> None:
        start = time.process_time()
        read(name, data)
        times.append(time.process_time() - start)
    fuzz()
    print(f"\n{name}: {len(times)} inputs, slowest {max(times):.3f} s")


MB = 1 << 20


def _megabyte(piece: bytes) -> bytes:
    return (piece * (MB // len(piece) + 1))[:MB]


def adversarial(name: str) -> dict[str, bytes]:
    """A megabyte of each kind of trouble: the real file repeated, nesting, one huge line, NULs; for a
    page, also a megabyte of each Markdown form its checks read line by line or character by character."""
    real = READERS[name][1][0].read_bytes()
    found = {"repeated": _megabyte(real), "brackets": b"[" * MB, "braces": b"{{" * (MB // 2),
             "nested": b"a = " + b"[" * (MB - 4), "one line": b"x" * MB, "NULs": b"\0" * MB,
             "lines": b"\n" * MB, "flow": b"- " * (MB // 2)}
    if name == "page":
        found |= {kind: _megabyte(piece) for kind, piece in PAGE_FORMS.items()}
    return found


# Each once took from seconds to hours: a loop over every line in each of some ten passes (a million
# blank lines: 3 s), or a form tried at every '<', '[' or backtick that reads on to the line's end.
PAGE_FORMS = {
    "table rows": b"| a | b |\n|---|---|\n| 1 | 2 |\n", "list items": b"- a\n", "headings": b"# a\n",
    "fences": b"```\n", "backticks": b"`", "'<'": b"<", "'$$'": b"$$", "quotes": b"> " * 64 + b"a\n",
    "'[' then a reference": b"[" * (MB // 2) + b"a.cu:1", "'![' then a reference": b"![" * (MB // 4) + b"a.cu:1",
    "backticks then '<'": b"`" * (MB // 2) + b"<" * (MB // 2), "a typed code block": b"```\n" + b"========= x\n" * MB,
    "a paragraph": b"a\n" * (MB // 4) + b"error summary 1\n",
}


@pytest.mark.alone  # timed: a busy neighbour on the same core slows even this process's CPU time
@pytest.mark.parametrize("name", list(READERS))
def test_a_megabyte_of_adversarial_input_is_read_in_under_a_second(name: str):
    if name == "page":
        _site()  # loaded once, before the clock starts
    took = {}
    for kind, data in adversarial(name).items():
        # This process's CPU time: what the reader costs. A machine shared with another job still slows
        # it (caches, clocks, a host's other work), so an input over the bound is read again, up to five
        # times, and its best time counts; a reading that grows with the square of the input stays far
        # over it every time.
        for _ in range(5):
            start = time.process_time()
            read(name, data)
            took[kind] = min(took.get(kind, float("inf")), time.process_time() - start)
            if took[kind] < 1.0:
                break
    slowest = max(took, key=took.__getitem__)
    print(f"\n{name}: {len(took)} megabytes, slowest {slowest!r} {took[slowest]:.2f} s")
    assert {kind: round(t, 2) for kind, t in took.items() if t >= 1.0} == {}


# The crashes the fuzzing found, each now the reader's own error.

def test_runs_toml_nested_too_deeply():
    with pytest.raises(LessonError) as exc:
        parse_spec("a = " + "[" * 50_000, "code/x/runs.toml")
    assert str(exc.value) == ("code/x/runs.toml: not valid TOML for runs.toml: nested too deeply to read; "
                              "expected tables of settings")


def test_a_manifest_nested_too_deeply():
    with pytest.raises(LessonError) as exc:
        parse_manifest("[" * 50_000, "evidence/x")
    assert str(exc.value) == ("evidence/x/manifest.json: nested too deeply to read; the refresh writes a JSON "
                              "object two levels deep")


def test_a_site_configuration_nested_too_deeply(tmp_path: Path):
    config = read_site_config("[" * 50_000, "mkdocs.yml", str(tmp_path))
    assert [str(e) for e in config.problems] == [
        "mkdocs.yml: it is nested too deeply to read as YAML; fix it (MkDocs cannot read it either)"]
    (tmp_path / "mkdocs.yml").write_text("[" * 50_000)
    assert site_is_strict(tmp_path) is False


def test_a_site_configuration_too_long_to_read():
    config = read_site_config("#" * 100_001, "mkdocs.yml", ".")
    assert [str(e) for e in config.problems] == [
        "mkdocs.yml: it is 100001 characters long, more than the 100000 a site configuration may be; shorten it"]
