"""scripts/cuda-toolkit.sh: the project's own recipe for an older CUDA toolkit (for `--toolkit DIR`).

Making the toolkit downloads about a gigabyte of Debian packages, too much for every CI run; these
tests hold its command line, and the README's and the toolkit module's pointers to it. (It was
run in full on a development machine: see the closing note of the session that added it.)
"""

from __future__ import annotations

import subprocess

from conftest import REPO

SCRIPT = REPO / "scripts" / "cuda-toolkit.sh"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30)


def test_without_arguments_it_prints_its_usage_and_fails():
    done = run()
    assert done.returncode == 2
    assert done.stderr == (f"usage: {SCRIPT} VERSION OUT.tar.xz (VERSION: 12.4, the release Debian trixie "
                           "packages)\n")


def test_a_release_debian_does_not_package_is_refused_before_any_download(tmp_path):
    done = run("11.8", str(tmp_path / "out.tar.xz"))
    assert done.returncode == 2
    assert done.stderr == f"{SCRIPT}: no Debian suite packages CUDA 11.8; this script makes 12.4 only\n"
    assert not (tmp_path / "out.tar.xz").exists()


def test_the_documentation_names_the_projects_script_and_no_path_outside_the_repository():
    for path in ("README.md", "lessonkit/evidence/toolkit.py", "tests/fake_gpu.py"):
        text = (REPO / path).read_text(encoding="utf-8")
        assert "/work/" not in text, path
    assert "scripts/cuda-toolkit.sh 12.4" in (REPO / "README.md").read_text(encoding="utf-8")
