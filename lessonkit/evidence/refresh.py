"""The author's refresh, run on a GPU machine: build, run every recorded command, swap the
evidence in atomically, then report which page claims no longer agree.

One refresh of a lesson at a time: a second one is refused at once (exit 2), naming the first's
PID, start time and command line. Each run's processes end with the refresh, even a refresh
killed by SIGKILL; and a refresh first ends, and names, any process group that a killed refresh
of the lesson left running.

Standard library only: the GPU machine has no MkDocs and no network.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence.declared import refuse_recording
from lessonkit.evidence.lessonlock import LessonLock, lessons_root, reap
from lessonkit.evidence.manifest import (
    MISSING,
    Manifest,
    TranscriptEntry,
    input_hashes,
    recording_file,
    recording_name,
    sha256_file,
    write_manifest,
)
from lessonkit.evidence.plan import RefreshError, check_inputs, choose_runs, dry_run, write_failed
from lessonkit.evidence.runner import RunResult, Runs, run_all, run_to_end, utc_now
from lessonkit.evidence.sets import load_evidence_set
from lessonkit.evidence.spec import LessonSpec, RunSpec, load_spec
from lessonkit.evidence.swap import crash_point, recover, scratch_folder, swap_in
from lessonkit.evidence.toolkit import (
    Toolkit,
    ToolkitError,
    default_set_name,
    find_toolkit,
    leaks,
    refresh_command,
    release,
    sanitizer_release,
)


@dataclass
class SwapState:
    """Where the swap stands, so an interruption can say which evidence is in place."""

    phase: str = "recording"  # recording -> swapping -> swapped
    target: str = ""          # evidence/<set>, once the set's name is known


swap_state = SwapState()
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # each unwinds the refresh (see main)


@contextmanager
def _writing(path: Path, repo: Path) -> Iterator[None]:
    """Turn a failed write of `path` (ENOSPC, EROFS, EACCES...) into the refresh's one message."""
    try:
        yield
    except OSError as exc:
        raise write_failed(path, exc, repo) from None


