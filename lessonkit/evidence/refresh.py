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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence import gpuinfo
from lessonkit.evidence.declared import refuse_recording
from lessonkit.evidence.lessonlock import LessonLock, lessons_root, reap
from lessonkit.evidence.manifest import (
    MISSING,
    Manifest,
    Session,
    TranscriptEntry,
    entry_name,
    in_sessions,
    input_hashes,
    read_manifest,
    recording_file,
    recording_name,
    sha256_file,
    split_provenance,
    write_manifest,
)
from lessonkit.evidence.plan import RefreshError, check_inputs, choose_runs, dry_run, write_failed
from lessonkit.evidence.runner import RunResult, Runs, run_all, run_to_end, utc_now
from lessonkit.evidence.sessions import (
    Refreshing,
    history_change,
    joined_session,
    keep_sessions,
    kept_lines,
    other_gpu,
)
from lessonkit.evidence.sets import check_integrity, load_evidence_set
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


# The refresh's exit statuses (the guide quotes them as claims on these lines).
EXIT_AGREES = 0  # recorded, and every page claim agrees with the new evidence
EXIT_PAGES_NEED_FIXING = 1  # recorded; some claims no longer agree (listed)
EXIT_NOTHING_RECORDED = 2  # refused or failed: nothing was recorded, the old evidence is kept
SHARED_GPU_WAIT_S = 60.0  # how long a refresh waits for another process to leave the GPU before an exclusive run
SHARED_GPU_POLL_S = 1.0


class GpuShared(RefreshError):
    """Another process held the GPU before an exclusive run, for longer than the refresh would wait."""


class GpuGuard:
    """Before and after each exclusive run, the other compute processes on the GPU (nvidia-smi).

    Found before a run, they are waited for, up to `wait_s`; still there, the refresh is refused
    (GpuShared: exit 2, the old evidence kept), unless `allow_shared`: then the run is recorded and the
    session is marked shared. What was found around each exclusive run goes into the session's
    provenance, empty lists included, so a reader sees that the GPU was the run's own.
    """

    def __init__(self, uuid: str | None, allow_shared: bool, out, wait_s: float = SHARED_GPU_WAIT_S,
                 poll_s: float = SHARED_GPU_POLL_S, run: gpuinfo.Runner = gpuinfo.run_smi) -> None:
        self.uuid, self.allow_shared, self.out = uuid, allow_shared, out
        self.wait_s, self.poll_s, self.run = wait_s, poll_s, run
        self.seen: dict[str, dict[str, list[dict[str, object]]]] = {}
        self.ignore = frozenset({os.getpid()})

    @property
    def shared(self) -> bool:
        """Whether another process was found on the GPU around any exclusive run."""
        return any(found for around in self.seen.values() for found in around.values())

    def _others(self) -> list[gpuinfo.GpuProcess]:
        try:
            return gpuinfo.compute_processes(self.uuid, self.run, self.ignore)
        except gpuinfo.GpuInfoError as exc:
            raise RefreshError(f"cannot tell whether the GPU is this refresh's alone: {exc}; the old evidence is "
                               "kept and nothing was recorded") from None

    def before(self, job: str) -> None:
        """Wait until no other process holds the GPU (or refuse, or note it when allowed)."""
        others = self._others()
        deadline = time.monotonic() + self.wait_s
        if others and not self.allow_shared:
            self.out(f"wait    the GPU is shared with {_processes(others)}; exclusive run {job!r} waits up to "
                     f"{self.wait_s:g} s for it to be the refresh's alone")
            while others and time.monotonic() < deadline:
                time.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))
                others = self._others()
            if others:
                raise GpuShared(f"GPU shared with {_processes(others)}: exclusive run {job!r} needs the GPU to "
                                f"itself, and waited {self.wait_s:g} s; the old evidence is kept and nothing was "
                                "recorded; stop the other process, or record anyway with --allow-shared-gpu (the "
                                "session is then marked shared, and backs no timing and no exclusive run's figure)")
        elif others:
            self.out(f"shared  the GPU is shared with {_processes(others)} as exclusive run {job!r} starts "
                     "(--allow-shared-gpu): the session is marked shared")
        self.seen[job] = {"start": [p.to_json() for p in others]}

    def after(self, job: str) -> None:
        """Note what else held the GPU as the run ended."""
        others = self._others()
        if others:
            self.out(f"shared  the GPU was shared with {_processes(others)} as exclusive run {job!r} ended"
                     + ("" if self.allow_shared else "; the session is marked shared"))
        self.seen.setdefault(job, {})["end"] = [p.to_json() for p in others]


