"""What a refresh keeps of a set's sessions, what it retires and why (manifest format 4).

A session is one refresh on one start of a GPU machine (its boot, lessonkit.evidence.gpuinfo). A
new refresh keeps every earlier recording whose run the set still records with today's command,
repeats, exclusive setting and inputs, then, run by run, the latest `sessions = K` sessions (K - 1
beside a new session that records the run). A refresh on the machine start of a kept session
re-records that session's runs in it. Everything dropped is retired with why: a run's recordings
only (`runs`), or a whole session once none of its recordings is left; another build line, GPU or
toolchain retires every session (a new history).

Standard library only, as the refresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lessonkit.evidence.manifest import (
    HISTORY_KEYS,
    Manifest,
    Session,
    TranscriptEntry,
    in_sessions,
    input_hashes,
    session_number,
)
from lessonkit.evidence.spec import LessonSpec, RunSpec

MAX_RETIRED = 30  # the retired sessions a set remembers, newest last


@dataclass(frozen=True)
class Kept:
    """What a refresh keeps of a set's earlier sessions, what it retires and why, and which session its
    recordings join: `same_start`, the kept session of this machine start, or a new one."""

    sessions: dict[str, Session]
    entries: dict[str, TranscriptEntry]
    retired: tuple[dict[str, object], ...]
    next_number: int
    same_start: str | None = None
    retiring: tuple[dict[str, object], ...] = ()  # what this refresh retires (also the last of `retired`)
    sources: dict[str, str] = field(default_factory=dict)  # each kept entry's file as it lies today


@dataclass(frozen=True)
class Refreshing:
    """What the new refresh is: its set, its build, its toolchain, its machine start and the runs it records."""

    spec: LessonSpec
    set_name: str
    arch: str
    build_line: str
    fixed: dict[str, object]  # the provenance a set holds fixed (manifest.HISTORY_KEYS)
    boot: str
    recorded: frozenset[str]
    repo: Path
    started: str


def keep_sessions(old: Manifest | None, now: Refreshing) -> Kept:
    """The earlier sessions a new refresh joins, and what it retires (see the module's docstring)."""
    if old is None:
        return Kept({}, {}, (), 1)
    old, sources = in_sessions(old)  # a format-3 set: its one refresh is the session s0
    numbers = [session_number(sid) for sid in old.sessions] + [
        session_number(str(r.get("session", ""))) for r in old.retired]
    next_number = max([0, *numbers]) + 1
    history = history_change(old, now.arch, now.build_line, now.fixed)
    if history:
        retiring = [_retired(old, sid, history, now.started) for sid in old.sessions]
        return _kept(old, {}, {}, retiring, next_number, None, sources)
    same = next((sid for sid, sess in old.sessions.items()
                 if now.boot != "unknown" and sess.provenance.get("boot") == now.boot), None)
    entries, dropped = _still_standing(old, now, same)
    entries = _latest(entries, now, same is None, dropped)
    left = {e.session for e in entries.values()} | ({same} if same else set())
    retiring = [_retired(old, sid, why, now.started, runs if sid in left else None)
                for sid in old.sessions for why, runs in dropped.get(sid, {}).items()]
    sessions = {sid: sess for sid, sess in old.sessions.items() if sid in left}
    return _kept(old, sessions, entries, retiring, next_number, same, sources)


def _still_standing(old: Manifest, now: Refreshing, same: str | None) -> tuple[
        dict[str, TranscriptEntry], dict[str, dict[str, list[str]]]]:
    """The earlier recordings that still stand for their runs, less those the refresh records again in
    their own session (`same`: the session of this machine start, if one is kept); and the others, by
    session, why and run."""
    dropped: dict[str, dict[str, list[str]]] = {}  # session -> why -> runs
    entries: dict[str, TranscriptEntry] = {}
    mine = {r.name: r for r in now.spec.runs_of_set(now.set_name)}
    for name, entry in old.entries.items():
        run = mine.get(now.spec.run(entry.group).name) if now.spec.run(entry.group) else None
        why = stale_reason(entry, run, now)
        if why is None and run.name in now.recorded and entry.session == same:
            continue  # re-recorded in its own session, on the same machine start
        if why is None:
            entries[name] = entry
        else:
            dropped.setdefault(entry.session, {}).setdefault(why, []).append(run.name if run else entry.group)
    return entries, dropped


def stale_reason(entry: TranscriptEntry, run: RunSpec | None, now: Refreshing) -> str | None:
    """Why a kept recording no longer stands for its run (None when it still does)."""
    if run is None:
        return "its run is no longer recorded in this set"
    if entry.command != run.command:
        return "recorded with another command"
    if entry.repeats != run.repeat:
        return f"recorded {entry.repeats} time(s), runs.toml now asks for {run.repeat}"
    if entry.exclusive != run.exclusive:
        return (f"recorded {'with' if entry.exclusive else 'without'} the GPU to itself, runs.toml now says "
                f"exclusive = {'true' if run.exclusive else 'false'}")
    today = input_hashes(now.repo, now.spec, run, now.build_line)
    if entry.inputs != today:
        changed = sorted(k for k in set(today) | set(entry.inputs) if entry.inputs.get(k) != today.get(k))
        return f"inputs changed since ({', '.join(changed)})"
    return None


def _latest(entries: dict[str, TranscriptEntry], now: Refreshing, new_session: bool,
            dropped: dict[str, dict[str, list[str]]]) -> dict[str, TranscriptEntry]:
    """`entries` less, run by run, the sessions older than the latest K (K - 1 where the refresh records
    the run in a new session); what goes is noted in `dropped`."""
    holders: dict[str, list[str]] = {}
    for entry in entries.values():
        run_name = now.spec.run(entry.group).name  # type: ignore[union-attr]
        if entry.session not in holders.setdefault(run_name, []):
            holders[run_name].append(entry.session)
    k = now.spec.sessions
    gone: set[tuple[str, str]] = set()
    for run_name, sids in holders.items():
        room = k - (1 if run_name in now.recorded and new_session else 0)
        for sid in sorted(sids, key=session_number)[:max(0, len(sids) - room)]:
            why = f"older than the {k} latest sessions the lesson keeps (sessions = {k})"
            dropped.setdefault(sid, {}).setdefault(why, []).append(run_name)
            gone.add((sid, run_name))
    return {n: e for n, e in entries.items()
            if (e.session, now.spec.run(e.group).name) not in gone}  # type: ignore[union-attr]


def _retired(old: Manifest, sid: str, why: str, by: str, runs: list[str] | None = None) -> dict[str, object]:
    """The `retired` record of session `sid` (of its `runs` only, when some of it stays)."""
    record: dict[str, object] = {"session": sid, "started": old.sessions[sid].started, "why": why, "by": by}
    if runs is not None:
        record["runs"] = sorted(set(runs))
    return record


def _kept(old: Manifest, sessions: dict[str, Session], entries: dict[str, TranscriptEntry],
          retiring: list[dict[str, object]], next_number: int, same: str | None, sources: dict[str, str]) -> Kept:
    retired = (list(old.retired) + retiring)[-MAX_RETIRED:]
    return Kept(sessions, entries, tuple(retired), next_number, same, tuple(retiring),
                {name: sources[name] for name in entries})


def joined_session(earlier: Session, now: dict[str, object]) -> dict[str, object]:
    """A session's provenance once a later refresh on its machine start re-recorded some of its runs:
    the GPU's state as the first refresh began and as the last ended, what held the GPU around every
    exclusive run either made, shared if either found the GPU shared."""
    was = earlier.provenance
    merged = {**was, **{k: v for k, v in now.items() if not str(k).endswith("_start") and k != "started"}}
    merged["gpu_processes"] = {**dict(was.get("gpu_processes") or {}), **dict(now.get("gpu_processes") or {})}
    merged["shared"] = bool(was.get("shared")) or bool(now.get("shared"))
    merged["refreshes"] = int(was.get("refreshes", 1)) + 1
    return merged


def history_change(old: Manifest, arch: str, build_line: str, fixed: dict[str, object]) -> str | None:
    """Why a new session cannot join `old`'s history (another build or toolchain), or None."""
    if old.arch != arch or old.build != build_line:
        return f"recorded with another build line ({old.build!r}; this refresh: {build_line!r})"
    keys = [k for k in HISTORY_KEYS if k in old.provenance or k in fixed]
    for key in keys + sorted((set(old.provenance) | set(fixed)) - set(keys)):
        if old.provenance.get(key) != fixed.get(key):
            return (f"recorded with {key} {old.provenance.get(key)!r}; this refresh has {fixed.get(key)!r}: "
                    "a new history")
    return None


def other_gpu(old: Manifest | None, provenance: dict[str, str]) -> str | None:
    """How `old`'s sessions name their GPU, when it is not the GPU of `provenance` (else None)."""
    if old is None:
        return None
    was = {k: old.provenance.get(k) for k in ("gpu", "compute_capability")}
    if all(was[k] == provenance.get(k) for k in was):
        return None
    return f"{was['gpu']!r} (compute capability {was['compute_capability']})"


def kept_lines(kept: Kept, sid: str) -> list[str]:
    """What the refresh prints of the set's sessions: the new one, the kept ones, what retired."""
    others = [s for s in kept.sessions if s != sid]
    lines = [(f"session {sid} re-recorded (the same machine start)" if kept.same_start else f"session {sid} added")
             + f"; the set's other sessions: {', '.join(others) or 'none'}"]
    for record in kept.retiring:
        runs = f" (runs {', '.join(record['runs'])})" if "runs" in record else ""  # type: ignore[arg-type]
        lines.append(f"retire  {record['session']}{runs}: {record['why']}")
    return lines