def _capture(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefreshError(f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise RefreshError(f"{' '.join(argv)} failed (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr).strip()[-500:]}")
    return done.stdout


def preflight(runs: list[RunSpec], toolkit: Toolkit | None = None, lesson: str | None = None) -> dict[str, str]:
    """Check that nvcc, compute-sanitizer (if used) and a GPU are there; return the provenance.

    With a toolkit, nvcc and compute-sanitizer are the toolkit's own (its versions are recorded,
    and its folder under 'toolkit'); without one, the ones on PATH. Without a GPU, the message
    names the dry run of `lesson`'s refresh (lessonkit.evidence.plan).
    """
    missing = []
    needed = ["nvcc", "nvidia-smi"]
    if any(r.uses_sanitizer for r in runs):
        needed.append("compute-sanitizer")
    tools = {tool: shutil.which(tool) for tool in needed}
    if toolkit is not None:
        tools["nvcc"] = str(toolkit.nvcc)
        if "compute-sanitizer" in needed:
            if toolkit.sanitizer is None:
                raise RefreshError(f"--toolkit {toolkit.root} has no compute-sanitizer (looked for "
                                   f"{toolkit.root / 'compute-sanitizer' / 'compute-sanitizer'} and "
                                   f"{toolkit.root / 'bin' / 'compute-sanitizer'}), and the runs use it")
            tools["compute-sanitizer"] = str(toolkit.sanitizer)
    for tool in needed:
        if tools[tool] is None:
            missing.append(tool)
    if missing:
        what = {"nvcc": "the CUDA compiler", "nvidia-smi": "the NVIDIA driver's tool (no GPU driver?)",
                "compute-sanitizer": "the sanitizer"}
        hint = (f"; without a GPU, `.venv/bin/python scripts/refresh.py {lesson} --dry-run` builds the program and "
                "lists what the refresh would run" if lesson and "nvidia-smi" in missing else "")
        raise RefreshError("the refresh needs a GPU machine; not found on PATH: " +
                           ", ".join(f"{t} ({what[t]})" for t in missing) + hint)
    smi = _capture(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"])
    first = smi.strip().splitlines()[0] if smi.strip() else ""
    parts = [p.strip() for p in first.split(",")]
    if len(parts) != 3:
        raise RefreshError(f"no GPU found: nvidia-smi printed {smi.strip()!r}")
    prov = {"gpu": parts[0], "compute_capability": parts[1], "driver": parts[2]}
    m = re.search(r"release [\d.]+, V(\S+)", _capture([tools["nvcc"], "--version"]))
    prov["nvcc"] = m.group(1) if m else "unknown"
    if "compute-sanitizer" in needed:
        m = re.search(r"Version (\S+)", _capture([tools["compute-sanitizer"], "--version"]))
        prov["compute_sanitizer"] = m.group(1) if m else "unknown"
    if toolkit is not None:
        prov["toolkit"] = str(toolkit.root)
        if toolkit.sanitizer_root is not None:
            prov["sanitizer_toolkit"] = str(toolkit.sanitizer_root)
    prov["python"] = platform.python_version()
    for package, key in (("numpy", "numpy"), ("cupy-cuda13x", "cupy"), ("cupy-cuda12x", "cupy"), ("cupy", "cupy")):
        try:
            prov.setdefault(key, importlib.metadata.version(package))
        except importlib.metadata.PackageNotFoundError:
            pass
    return prov


def python_first(env: dict[str, str]) -> dict[str, str]:
    """`env` with the virtual environment of the Python running the refresh first on PATH, so a
    run's own `python3` (the sweep, the litmus campaign) is this Python, with the packages whose
    versions the provenance records (a refresh run as .venv/bin/python scripts/refresh.py)."""
    if sys.prefix == sys.base_prefix:
        return env  # not in a virtual environment: the runs find python3 on PATH, as before
    folder = os.path.dirname(sys.executable)
    return {**env, "PATH": folder + os.pathsep + env.get("PATH", os.defpath)}


def refresh(repo: Path, lesson: str, set_name: str | None = None, only: list[str] | None = None,
            arch: str | None = None, out=print, toolkit_dir: str | None = None,
            sanitizer_from: str | None = None) -> int:
    """Re-record a lesson's evidence; returns 0 if the pages still agree, 1 if not, 2 if nothing was recorded.

    With `toolkit_dir`, the build and every run use that toolkit folder's nvcc and compute-sanitizer
    (lessonkit.evidence.toolkit), and the set is named after its release unless `set_name` is given;
    with `sanitizer_from` too, the runs use that other toolkit's compute-sanitizer (a crossed set,
    named after both releases, recording only the runs its [[compare]] declaration lists).
    """
    spec = load_spec(repo / "code", lesson)
    with LessonLock(lesson) as lock:
        for line in reap(lock.ledger.path):  # before anything runs: a killed refresh's runs end here
            out(f"reap    {line}")
        runs = Runs(lock.ledger)
        try:
            return _refresh_locked(repo, spec, set_name, only, arch, out, toolkit_dir, sanitizer_from, runs)
        finally:
            runs.end_all()


def _refresh_locked(repo: Path, spec: LessonSpec, set_name: str | None, only: list[str] | None,
                    arch: str | None, out, toolkit_dir: str | None, sanitizer_from: str | None,
                    live: Runs) -> int:
    """The refresh, under the lesson's lock; `live` holds its runs."""
    lesson = spec.lesson
    toolkit, env, cuda_release, sanitizer = None, dict(os.environ), None, None
    if sanitizer_from is not None and toolkit_dir is None:
        raise RefreshError("--sanitizer-from needs --toolkit: the toolkit whose nvcc builds the program")
    if toolkit_dir is not None:
        try:
            toolkit = find_toolkit(toolkit_dir, sanitizer_from)
        except ToolkitError as exc:
            raise RefreshError(str(exc)) from None
        env = toolkit.path_env(env)
        cuda_release = release(_capture([str(toolkit.nvcc), "--version"], env=env))
        if cuda_release is None:
            raise RefreshError(f"{toolkit.nvcc} --version names no release; cannot name the set after it")
        if sanitizer_from is not None:
            sanitizer = sanitizer_release(_capture([str(toolkit.sanitizer), "--version"], env=env))
            if sanitizer is None:
                raise RefreshError(f"{toolkit.sanitizer} --version names no version; cannot name the set after it")
    env = python_first(env)
    set_name = set_name or default_set_name(lesson, cuda_release, sanitizer)
    swap_state.target = f"evidence/{set_name}"
    target = repo / "evidence" / set_name
    for line in recover(target):
        out(f"recover {line}")
    runs = choose_runs(spec, only, set_name)
    if only and not (target / "manifest.json").is_file():
        raise RefreshError(f"--only needs an existing set at evidence/{set_name}; run a full refresh first")
    check_inputs(repo, spec, runs)
    provenance = preflight(runs, toolkit, lesson)
    used = str(toolkit.nvcc) if toolkit is not None else shutil.which("nvcc") or "nvcc"
    refused = refuse_recording(spec, set_name, toolkit is not None, used, provenance["nvcc"],
                               provenance.get("compute_sanitizer"), sanitizer_from is not None)
    if refused:
        raise RefreshError(refused)
    arch = arch or "sm_" + provenance["compute_capability"].replace(".", "")
    if arch not in spec.build:
        raise RefreshError(f"{spec.path} has no build line for {arch}; it has: {', '.join(spec.build)}")
    build_line = spec.build[arch]
    if toolkit is not None:
        commands = [("the build line", build_line)] + [(f"run {r.name!r}", r.command) for r in runs]
        leaked = leaks(toolkit, commands, env, cwd=repo / "code" / lesson)
        if leaked:
            raise RefreshError(f"--toolkit {toolkit.root}: a command of {spec.path} would reach another "
                               "toolkit's tool; nothing was run:\n  " + "\n  ".join(leaked))

    target.parent.mkdir(parents=True, exist_ok=True)
    # A fixed build folder named like the repository's own, so paths that tools write into their
    # records (XML, compute-sanitizer's source paths) read code/<lesson>/FILE and a second refresh
    # does not rewrite them. Only the lock's holder makes, uses and removes it: first, what a killed
    # refresh left there goes.
    work = lessons_root() / lesson
    build_dir = work / "code" / lesson
    shutil.rmtree(work, ignore_errors=True)
    try:
        with _writing(build_dir, repo):
            build_dir.mkdir(parents=True)
            for path in (repo / "code" / lesson).iterdir():
                if path.is_file():
                    shutil.copy2(path, build_dir / path.name)
        out(f"build   {build_line}")
        output, code = run_to_end(build_line, build_dir, live, env)  # supervised too: it ends with us
        if code != 0:
            raise RefreshError(f"the build failed (exit {code}); nothing was recorded:\n{output}")
        results = run_all(runs, build_dir, work / "runs", out, live, env)
        failed_gates = [r for r in results if not r.run.passes_gate(r.exit_code)]
        if failed_gates:
            text = "\n".join(f"--- {r.job.name} ({'timed out' if r.timed_out else f'exit {r.exit_code}'}):\n"
                             f"{r.output}" for r in failed_gates)
            raise RefreshError("a gated run failed, so the fixed kernels are not right; the old evidence "
                               f"is kept and nothing was recorded:\n{text}")
        for r in results:  # what would be its transcript, measured as it would be written
            if (size := len(r.output.encode("utf-8"))) > r.run.max_output:
                raise RefreshError(f"run {r.job.name!r} printed {size} bytes, more than its max_output of "
                                   f"{r.run.max_output} bytes ({spec.path}); the old evidence is kept and nothing "
                                   "was recorded; raise max_output there if this much output is meant")
        refresh_cmd = refresh_command(lesson, set_name, str(toolkit.root) if toolkit else None, cuda_release,
                                      str(toolkit.sanitizer_root) if toolkit and toolkit.sanitizer_root else None,
                                      sanitizer)
        _record(repo, spec, set_name, build_line, arch, provenance, results, bool(only), refresh_cmd)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report_claims(repo, out)


def _entry(res: RunResult, name: str, file: str, sha: str, inputs: dict[str, str], fmt: str,
           group: str, refresh_id: str) -> TranscriptEntry:
    return TranscriptEntry(
        name=name, file=file, command=res.run.command, exit_code=res.exit_code, timed_out=res.timed_out,
        wall_s=round(res.wall_s, 2), date=res.date, inputs=inputs, sha256=sha, format=fmt, group=group,
        repeat=res.job.repeat, repeats=res.run.repeat, exclusive=res.run.exclusive,
        started=round(res.started, 3), ended=round(res.ended, 3), refresh_id=refresh_id)


def _record(repo: Path, spec: LessonSpec, set_name: str, build_line: str, arch: str,
            provenance: dict[str, str], results: list[RunResult], partial: bool, refresh_cmd: str) -> None:
    target = repo / "evidence" / set_name
    refresh_id = f"{utc_now()}/{os.getpid()}"  # this refresh: its recordings were made together
    scratch = scratch_folder(target)
    with _writing(scratch, repo):
        scratch.mkdir()
    try:
        entries: dict[str, TranscriptEntry] = {}
        if partial:  # keep every other recording exactly as it was recorded
            old = load_evidence_set(repo, set_name)
            redone = {r.run.name for r in results} | {a.name for r in results for a in r.run.artifacts}
            for name, entry in old.entries.items():
                if entry.group not in redone:
                    with _writing(scratch / entry.file, repo):
                        shutil.copy2(target / entry.file, scratch / entry.file)
                    entries[name] = entry
            for key in ("nvcc", "toolkit", "compute_sanitizer"):
                if (key in provenance or key != "compute_sanitizer") and old.provenance.get(key) != provenance.get(key):
                    raise RefreshError(f"--only would mix toolkits in evidence/{set_name}: it was recorded with "
                                       f"{key} {old.provenance.get(key)!r}, this refresh has {provenance.get(key)!r}; "
                                       f"re-record the whole set: {refresh_cmd}")
            provenance = {**old.provenance, **provenance}
        for res in results:
            inputs = input_hashes(repo, spec, res.run, build_line)
            if MISSING in inputs.values():
                raise RefreshError(f"an input of {res.run.name!r} disappeared during the refresh: "
                                   f"{', '.join(k for k, v in inputs.items() if v == MISSING)}")
            k, n = res.job.repeat, res.run.repeat
            file = recording_file(f"{res.run.name}.txt", k, n)
            with _writing(scratch / file, repo):
                (scratch / file).write_text(res.output, encoding="utf-8")
            entries[res.job.name] = _entry(res, res.job.name, file, sha256_file(scratch / file), inputs,
                                           "text", res.run.name, refresh_id)
            for art in res.run.artifacts:
                src = res.cwd / art.file
                if not src.is_file() or src.is_symlink():
                    raise RefreshError(f"run {res.job.name!r} did not write its artifact {art.file!r}")
                file = recording_file(art.file, k, n)
                with _writing(scratch / file, repo):
                    shutil.copy2(src, scratch / file)
                name = recording_name(art.name, k, n)
                entries[name] = _entry(res, name, file, sha256_file(scratch / file), inputs, art.format, art.name,
                                       refresh_id)
        with _writing(scratch / "manifest.json", repo):
            write_manifest(scratch, Manifest(spec.lesson, arch, build_line, refresh_cmd, provenance, entries))
        crash_point("scratch-written")
        # Signals wait until the swap is done, so an interruption never leaves it half made.
        blocked = set(ENDING_SIGNALS)
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            swap_state.phase = "swapping"
            with _writing(target, repo):  # renameat2 fails whole; without it, recover() mends the next time
                swap_in(scratch, target)
            swap_state.phase = "swapped"
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def report_claims(repo: Path, out=print) -> int:
    """Run the site check in its own process and list what no longer agrees; 0 when everything agrees.

    A separate process keeps the refresh free of the page and site modules, and checks with
    exactly what `.venv/bin/python -m lessonkit check` would say; not strict, since a warning (another
    lesson not recorded yet) is no claim that disagrees.
    """
    done = subprocess.run([sys.executable, "-m", "lessonkit", "check", "--no-strict", "--repo", str(repo)],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True)
    if done.returncode == 0:
        out("check   every page claim agrees with the new evidence")
        return 0
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    out(f"check   problems to fix in the pages ({lines[-1] if lines else 'no output'}):")
    for line in lines[:-1]:
        out(f"  {line}")
    out("review the new evidence (git diff evidence/), then let the pages follow it:")
    out(f"  .venv/bin/python -m lessonkit accept --repo {repo}")
    return 1


def main(argv: list[str] | None = None) -> int:
    """Command line of scripts/refresh.py."""
    parser = argparse.ArgumentParser(prog="scripts/refresh.py", description=__doc__)
    parser.add_argument("lesson", help="folder under code/, e.g. day62-racecheck")
    parser.add_argument("--set", dest="set_name",
                        help="evidence set name (default: the lesson's name; with --toolkit, LESSON-cudaRELEASE)")
    parser.add_argument("--toolkit", metavar="DIR",
                        help="build and run with this CUDA toolkit folder's nvcc and compute-sanitizer "
                             "(DIR/bin/nvcc; DIR/compute-sanitizer/compute-sanitizer or DIR/bin/compute-sanitizer), "
                             "refusing any command that would reach another toolkit's tool")
    parser.add_argument("--sanitizer-from", metavar="DIR2",
                        help="with --toolkit: run with DIR2's compute-sanitizer (DIR2/compute-sanitizer/) instead of "
                             "DIR's, so a comparison varies one tool at a time; the set is named "
                             "LESSON-cudaREL-sanitizerREL")
    parser.add_argument("--only", action="append",
                        help="re-record these runs (comma-separated, or repeated), keeping the others")
    parser.add_argument("--arch", help="build line to use, e.g. sm_90 (default: from the GPU; "
                        "with --dry-run, the first build line)")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU needed: build into a scratch folder and list every command the refresh "
                             "would run; nothing is run or recorded (exit 0 when the build succeeds)")
    parser.add_argument("--repo", default=".", help="repository root (default: .)")
    args = parser.parse_args(argv)
    only = [n.strip() for item in args.only or [] for n in item.split(",") if n.strip()] or None
    for sig in (signal.SIGTERM, signal.SIGHUP):  # unwind, so the runs end and the scratch folder goes
        signal.signal(sig, lambda signum, _: sys.exit(128 + signum))
    try:
        if args.dry_run:
            return dry_run(Path(args.repo).resolve(), args.lesson, args.set_name, only, args.arch,
                           out=lambda s: print(s, flush=True), toolkit_dir=args.toolkit)
        return refresh(Path(args.repo).resolve(), args.lesson, args.set_name, only, args.arch,
                       out=lambda s: print(s, flush=True), toolkit_dir=args.toolkit,
                       sanitizer_from=args.sanitizer_from)
    except (RefreshError, LessonError) as exc:
        print(f"refresh: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit) as exc:
        target = swap_state.target or f"evidence/{args.set_name or args.lesson}"
        code = 130 if isinstance(exc, KeyboardInterrupt) else (exc.code if isinstance(exc.code, int) else 1)
        if swap_state.phase == "swapped":
            print(f"refresh: interrupted after the swap; {target} holds the NEW evidence", file=sys.stderr)
        else:
            print(f"refresh: interrupted before the swap; {target} holds the old evidence, untouched",
                  file=sys.stderr)
        return code
