"""The litmus runner's statistics: a weak-outcome rate with its interval, and whether repeats agree.

Weak outcomes are not independent from instance to instance: the instances that share a
128-byte line go weak together, and the rate drifts over a campaign (clocks, the state of
the memory system) far more than a binomial count would allow. So the independent units are
slices: short measurements spread over the whole campaign, each repeat of a configuration
made of slices from many moments. A rate is the ratio estimator (weak over instances, summed
over the slices) with its linearised standard error and Student's t over the slices. Where a
slice saw no weak outcome, or fewer than MIN_WEAK_GROUPS groups of launches did, the interval
is Clopper-Pearson over clusters of instances (those that share a line) as the trials.

Whether a configuration's repeats agree: a one-way analysis of variance of the slices' rates
with the repeats as the groups (SciPy's f_oneway), its p-value adjusted by Holm's method over
all the configurations of a campaign, so that a campaign whose intervals are right is called
inconsistent about one time in twenty, not once per twenty configurations. NumPy only at
import; SciPy is imported where a quantile or a test is needed, so litmus.py's bookkeeping
imports neither SciPy nor CuPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
MIN_WEAK_GROUPS = 20     # fewer groups with a weak outcome: Clopper-Pearson over clusters instead of t


@dataclass(frozen=True)
class Estimate:
    """A rate with its two-sided interval and the method that gave it."""

    rate: float
    low: float
    high: float
    kind: str
    se: float | None = None   # the standard error behind a t interval; None for Clopper-Pearson


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Exact binomial confidence interval for k successes in n independent trials (SciPy's beta quantiles)."""
    from scipy.stats import beta

    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"{k} successes in {n} trials; expected 0 <= k <= n and n > 0")
    alpha = 1 - confidence
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def ratio_interval(weak: np.ndarray, instances: np.ndarray, confidence: float = CONFIDENCE) -> Estimate:
    """Weak over instances summed over units of unequal size, with Student's t over the units.

    The standard error is the usual linearisation of a ratio estimator (cluster sampling):
    se^2 = k / (k - 1) * sum((w_i - rate * n_i)^2) / (sum n_i)^2 for k units. Clipped to [0, 1].
    """
    from scipy.stats import t

    w, n = np.asarray(weak, dtype=np.float64), np.asarray(instances, dtype=np.float64)
    if w.size < 2 or w.shape != n.shape:
        raise ValueError(f"{w.size} unit(s) with {n.size} sizes; a t interval needs at least 2 units, each sized")
    total = float(n.sum())
    rate = float(w.sum()) / total
    se = math.sqrt(w.size / (w.size - 1) * float(((w - rate * n) ** 2).sum())) / total
    half = float(t.ppf(0.5 + confidence / 2, w.size - 1)) * se
    return Estimate(rate, max(0.0, rate - half), min(1.0, rate + half), "t-slices", se)


def cluster_interval(weak: int, instances: int, cluster: int, confidence: float = CONFIDENCE) -> Estimate:
    """Clopper-Pearson over clusters of `cluster` instances taken as the independent trials.

    A cluster with a weak outcome holds 1 to `cluster` of them, so with p the chance that a
    cluster goes weak, p / cluster <= rate <= p. The weak clusters number ceil(weak / cluster)
    at least and min(weak, clusters) at most; each bound takes the count that makes it wider.
    For weak = 0 this is [0, the exact upper bound for 0 successes in `clusters` trials].
    """
    clusters = instances // cluster
    if clusters <= 0:
        raise ValueError(f"{instances} instances make no cluster of {cluster}")
    fewest, most = -(-weak // cluster), min(weak, clusters)
    low = clopper_pearson(fewest, clusters, confidence)[0] / cluster
    high = clopper_pearson(most, clusters, confidence)[1]
    return Estimate(weak / instances, low, high, "clusters")


def estimate(slice_weak: np.ndarray, slice_instances: np.ndarray, weak_groups: int, cluster: int,
             confidence: float = CONFIDENCE) -> Estimate:
    """A rate and its interval from slices: t over the slices, or Clopper-Pearson over clusters.

    t needs every slice to have seen a weak outcome and at least MIN_WEAK_GROUPS groups of
    launches with one; otherwise the rate is too rare for a t interval to be trusted.
    """
    w = np.asarray(slice_weak, dtype=np.int64)
    n = np.asarray(slice_instances, dtype=np.int64)
    if w.size >= 2 and np.all(w > 0) and weak_groups >= MIN_WEAK_GROUPS:
        return ratio_interval(w, n, confidence)
    return cluster_interval(int(w.sum()), int(n.sum()), cluster, confidence)


def overdispersion(unit_weak: np.ndarray, unit_instances: int) -> float | None:
    """Variance of the units' rates over the binomial variance for independent instances (1: no clumping)."""
    weak = np.asarray(unit_weak, dtype=np.float64)
    p = weak.sum() / (weak.size * unit_instances)
    if weak.size < 2 or p in (0.0, 1.0):
        return None
    return float(np.var(weak / unit_instances, ddof=1) / (p * (1 - p) / unit_instances))


def repeats_contained(rates: list[float], lows: list[float], highs: list[float]) -> bool:
    """Every repeat's rate lies inside every other repeat's interval (strict: see campaign_checks)."""
    return all(lows[j] <= rates[i] <= highs[j] for i in range(len(rates)) for j in range(len(rates)) if i != j)


def intervals_overlap(lows: list[float], highs: list[float]) -> bool:
    """Every two intervals overlap (on a line: the largest low is not above the smallest high)."""
    return max(lows) <= min(highs)


def heterogeneity_p(slice_rates_by_repeat: list[list[float]]) -> float | None:
    """One-way ANOVA p-value that the repeats share one rate, their slices as the units; None if untestable.

    Untestable: fewer than two repeats, a repeat with fewer than two slices, or no variation
    at all within the repeats (then the F statistic is undefined).
    """
    from scipy.stats import f_oneway

    groups = [np.asarray(g, dtype=np.float64) for g in slice_rates_by_repeat]
    if len(groups) < 2 or any(g.size < 2 for g in groups):
        return None
    if all(float(np.var(g)) == 0.0 for g in groups):
        return None
    p = float(f_oneway(*groups).pvalue)
    return None if math.isnan(p) else p


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None entries are left out and stay None).

    Written here because SciPy has no Holm adjustment (its false_discovery_control is
    Benjamini-Hochberg); the method: sort ascending, multiply the i-th smallest by (m - i),
    keep the sequence non-decreasing, cap at 1.
    """
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m, out, running = len(present), list(pvalues), 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
