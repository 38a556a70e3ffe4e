#!/usr/bin/env python3
"""Benchmark: the real site built with claim checking (the hooks) and without, and `check` alone.

Builds the same pages five times each way, alternating, in this process, and prints the
medians and their ratio. Usage: python3 scripts/bench_build.py [--runs 5]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")


def build_once(config_file: Path, hooks: bool, site_dir: str) -> float:
    """Seconds for one full `mkdocs build` of the site, with or without the lessonkit hooks."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    # Same pages, theme and extensions; hooks=[] turns off regions, transcripts and claim checks.
    overrides = {} if hooks else {"hooks": []}
    config = load_config(str(config_file), site_dir=site_dir, **overrides)
    assert any("lessonkit_hooks" in n for n in config.plugins) == hooks
    start = time.perf_counter()
    build(config)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    from lessonkit.site import check_site

    with_hooks: list[float] = []
    without: list[float] = []
    checks: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        build_once(REPO / "mkdocs.yml", True, out)  # warm caches and imports once, untimed
        for _ in range(args.runs):
            with_hooks.append(build_once(REPO / "mkdocs.yml", True, out))
            without.append(build_once(REPO / "mkdocs.yml", False, out))
            start = time.perf_counter()
            errors = check_site(REPO)
            checks.append(time.perf_counter() - start)
            assert not errors, errors
    on, off, chk = (statistics.median(x) for x in (with_hooks, without, checks))
    print(f"build with claim checking : median {on:.3f} s  ({', '.join(f'{t:.3f}' for t in with_hooks)})")
    print(f"build with hooks off      : median {off:.3f} s  ({', '.join(f'{t:.3f}' for t in without)})")
    print(f"ratio with/without        : {on / off:.3f}  (checking costs {100 * (on / off - 1):+.1f}%)")
    print(f"python -m lessonkit check : median {chk:.3f} s  ({', '.join(f'{t:.3f}' for t in checks)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
