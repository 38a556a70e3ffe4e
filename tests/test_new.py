"""`lessonkit new`: a lesson that builds before it is recorded, strict included, says so in a note and on
its page, stays out of the search and the sitemap until the refresh records it, and lands in the nav in
day order."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import mkdocs_build, mkdocs_yml, record_set, wait_settled
from test_cli import cli_run

from lessonkit.cli.new import add_to_nav
from lessonkit.evidence.spec import load_spec
from lessonkit.evidence.transcript import parse_transcript
from lessonkit.site.check import Site

LESSON = "day27-global-reduction"
NAV = """\
nav:
  - Home: index.md       # the course index
  # Module 3 comes next
  - "Module 7: debugging":
      - "Demo": index.md
"""
NOTE = (f"code/{LESSON}/runs.toml: note: lesson '{LESSON}' is not recorded yet: no evidence set holds its runs, so "
        "its page shows a 'Not yet recorded' notice and stays out of the search and the sitemap; claims on its own "
        f"evidence wait for the first recording on a GPU machine: .venv/bin/python scripts/refresh.py {LESSON}")


@pytest.fixture
def course(demo_repo: Path) -> Path:
    """The demo repository with a nav (and comments in it), as a course's mkdocs.yml has, and the
    course's phrase for the module number in it."""
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml(NAV))
    (demo_repo / "narrative.yml").write_text("module N: a module of the course\n")
    return demo_repo


def new(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_run("new", *args, "--repo", str(repo))


def tree(repo: Path) -> dict[str, str]:
    return {str(p.relative_to(repo)): p.read_text() for p in sorted(repo.rglob("*")) if p.is_file()}


def test_new_writes_the_lesson_and_lists_its_page(course: Path):
    before = (course / "mkdocs.yml").read_text()
    done = new(course, LESSON)
    assert done.returncode == 0, done.stderr
    for rel in (f"code/{LESSON}/global-reduction.cu", f"code/{LESSON}/runs.toml", f"code/{LESSON}/README.md",
                f"code/{LESSON}/.gitignore", f"docs/{LESSON}.md"):
        assert f"wrote {rel}\n" in done.stdout and (course / rel).is_file()
    after = (course / "mkdocs.yml").read_text()
    assert after == before.replace('      - "Demo": index.md\n', '      - "Demo": index.md\n'
                                   '  - "New lessons":\n'
                                   f'      - "Day 27: global reduction": {LESSON}.md\n')
    spec = load_spec(course / "code", LESSON)
    assert [r.name for r in spec.runs] == ["bare"] and spec.runs[0].gate and spec.harness is not None


def test_right_after_new_check_and_a_strict_build_pass(course: Path):
    """The author's first step builds: `check` (strict too) says the lesson is not recorded yet in a note
    and passes; a strict build passes and shows the page with its notice."""
    new(course, LESSON)
    (course / "mkdocs.yml").write_text("strict: true\n" + (course / "mkdocs.yml").read_text())
    for flags in ((), ("--strict",)):
        done = cli_run("check", "--repo", str(course), *flags)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout == f"{NOTE}\nok: every page, region, claim and evidence set under {course} agrees\n"
    strict = mkdocs_build(course, "--strict")
    assert strict.returncode == 0, strict.stderr
    html = (course / "site" / LESSON / "index.html").read_text()
    assert "Not yet recorded" in html and f".venv/bin/python scripts/refresh.py {LESSON}" in html
    assert "addOne" in html  # the region: code cut from the program
    assert '<meta name="robots" content="noindex">' in html


def test_a_lesson_not_recorded_stays_out_of_search_and_the_sitemap(course: Path):
    import gzip
    import json

    new(course, LESSON)
    (course / "mkdocs.yml").write_text("site_url: https://gpu.example.org/course/\n" + (course / "mkdocs.yml").read_text())
    assert mkdocs_build(course).returncode == 0
    site = course / "site"
    locations = [d["location"] for d in json.loads((site / "search/search_index.json").read_text())["docs"]]
    assert locations and not any(loc.startswith(f"{LESSON}/") for loc in locations)
    for sitemap in ((site / "sitemap.xml").read_text(), gzip.decompress((site / "sitemap.xml.gz").read_bytes()).decode()):
        assert f"/{LESSON}/</loc>" not in sitemap and "<loc>" in sitemap
    assert '<meta name="robots"' not in (site / "index.html").read_text()
    assert lessonkit_verify(course, site).returncode == 0


def lessonkit_verify(course: Path, site: Path) -> subprocess.CompletedProcess:
    return cli_run("verify-site", "--repo", str(course), str(site))


def test_a_lesson_folder_the_site_does_not_use_is_a_warning(course: Path):
    """An author who removed runs.toml to get past a refusal is told that the lesson has left the site."""
    new(course, LESSON)
    (course / f"code/{LESSON}/runs.toml").unlink()
    (course / f"docs/{LESSON}.md").unlink()
    (course / "mkdocs.yml").write_text(mkdocs_yml(NAV))  # its nav entry gone too: only the folder is left
    done = cli_run("check", "--repo", str(course), "--no-strict")
    assert done.returncode == 0
    assert done.stderr.splitlines()[0] == (
        f"code/{LESSON}: warning: holds no runs.toml, so the site uses nothing of this folder (no evidence set, no "
        f"program page, no check of its regions); give it one (.venv/bin/python -m lessonkit new {LESSON} writes a "
        "lesson's files, here or in a fresh folder) or remove the folder")
    assert cli_run("check", "--repo", str(course), "--strict").returncode == 1


def test_a_new_day_lands_in_day_order_in_its_section(tmp_path: Path):
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: x\nnav:\n    - Home: index.md\n    - Debugging:\n"
                      "        - Day 61: day61-memcheck.md\n        - Day 63: day63-cuda-gdb.md\n"
                      "    - Reference:\n        - R: r.md\n")
    assert add_to_nav(config, "Debugging", '- "Day 62: racecheck": day62-racecheck.md')
    assert config.read_text() == ("site_name: x\nnav:\n    - Home: index.md\n    - Debugging:\n"
                                  "        - Day 61: day61-memcheck.md\n        - \"Day 62: racecheck\": day62-racecheck.md\n"
                                  "        - Day 63: day63-cuda-gdb.md\n    - Reference:\n        - R: r.md\n")


