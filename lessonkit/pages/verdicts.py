"""What a run said about each kernel, as one phrase: the `verdicts` records of a run.

A query on them is a claim like any other (`{{ silent @ synccheck-buggy:verdict[kernel=K] }}`,
short for `verdicts[kernel=K].verdict`), and a table can show them side by side
(lessonkit.pages.tables). A run's verdict on a kernel, from its recording:

- a tool's findings on the kernel: its reports and printed hazards counted by severity, its
  barrier errors and uninitialized reads by kind, then the source lines they name: "1 error, 1 warning at line 52",
  "Divergent thread(s) in block at line 132";
- otherwise "hung" when the run was stopped by its timeout, "failed, exit code N" when it ended
  with an error before any table row (a tool that refused its options), "silent" for a
  compute-sanitizer run, and for a run with no tool what its table says: "right", or "wrong at 32 and 256 threads".

Each kernel the recording names (in its table or its findings) has one record; a recording that
names none (a run that hung before printing) has one record whose kernel is none ('-').
"""

from __future__ import annotations

from typing import Any

from lessonkit.evidence.transcript import Transcript

_SEVERITIES = ("Error", "Warning", "Information")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def verdict_records(parsed: Transcript, timed_out: bool, tool: bool,
                    exit_code: int | None = 0) -> tuple[dict[str, Any], ...]:
    """One record {kernel, verdict} for each kernel the recording names, in order of appearance."""
    collections = parsed.collections()
    findings = [r for name in ("reports", "hazards", "barriers", "uninitialized") for r in collections.get(name, ())]
    rows = collections.get("rows", ())
    kernels = list(dict.fromkeys(r.get("kernel") for r in (*rows, *findings) if r.get("kernel") is not None))
    records = []
    for kernel in kernels or [None]:
        mine = [r for r in findings if r.get("kernel") == kernel]
        records.append({"kernel": kernel,
                        "verdict": _verdict(mine, [r for r in rows if r.get("kernel") == kernel], timed_out, tool,
                                            exit_code),
                        "_line": next((r.get("_line") for r in mine), None)})
    return tuple(records)


def _verdict(findings: list[dict[str, Any]], rows: list[dict[str, Any]], timed_out: bool, tool: bool,
             exit_code: int | None) -> str:
    if findings:
        return _found(findings) + (", then hung" if timed_out else "")
    if timed_out:
        return "hung"
    if exit_code and not rows:
        return f"failed, exit code {exit_code}"  # the tool or the program stopped before any result
    return "silent" if tool else _rows_verdict(rows)


def _found(findings: list[dict[str, Any]]) -> str:
    """What a tool's findings say: a count of each severity, each other finding's kind, and their lines."""
    severities = [r.get("severity") for r in findings]
    said = [_count(severities.count(s), s.lower()) for s in _SEVERITIES if s in severities]
    said += list(dict.fromkeys(kind for r in findings if not r.get("severity") and (kind := _kind(r)) is not None))
    lines = sorted({r["line"] for r in findings if isinstance(r.get("line"), int)})
    text = ", ".join(said)
    if lines:
        text += f" at line{'s' if len(lines) > 1 else ''} {_and([str(n) for n in lines])}"
    return text


def _kind(finding: dict[str, Any]) -> str | None:
    """What a finding without a severity is: its `what`, or an uninitialized read of its memory space."""
    if "what" in finding:
        return finding["what"]
    return f"uninitialized {finding['space']} read" if "space" in finding else None


def _rows_verdict(rows: list[dict[str, Any]]) -> str:
    """A bare run's verdict from its result rows: right, or wrong at the block sizes with mismatches."""
    if not rows:
        return "-"
    wrong = [str(r.get("threads")) for r in rows if r.get("mismatches")]
    return f"wrong at {_and(wrong)} threads" if wrong else "right"


def run_verdict(records: tuple[dict[str, Any], ...]) -> str:
    """The whole run's verdict: its one kernel's, or each kernel's in turn."""
    if len(records) == 1:
        return records[0]["verdict"]
    return "; ".join(f"{r['kernel']}: {r['verdict']}" for r in records)