def _processes(found: list[gpuinfo.GpuProcess]) -> str:
    return ", ".join(p.shown() for p in found)


def refresh(repo: Path, lesson: str, set_name: str | None = None, only: list[str] | None = None,
            arch: str | None = None, out=print, toolkit_dir: str | None = None,
            sanitizer_from: str | None = None, allow_shared_gpu: bool = False,
            shared_gpu_wait: float = SHARED_GPU_WAIT_S, new_history: bool = False) -> int:
    """Re-record a lesson's evidence; returns 0 if the pages still agree, 1 if not, 2 if nothing was recorded.

    With `toolkit_dir`, the build and every run use that toolkit folder's nvcc and compute-sanitizer
    (lessonkit.evidence.toolkit), and the set is named after its release unless `set_name` is given;
    with `sanitizer_from` too, the runs use that other toolkit's compute-sanitizer (a crossed set,
    named after both releases, recording only the runs its [[compare]] declaration lists).

    The recordings are a new session of the set (lessonkit.evidence.manifest): the set keeps the
    sessions of today's inputs, the lesson's `sessions = K` latest of them for each run; a refresh on
    the machine start of a kept session re-records that session's runs. Before each exclusive run
    the GPU must be the refresh's alone (GpuGuard), unless `allow_shared_gpu`.
    """
    spec = load_spec(repo / "code", lesson)
    with LessonLock(lesson) as lock:
        for line in reap(lock.ledger.path):  # before anything runs: a killed refresh's runs end here
            out(f"reap    {line}")
        runs = Runs(lock.ledger)
        try:
            return _refresh_locked(repo, spec, set_name, only, arch, out, toolkit_dir, sanitizer_from, runs,
                                   allow_shared_gpu, shared_gpu_wait, new_history)
        finally:
            runs.end_all()


def _toolchain(toolkit_dir: str | None, sanitizer_from: str | None
               ) -> tuple[Toolkit | None, dict[str, str], str | None, str | None]:
    """The toolkit a refresh uses (--toolkit, --sanitizer-from), the environment its runs get, and the
    releases the set is named after; RefreshError when a folder is not a toolkit or names no release."""
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
    return toolkit, python_first(env), cuda_release, sanitizer