def printed(source: str) -> str:
    """What the stub prints on an H200 with a right answer, from its own printf format strings."""
    formats = re.findall(r'std::printf\("((?:[^"\\]|\\.)*)"', source)
    values = iter(["NVIDIA H200", "9", "0", "0", "1000"])
    out = []
    for fmt in formats:
        out.append(re.sub(r"%[ds]", lambda _: next(values), fmt.replace("\\n", "\n")))
    return "".join(out)


def test_the_stub_s_output_is_read_by_its_declared_harness(course: Path):
    new(course, LESSON)
    text = printed((course / f"code/{LESSON}/global-reduction.cu").read_text())
    assert text == "device: NVIDIA H200 | compute capability 9.0\nresult: 0 of 1000 elements wrong\n"
    t = parse_transcript(text, "bare.txt", load_spec(course / "code", LESSON).harness)
    assert t.scalars == {"tool": None, "gpu": "NVIDIA H200", "compute_capability": "9.0", "wrong": 0,
                         "elements": 1000}


def test_once_recorded_the_notice_and_the_warning_go(course: Path):
    new(course, LESSON)
    text = printed((course / f"code/{LESSON}/global-reduction.cu").read_text())
    record_set(course, LESSON, {"bare": text})
    page = (course / f"docs/{LESSON}.md").read_text() + "\nIt got {{ 0 @ bare:wrong }} wrong.\n"
    (course / f"docs/{LESSON}.md").write_text(page)
    done = cli_run("check", "--repo", str(course), "--strict")
    assert (done.returncode, done.stderr) == (0, "")
    result = Site.load(course).page(page, f"docs/{LESSON}.md")
    assert result.errors == [] and "Not yet recorded" not in result.markdown
    wrong = Site.load(course).page(page.replace("{{ 0 @", "{{ 1 @"), f"docs/{LESSON}.md").errors
    assert [e.message.split(";")[0] for e in wrong] == [
        f"claim '1' (bare:wrong) disagrees with evidence/{LESSON}/s1/bare.txt"]


def test_a_claim_on_a_lesson_not_recorded_is_an_error(course: Path):
    new(course, LESSON)
    page = (course / f"docs/{LESSON}.md").read_text() + "\nIt got {{ 0 @ bare:wrong }} wrong.\n"
    errors = [str(e) for e in Site.load(course).page(page, f"docs/{LESSON}.md").errors]
    line = page.splitlines().index("It got {{ 0 @ bare:wrong }} wrong.") + 1
    assert errors == [(f"docs/{LESSON}.md:{line}: claim '0 @ bare:wrong' cannot be checked: lesson '{LESSON}' is "
                      f"not recorded yet; record it on a GPU machine: .venv/bin/python scripts/refresh.py {LESSON}")]


