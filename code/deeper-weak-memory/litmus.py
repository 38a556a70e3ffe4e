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
is Clopper-Pearson over independent clusters, the sets of instances that share a line
(`ci_kind` "clusters"): for a zero row the upper bound is the exact bound for 0 weak clusters
in `clusters` trials, which also bounds the per-instance rate, since a cluster holds at most
`cluster_instances` weak outcomes. Each group of launches puts the test's memory at a random
line-aligned offset in a 32 MiB window and, where the heuristics randomise, draws a new
placement. The configs summary pools all slices of all repeats; a one-way analysis of
variance of the slices' rates, the repeats as groups, with Holm's adjustment over the
campaign's configurations, says whether the repeats agree (litmus_stats.py).

JSON written by `campaign --json` (format 3). Top-level scalars:
  format, gpu, sms, seed, repeats, seconds_per_row (GPU time of one repeat of one config),
  slices_per_repeat, confidence (0.95), ci_method (one sentence), agreement_method (one
  sentence), launches_per_group, min_weak_groups, line_bytes, best_heuristics, campaign_s (wall time of
  the whole campaign), gpu_s (the rows' measured time), budget_s, checks_passed (bool).
Collections (lists of flat records, every value a JSON scalar):
  rows: one per measurement. config (key, e.g. "mp-none", "mp-gpu-barrier-jitter"), repeat
    (1..repeats), repeats, table, test (mp, sb, lb, corr), fence (none, cta, gpu, sys,
    gpu-writer, gpu-reader, rel-acq), placement (inter-cta, same-cta), heuristics (a name in
    heuristic_sets), map (sound, broken), instances, launches, groups, weak, o00, o01, o10,
    o11 (the outcome histogram, r0 * 2 + r1; o00 is "neither store seen" for MP), o00_fraction,
    slices, rate, ci_low, ci_high, ci_kind (t-slices, clusters), se (standard error behind a t
    interval, null for clusters), per_100k, per_100k_low, per_100k_high
    (weak per 100,000 instances), weak_groups (groups with a weak outcome), overdispersion
    (variance of the groups' rates over the binomial variance: 1 for independent instances;
    null without weak outcomes), cluster_instances, clusters, wall_s,
    instances_per_s, weak_per_s, and short forms for quoting: rate_text, ci_low_text,
    ci_high_text, per_100k_text, per_100k_low_text, per_100k_high_text, instances_text,
    instances_per_s_text, weak_per_s_text.
  configs: one per config, over its repeats. config, table, test, fence, placement, heuristics,
    map, repeats, slices, instances, weak, o00, o00_fraction, rate (pooled over every slice),
    ci_low, ci_high, ci_kind (t-slices over all slices, or clusters), se, per_100k,
    per_100k_low, per_100k_high, rate_min, rate_max (of the repeats' rates), heterogeneity_p
    (one-way ANOVA of the slices' rates by repeat; null where untestable), heterogeneity_p_holm
    (Holm-adjusted over the campaign's configs), agree (heterogeneity_p_holm >= 0.05, or, where
    untestable, every two repeats' intervals overlap), overlap (every two repeats' intervals
    overlap), contained (every repeat's rate inside every other repeat's interval: stricter
    than the intervals promise, see campaign_checks), and *_text short forms.
  slices: one per slice: config, repeat, slice (1..slices_per_repeat), round, launches,
    instances, weak, o00, wall_s.
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
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

# litmus_stats.py sits beside this file; make it importable however this file is loaded (script, test, import).
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from litmus_stats import (
    CONFIDENCE,
    MIN_WEAK_GROUPS,
    clopper_pearson,  # noqa: F401  (unused here: re-exported, the tests reach it as litmus.clopper_pearson)
    cluster_interval,
    estimate,
    heterogeneity_p,
    holm,
    intervals_overlap,
    overdispersion,
    ratio_interval,
    repeats_contained,
)

# The outcome (r0, r1) that sequential consistency forbids, per test; bins are r0 * 2 + r1.
TESTS = {
    "mp": {"weak": (1, 0), "what": "r0 = y = 1 but r1 = x = 0"},
    "sb": {"weak": (0, 0), "what": "both loads miss the other thread's store"},
    "lb": {"weak": (1, 1), "what": "both loads see the store that comes after the other load"},
    "corr": {"weak": (1, 0), "what": "a newer value, then an older one, from one location"},
}
# Kernel names in litmus.cu, per test and fence variant.
KERNELS = {
    ("mp", "none"): "mp_none", ("mp", "cta"): "mp_cta", ("mp", "gpu"): "mp_gpu", ("mp", "sys"): "mp_sys",
    ("mp", "gpu-writer"): "mp_gpu_writer", ("mp", "gpu-reader"): "mp_gpu_reader",
    ("mp", "rel-acq"): "mp_rel_acq",
    ("sb", "none"): "sb_none", ("sb", "gpu"): "sb_gpu", ("lb", "none"): "lb_none", ("lb", "gpu"): "lb_gpu",
    ("corr", "none"): "corr_none",
}
# Both sides ordered at GPU scope or wider: a weak outcome here would be a finding.
ORDERED = ("gpu", "sys", "rel-acq")
STRESS_PATTERNS = {"store-store": 0, "store-load": 1, "load-store": 2, "load-load": 3}

# CONFIDENCE and MIN_WEAK_GROUPS (the statistics' settings) come from litmus_stats.py.
LAUNCHES_PER_GROUP = 8   # one synchronisation step; random placements are redrawn per group
SLICES = 8               # slices per repeat, spread over the campaign: the independent units of a row
MIN_SLICE_GROUPS = 3     # a slice runs at least this many groups of launches, whatever its time
LINE_BYTES = 128
WORD_BYTES = 4
JITTER_CYCLES = 16384    # "jitter": each warp waits up to this many clock cycles before the test
# Each group of launches places the test's memory at a random line-aligned offset in a window
# this large: a row then samples many physical placements (L2 slices, pages), as the rows of
# different repeats do, instead of keeping the one its allocation happened to get.
OFFSET_WINDOW_WORDS = 8 << 20   # 32 MiB
WARM_UP_S = 2.0                 # MP with no heuristics, unrecorded, before the first row
CI_METHOD = (f"a {CONFIDENCE:.0%} Student-t interval over slices (short measurements spread over the whole "
             f"campaign, {SLICES} per repeat), with the ratio estimator's standard error; where a slice saw no "
             f"weak outcome or fewer than {MIN_WEAK_GROUPS} groups of {LAUNCHES_PER_GROUP} launches did, "
             f"Clopper-Pearson over {LINE_BYTES}-byte lines (the instances that share a line form one cluster) "
             "taken as independent trials")
AGREEMENT_METHOD = ("a one-way analysis of variance of the slices' rates with the repeats as groups, its p-value "
                    "adjusted by Holm's method over the campaign's configurations; repeats agree when the adjusted "
                    f"p-value is at least {1 - CONFIDENCE:.2f} (where there is no test, when every two repeats' "
                    "intervals overlap)")


class LitmusError(Exception):
    """A measurement that cannot be right (a histogram that does not add up, a bad placement map)."""


# ----------------------------------------------------------------------------------- heuristics

@dataclass(frozen=True)
class Heuristics:
    """One heuristic set: each switch on or off, with its sizes."""

    name: str
    blocks: int = 16384            # testing blocks
    threads: int = 256             # threads per testing block
    random_threads: bool = False   # writer and reader CTAs paired by a random permutation, lanes shuffled
    random_locations: bool = False # random placement of locations, `stride` words apart
    stride: int = 1
    stress_blocks: int = 0         # extra CTAs that hammer scratch memory during the test
    stress_iters: int = 0
    stress_pattern: str = "store-load"
    stress_lines: int = 64
    stress_stride: int = 32        # words between stressed lines (32 words = 128 bytes)
    barrier: bool = False          # spin barrier (with a timeout) right before the test
    barrier_spins: int = 4096
    pre_stress_iters: int = 0      # stress by the testing threads themselves, before the test
    jitter: int = 0                # each warp waits a pseudo-random 0..jitter-1 clock cycles first

    @property
    def instances(self) -> int:
        """Test instances per launch: one per testing thread."""
        return self.blocks * self.threads

    @property
    def cluster_instances(self) -> int:
        """Instances whose locations share one 128-byte line: the clusters that go weak together."""
        stride = self.stride if self.random_locations else 1
        return max(1, LINE_BYTES // (WORD_BYTES * stride))


def heuristic_sets(sms: int) -> list[Heuristics]:
    """The sets the campaign compares for MP. Barrier and stress sets use a grid that fits on the GPU at once."""
    resident = sms * 4  # 256-thread blocks: four per SM leaves room for stress blocks
    big = Heuristics("none")
    small = replace(big, blocks=resident)
    stress = dict(stress_blocks=sms * 2, stress_iters=1024, stress_pattern="store-load")
    return [
        big,
        replace(big, name="random threads", random_threads=True),
        replace(big, name="random locations", random_locations=True, stride=4),
        replace(small, name="stress", **stress),
        replace(small, name="stress + random threads", random_threads=True, **stress),
        replace(small, name="barrier", barrier=True),
        replace(small, name="barrier + random threads", barrier=True, random_threads=True),
        replace(small, name="barrier + random locations", barrier=True, random_locations=True, stride=4),
        replace(small, name="barrier + stress", barrier=True, **stress),
        replace(small, name="barrier + light stress", barrier=True, stress_blocks=sms, stress_iters=256),
        replace(small, name="barrier + pre-stress", barrier=True, pre_stress_iters=64),
        replace(small, name="barrier + jitter", barrier=True, jitter=JITTER_CYCLES),
    ]


def with_overrides(h: Heuristics, text: str) -> Heuristics:
    """`h` with fields changed by 'key=value,...' (booleans as 0/1, patterns by name)."""
    changes: dict[str, Any] = {}
    types = {f.name: f.type for f in fields(Heuristics)}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key not in types or key == "name":
            raise SystemExit(f"--with: unknown heuristic {key!r}; known: {', '.join(sorted(types))}")
        kind = types[key]
        changes[key] = value if kind == "str" else bool(int(value)) if kind == "bool" else int(value)
    if "stress_pattern" in changes and changes["stress_pattern"] not in STRESS_PATTERNS:
        raise SystemExit(f"--with: stress_pattern must be one of {', '.join(STRESS_PATTERNS)}")
    return replace(h, name=h.name + (f" ({text})" if text else ""), **changes)


# ----------------------------------------------------------------------------------- placement

@dataclass(frozen=True)
class Maps:
    """Where each instance runs and where its locations are; `words` is the size of `mem`."""

    writer_inst: Any   # thread t plays role 0 of instance writer_inst[t] (NumPy or CuPy array)
    reader_inst: Any   # and role 1 of instance reader_inst[t]
    xloc: Any
    yloc: Any
    words: int


def _inverse(p: Any, xp: Any) -> Any:
    """The inverse of permutation `p`."""
    inv = xp.empty_like(p)
    inv[p] = xp.arange(p.size, dtype=p.dtype)
    return inv


def role_threads(h: Heuristics, same_cta: bool, rng: Any, xp: Any = np) -> tuple[Any, Any]:
    """The writer thread and the reader thread of each instance.

    Default: the reader runs one CTA before the writer (inter-CTA) or half a CTA on (same
    CTA). Random threads: instances go to random writer threads; the CTAs are put in a random
    cycle and each writer CTA is paired with the next one (inter-CTA), and within each CTA the
    threads are shuffled, so the reader is a random lane of the partner CTA (or, same CTA, the
    next lane of the shuffled order, never the writer itself).
    """
    n, w, blocks = h.instances, h.threads, h.blocks
    k = xp.arange(n, dtype=xp.int64)
    if not h.random_threads:
        if same_cta:
            return k, k - k % w + (k % w + w // 2) % w
        return k, (k - w) % n
    writer = xp.argsort(rng.random(n))
    cta = writer // w
    # Sorting "CTA index + a uniform number in [0, 1)" lists each CTA's threads in a random order.
    order = xp.argsort(xp.repeat(xp.arange(blocks, dtype=xp.float64), w) + rng.random(n))
    pos = _inverse(order, xp)[writer] - cta * w   # the writer's place in its CTA's shuffled order
    if same_cta:
        return writer, order[cta * w + (pos + 1) % w]
    cycle = xp.argsort(rng.random(blocks))
    partner = xp.empty_like(cycle)
    partner[cycle] = xp.roll(cycle, -1)             # a derangement of the CTAs: nobody pairs with itself
    return writer, order[partner[cta] * w + pos]


def make_maps(h: Heuristics, same_cta: bool, rng: Any, broken: bool = False, xp: Any = np) -> Maps:
    """The placement of one launch (xp: numpy, or cupy to draw it on the GPU; rng: that module's Generator).

    Locations are bijective unless `broken`, which makes each instance of the second half share
    y with one of the first half: the harness bug that produces false weak outcomes under any fence.
    """
    n = h.instances
    writer, reader = role_threads(h, same_cta, rng, xp)
    k = xp.arange(n, dtype=xp.int64)
    slots_x = xp.argsort(rng.random(n)) if h.random_locations else k
    slots_y = xp.argsort(rng.random(n)) if h.random_locations else k
    stride = h.stride if h.random_locations else 1
    xloc = slots_x * stride
    yloc = (n + slots_y) * stride
    if broken:
        yloc = yloc[k % (n // 2)]  # instance k + n/2 shares y with instance k
    u32 = xp.uint32
    return Maps(_inverse(writer, xp).astype(u32), _inverse(reader, xp).astype(u32), xloc.astype(u32),
                yloc.astype(u32), int(2 * n * stride))


def shared_locations(maps: Maps, xp: Any = np) -> int:
    """How many locations more than one instance uses (0 for a sound map)."""
    counts = xp.bincount(xp.concatenate([maps.xloc, maps.yloc]), minlength=maps.words)
    return int(xp.count_nonzero(counts > 1))


def roles_cover_every_instance(maps: Maps, xp: Any = np) -> bool:
    """Each instance has exactly one thread in each role."""
    n = len(maps.writer_inst)
    return bool((xp.bincount(maps.writer_inst, minlength=n) == 1).all() and
                (xp.bincount(maps.reader_inst, minlength=n) == 1).all())


def cta_offsets(maps: Maps, threads: int) -> np.ndarray:
    """Per instance, (reader CTA - writer CTA) modulo the CTAs: -1 (mod) everywhere for the default map."""
    n = len(maps.writer_inst)
    writer = _inverse(np.asarray(maps.writer_inst, dtype=np.int64), np)
    reader = _inverse(np.asarray(maps.reader_inst, dtype=np.int64), np)
    return (reader // threads - writer // threads) % (n // threads)


# ----------------------------------------------------------------------------------- rows

def sci(x: float) -> str:
    """A figure as a page quotes it: three significant digits, scientific for small or large."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.3g}"
    return f"{x:.2e}"


@dataclass(frozen=True)
class Config:
    """One configuration the campaign measures, `repeats` times."""

    key: str
    table: str
    test: str
    fence: str
    h: Heuristics
    same_cta: bool = False
    broken: bool = False
    min_instances: int = 0
    seconds: float | None = None   # None: the campaign's seconds per row

    @property
    def placement(self) -> str:
        """inter-cta or same-cta."""
        return "same-cta" if self.same_cta else "inter-cta"


def config_key(test: str, fence: str, heuristics: str, same_cta: bool = False, suffix: str = "") -> str:
    """'mp-none', 'mp-gpu-barrier-jitter', 'mp-none-same-cta': test, fence, heuristics unless none, extras."""
    parts = [test, fence]
    if heuristics != "none":
        parts.append(heuristics.replace(" + ", "-").replace(" ", "-"))
    if same_cta:
        parts.append("same-cta")
    if suffix:
        parts.append(suffix)
    return "-".join(parts)


def _texts(d: dict[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    return {f"{k}_text": sci(d[k]) for k in names}


def check_histograms(bins: np.ndarray, per_launch: int) -> None:
    """Raise unless every launch's histogram (rows of 5 bins) holds only 0/1 results and adds up."""
    bins = np.asarray(bins, dtype=np.int64)
    if bins.ndim != 2 or bins.shape[1] != 5 or not len(bins):
        raise LitmusError(f"histograms of shape {bins.shape}; expected (launches, 5)")
    odd = np.flatnonzero(bins[:, 4])
    if odd.size:
        raise LitmusError(f"launch {odd[0] + 1}: histogram {bins[odd[0]].tolist()}: a result other than 0 or 1 "
                          "was read; expected only 0 and 1")
    sums = bins[:, :4].sum(axis=1)
    bad = np.flatnonzero(sums != per_launch)
    if bad.size:
        raise LitmusError(f"launch {bad[0] + 1}: histogram {bins[bad[0], :4].tolist()} sums to {sums[bad[0]]}; "
                          f"expected the {per_launch} instances that ran")


def make_row(c: Config, repeat: int, repeats: int, slices: list[np.ndarray], walls: list[float],
             group: int = LAUNCHES_PER_GROUP) -> dict[str, Any]:
    """Turn a repeat's slices (per-launch outcome histograms each) into a row; raises if a histogram does not add up."""
    per_launch = c.h.instances
    w0, w1 = TESTS[c.test]["weak"]
    parts = []
    for k, bins in enumerate(slices):
        check_histograms(bins, per_launch)
        if len(bins) % group:
            raise LitmusError(f"slice {k + 1}: {len(bins)} launches do not make whole groups of {group}")
        parts.append(np.asarray(bins, dtype=np.int64))
    bins = np.concatenate(parts)
    slice_weak = np.array([b[:, w0 * 2 + w1].sum() for b in parts], dtype=np.int64)
    slice_instances = np.array([len(b) * per_launch for b in parts], dtype=np.int64)
    launch_weak = bins[:, w0 * 2 + w1]
    group_weak = launch_weak.reshape(-1, group).sum(axis=1)
    weak_groups = int(np.count_nonzero(group_weak))
    cluster = c.h.cluster_instances
    e = estimate(slice_weak, slice_instances, weak_groups, cluster)
    o = bins[:, :4].sum(axis=0)
    instances, weak, wall_s = int(o.sum()), int(launch_weak.sum()), float(sum(walls))
    row = {"config": c.key, "repeat": repeat, "repeats": repeats, "table": c.table, "test": c.test,
           "fence": c.fence, "placement": c.placement, "heuristics": c.h.name,
           "map": "broken" if c.broken else "sound", "instances": instances, "launches": len(bins),
           "groups": len(group_weak), "slices": len(parts), "weak": weak, "o00": int(o[0]), "o01": int(o[1]),
           "o10": int(o[2]), "o11": int(o[3]), "o00_fraction": int(o[0]) / instances, "rate": e.rate,
           "ci_low": e.low, "ci_high": e.high, "ci_kind": e.kind, "se": e.se, "per_100k": e.rate * 1e5,
           "per_100k_low": e.low * 1e5, "per_100k_high": e.high * 1e5, "weak_groups": weak_groups,
           "overdispersion": overdispersion(group_weak, group * per_launch),
           "cluster_instances": cluster, "clusters": instances // cluster, "wall_s": round(wall_s, 3),
           "instances_per_s": instances / wall_s, "weak_per_s": weak / wall_s}
    row.update(_texts(row, ("rate", "ci_low", "ci_high", "per_100k", "per_100k_low", "per_100k_high",
                            "instances", "instances_per_s", "weak_per_s")))
    return row


def slice_records(c: Config, repeat: int, slices: list[np.ndarray], walls: list[float],
                  rounds: list[int]) -> list[dict[str, Any]]:
    """The `slices` collection's records of one repeat: what each slice counted, and when it ran."""
    w0, w1 = TESTS[c.test]["weak"]
    return [{"config": c.key, "repeat": repeat, "slice": k + 1, "round": rnd, "launches": len(b),
             "instances": len(b) * c.h.instances, "weak": int(np.asarray(b)[:, w0 * 2 + w1].sum()),
             "o00": int(np.asarray(b)[:, 0].sum()), "wall_s": round(wall, 4)}
            for k, (b, wall, rnd) in enumerate(zip(slices, walls, rounds))]


def summarise(rows: list[dict[str, Any]], slices: list[dict[str, Any]]) -> dict[str, Any]:
    """One config's repeats: every slice pooled, the repeats' spread, and the test that they agree.

    `agree` here is provisional (unadjusted p); judge_agreement sets it for the whole campaign.
    """
    first = rows[0]
    rates, lows, highs = [r["rate"] for r in rows], [r["ci_low"] for r in rows], [r["ci_high"] for r in rows]
    instances, weak, o00 = (sum(r[k] for r in rows) for k in ("instances", "weak", "o00"))
    sw = np.array([s["weak"] for s in slices], dtype=np.int64)
    sn = np.array([s["instances"] for s in slices], dtype=np.int64)
    t_rows = all(r["ci_kind"] == "t-slices" for r in rows)
    e = (ratio_interval(sw, sn) if t_rows and sw.size >= 2
         else cluster_interval(weak, instances, first["cluster_instances"]))
    by_repeat = [[s["weak"] / s["instances"] for s in slices if s["repeat"] == r["repeat"]] for r in rows]
    p = heterogeneity_p(by_repeat) if t_rows else None
    overlap = intervals_overlap(lows, highs)
    s = {k: first[k] for k in ("config", "table", "test", "fence", "placement", "heuristics", "map")}
    s.update({"repeats": len(rows), "slices": len(slices), "instances": instances, "weak": weak, "o00": o00,
              "o00_fraction": o00 / instances, "rate": e.rate, "ci_low": e.low, "ci_high": e.high,
              "ci_kind": e.kind, "se": e.se, "per_100k": e.rate * 1e5, "per_100k_low": e.low * 1e5,
              "per_100k_high": e.high * 1e5, "rate_min": min(rates), "rate_max": max(rates),
              "heterogeneity_p": p, "heterogeneity_p_holm": p,
              "agree": overlap if p is None else p >= 1 - CONFIDENCE, "overlap": overlap,
              "contained": repeats_contained(rates, lows, highs)})
    s.update(_texts(s, ("rate", "ci_low", "ci_high", "per_100k", "per_100k_low", "per_100k_high", "instances",
                        "rate_min", "rate_max")))
    return s


def judge_agreement(summaries: list[dict[str, Any]]) -> None:
    """Holm-adjust the configs' heterogeneity p-values as one family and set `agree` from them."""
    adjusted = holm([s["heterogeneity_p"] for s in summaries])
    for s, q in zip(summaries, adjusted):
        s["heterogeneity_p_holm"] = q
        s["agree"] = s["overlap"] if q is None else q >= 1 - CONFIDENCE


def format_row(r: dict[str, Any]) -> str:
    """One progress line: the histogram's o00 share beside the rate, so a blind zero shows."""
    return (f"{r['config']:<30} r{r['repeat']} {r['instances_text']:>9} inst {r['weak']:>12,d} weak  "
            f"rate {r['rate_text']:>8} [{r['ci_low_text']}, {r['ci_high_text']}] {r['ci_kind']:<8} "
            f"{r['per_100k_text']:>8}/100k  o00 {r['o00_fraction']:7.2%}  "
            f"{r['instances_per_s_text']:>8} inst/s  {r['wall_s']:5.2f} s")


def format_summary(s: dict[str, Any]) -> str:
    """One line per config after the campaign: do the repeats agree?"""
    p, q = s["heterogeneity_p"], s["heterogeneity_p_holm"]
    return (f"{s['config']:<30} {s['repeats']} repeats  rate {s['rate_text']:>8} [{s['ci_low_text']}, "
            f"{s['ci_high_text']}] {s['ci_kind']:<9} repeats {s['rate_min_text']}..{s['rate_max_text']}  "
            f"o00 {s['o00_fraction']:7.2%}  ANOVA p {'-' if p is None else f'{p:.3f}'} "
            f"(Holm {'-' if q is None else f'{q:.3f}'})  agree {'yes' if s['agree'] else 'NO'}  "
            f"contained {'yes' if s['contained'] else 'no'}")


# ----------------------------------------------------------------------------------- GPU side

class Runner:
    """Launches litmus.cu's kernels with CuPy and counts outcomes on the GPU, one histogram per launch."""

    def __init__(self, cubin: Path, seed: int):
        import cupy as cp

        self.cp = cp
        self.module = cp.RawModule(path=str(cubin))
        self.histogram = self.module.get_function("histogram")
        self.seeds = np.random.SeedSequence(seed)
        self.scratch = cp.zeros(1 << 22, dtype=cp.uint32)
        self.barrier = cp.zeros(1, dtype=cp.uint32)
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"]
        self.gpu = name.decode() if isinstance(name, bytes) else str(name)
        self.sms = int(props["multiProcessorCount"])
        start = time.perf_counter()
        for same_cta in (False, True):   # compile CuPy's kernels for the placement maps before any timing
            self.maps(Config("warm-up", "-", "mp", "none", Heuristics("warm-up", blocks=4, threads=64,
                                                                       random_threads=True, random_locations=True,
                                                                       stride=4), same_cta=same_cta),
                      cp.random.default_rng(0))
        cp.cuda.Device().synchronize()
        self.setup_s = time.perf_counter() - start

    def maps(self, c: Config, rng: Any) -> tuple[Any, ...]:
        """A placement drawn on the GPU and checked there: never a silent harness bug."""
        cp = self.cp
        maps = make_maps(c.h, c.same_cta, rng, c.broken, xp=cp)
        if not c.broken and (shared_locations(maps, cp) or not roles_cover_every_instance(maps, cp)):
            raise LitmusError(f"{c.key}: placement map is not a bijection")
        return maps.words, (maps.writer_inst, maps.reader_inst, maps.xloc, maps.yloc)

    def warm_up(self, seconds: float = WARM_UP_S) -> None:
        """Run MP with no heuristics for a while, unrecorded: the first recorded row finds the GPU at speed."""
        self.run(Config("warm-up", "-", "mp", "none", Heuristics("none")), seconds)

    def run(self, c: Config, seconds: float, min_instances: int = 0) -> tuple[np.ndarray, float]:
        """One slice: launch groups until `seconds`, `min_instances` and MIN_SLICE_GROUPS are reached.

        Returns the per-launch histograms and the wall seconds.
        """
        cp, h, u = self.cp, c.h, np.uint32
        fn = self.module.get_function(KERNELS[(c.test, c.fence)])
        seed = self.seeds.spawn(1)[0]
        rng, offsets = cp.random.default_rng(seed), np.random.default_rng(seed)
        redraw = h.random_threads or h.random_locations
        words, maps = self.maps(c, rng)
        pool = cp.zeros(words + OFFSET_WINDOW_WORDS, dtype=cp.uint32)
        line = LINE_BYTES // WORD_BYTES
        r0 = cp.zeros(h.instances, dtype=cp.uint32)
        r1 = cp.zeros(h.instances, dtype=cp.uint32)
        capacity = 512 * LAUNCHES_PER_GROUP
        bins = cp.zeros((capacity, 5), dtype=cp.uint64)
        done: list[np.ndarray] = []
        grid = h.blocks + h.stress_blocks
        scalars = (u(h.blocks), u(h.instances), u(h.stress_iters), u(STRESS_PATTERNS[h.stress_pattern]),
                   u(h.stress_lines), u(h.stress_stride), u(h.pre_stress_iters),
                   u(h.barrier_spins if h.barrier else 0), u(h.jitter))
        hist_grid = min(4 * self.sms, -(-h.instances // 256))
        launches = filled = 0
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        while True:
            if redraw and launches:
                maps = self.maps(c, rng)[1]   # a fresh random placement for each group
            start_word = int(offsets.integers(0, OFFSET_WINDOW_WORDS // line)) * line
            mem = pool[start_word:start_word + words]
            for _ in range(LAUNCHES_PER_GROUP):
                mem.fill(0)
                self.barrier.fill(0)
                fn((grid,), (h.threads,), (mem, r0, r1, *maps, self.barrier, self.scratch, *scalars, u(launches)))
                self.histogram((hist_grid,), (256,), (r0, r1, u(h.instances), bins[filled]))
                launches += 1
                filled += 1
            if filled == capacity:
                done.append(cp.asnumpy(bins))
                bins.fill(0)
                filled = 0
            cp.cuda.Device().synchronize()
            wall = time.perf_counter() - start
            if (wall >= seconds and launches * h.instances >= min_instances
                    and launches >= MIN_SLICE_GROUPS * LAUNCHES_PER_GROUP):
                break
        done.append(cp.asnumpy(bins[:filled]))
        return np.concatenate(done), wall


# ----------------------------------------------------------------------------------- campaign

def campaign_configs(sets: list[Heuristics], best: Heuristics | None, soundness: int) -> list[Config]:
    """The heuristics table (best None), or every other table under the best heuristic set."""
    if best is None:
        return [Config(config_key("mp", "none", h.name), "heuristics", "mp", "none", h) for h in sets]
    jitter = next(h for h in sets if h.jitter)
    none = sets[0]
    out = [Config(config_key("mp", f, best.name), "fences", "mp", f, best)
           for f in ("none", "cta", "gpu", "sys", "gpu-writer", "gpu-reader", "rel-acq")]
    # The reader must sometimes run first for a fenced zero to mean anything: jitter makes it so (o00 > 0).
    out += [Config(config_key("mp", f, jitter.name), "overlap", "mp", f, jitter) for f in ("gpu", "rel-acq")]
    out += [Config(config_key(t, f, best.name), "tests", t, f, best)
            for t, f in (("sb", "none"), ("sb", "gpu"), ("lb", "none"), ("lb", "gpu"), ("corr", "none"))]
    out += [Config(config_key("mp", f, best.name, same_cta=True), "placement", "mp", f, best, same_cta=True)
            for f in ("none", "cta")]
    out.append(Config(config_key("mp", "gpu", none.name, suffix="soundness"), "soundness", "mp", "gpu", none,
                      min_instances=soundness, seconds=0.0))
    out.append(Config(config_key("mp", "gpu", best.name, suffix="broken-map"), "harness-bug", "mp", "gpu", best,
                      broken=True))
    return out


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
    seen = [s for s in fenced if s["weak"] == 0 and s["o00_fraction"] >= 0.01]
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
        check("fenced-overlap", bool(seen), False, "fenced zero rows whose reader sometimes ran first (o00 >= 1%): "
              + (", ".join(f"{s['config']} o00 {s['o00_fraction']:.2%}" for s in seen) or "none")),
        check("repeats-agree", not disagree, False, "configs whose repeats differ by more than their slices "
              "allow (ANOVA, Holm-adjusted p < 0.05; overlap where untestable): " + (", ".join(disagree) or "none")),
        check("repeats-contained", True, False, "information, not a test: configs with a repeat's rate outside "
              "another repeat's interval. Two right 95% intervals' centres differ by more than one half-width "
              "about one time in six, so with 5 repeats (20 ordered pairs) this strict rule fails for most "
              "configs even when every interval is right: " + (", ".join(outside) or "none")),
    ]


def campaign(runner: Runner, seconds: float, repeats: int, soundness: int, budget_s: float,
             out: Callable[[str], None]) -> dict[str, Any]:
    """The recorded campaign: heuristics first (to pick the best set), then fences, overlap, tests, placement, checks."""
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
    say: Callable[[str], None] = lambda s: print(s, flush=True)  # noqa: E731
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
        meta = {"format": 3, "gpu": runner.gpu, "sms": runner.sms, "seed": args.seed, "repeats": args.repeats or 5,
                "seconds_per_row": args.seconds, "slices_per_repeat": SLICES, "confidence": CONFIDENCE,
                "ci_method": CI_METHOD, "agreement_method": AGREEMENT_METHOD,
                "launches_per_group": LAUNCHES_PER_GROUP, "min_weak_groups": MIN_WEAK_GROUPS,
                "line_bytes": LINE_BYTES}
        Path(args.json).write_text(json.dumps({**meta, **result}, indent=2) + "\n")
    return 0 if result["checks_passed"] else 2


if __name__ == "__main__":
    sys.exit(main())