def _refresh_locked(repo: Path, spec: LessonSpec, set_name: str | None, only: list[str] | None,
                    arch: str | None, out, toolkit_dir: str | None, sanitizer_from: str | None,
                    live: Runs, allow_shared_gpu: bool = False, shared_gpu_wait: float = SHARED_GPU_WAIT_S,
                    new_history: bool = False) -> int:
    """The refresh, under the lesson's lock; `live` holds its runs."""
    lesson = spec.lesson
    toolkit, env, cuda_release, sanitizer = _toolchain(toolkit_dir, sanitizer_from)
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
    other = other_gpu(_old_manifest(target, set_name), provenance)
    if other and not new_history:
        raise RefreshError(f"evidence/{set_name} was recorded on {other}; this machine has "
                           f"{provenance.get('gpu')!r} (compute capability {provenance.get('compute_capability')}). A set "
                           "holds one GPU's sessions: record this GPU into a set of its own (--set NAME), or retire "
                           "the set's sessions and start a new history on this GPU (--new-history); nothing was run")
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
        try:
            session = gpuinfo.session_start()
        except gpuinfo.GpuInfoError as exc:
            raise RefreshError(f"cannot read the session's GPU with nvidia-smi: {exc}") from None
        out(f"session GPU {session.get('gpu_uuid')} at {session.get('pci_bus_id')}, machine start {session['boot']}")
        out(f"build   {build_line}")
        output, code = run_to_end(build_line, build_dir, live, env)  # supervised too: it ends with us
        if code != 0:
            raise RefreshError(f"the build failed (exit {code}); nothing was recorded:\n{output}")
        uuid = session.get("gpu_uuid")
        guard = GpuGuard(uuid if isinstance(uuid, str) and uuid.startswith("GPU-") else None, allow_shared_gpu,
                         out, shared_gpu_wait)
        results = run_all(runs, build_dir, work / "runs", out, live, env, guard)
        session = gpuinfo.session_end(session)
        session["shared"] = guard.shared
        session["gpu_processes"] = guard.seen
        refuse_results(results, spec)
        refresh_cmd = refresh_command(lesson, set_name, str(toolkit.root) if toolkit else None, cuda_release,
                                      str(toolkit.sanitizer_root) if toolkit and toolkit.sanitizer_root else None,
                                      sanitizer)
        _record(repo, spec, set_name, build_line, arch, provenance, session, results, bool(only), refresh_cmd, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report_claims(repo, out)


def refuse_results(results: list[RunResult], spec: LessonSpec) -> None:
    """RefreshError (nothing recorded) when a gated run failed, or a run printed more than its
    max_output, or printed what is not UTF-8 text."""
    failed_gates = [r for r in results if not r.run.passes_gate(r.exit_code)]
    if failed_gates:
        text = "\n".join(f"--- {r.job.name} ({'timed out' if r.timed_out else f'exit {r.exit_code}'}):\n"
                         f"{r.output}" for r in failed_gates)
        raise RefreshError("a gated run failed, so the fixed kernels are not right; the old evidence "
                           f"is kept and nothing was recorded:\n{text}")
    for r in results:  # what would be its transcript, read as it was printed
        if r.over_cap:
            raise RefreshError(f"run {r.job.name!r} printed more than its max_output of {r.run.max_output} bytes "
                               f"({spec.path}); it was stopped there, the old evidence is kept and nothing was "
                               "recorded; raise max_output there if this much output is meant")
        if (bad := not_text(r.raw)) is not None:
            raise RefreshError(f"run {r.job.name!r} printed {bad}; a transcript is UTF-8 text, which every reader "
                               "of the evidence takes as it is, so this output cannot be recorded; the old "
                               "evidence is kept and nothing was recorded")


def not_text(raw: bytes) -> str | None:
    """What in a run's output is not UTF-8 text without NUL ('a NUL byte at byte offset 12'), or None."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        nul = raw.find(b"\0", 0, exc.start)
        if nul < 0:
            return f"a byte that is not UTF-8 (0x{raw[exc.start]:02x}) at byte offset {exc.start}"
        return f"a NUL byte at byte offset {nul}"
    nul = raw.find(b"\0")
    return None if nul < 0 else f"a NUL byte at byte offset {nul}"


def _entry(res: RunResult, name: str, file: str, sha: str, inputs: dict[str, str], fmt: str,
           group: str, refresh_id: str, session: str) -> TranscriptEntry:
    return TranscriptEntry(
        name=name, file=file, command=res.run.command, exit_code=res.exit_code, timed_out=res.timed_out,
        wall_s=round(res.wall_s, 2), date=res.date, inputs=inputs, sha256=sha, format=fmt, group=group,
        repeat=res.job.repeat, repeats=res.run.repeat, exclusive=res.run.exclusive,
        started=round(res.started, 3), ended=round(res.ended, 3), refresh_id=refresh_id, session=session)


def _old_manifest(target: Path, set_name: str) -> Manifest | None:
    """The set's manifest as it stands, or None when there is none or it cannot be read (a new history)."""
    if not (target / "manifest.json").is_file():
        return None
    try:
        return read_manifest(target, f"evidence/{set_name}")
    except LessonError:
        return None


def _record(repo: Path, spec: LessonSpec, set_name: str, build_line: str, arch: str, provenance: dict[str, str],
            session_info: dict[str, object], results: list[RunResult], partial: bool, refresh_cmd: str,
            out=print) -> None:
    target = repo / "evidence" / set_name
    refresh_id = f"{utc_now()}/{os.getpid()}"  # this refresh: its recordings were made together
    fixed, own = split_provenance(provenance)
    old = _old_manifest(target, set_name)
    if partial and old is None:
        raise RefreshError(f"--only needs a readable set at evidence/{set_name}; run a full refresh first")
    if partial:  # what the runs it leaves out used (compute-sanitizer, say) stays as the set recorded it
        fixed = {**{k: v for k, v in in_sessions(old)[0].provenance.items() if k not in fixed}, **fixed}
    if partial and (history := history_change(in_sessions(old)[0], arch, build_line, fixed)):
        what = "mix toolkits in" if "build line" not in history else "start a new history in"
        raise RefreshError(f"--only would {what} evidence/{set_name}: it was {history}; re-record the whole set: "
                           f"{refresh_cmd}")
    kept = keep_sessions(old, Refreshing(spec, set_name, arch, build_line, fixed, str(session_info.get("boot")),
                                         frozenset(r.run.name for r in results), repo,
                                         str(session_info.get("started", ""))))
    sid = kept.same_start or f"s{kept.next_number}"
    scratch = scratch_folder(target)
    with _writing(scratch, repo):
        scratch.mkdir()
    try:
        entries: dict[str, TranscriptEntry] = {}
        for name, entry in kept.entries.items():  # every kept recording exactly as it was recorded
            with _writing(scratch / entry.file, repo):
                (scratch / entry.session).mkdir(exist_ok=True)
                shutil.copy2(target / kept.sources[name], scratch / entry.file)
            entries[name] = entry
        with _writing(scratch / sid, repo):
            (scratch / sid).mkdir(exist_ok=True)
        for res in results:
            inputs = input_hashes(repo, spec, res.run, build_line)
            if MISSING in inputs.values():
                raise RefreshError(f"an input of {res.run.name!r} disappeared during the refresh: "
                                   f"{', '.join(k for k, v in inputs.items() if v == MISSING)}")
            k, n = res.job.repeat, res.run.repeat
            file = f"{sid}/" + recording_file(f"{res.run.name}.txt", k, n)
            name = entry_name(sid, res.job.name)
            with _writing(scratch / file, repo):
                (scratch / file).write_bytes(res.raw)  # UTF-8 text, as printed (not_text refused anything else)
            entries[name] = _entry(res, name, file, sha256_file(scratch / file), inputs, "text", res.run.name,
                                   refresh_id, sid)
            for art in res.run.artifacts:
                src = res.cwd / art.file
                if not src.is_file() or src.is_symlink():
                    raise RefreshError(f"run {res.job.name!r} did not write its artifact {art.file!r}")
                file = f"{sid}/" + recording_file(art.file, k, n)
                name = entry_name(sid, recording_name(art.name, k, n))
                with _writing(scratch / file, repo):
                    shutil.copy2(src, scratch / file)
                entries[name] = _entry(res, name, file, sha256_file(scratch / file), inputs, art.format, art.name,
                                       refresh_id, sid)
        now = {**own, **session_info, "refresh_id": refresh_id}
        sessions = {**kept.sessions, sid: Session(sid, joined_session(kept.sessions[sid], now) if kept.same_start
                                                  else now)}
        with _writing(scratch / "manifest.json", repo):
            write_manifest(scratch, Manifest(spec.lesson, arch, build_line, refresh_cmd, fixed, entries, sessions,
                                             kept.retired))
        readable(repo, set_name, scratch, {n for n, e in entries.items() if e.session == sid})
        for line in kept_lines(kept, sid):
            out(line)
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


def readable(repo: Path, set_name: str, scratch: Path, new: set[str]) -> None:
    """The set about to be swapped in, read as the site reads it: its manifest, every file's hash, and
    each new recording parsed by its reader (the lesson's harness, JSON, XML). A set the site could
    not build from is never swapped in: RefreshError, the old set kept."""
    try:
        ev = load_evidence_set(repo, set_name, scratch)
        problems = check_integrity(ev)
        if problems:
            raise problems[0]
        for name in sorted(new):
            ev.transcript(name)
    except LessonError as exc:
        raise RefreshError(f"the new recordings cannot be read as the site reads them: {exc}; the old evidence is "
                           "kept and nothing was recorded") from None


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
        return EXIT_AGREES
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    out(f"check   problems to fix in the pages ({lines[-1] if lines else 'no output'}):")
    for line in lines[:-1]:
        out(f"  {line}")
    out("review the new evidence (git diff evidence/), then let the pages follow it:")
    out(f"  .venv/bin/python -m lessonkit accept --repo {repo}")
    return EXIT_PAGES_NEED_FIXING


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
    parser.add_argument("--allow-shared-gpu", action="store_true",
                        help="record even when another process holds the GPU before an exclusive run; the session "
                             "is marked shared and backs no timing and no exclusive run's figure (default: wait "
                             "up to --shared-gpu-wait seconds, then refuse with exit 2)")
    parser.add_argument("--shared-gpu-wait", type=float, default=SHARED_GPU_WAIT_S, metavar="SECONDS",
                        help=f"how long an exclusive run waits for another process to leave the GPU "
                             f"(default {SHARED_GPU_WAIT_S:g})")
    parser.add_argument("--new-history", action="store_true",
                        help="the set was recorded on another GPU: retire its sessions and start its history on this "
                             "one (default: refuse, exit 2)")
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
                       sanitizer_from=args.sanitizer_from, allow_shared_gpu=args.allow_shared_gpu,
                       shared_gpu_wait=args.shared_gpu_wait, new_history=args.new_history)
    except (RefreshError, LessonError) as exc:
        print(f"refresh: {exc}", file=sys.stderr)
        return EXIT_NOTHING_RECORDED
    except (KeyboardInterrupt, SystemExit) as exc:
        target = swap_state.target or f"evidence/{args.set_name or args.lesson}"
        code = 130 if isinstance(exc, KeyboardInterrupt) else (exc.code if isinstance(exc.code, int) else 1)
        if swap_state.phase == "swapped":
            print(f"refresh: interrupted after the swap; {target} holds the NEW evidence", file=sys.stderr)
        else:
            print(f"refresh: interrupted before the swap; {target} holds the old evidence, untouched",
                  file=sys.stderr)
        return code
