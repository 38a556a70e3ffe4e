"""The author's refresh, run on a GPU machine: build, run every recorded command, swap the
evidence in atomically, then report which page claims no longer agree.

Standard library only: the GPU machine has no MkDocs and no network.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import ctypes
import ctypes.util
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence import BUILD_INPUT, FORMAT, MANIFEST, load_evidence_set
from lessonkit.site import check_site
from lessonkit.spec import LessonSpec, RunSpec, load_spec, sha256_file, sha256_text


class RefreshError(Exception):
    """The refresh cannot go on; the old evidence is untouched. The message says why."""


@dataclass
class RunResult:
    """What one command did."""

    run: RunSpec
    output: str
    exit_code: int | None
    timed_out: bool
    wall_s: float
    date: str


_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _capture(argv: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefreshError(f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise RefreshError(f"{' '.join(argv)} failed (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr).strip()[-500:]}")
    return done.stdout


def preflight(runs: list[RunSpec]) -> dict[str, str]:
    """Check that nvcc, compute-sanitizer (if used) and a GPU are there; return the provenance."""
    missing = []
    needed = ["nvcc", "nvidia-smi"]
    if any("compute-sanitizer" in r.command for r in runs):
        needed.append("compute-sanitizer")
    for tool in needed:
        if shutil.which(tool) is None:
            missing.append(tool)
    if missing:
        what = {"nvcc": "the CUDA compiler", "nvidia-smi": "the NVIDIA driver's tool (no GPU driver?)",
                "compute-sanitizer": "the sanitizer"}
        raise RefreshError("the refresh needs a GPU machine; not found on PATH: " +
                           ", ".join(f"{t} ({what[t]})" for t in missing))
    smi = _capture(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"])
    first = smi.strip().splitlines()[0] if smi.strip() else ""
    parts = [p.strip() for p in first.split(",")]
    if len(parts) != 3:
        raise RefreshError(f"no GPU found: nvidia-smi printed {smi.strip()!r}")
    prov = {"gpu": parts[0], "compute_capability": parts[1], "driver": parts[2]}
    m = re.search(r"release [\d.]+, V(\S+)", _capture(["nvcc", "--version"]))
    prov["nvcc"] = m.group(1) if m else "unknown"
    if "compute-sanitizer" in needed:
        m = re.search(r"Version (\S+)", _capture(["compute-sanitizer", "--version"]))
        prov["compute_sanitizer"] = m.group(1) if m else "unknown"
    prov["python"] = platform.python_version()
    for package, key in (("numpy", "numpy"), ("cupy-cuda13x", "cupy"), ("cupy-cuda12x", "cupy"), ("cupy", "cupy")):
        try:
            prov.setdefault(key, importlib.metadata.version(package))
        except importlib.metadata.PackageNotFoundError:
            pass
    return prov


def _execute(run: RunSpec, cwd: Path) -> RunResult:
    """Run one command with a timeout; stdout and stderr together, in order; a hang is killed and recorded."""
    start = time.monotonic()
    date = _utc_now()
    proc = subprocess.Popen(shlex.split(run.command), cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    with _live_lock:
        _live.add(proc)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=run.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        out, _ = proc.communicate()
    finally:
        with _live_lock:
            _live.discard(proc)
    wall = time.monotonic() - start
    text = out.decode("utf-8", errors="replace")
    if timed_out:
        text += f"\n[refresh: no exit after {run.timeout:g} s; the process group was killed]\n"
    return RunResult(run, text, None if timed_out else proc.returncode, timed_out, wall, date)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_all() -> None:
    with _live_lock:
        for proc in list(_live):
            _kill(proc)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name or sys.platform != "linux":
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def swap_in(new: Path, target: Path) -> None:
    """Make `new` the folder at `target`, atomically where the OS allows; the old one is removed."""
    if not target.exists():
        os.rename(new, target)
        return
    if _exchange(new, target):
        shutil.rmtree(new)  # `new` now holds the old evidence
        return
    # No atomic exchange: two renames; a crash between them leaves `<target>.old`, restored on the next run.
    old = target.with_name(target.name + ".old")
    os.rename(target, old)
    os.rename(new, target)
    shutil.rmtree(old)


def _recover(target: Path) -> None:
    old = target.with_name(target.name + ".old")
    if old.exists() and not target.exists():
        os.rename(old, target)
    for stale in target.parent.glob(f".refresh-{target.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _transcript_entry(result: RunResult, file: str, sha: str, inputs: dict[str, str], fmt: str) -> dict:
    return {"file": file, "command": result.run.command, "exit_code": result.exit_code,
            "timed_out": result.timed_out, "wall_s": round(result.wall_s, 2), "date": result.date,
            "inputs": inputs, "sha256": sha, "format": fmt}


def refresh(repo: Path, lesson: str, set_name: str | None = None, only: str | None = None,
            arch: str | None = None, out=print) -> int:
    """Re-record a lesson's evidence; returns 0 if the pages still agree, 1 if not, 2 if nothing was recorded."""
    spec = load_spec(repo / "code", lesson)
    set_name = set_name or lesson
    target = repo / "evidence" / set_name
    _recover(target)
    runs = list(spec.runs)
    if only is not None:
        chosen = spec.run(only)
        if chosen is None:
            raise RefreshError(f"no run {only!r} in {spec.path}; runs: {', '.join(r.name for r in spec.runs)}")
        runs = [chosen]
        if not (target / MANIFEST).is_file():
            raise RefreshError(f"--only needs an existing set at evidence/{set_name}; run a full refresh first")
    provenance = preflight(runs)
    arch = arch or "sm_" + provenance["compute_capability"].replace(".", "")
    if arch not in spec.build:
        raise RefreshError(f"{spec.path} has no build line for {arch}; it has: {', '.join(spec.build)}")
    build_line = spec.build[arch]

    target.parent.mkdir(parents=True, exist_ok=True)
    # A fixed build folder: tools write its path into their records (XML), and a second
    # refresh with no source change must not rewrite them.
    build_dir = Path(tempfile.gettempdir()) / "lessonkit-refresh" / lesson
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    try:
        for path in (repo / "code" / lesson).iterdir():
            if path.is_file():
                shutil.copy2(path, build_dir / path.name)
        out(f"build   {build_line}")
        done = subprocess.run(shlex.split(build_line), cwd=build_dir, capture_output=True, text=True)
        if done.returncode != 0:
            raise RefreshError(f"the build failed (exit {done.returncode}); nothing was recorded:\n"
                               f"{done.stdout}{done.stderr}")
        results = _run_all(runs, build_dir, out)
        failed_gates = [r for r in results if r.run.gate and (r.timed_out or r.exit_code != 0)]
        if failed_gates:
            text = "\n".join(f"--- {r.run.name} ({'timed out' if r.timed_out else f'exit {r.exit_code}'}):\n"
                             f"{r.output}" for r in failed_gates)
            raise RefreshError("a gated run failed, so the fixed kernels are not right; the old evidence "
                               f"is kept and nothing was recorded:\n{text}")
        _record(repo, spec, set_name, build_line, arch, provenance, results, build_dir, only is not None)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    return report_claims(repo, out)


