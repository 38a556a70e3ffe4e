"""The command line: check, regions, transcript; and the real site passes its own check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lessonkit", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_the_real_site_checks_clean():
    done = cli("check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: every page, region, claim and evidence set")


def test_check_lists_every_error_and_exits_1(demo_repo: Path):
    (demo_repo / "docs/index.md").write_text("{{ 9 @ demo/race:#reports }}\n{{ 8 @ demo/race:#reports }}\n")
    done = cli("check", "--repo", str(demo_repo))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "docs/index.md:1: claim '9' (demo/race:#reports) disagrees with evidence/demo/race.txt; it says '2'",
        "docs/index.md:2: claim '8' (demo/race:#reports) disagrees with evidence/demo/race.txt; it says '2'",
        "2 errors found"]


def test_regions_as_json():
    done = cli("regions", "code/day62-racecheck/racecheck.cu")
    names = [r["name"] for r in json.loads(done.stdout)]
    assert names == ["racy-step", "fixed-step", "divergent-barrier", "fixed-barrier"]


def test_regions_of_a_broken_file(tmp_path: Path):
    (tmp_path / "b.cu").write_text("// snippet: a\n")
    done = cli("regions", str(tmp_path / "b.cu"))
    assert done.returncode == 1 and "region 'a' is never closed" in done.stderr


def test_transcript_as_json():
    done = cli("transcript", "evidence/day62-racecheck/racecheck-buggy-analysis.txt")
    data = json.loads(done.stdout)
    assert {r["severity"] for r in data["reports"]} == {"Error", "Warning"}
    assert data["summary"] == "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)"


def test_transcript_of_a_missing_file():
    done = cli("transcript", "nope.txt")
    assert done.returncode == 1 and done.stderr.startswith("nope.txt: cannot read:")