def test_two_claims_on_one_line_each_name_their_claim(course: Path):
    new(course, LESSON)
    claims = ("On an {{ NVIDIA H200 @ bare:gpu }}, {{ 0 @ bare:wrong }} wrong, "
              "{{ 1.0 / 1.0 @ bare:wrong / bare:elements }} and {{ " + "a very long value " * 5 + "@ bare:gpu }}.")
    page = (course / f"docs/{LESSON}.md").read_text() + "\n" + claims + "\n"
    errors = Site.load(course).page(page, f"docs/{LESSON}.md").errors
    assert len({e.line for e in errors}) == 1
    assert [e.message.split(" cannot be checked: ")[0] for e in errors] == [
        "claim 'NVIDIA H200 @ bare:gpu'", "claim '0 @ bare:wrong'", "claim '1.0 / 1.0 @ bare:wrong / bare:elements'",
        "claim 'a very long value a very long value a very long value a ver…'"]


def test_a_runs_toml_that_cannot_be_read_is_the_one_error_of_its_lesson(course: Path):
    new(course, LESSON)
    page = course / f"docs/{LESSON}.md"
    page.write_text(page.read_text() + "\nIt got {{ 0 @ bare:wrong }} wrong of {{ 1000 @ bare:elements }}.\n")
    runs = course / f"code/{LESSON}/runs.toml"
    runs.write_text(runs.read_text().replace('wrong = "int"', 'wrong = "integer"'))
    line = runs.read_text().splitlines().index('wrong = "integer"') + 1
    cause = (f"code/{LESSON}/runs.toml:{line}: [harness.types]: group 'wrong' has unknown type 'integer'; "
             "expected one of str, int, float, yes-no")
    for _ in range(2):  # cold, then from the cache
        done = cli_run("check", "--repo", str(course))
        assert (done.returncode, done.stderr.splitlines()) == (1, [cause, "1 error found"])
    runs.write_text(runs.read_text().replace('wrong = "integer"', 'wrong = "int"'))
    done = cli_run("check", "--repo", str(course))
    assert "claim '0 @ bare:wrong' cannot be checked" in done.stderr and NOTE in done.stdout


def test_a_region_of_a_file_no_run_reads_is_an_error_even_before_recording(course: Path):
    new(course, LESSON)
    (course / f"code/{LESSON}/other.cu").write_text("// snippet: k\nint x;\n// end snippet\n")
    page = f"# T\n\n{{{{ evidence {LESSON} }}}}\n\n{{{{ region {LESSON}/other.cu k }}}}\n"
    errors = [str(e) for e in Site.load(course).page(page, "docs/t.md").errors]
    assert len(errors) == 1 and errors[0].startswith(
        f"docs/t.md:5: code/{LESSON}/other.cu is not an input of a recording: evidence/{LESSON} does not exist")


def test_a_warm_cache_says_the_same_and_sees_the_recording(course: Path):
    new(course, LESSON)
    wait_settled(course)
    first = cli_run("check", "--repo", str(course))
    again = cli_run("check", "--repo", str(course))
    assert (again.returncode, again.stderr) == (first.returncode, first.stderr) and NOTE in first.stdout
    record_set(course, LESSON, {"bare": "result: 0 of 1000 elements wrong\n"})
    wait_settled(course)
    recorded = cli_run("check", "--repo", str(course))
    assert (recorded.returncode, recorded.stderr) == (0, ""), recorded.stderr


@pytest.mark.parametrize("name", ["Day27", "day 27", "../x", "x.y", "day27_x", ""])
def test_a_name_that_is_not_a_folder_name_is_refused(course: Path, name: str):
    before = tree(course)
    done = new(course, name)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"{name}: is not a lesson name: use lowercase letters, digits and '-', starting with "
                           "a letter or digit (it names a folder and a page's address), e.g. "
                           "day27-global-reduction\n")
    assert tree(course) == before