def _run_all(runs: list[RunSpec], build_dir: Path, out) -> list[RunResult]:
    start = time.monotonic()
    results: list[RunResult] = []
    # Independent runs share the GPU; the slowest one (hazard mode) sets the pace.
    with futures.ThreadPoolExecutor(max_workers=max(1, len(runs))) as pool:
        pending = {pool.submit(_execute, r, build_dir): r for r in runs}
        try:
            for fut in futures.as_completed(pending):
                res = fut.result()
                results.append(res)
                status = "timed out" if res.timed_out else f"exit {res.exit_code}"
                out(f"run     {res.run.name:<28} {status:<10} {res.wall_s:8.2f} s")
        except BaseException:
            _kill_all()
            raise
    total = time.monotonic() - start
    longest = max((r.wall_s for r in results), default=0.0)
    ratio = total / longest if longest else 0.0
    out(f"total   {len(results)} runs in {total:.2f} s; longest run {longest:.2f} s; "
        f"total/longest = {ratio:.2f}")
    order = {r.name: i for i, r in enumerate(runs)}
    return sorted(results, key=lambda r: order[r.run.name])


def _record(repo: Path, spec: LessonSpec, set_name: str, build_line: str, arch: str,
            provenance: dict[str, str], results: list[RunResult], build_dir: Path, partial: bool) -> None:
    target = repo / "evidence" / set_name
    scratch = repo / "evidence" / f".refresh-{set_name}-{os.getpid()}"
    scratch.mkdir()
    try:
        entries: dict[str, dict] = {}
        if partial:  # keep every other transcript exactly as it was recorded
            old = load_evidence_set(repo, set_name)
            keep = {r.run.name for r in results} | {a.name for r in results for a in r.run.artifacts}
            for name, entry in old.entries.items():
                if name not in keep:
                    shutil.copy2(target / entry.file, scratch / entry.file)
                    entries[name] = {k: v for k, v in asdict(entry).items() if k != "name"}
            provenance = {**old.provenance, **provenance}
        for res in results:
            inputs = {BUILD_INPUT: sha256_text(build_line)}
            for rel in spec.inputs + res.run.inputs:
                inputs[f"code/{spec.lesson}/{rel}"] = sha256_file(repo / "code" / spec.lesson / rel)
            name = f"{res.run.name}.txt"
            (scratch / name).write_text(res.output, encoding="utf-8")
            entries[res.run.name] = _transcript_entry(res, name, sha256_file(scratch / name), inputs, "text")
            for art in res.run.artifacts:
                src = build_dir / art.file
                if not src.is_file():
                    raise RefreshError(f"run {res.run.name!r} did not write its artifact {art.file!r}")
                shutil.copy2(src, scratch / art.file)
                entries[art.name] = _transcript_entry(res, art.file, sha256_file(scratch / art.file),
                                                      inputs, art.format)
        manifest = {
            "format": FORMAT, "lesson": spec.lesson, "arch": arch, "build": build_line,
            "refresh": f"python3 scripts/refresh.py {spec.lesson}" +
                       ("" if set_name == spec.lesson else f" --set {set_name}"),
            "provenance": provenance, "transcripts": dict(sorted(entries.items())),
        }
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        swap_in(scratch, target)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def report_claims(repo: Path, out=print) -> int:
    """Run the site check and list what no longer agrees; 0 when everything agrees."""
    errors = check_site(repo)
    if not errors:
        out("check   every page claim agrees with the new evidence")
        return 0
    out(f"check   {len(errors)} problem(s) to fix in the pages:")
    for e in errors:
        out(f"  {e}")
    return 1


def main(argv: list[str] | None = None) -> int:
    """Command line of scripts/refresh.py."""
    parser = argparse.ArgumentParser(prog="scripts/refresh.py", description=__doc__)
    parser.add_argument("lesson", help="folder under code/, e.g. day62-racecheck")
    parser.add_argument("--set", dest="set_name", help="evidence set name (default: the lesson's name)")
    parser.add_argument("--only", help="re-record this one transcript, keeping the others")
    parser.add_argument("--arch", help="build line to use, e.g. sm_90 (default: from the GPU)")
    parser.add_argument("--repo", default=".", help="repository root (default: .)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the scratch folder is removed
    try:
        return refresh(Path(args.repo).resolve(), args.lesson, args.set_name, args.only, args.arch,
                       out=lambda s: print(s, flush=True))
    except (RefreshError, LessonError) as exc:
        print(f"refresh: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("refresh: interrupted; the old evidence is untouched", file=sys.stderr)
        return 130
