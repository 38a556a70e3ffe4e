"""What a refresh will do, and the dry run that shows it without a GPU.

The refresh (lessonkit.evidence.refresh) and its dry run choose the same runs from runs.toml and
refuse the same missing inputs. The dry run then checks that nvcc is there, builds the program
with the lesson's build line in a scratch folder, and prints every command the refresh would run
with how it would run it (repeats, exclusive, timeout, gate); it runs none of them and records
nothing, so an author without a GPU can try everything up to the recording itself.

Standard library only, as the refresh.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from lessonkit.evidence.spec import LessonSpec, RunSpec, load_spec
from lessonkit.evidence.toolkit import ToolkitError, default_set_name, find_toolkit, release

EXIT_BUILT = 0
EXIT_NOT_BUILT = 2


class RefreshError(Exception):
    """The refresh cannot go on; the old evidence is untouched. The message says why."""


def write_failed(path: Path, exc: OSError, repo: Path) -> RefreshError:
    """A failed write of `path` (a full disk, a read-only folder) as the refresh's one message: the
    path (relative to `repo` where it is inside), the system's reason, and that the old evidence is kept."""
    # A copy's error names its source first (shutil sets filename to the source, filename2 to the
    # destination): name what could not be written, the destination, or the folder on its way.
    where = path
    if isinstance(exc.filename2, str):
        where = Path(exc.filename2)
    elif isinstance(exc.filename, str) and (path.is_relative_to(exc.filename) or Path(exc.filename).is_relative_to(path)):
        where = Path(exc.filename)
    shown = where.relative_to(repo) if where.is_relative_to(repo) else where
    return RefreshError(f"cannot write {shown}: {exc.strerror or exc}; the old evidence is kept and "
                        "nothing was recorded")


def choose_runs(spec: LessonSpec, only: list[str] | None, set_name: str | None = None) -> list[RunSpec]:
    """The runs to record in `set_name` (every set when None): all that the set records, or those
    `only` names (in its order, once each; a run the set does not record is refused)."""
    mine = spec.runs_of_set(set_name) if set_name is not None else spec.runs
    if not only:
        return list(mine)
    runs: list[RunSpec] = []
    for name in only:
        chosen = spec.run(name)
        if chosen is None:
            raise RefreshError(f"no run {name!r} in {spec.path}; runs: {', '.join(r.name for r in spec.runs)}")
        if chosen not in mine:
            raise RefreshError(f"run {chosen.name!r} of {spec.path} is not recorded in evidence set {set_name!r} "
                               f"(its sets, or the set's [[compare]] runs, leave it out); runs of that set: "
                               f"{', '.join(r.name for r in mine)}")
        if chosen not in runs:
            runs.append(chosen)
    return runs


def check_inputs(repo: Path, spec: LessonSpec, runs: list[RunSpec]) -> None:
    """RefreshError naming every input of `runs` that does not exist."""
    missing = [f"code/{spec.lesson}/{rel}" for r in runs for rel in spec.inputs + r.inputs
               if not (repo / "code" / spec.lesson / rel).is_file()]
    if missing:
        raise RefreshError(f"{spec.path} names inputs that do not exist: {', '.join(sorted(set(missing)))}; "
                           "nothing was run")


def how(run: RunSpec) -> str:
    """How the refresh runs it: '5 times, exclusive, timeout 60 s, gate'."""
    parts = [f"{run.repeat} times" if run.repeat > 1 else "once"]
    parts.append("exclusive (the GPU to itself)" if run.exclusive else "shared (alongside the others)")
    parts.append(f"timeout {run.timeout:g} s")
    if run.gate:
        parts.append("gate (a failure records nothing)")
    if run.artifacts:
        parts.append("artifacts " + ", ".join(a.file for a in run.artifacts))
    return ", ".join(parts)


def _compiler(toolkit_dir: str | None) -> tuple[str, dict[str, str] | None]:
    """The nvcc the dry run builds with, and the environment it runs in: the named toolkit's, with
    its folders first on PATH (None: this process's, and the nvcc on its PATH)."""
    if toolkit_dir is not None:
        try:
            toolkit = find_toolkit(toolkit_dir)
        except ToolkitError as exc:
            raise RefreshError(str(exc)) from None
        return str(toolkit.nvcc), toolkit.path_env(dict(os.environ))
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RefreshError("the dry run builds the program, and nvcc (the CUDA compiler) is not on PATH; "
                           "install the CUDA toolkit, or name one with --toolkit DIR")
    return nvcc, None


def dry_run(repo: Path, lesson: str, set_name: str | None = None, only: list[str] | None = None,
            arch: str | None = None, out=print, toolkit_dir: str | None = None) -> int:
    """Build the lesson and list what the refresh would run; 0 when the build succeeded, 2 if not.

    `arch` picks the build line (default: the first of runs.toml's [build]); with `toolkit_dir`,
    that toolkit's nvcc builds, as in the refresh.
    """
    spec = load_spec(repo / "code", lesson)
    nvcc, env = _compiler(toolkit_dir)
    version = _version(nvcc, env)
    cuda_release = release(version) if toolkit_dir is not None else None
    arch = arch or next(iter(spec.build), None)
    if arch not in spec.build:
        raise RefreshError(f"{spec.path} has no build line for {arch}; it has: {', '.join(spec.build)}")
    line = spec.build[arch]
    target = set_name or default_set_name(lesson, cuda_release)
    runs = choose_runs(spec, only, target)
    check_inputs(repo, spec, runs)
    out(f"dry run of the refresh of {lesson}: nothing is run on a GPU and nothing is recorded")
    out(f"nvcc    {nvcc} ({version or 'no version printed'})")
    if any(r.uses_sanitizer for r in runs) and shutil.which("compute-sanitizer", path=(
            env or {}).get("PATH")) is None and toolkit_dir is None:
        out("note    compute-sanitizer is not on PATH here; the GPU machine needs it for the runs that use it")
    out(f"build   {arch}: {line}")
    scratch = Path(tempfile.mkdtemp(prefix=f"lessonkit-dry-run-{lesson}-"))
    try:
        for path in (repo / "code" / lesson).iterdir():
            if path.is_file():
                shutil.copy2(path, scratch / path.name)
        try:
            done = subprocess.run(shlex.split(line), cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            out(f"build   failed: {exc}")
            return EXIT_NOT_BUILT
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        out(f"build   failed (exit {done.returncode}); the refresh would stop here and record nothing:")
        out((done.stdout + done.stderr).rstrip())
        return EXIT_NOT_BUILT
    out("build   ok (in a scratch folder, removed)")
    for run in runs:
        out(f"would run {run.name}: {run.command}")
        out(f"          {how(run)}")
    recordings = sum(r.repeat for r in runs)
    out(f"would write evidence/{target}/ ({recordings} recording{'s' if recordings != 1 else ''} and "
        "manifest.json), then check every page against it")
    out("to record: run the same command without --dry-run on a machine with an NVIDIA GPU")
    return EXIT_BUILT


def _version(nvcc: str, env: dict[str, str] | None) -> str:
    """nvcc's release line ('Cuda compilation tools, release 13.0, V13.0.88'), or '' when it prints none."""
    try:
        done = subprocess.run([nvcc, "--version"], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefreshError(f"{nvcc} --version: {exc}") from None
    found = [line for line in done.stdout.splitlines() if "release" in line]
    return found[0].strip() if found else ""
