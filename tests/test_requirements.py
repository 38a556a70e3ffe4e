"""The site's requirements hold only what its builds import: every package requirements.txt
pins is loaded by `mkdocs build` or `properdocs build` of a site with the project's setup."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO, mkdocs_yml

# Run an engine's command line in this process, then list the distributions of every module it loaded.
LOADED = """
import importlib.metadata, json, runpy, sys
engine, out = sys.argv[1], sys.argv[2]
sys.argv = [engine, "build", "-q", "-f", "mkdocs.yml", "-d", out]
try:
    runpy.run_module(engine, run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert not exc.code, exc.code
owners = importlib.metadata.packages_distributions()
print(json.dumps(sorted({d for m in list(sys.modules) for d in owners.get(m.partition(".")[0], [])})))
"""


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def required() -> set[str]:
    """The packages requirements.txt names (`-e .` is the project itself, lessonkit)."""
    names = set()
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line == "-e .":
            names.add("lessonkit")
        elif line:
            names.add(normal(re.match(r"[A-Za-z0-9_.-]+", line).group(0)))
    return names


def loaded_by(engine: str, repo: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-c", LOADED, engine, str(repo / f"site-{engine}")], cwd=repo,
                          capture_output=True, text=True, timeout=180, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1",
                               "DISABLE_MKDOCS_2_WARNING": "true"})
    assert done.returncode == 0, done.stderr
    return {normal(d) for d in json.loads(done.stdout.splitlines()[-1])}


def test_every_site_requirement_is_imported_by_a_build(demo_repo: Path):
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace("name: mkdocs", "name: material"))
    loaded = loaded_by("mkdocs", demo_repo) | loaded_by("properdocs", demo_repo)
    assert {"mkdocs", "properdocs", "mkdocs-material", "pygments", "pyyaml", "lessonkit"} <= loaded
    assert required() - loaded == set()
    assert "numpy" not in required()  # the tests' (requirements-dev.txt), not the site's