@pytest.mark.parametrize("taken", ["code/{}/x.cu", "docs/{}.md", "evidence/{}/manifest.json"])
def test_an_existing_lesson_is_refused(course: Path, taken: str):
    path = course / taken.format("day9-x")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    before = tree(course)
    done = new(course, "day9-x")
    shown = taken.format("day9-x").removesuffix("/x.cu").removesuffix("/manifest.json")
    assert (done.returncode, done.stderr) == (1, (f"{shown}: exists: lesson 'day9-x' is taken; choose another "
                                                 "name (nothing was written)\n"))
    assert tree(course) == before


def test_a_section_that_exists_gets_the_page_at_its_end(tmp_path: Path):
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: x\nnav:\n    - Home: index.md\n    - Debugging:   # module 7\n"
                      "        - Day 62: day62.md\n    - Reference:\n        - R: r.md\nstrict: true\n")
    assert add_to_nav(config, "Debugging", '- "Day 63: cuda-gdb": day63.md')
    assert config.read_text() == ("site_name: x\nnav:\n    - Home: index.md\n    - Debugging:   # module 7\n"
                                  "        - Day 62: day62.md\n        - \"Day 63: cuda-gdb\": day63.md\n"
                                  "    - Reference:\n        - R: r.md\nstrict: true\n")


@pytest.mark.parametrize("config", ["site_name: x\nnav: [index.md, a.md]\n", "site_name: x\n",
                                    "site_name: x\nnav:\n"])
def test_a_nav_it_cannot_edit_is_left_alone_and_the_line_printed(course: Path, config: str):
    (course / "mkdocs.yml").write_text(config)
    done = new(course, LESSON)
    assert done.returncode == 0 and (course / f"docs/{LESSON}.md").is_file()
    assert (course / "mkdocs.yml").read_text() == config
    assert ("mkdocs.yml's nav could not be edited line by line; add this entry to it yourself:\n"
            f'  - "Day 27: global reduction": {LESSON}.md\n') in done.stdout


def test_the_stub_compiles_with_its_build_line(course: Path):
    new(course, LESSON)
    line = load_spec(course / "code", LESSON).build["sm_90"]
    done = subprocess.run(line.split(), cwd=course / "code" / LESSON, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (course / "code" / LESSON / "global-reduction").is_file()


def test_the_built_program_stays_out_of_git(course: Path):
    new(course, LESSON)
    folder = course / "code" / LESSON
    line = load_spec(course / "code", LESSON).build["sm_90"]
    assert line.split()[line.split().index("-o") + 1] == "global-reduction"
    (folder / "global-reduction").write_bytes(b"\x7fELF")  # as the build line writes it
    subprocess.run(["git", "init", "-q", str(course)], check=True)
    status = subprocess.run(["git", "-C", str(course), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert f"code/{LESSON}/global-reduction.cu" in status and f"code/{LESSON}/.gitignore" in status
    assert f"code/{LESSON}/global-reduction" not in status


def test_an_engine_without_hooks_shows_the_notice_and_logs_the_note(course: Path, caplog):
    import markdown

    new(course, LESSON)
    page = (course / f"docs/{LESSON}.md").read_text()
    md = markdown.Markdown(extensions=["lessonkit.site.mdext", "pymdownx.superfences", "pymdownx.highlight",
                                       "admonition"],
                           extension_configs={"lessonkit.site.mdext": {"repo": str(course)}})
    with caplog.at_level("INFO", logger="lessonkit"):
        html = md.convert(page)
    assert '<p class="admonition-title">Not yet recorded</p>' in html and "addOne" in html
    assert [r.getMessage() for r in caplog.records] == [f"lessonkit: {NOTE}"]


def test_a_recorded_lesson_s_broken_runs_toml_is_one_error(course: Path):
    new(course, LESSON)
    record_set(course, LESSON, {"bare": "result: 0 of 1000 elements wrong\n"})
    runs = course / f"code/{LESSON}/runs.toml"
    runs.write_text(runs.read_text().replace("timeout = 60", 'timeout = "sixty"'))
    done = cli_run("check", "--repo", str(course))
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "1 error found", done.stderr
    assert done.stderr.startswith(f"code/{LESSON}/runs.toml")


def test_new_declares_the_day_phrase_its_title_needs_once(course: Path):
    done = new(course, LESSON)
    assert "added 'day N' to narrative.yml" in done.stdout
    assert (course / "narrative.yml").read_text() == ("module N: a module of the course\n"
                                                      "day N: a day of the course\n")
    assert "narrative.yml" not in new(course, "day28-next").stdout
    assert (course / "narrative.yml").read_text().count("day N") == 1
