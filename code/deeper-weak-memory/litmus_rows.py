"""From per-launch outcome histograms to rows: the rate, its interval, the outcome bins, the repeats' summary.

The intervals and the agreement test are litmus_stats.py's; this module keeps the books.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from litmus_plan import (
    LAUNCHES_PER_GROUP,
    LINE_BYTES,
    RECORD_WIDTH,
    SLICES,
    TESTS,
    Config,
    LitmusError,
)
from litmus_stats import (
    CONFIDENCE,
    MIN_WEAK_GROUPS,
    cluster_interval,
    estimate,
    heterogeneity_p,
    holm,
    intervals_overlap,
    overdispersion,
    ratio_interval,
    repeats_contained,
)

CI_METHOD = (f"a {CONFIDENCE:.0%} Student-t interval over slices (short measurements spread over the whole "
             f"campaign, {SLICES} per repeat), with the ratio estimator's standard error; where a slice saw no "
             f"weak outcome or fewer than {MIN_WEAK_GROUPS} groups of {LAUNCHES_PER_GROUP} launches did, "
             f"Clopper-Pearson over {LINE_BYTES}-byte lines (the instances that share a line form one cluster) "
             "taken as independent trials, so exact only if lines go weak independently; the upper end of this "
             "two-sided interval is a one-sided 97.5% upper bound")
AGREEMENT_METHOD = ("a one-way analysis of variance of the slices' rates with the repeats as groups, its p-value "
                    "adjusted by Holm's method over the campaign's configurations; repeats agree when the adjusted "
                    f"p-value is at least {1 - CONFIDENCE:.2f} (where there is no test, when every two repeats' "
                    "intervals overlap)")



def sci(x: float) -> str:
    """A figure as a page quotes it: three significant digits, scientific for small or large."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.3g}"
    return f"{x:.2e}"


