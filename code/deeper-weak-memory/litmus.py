#!/usr/bin/env python3
"""Parallel GPU litmus tests (MP, SB, LB, CoRR) on CuPy: how often does the GPU show a weak outcome?

The kernels are litmus.cu's, compiled by nvcc to litmus.cubin and loaded with CuPy. Each
launch runs one test instance per testing thread; an outcome histogram of each launch is
counted on the GPU and only its five bins come back. NumPy builds the placement maps (CuPy
does, with the same code, on the GPU); litmus_stats.py computes the intervals (SciPy gives
their quantiles). CuPy is imported only where the GPU is used, so the bookkeeping below runs
(and is tested) on a machine without a GPU.

  python3 litmus.py campaign --json litmus.json      # the recorded campaign
  python3 litmus.py run --test mp --fence gpu --set barrier --seconds 2

Statistics. Weak outcomes are not independent from instance to instance: neighbouring
instances share a 128-byte line and go weak together, and the rate drifts over a campaign
(an earlier design, one 0.8 s stretch per repeat, gave repeats that differed by up to 50
times their own intervals). So the independent units are slices, not instances or launches:
the campaign runs in rounds, each round measures every configuration for a short slice, and
repeat r of a configuration is made of the slices of rounds r, r + repeats, r + 2 * repeats,
..., so each repeat samples the whole campaign. A row's rate is weak over instances summed
over its slices, and its interval Student's t over the slices with the ratio estimator's
standard error (`ci_kind` "t-slices"). When a slice saw no weak outcome, or fewer than
MIN_WEAK_GROUPS groups of LAUNCHES_PER_GROUP launches did (zero rows above all), the interval
is Clopper-Pearson over clusters, the sets of instances that share a line (`ci_kind`
"clusters"), taken as independent trials: exact only if lines go weak independently of one
another (lines of one warp, one launch or one moment may not). For a zero row the upper bound
is the bound for 0 weak clusters in `clusters` trials, which also bounds the per-instance
rate, since a cluster holds at most `cluster_instances` weak outcomes; as the upper end of a
two-sided 95% interval it is a one-sided 97.5% upper bound. Groups of LAUNCHES_PER_GROUP
launches are not statistical units: they decide between the two intervals, measure the
overdispersion, and carry the placement. Each group of launches puts the test's memory at a random
line-aligned offset in a 32 MiB window and, where the heuristics randomise, draws a new
placement. The configs summary pools all slices of all repeats; a one-way analysis of
variance of the slices' rates, the repeats as groups, with Holm's adjustment over the
campaign's configurations, says whether the repeats agree (litmus_stats.py).

JSON written by `campaign --json` (format 4). Top-level scalars:
  format, gpu, sms, seed, repeats, seconds_per_row (GPU time of one repeat of one config),
  slices_per_repeat, confidence (0.95), ci_method (one sentence), agreement_method (one
  sentence), launches_per_group, min_weak_groups, line_bytes, best_heuristics, campaign_s (wall time of
  the whole campaign), gpu_s (the rows' measured time), budget_s, checks_passed (bool).
Collections (lists of flat records, every value a JSON scalar):
  rows: one per measurement. config (key, e.g. "mp-none", "mp-none-barrier-jitter"), repeat
    (1..repeats), repeats, table, test (mp, sb, lb, corr), fence (none, cta, gpu, sys,
    gpu-writer, gpu-reader, rel-acq, gpu-plain, gpu-volatile), placement (inter-cta, same-cta), heuristics (a name in
    heuristic_sets), map (sound, broken), instances, launches, groups, weak, o00, o01, o10,
    o11 (the outcome histogram, r0 * 2 + r1; for MP 00 is "reader first", 11 "writer first", 10
    the weak outcome), o00_fraction, o01_fraction, o10_fraction, o11_fraction (the bins' shares),
    interleaved and interleaved_fraction (the bin that only interleaved roles give: MP and CoRR
    01, SB 11, LB 00; the evidence that the roles ran at the same time),
    slices, rate, ci_low, ci_high, ci_kind (t-slices, clusters), se (standard error behind a t
    interval, null for clusters), per_100k, per_100k_low, per_100k_high
    (weak per 100,000 instances), weak_groups (groups with a weak outcome), overdispersion
    (variance of the groups' rates over the binomial variance: 1 for independent instances;
    null without weak outcomes), cluster_instances, clusters, wall_s,
    instances_per_s, weak_per_s, the placement of the roles (litmus.cu's %smid, read in the first
    launch of each group): placement_launches, placement_instances (instances compared),
    same_sm_instances (both roles' blocks on one multiprocessor as their test ended),
    same_sm_fraction and other_sm_fraction (null where no placement was read), and short forms for quoting: rate_text, ci_low_text,
    ci_high_text, per_100k_text, per_100k_low_text, per_100k_high_text, instances_text,
    instances_per_s_text, weak_per_s_text.
  configs: one per config, over its repeats. config, table, test, fence, placement, heuristics,
    map, repeats, slices, instances, weak, o00..o11 and their *_fraction, interleaved,
    interleaved_fraction, rate (pooled over every slice),
    ci_low, ci_high, ci_kind (t-slices over all slices, or clusters), se, per_100k,
    per_100k_low, per_100k_high, rate_min, rate_max (of the repeats' rates), heterogeneity_p
    (one-way ANOVA of the slices' rates by repeat; null where untestable), heterogeneity_p_holm
    (Holm-adjusted over the campaign's configs), agree (heterogeneity_p_holm >= 0.05, or, where
    untestable, every two repeats' intervals overlap), overlap (every two repeats' intervals
    overlap), contained (every repeat's rate inside every other repeat's interval: stricter
    than the intervals promise, see campaign_checks), and *_text short forms.
  slices: one per slice: config, repeat, slice (1..slices_per_repeat), round, launches,
    instances, weak, o00, o01, o10, o11, interleaved, wall_s.
  checks: check, passed, gate (a failed gate makes the exit status 2), detail.
  heuristic_sets: the parameters of each heuristic set (name, blocks, threads, ...).
A page claim addresses a row as rows[config=mp-none,repeat=2].rate, all repeats as
rows[config=mp-none,repeat=*].rate, and the summary as configs[config=mp-none].agree.
Run ("run" mode) prints rows, and with --repeats 2 or more the summary, without the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

# The litmus_*.py modules sit beside this file; make them importable however it is loaded (script, test, import).
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# The tests reach every piece as litmus.NAME: the names below are this module's interface, used or not.
from litmus_gpu import Runner
from litmus_maps import (  # noqa: F401
    Maps,
    cta_offsets,
    make_maps,
    role_threads,
    roles_cover_every_instance,
    shared_locations,
)
from litmus_plan import (  # noqa: F401
    KERNELS,
    LAUNCHES_PER_GROUP,
    LINE_BYTES,
    ORDERED,
    SLICES,
    TESTS,
    Config,
    Heuristics,
    LitmusError,
    campaign_configs,
    config_key,
    heuristic_sets,
    with_overrides,
)
from litmus_rows import (  # noqa: F401
    AGREEMENT_METHOD,
    CI_METHOD,
    check_histograms,
    format_row,
    format_summary,
    judge_agreement,
    make_row,
    sci,
    slice_records,
    summarise,
)
from litmus_stats import (  # noqa: F401
    CONFIDENCE,
    MIN_WEAK_GROUPS,
    clopper_pearson,
    cluster_interval,
    estimate,
    heterogeneity_p,
    holm,
    intervals_overlap,
    overdispersion,
    ratio_interval,
    repeats_contained,
)

# ----------------------------------------------------------------------------------- campaign

def measure_all(runner: Runner, configs: list[Config], repeats: int, seconds: float,
                out: Callable[[str], None], slices: int = SLICES) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every config `repeats` times, each repeat `slices` slices spread over the whole measurement.

    Round j measures every config once, for 1/slices of its time, and belongs to repeat
    j mod repeats + 1: each repeat samples the beginning, the middle and the end. Returns
    (rows, slice records).
    """
    parts: dict[tuple[str, int], tuple[list[np.ndarray], list[float], list[int]]] = {
        (c.key, r): ([], [], []) for c in configs for r in range(1, repeats + 1)}
    rounds = repeats * slices
    for j in range(rounds):
        repeat, start = j % repeats + 1, time.perf_counter()
        for c in configs:
            share = (seconds if c.seconds is None else c.seconds) / slices
            bins, wall = runner.run(c, share, -(-c.min_instances // slices))
            got = parts[(c.key, repeat)]
            got[0].append(bins)
            got[1].append(wall)
            got[2].append(j + 1)
        out(f"round {j + 1}/{rounds} (repeat {repeat}): {len(configs)} configurations, "
            f"{time.perf_counter() - start:.2f} s")
    rows, records = [], []
    for repeat in range(1, repeats + 1):
        for c in configs:
            bins, walls, rnds = parts[(c.key, repeat)]
            row = make_row(c, repeat, repeats, bins, walls)
            rows.append(row)
            records += slice_records(c, repeat, bins, walls, rnds)
            out(format_row(row))
            if c.test == "corr" and row["weak"]:
                out(f"FINDING: CoRR showed {row['weak']} weak outcomes; the PTX memory model forbids them")
            if c.fence in ORDERED and not c.broken and row["weak"]:
                out(f"FINDING: {c.test.upper()} with {c.fence} on both sides showed {row['weak']} weak outcomes")
    return rows, records


def campaign_checks(summaries: list[dict[str, Any]], rows: list[dict[str, Any]], campaign_s: float,
                    budget_s: float) -> list[dict[str, Any]]:
    """The campaign's own checks: gates (harness bug seen, budget kept) and findings for the page."""
    broken = [r for r in rows if r["map"] == "broken"]
    fenced = [s for s in summaries if s["fence"] in ORDERED and s["map"] == "sound"]
    # Only the interleaved bin (MP, CoRR: 01; SB: 11; LB: 00) needs the roles' steps to interleave;
    # reader-first (MP's 00) and writer-first (11) outcomes come from roles that never met.
    seen = [s for s in fenced if s["weak"] == 0 and s["interleaved_fraction"] >= 0.01]
    disagree = [s["config"] for s in summaries if not s["agree"]]
    outside = [s["config"] for s in summaries if not s["contained"]]

    def check(name: str, passed: bool, gate: bool, detail: str) -> dict[str, Any]:
        return {"check": name, "passed": bool(passed), "gate": gate, "detail": detail}

    return [
        check("histograms", True, True, "every launch's histogram adds up to its instances"),
        check("harness-bug", bool(broken) and all(r["weak"] > 0 for r in broken), True,
              "the broken location map shows weak outcomes under GPU fences in every repeat: "
              + ", ".join(str(r["weak"]) for r in broken)),
        check("budget", campaign_s <= budget_s, True, f"campaign {campaign_s:.1f} s of {budget_s:.0f} s"),
        check("fenced-zero", all(s["weak"] == 0 for s in fenced), False,
              "no weak outcome with both sides ordered at GPU scope: "
              + ", ".join(f"{s['config']} {s['weak']}" for s in fenced)),
        check("fenced-overlap", bool(seen), False, "fenced zero rows whose roles interleaved in at least 1% of "
              "the instances (the interleaved bin: 01 for MP): "
              + (", ".join(f"{s['config']} {s['interleaved_fraction']:.2%}" for s in seen) or "none")),
        check("repeats-agree", not disagree, False, "configs whose repeats differ by more than their slices "
              "allow (ANOVA, Holm-adjusted p < 0.05; overlap where untestable): " + (", ".join(disagree) or "none")),
        check("repeats-contained", True, False, "information, not a test: configs with a repeat's rate outside "
              "another repeat's interval. Two right 95% intervals' centres differ by more than one half-width "
              "about one time in six, so with 5 repeats (20 ordered pairs) this strict rule fails for most "
              "configs even when every interval is right: " + (", ".join(outside) or "none")),
    ]


def campaign(runner: Runner, seconds: float, repeats: int, soundness: int, budget_s: float,
             out: Callable[[str], None]) -> dict[str, Any]:
    """The recorded campaign: heuristics first (to pick the best set), then fences, tests, placement, checks."""
    start = time.perf_counter()
    runner.warm_up()
    out(f"warm-up: {time.perf_counter() - start:.1f} s of MP with no heuristics, not recorded")
    sets = heuristic_sets(runner.sms)
    first = campaign_configs(sets, None, soundness)
    rows, records = measure_all(runner, first, repeats, seconds, out)
    by_config = {c.key: [r for r in rows if r["config"] == c.key] for c in first}
    best_key = max(by_config, key=lambda k: sum(r["weak"] for r in by_config[k]) / sum(r["wall_s"] for r in by_config[k]))
    best = next(c.h for c in first if c.key == best_key)
    out(f"best heuristic set: {best.name} (most weak outcomes per second)")
    rest: list[Config] = []
    for c in campaign_configs(sets, best, soundness):   # each config once: the first table that names it keeps it
        if c.key not in by_config and all(c.key != d.key for d in rest):
            rest.append(c)
    more_rows, more_records = measure_all(runner, rest, repeats, seconds, out)
    rows, records = rows + more_rows, records + more_records
    summaries = [summarise([r for r in rows if r["config"] == c.key], [x for x in records if x["config"] == c.key])
                 for c in first + rest]
    judge_agreement(summaries)
    out("repeats:")
    for s in summaries:
        out(format_summary(s))
    campaign_s = time.perf_counter() - start
    checks = campaign_checks(summaries, rows, campaign_s, budget_s)
    for ch in checks:
        out(f"check {ch['check']}: {'passed' if ch['passed'] else 'FAILED'}{' (gate)' if ch['gate'] else ''}: "
            f"{ch['detail']}")
    gpu_s = sum(r["wall_s"] for r in rows)
    out(f"campaign: {campaign_s:.1f} s ({gpu_s:.1f} s measuring; budget {budget_s:.0f} s)")
    return {"best_heuristics": best.name, "campaign_s": round(campaign_s, 1), "gpu_s": round(gpu_s, 1),
            "budget_s": budget_s, "checks_passed": all(ch["passed"] for ch in checks if ch["gate"]),
            "heuristic_sets": [asdict(h) for h in sets], "rows": rows, "configs": summaries, "slices": records,
            "checks": checks}


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring. Exit status 2: a gated check failed."""
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["campaign", "run"])
    p.add_argument("--cubin", default=str(here / "litmus.cubin"))
    p.add_argument("--seed", type=int, default=62)
    p.add_argument("--seconds", type=float, default=0.8, help="GPU time per row (one repeat of one config)")
    p.add_argument("--repeats", type=int, default=None, help="repeats per config (campaign: 5, run: 1)")
    p.add_argument("--soundness", type=float, default=2e10, help="instances per repeat of the GPU-fence soundness row")
    p.add_argument("--budget", type=float, default=180.0, help="seconds the whole campaign may take (a gate)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--test", choices=sorted(TESTS), default="mp")
    p.add_argument("--fence", default="none", help=", ".join(sorted({f for _, f in KERNELS})))
    p.add_argument("--set", default="none", help="a heuristic set name, for `run`")
    p.add_argument("--same-cta", action="store_true")
    p.add_argument("--with", dest="overrides", default="",
                   help="change the set for `run`, e.g. stress_blocks=264,stress_pattern=load-store,jitter=4096")
    args = p.parse_args(argv)
    say: Callable[[str], None] = lambda s: print(s, flush=True)
    runner = Runner(Path(args.cubin), args.seed)
    say(f"device: {runner.gpu} | {runner.sms} SMs | seed {args.seed} | set-up {runner.setup_s:.1f} s")
    if args.mode == "run":
        runner.warm_up()
        if (args.test, args.fence) not in KERNELS:
            raise SystemExit(f"no kernel for --test {args.test} --fence {args.fence}")
        sets = {h.name: h for h in heuristic_sets(runner.sms)}
        if args.set not in sets:
            raise SystemExit(f"--set: unknown heuristic set {args.set!r}; known: {', '.join(sets)}")
        h = with_overrides(sets[args.set], args.overrides)
        c = Config(config_key(args.test, args.fence, h.name, args.same_cta), "run", args.test, args.fence, h,
                   same_cta=args.same_cta)
        rows, records = measure_all(runner, [c], args.repeats or 1, args.seconds, say)
        if len(rows) > 1:
            say(format_summary(summarise(rows, records)))
        return 0
    result = campaign(runner, args.seconds, args.repeats or 5, int(args.soundness), args.budget, say)
    if args.json:
        meta = {"format": 4, "gpu": runner.gpu, "sms": runner.sms, "seed": args.seed, "repeats": args.repeats or 5,
                "seconds_per_row": args.seconds, "slices_per_repeat": SLICES, "confidence": CONFIDENCE,
                "ci_method": CI_METHOD, "agreement_method": AGREEMENT_METHOD,
                "launches_per_group": LAUNCHES_PER_GROUP, "min_weak_groups": MIN_WEAK_GROUPS,
                "line_bytes": LINE_BYTES}
        Path(args.json).write_text(json.dumps({**meta, **result}, indent=2) + "\n")
    return 0 if result["checks_passed"] else 2


if __name__ == "__main__":
    sys.exit(main())
