"""`mkdocs build` on small fixture sites: a good site builds; every way evidence can disagree stops it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import mkdocs_build


def test_good_site_builds(demo_repo: Path):
    done = mkdocs_build(demo_repo)
    assert done.returncode == 0, done.stderr
    html = (demo_repo / "site/index.html").read_text()
    assert 'racecheck found <span class="lk-v">2</span> reports; the error has <span class="lk-v">120</span> hazards,' in \
        re.sub(r' data-lk-why="[^"]*"', "", html)  # (the words on each figure: tests/test_explain.py)
    assert '<span class="normal">4</span>' in html  # numbered with the file's own lines
    assert "demo.cu, lines 4\u20135 (body)" in html
    assert '<details class="abstract lk-transcript">' in html  # collapsible
    assert '<div class="lk-transcript-body" data-search-exclude>' in html  # all but its summary line not indexed
    assert "data-lk-slot" not in html
    assert "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)</samp></pre>" in html


def test_transcript_html_is_shown_as_text(demo_repo: Path):
    from conftest import RACE, record_set
    record_set(demo_repo, "demo", {"race": RACE + "<script>alert(1)</script>\n", "bare": "x"})
    done = mkdocs_build(demo_repo)
    assert done.returncode == 0, done.stderr
    html = (demo_repo / "site/index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html


def fails_with(repo: Path, *needles: str, strict: bool = False) -> str:
    done = mkdocs_build(repo, *(["--strict"] if strict else []))
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    for needle in needles:
        assert needle in out, out
    return out


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


# Point 2: source regions.

@pytest.mark.parametrize("source, message", [
    ("// snippet: body\nx\n", "docs/index.md:5: in region 'body': code/demo/demo.cu:1: region 'body' is never closed"),
    ("// snippet: body\nx\n// end snippet\n// end snippet\n", "code/demo/demo.cu:4: '// end snippet' with no open region"),
    ("// snippet: body\n// end snippet\n// snippet: body\n// end snippet\n", "code/demo/demo.cu:3: duplicate region 'body'"),
    ("// snippet: body\n// snippet: inner\n// end snippet\n", "region 'inner' opens inside region 'body'"),
    ("// snippet: other\nx\n// end snippet\n", "docs/index.md:5: no region 'body' in 'code/demo/demo.cu'; the regions there are: other"),
])
def test_region_failures(demo_repo: Path, source: str, message: str):
    (demo_repo / "code/demo/demo.cu").write_text(source)
    fails_with(demo_repo, message)


def test_missing_source_file(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "demo/demo.cu body", "demo/gone.cu body")
    fails_with(demo_repo, "docs/index.md:5: source file 'code/demo/gone.cu' does not exist")


def test_path_leaving_code(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "{{ region demo/demo.cu body", "{{ region ../mkdocs.yml body")
    fails_with(demo_repo, "docs/index.md:5: source path '../mkdocs.yml' leaves code/ through '..'")


def test_symlink_leaving_code(demo_repo: Path):
    (demo_repo / "code/demo/link.cu").symlink_to(demo_repo / "mkdocs.yml")
    edit(demo_repo / "docs/index.md", "{{ region demo/demo.cu body", "{{ region demo/link.cu body")
    fails_with(demo_repo, "docs/index.md:5: source path 'demo/link.cu' leaves code/ through a symlink")


# Point 5: claims.

def test_changed_claim_fails_strict_or_not(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "{{ 120 @", "{{ 121 @")
    for strict in (False, True):
        fails_with(demo_repo, "docs/index.md:7: claim '121' (race:reports[severity=Error].hazards) disagrees with "
                   "evidence/demo/s1/race.txt; it says '120' (line 7)", strict=strict)


def test_changed_summary_quote(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "(1 error, 1 warning).", "(1 error, 2 warnings).")
    fails_with(demo_repo, "docs/index.md:8: quote 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 2 warnings)' "
               "is not, verbatim, a summary line of every recording of a run cited in its sentence; "
               "they say: 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' in "
               "evidence/demo/s1/race.txt (line 13)\n")


def test_changed_highlight_line(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "highlight=4@", "highlight=5@")
    fails_with(demo_repo, "docs/index.md:5: claim '5' (race:reports[severity=Error].line) disagrees")


def test_every_error_is_reported(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "{{ 120 @", "{{ 121 @")
    edit(demo_repo / "docs/index.md", "{{ 2 @ race:#reports }}", "{{ 3 @ race:#reports }}")
    (demo_repo / "docs/other.md").write_text("{{ 1 @ demo/bare:#rows }} {{ 2 @ demo/bare:#rows }}\n")
    out = fails_with(demo_repo, "3 errors found")
    assert "docs/other.md:1: claim '2'" in out


def test_unknown_evidence_name(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "{{ evidence demo }}", "{{ evidence demo2 }}")
    fails_with(demo_repo, "docs/index.md:3: no evidence set 'demo2'; the sets are: demo")


# Point 6: freshness and integrity.

def test_stale_source(demo_repo: Path):
    edit(demo_repo / "code/demo/demo.cu", "// a tiny lesson", "// a tiny lesson, edited")
    fails_with(demo_repo, "evidence/demo/manifest.json: code/demo/demo.cu has sha256 ",
               ": 2 transcripts stale (bare, race); refresh on a GPU machine: .venv/bin/python scripts/refresh.py demo\n")


def test_hand_edited_transcript(demo_repo: Path):
    edit(demo_repo / "evidence/demo/s1/race.txt", "[120 hazards]", "[121 hazards]")
    fails_with(demo_repo, "evidence/demo/s1/race.txt: does not match the sha256 in the manifest: it was edited")


def test_missing_transcript(demo_repo: Path):
    (demo_repo / "evidence/demo/s1/race.txt").unlink()
    fails_with(demo_repo, "evidence/demo/s1/race.txt: transcript 's1/race' is missing")


def test_missing_manifest(demo_repo: Path):
    (demo_repo / "evidence/demo/manifest.json").unlink()
    fails_with(demo_repo, "evidence/demo/manifest.json: the manifest is missing")


def test_unparseable_manifest(demo_repo: Path):
    (demo_repo / "evidence/demo/manifest.json").write_text("{ not json")
    fails_with(demo_repo, "evidence/demo/manifest.json:1: not valid JSON")


def test_absolute_source_path(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "{{ region demo/demo.cu body", f"{{{{ region {demo_repo}/code/demo/demo.cu body")
    fails_with(demo_repo, "is absolute; expected a path relative to code/")


def test_file_not_written_by_the_refresh(demo_repo: Path):
    (demo_repo / "evidence/demo/notes.txt").write_text("typed by hand")
    fails_with(demo_repo, "evidence/demo/notes.txt: is not in the manifest: the refresh did not write it")


def test_changed_build_line_makes_evidence_stale(demo_repo: Path):
    edit(demo_repo / "code/demo/runs.toml", "-arch=sm_90 -o demo", "-O3 -arch=sm_90 -o demo")
    edit(demo_repo / "code/demo/README.md", "-arch=sm_90 -o demo", "-O3 -arch=sm_90 -o demo")
    fails_with(demo_repo, "evidence/demo/manifest.json: build line has sha256 ",
               ": 2 transcripts stale (bare, race); refresh on a GPU machine: .venv/bin/python scripts/refresh.py demo\n")


def test_changed_command_makes_evidence_stale(demo_repo: Path):
    edit(demo_repo / "code/demo/runs.toml", 'command = "./demo"', 'command = "./demo all"')
    fails_with(demo_repo, "transcript 'bare' is stale: recorded with './demo', code/demo/runs.toml now says './demo all'",
               "code/demo/README.md: does not show the run 'bare'")