def _texts(d: dict[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    return {f"{k}_text": sci(d[k]) for k in names}


def _bins(o: Any, instances: int) -> dict[str, Any]:
    """The four outcome bins (r0 r1 = 00, 01, 10, 11) as counts and as shares of the instances."""
    names = ("o00", "o01", "o10", "o11")
    return {**{n: int(v) for n, v in zip(names, o)}, **{f"{n}_fraction": int(v) / instances for n, v in zip(names, o)}}


def check_histograms(bins: np.ndarray, per_launch: int) -> None:
    """Raise unless every launch's histogram (its first 5 bins) holds only 0/1 results and adds up, and
    its placement (bins 5 and 6, where recorded) counts no more instances than ran."""
    bins = np.asarray(bins, dtype=np.int64)
    if bins.ndim != 2 or bins.shape[1] not in (5, RECORD_WIDTH) or not len(bins):
        raise LitmusError(f"histograms of shape {bins.shape}; expected (launches, 5) or (launches, {RECORD_WIDTH})")
    if bins.shape[1] == RECORD_WIDTH:
        bad = np.flatnonzero((bins[:, 5] > bins[:, 6]) | ((bins[:, 6] != 0) & (bins[:, 6] != per_launch)))
        if bad.size:
            raise LitmusError(f"launch {bad[0] + 1}: placement {bins[bad[0], 5:].tolist()}; expected at most "
                              f"{per_launch} instances on one multiprocessor, of {per_launch} compared (or 0, 0)")
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
    i0, i1 = TESTS[c.test]["interleaved"]
    row = {"config": c.key, "repeat": repeat, "repeats": repeats, "table": c.table, "test": c.test,
           "fence": c.fence, "placement": c.placement, "heuristics": c.h.name,
           "map": "broken" if c.broken else "sound", "instances": instances, "launches": len(bins),
           "groups": len(group_weak), "slices": len(parts), "weak": weak, **_bins(o, instances),
           "interleaved": int(o[i0 * 2 + i1]), "interleaved_fraction": int(o[i0 * 2 + i1]) / instances,
           "rate": e.rate,
           "ci_low": e.low, "ci_high": e.high, "ci_kind": e.kind, "se": e.se, "per_100k": e.rate * 1e5,
           "per_100k_low": e.low * 1e5, "per_100k_high": e.high * 1e5, "weak_groups": weak_groups,
           "overdispersion": overdispersion(group_weak, group * per_launch),
           "cluster_instances": cluster, "clusters": instances // cluster, "wall_s": round(wall_s, 3),
           "instances_per_s": instances / wall_s, "weak_per_s": weak / wall_s, **_placement(bins)}
    row.update(_texts(row, ("rate", "ci_low", "ci_high", "per_100k", "per_100k_low", "per_100k_high",
                            "instances", "instances_per_s", "weak_per_s")))
    return row


def _placement(bins: np.ndarray) -> dict[str, Any]:
    """Where the roles ran, over the launches whose placement was read: the instances whose two roles'
    blocks were on one multiprocessor, of those compared, and that share (None where none was read)."""
    if bins.shape[1] < RECORD_WIDTH or not bins[:, 6].sum():
        return {"placement_launches": 0, "placement_instances": 0, "same_sm_instances": None,
                "same_sm_fraction": None, "other_sm_fraction": None}
    same, compared = int(bins[:, 5].sum()), int(bins[:, 6].sum())
    return {"placement_launches": int(np.count_nonzero(bins[:, 6])), "placement_instances": compared,
            "same_sm_instances": same, "same_sm_fraction": same / compared,
            "other_sm_fraction": (compared - same) / compared}


def slice_records(c: Config, repeat: int, slices: list[np.ndarray], walls: list[float],
                  rounds: list[int]) -> list[dict[str, Any]]:
    """The `slices` collection's records of one repeat: what each slice counted, and when it ran."""
    w0, w1 = TESTS[c.test]["weak"]
    i0, i1 = TESTS[c.test]["interleaved"]
    out = []
    for k, (b, wall, rnd) in enumerate(zip(slices, walls, rounds)):
        o = np.asarray(b, dtype=np.int64)[:, :4].sum(axis=0)
        out.append({"config": c.key, "repeat": repeat, "slice": k + 1, "round": rnd, "launches": len(b),
                    "instances": len(b) * c.h.instances, "weak": int(o[w0 * 2 + w1]),
                    "o00": int(o[0]), "o01": int(o[1]), "o10": int(o[2]), "o11": int(o[3]),
                    "interleaved": int(o[i0 * 2 + i1]), "wall_s": round(wall, 4)})
    return out


def summarise(rows: list[dict[str, Any]], slices: list[dict[str, Any]]) -> dict[str, Any]:
    """One config's repeats: every slice pooled, the repeats' spread, and the test that they agree.

    `agree` here is provisional (unadjusted p); judge_agreement sets it for the whole campaign.
    """
    first = rows[0]
    rates, lows, highs = [r["rate"] for r in rows], [r["ci_low"] for r in rows], [r["ci_high"] for r in rows]
    instances, weak, interleaved = (sum(r[k] for r in rows) for k in ("instances", "weak", "interleaved"))
    o = [sum(r[k] for r in rows) for k in ("o00", "o01", "o10", "o11")]
    sw = np.array([s["weak"] for s in slices], dtype=np.int64)
    sn = np.array([s["instances"] for s in slices], dtype=np.int64)
    t_rows = all(r["ci_kind"] == "t-slices" for r in rows)
    e = (ratio_interval(sw, sn) if t_rows and sw.size >= 2
         else cluster_interval(weak, instances, first["cluster_instances"]))
    by_repeat = [[s["weak"] / s["instances"] for s in slices if s["repeat"] == r["repeat"]] for r in rows]
    p = heterogeneity_p(by_repeat) if t_rows else None
    overlap = intervals_overlap(lows, highs)
    s = {k: first[k] for k in ("config", "table", "test", "fence", "placement", "heuristics", "map")}
    s.update({"repeats": len(rows), "slices": len(slices), "instances": instances, "weak": weak,
              **_bins(o, instances), "interleaved": interleaved, "interleaved_fraction": interleaved / instances,
              "rate": e.rate, "ci_low": e.low, "ci_high": e.high,
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
    """One progress line: the interleaved share beside the rate, so a zero from roles that never met shows."""
    return (f"{r['config']:<30} r{r['repeat']} {r['instances_text']:>9} inst {r['weak']:>12,d} weak  "
            f"rate {r['rate_text']:>8} [{r['ci_low_text']}, {r['ci_high_text']}] {r['ci_kind']:<8} "
            f"{r['per_100k_text']:>8}/100k  interleaved {r['interleaved_fraction']:7.2%}  "
            f"{r['instances_per_s_text']:>8} inst/s  {r['wall_s']:5.2f} s")


def format_summary(s: dict[str, Any]) -> str:
    """One line per config after the campaign: do the repeats agree?"""
    p, q = s["heterogeneity_p"], s["heterogeneity_p_holm"]
    return (f"{s['config']:<30} {s['repeats']} repeats  rate {s['rate_text']:>8} [{s['ci_low_text']}, "
            f"{s['ci_high_text']}] {s['ci_kind']:<9} repeats {s['rate_min_text']}..{s['rate_max_text']}  "
            f"interleaved {s['interleaved_fraction']:7.2%}  ANOVA p {'-' if p is None else f'{p:.3f}'} "
            f"(Holm {'-' if q is None else f'{q:.3f}'})  agree {'yes' if s['agree'] else 'NO'}  "
            f"contained {'yes' if s['contained'] else 'no'}")


