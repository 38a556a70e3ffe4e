"""The evidence sets a lesson declares in its runs.toml (`[[compare]]`), held to their toolkit.

A lesson whose page compares sets (CUDA 12.4 beside 13.0) declares each one with the nvcc
release it is recorded with, and where the GPU machine has that toolkit:

    [[compare]]
    set = "day62-racecheck-cuda12.4"
    toolkit = "12.4"
    toolkit_dir = "/opt/cuda-12.4"

so the check knows the set is expected. A declared set that is missing is one error naming
the refresh command that records it; one whose manifest's nvcc is of another release, or one
declared with a toolkit folder but recorded without `--toolkit` (so nothing held its commands
to that toolkit's tools), is refused: one error, and its claims are not checked. A declared
set's stale recordings name the declared refresh command. The refresh holds itself to the same
declarations (`refuse_recording`): it will not record a declared set with another toolkit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.evidence.spec import CompareSpec, LessonSpec, load_spec
from lessonkit.evidence.toolkit import matches_release, refresh_command


def declared_command(lesson: str, decl: CompareSpec) -> str:
    """The refresh command that records the declared set `decl`."""
    return refresh_command(lesson, decl.set, decl.toolkit_dir, decl.toolkit, decl.sanitizer_dir, decl.sanitizer)


def refuse_recording(spec: LessonSpec, set_name: str, with_toolkit: bool, nvcc_path: str, nvcc: str,
                     sanitizer: str | None = None, crossed: bool = False) -> str | None:
    """Why the refresh may not record `set_name` with nvcc `nvcc` (at `nvcc_path`) and compute-sanitizer
    `sanitizer`, or None: a set the lesson declares under [[compare]] is recorded only with its
    toolkit, with --toolkit (`with_toolkit`) when the declaration names the toolkit's folder, and
    with --sanitizer-from (`crossed`) and that sanitizer's release when it names one."""
    declared = spec.compared(set_name)
    if declared is None:
        return None
    where = f"{spec.path}:{declared.line}" if declared.line else spec.path
    command = declared_command(spec.lesson, declared)
    if not matches_release(nvcc, declared.toolkit):
        return (f"{where} declares set {set_name!r} as recorded with CUDA {declared.toolkit}, but "
                f"{nvcc_path} is nvcc {nvcc}; record it with: {command}")
    if declared.toolkit_dir is not None and not with_toolkit:
        return (f"{where} declares set {set_name!r} as recorded with the toolkit in {declared.toolkit_dir}; "
                f"record it with --toolkit, so that every command is held to that toolkit's tools: {command}")
    if declared.sanitizer is not None and not (crossed and sanitizer and matches_release(sanitizer, declared.sanitizer)):
        return (f"{where} declares set {set_name!r} as recorded with compute-sanitizer {declared.sanitizer} from "
                f"{declared.sanitizer_dir}, but this refresh has {sanitizer or 'none'}"
                f"{'' if crossed else ' without --sanitizer-from'}; record it with: {command}")
    return None


def check_declared(repo: Path, sets: dict[str, Any], unreadable: set[str]) -> tuple[list[LessonError], set[str]]:
    """(errors, the declared sets to treat as unreadable: missing or recorded with the wrong toolkit).
    `sets` holds lessonkit.evidence.sets.EvidenceSet by name (that module calls this one).

    Sets the declarations accept get the declared refresh command (`ev.refresh`), so their
    freshness errors name it.
    """
    errors: list[LessonError] = []
    refused: set[str] = set()
    code = repo / "code"
    for spec_path in sorted(code.glob("*/runs.toml")) if code.is_dir() else []:
        lesson = spec_path.parent.name
        try:
            spec = load_spec(code, lesson)
        except LessonError:
            continue  # reported with the lesson's README and its sets
        for decl in spec.compare:
            where = f"{spec.path}:{decl.line}" if decl.line else spec.path
            command = declared_command(lesson, decl)
            if decl.set in unreadable:
                continue  # its manifest's error is the cause to report
            ev = sets.get(decl.set)
            if ev is None:
                errors.append(LessonError(spec.path, decl.line, f"declares evidence set {decl.set!r}, recorded with "
                                          f"CUDA {decl.toolkit}, for its page to compare, and evidence/{decl.set} "
                                          f"does not exist; record it on a GPU machine: {command}"))
                refused.add(decl.set)
                continue
            shown = f"{ev.shown}/manifest.json"
            nvcc = str(ev.provenance.get("nvcc", "unknown"))
            problem = None
            if ev.lesson != lesson:
                problem = f"was recorded for lesson {ev.lesson!r}, but {where} declares it as lesson {lesson!r}'s"
            elif not matches_release(nvcc, decl.toolkit):
                problem = (f"was recorded with nvcc {nvcc}, but {where} declares it as the CUDA {decl.toolkit} "
                           "set")
            elif decl.toolkit_dir is not None and "toolkit" not in ev.provenance:
                problem = (f"was recorded without --toolkit, but {where} declares it as recorded with the toolkit "
                           f"in {decl.toolkit_dir}; only --toolkit holds every command to that toolkit's nvcc "
                           "and compute-sanitizer")
            elif decl.sanitizer is not None and not (
                    "sanitizer_toolkit" in ev.provenance
                    and matches_release(str(ev.provenance.get("compute_sanitizer", "")), decl.sanitizer)):
                problem = (f"was recorded with compute-sanitizer {ev.provenance.get('compute_sanitizer', 'unknown')}"
                           f"{'' if 'sanitizer_toolkit' in ev.provenance else ' without --sanitizer-from'}, but "
                           f"{where} declares it as recorded with compute-sanitizer {decl.sanitizer} from "
                           f"{decl.sanitizer_dir}")
            if problem is not None:
                errors.append(LessonError(shown, None, f"{problem}; its claims are not checked; re-record it on a "
                                          f"GPU machine: {command}"))
                refused.add(decl.set)
                continue
            ev.refresh = command
    return errors, refused
