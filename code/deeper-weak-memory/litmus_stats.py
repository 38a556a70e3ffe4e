"""The litmus runner's statistics: a weak-outcome rate with its interval, and whether repeats agree.

Weak outcomes are not independent from instance to instance (the instances that share a
128-byte line go weak together, and the rate varies from launch to launch more than a
binomial count would), so the units are groups of launches: Student's t over the groups'
rates. Where fewer than MIN_WEAK_GROUPS groups saw a weak outcome, Clopper-Pearson over
clusters of instances (those that share a line) taken as the independent trials. Over a
configuration's repeats: Student's t over their rates, whether each lies inside the others'
intervals, and Cochran's Q. NumPy only at import; SciPy is imported where a quantile is needed,
so litmus.py's bookkeeping imports neither SciPy nor CuPy.
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


def t_interval(rates: np.ndarray, confidence: float = CONFIDENCE) -> Estimate:
    """Mean of per-unit rates with Student's t interval over the units (clipped to [0, 1])."""
    from scipy.stats import t

    r = np.asarray(rates, dtype=np.float64)
    if r.size < 2:
        raise ValueError(f"{r.size} unit(s); a t interval needs at least 2")
    mean = float(r.mean())
    se = float(r.std(ddof=1)) / math.sqrt(r.size)
    half = float(t.ppf(0.5 + confidence / 2, r.size - 1)) * se
    return Estimate(mean, max(0.0, mean - half), min(1.0, mean + half), "t", se)


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


def estimate(unit_weak: np.ndarray, unit_instances: int, cluster: int, confidence: float = CONFIDENCE) -> Estimate:
    """A row's rate and interval from its units' weak counts (units of equal size): t over units, or clusters."""
    weak = np.asarray(unit_weak, dtype=np.int64)
    total = int(weak.sum())
    if np.count_nonzero(weak) >= MIN_WEAK_GROUPS:
        e = t_interval(weak / unit_instances, confidence)
        return Estimate(total / (weak.size * unit_instances), e.low, e.high, "t-groups", e.se)
    return cluster_interval(total, weak.size * unit_instances, cluster, confidence)


def overdispersion(unit_weak: np.ndarray, unit_instances: int) -> float | None:
    """Variance of the units' rates over the binomial variance for independent instances (1: no clumping)."""
    weak = np.asarray(unit_weak, dtype=np.float64)
    p = weak.sum() / (weak.size * unit_instances)
    if weak.size < 2 or p in (0.0, 1.0):
        return None
    return float(np.var(weak / unit_instances, ddof=1) / (p * (1 - p) / unit_instances))


def repeats_agree(rates: list[float], lows: list[float], highs: list[float]) -> bool:
    """Every repeat's rate lies inside every other repeat's interval."""
    return all(lows[j] <= rates[i] <= highs[j] for i in range(len(rates)) for j in range(len(rates)) if i != j)


def heterogeneity_p(rates: list[float], ses: list[float | None]) -> float | None:
    """Cochran's Q test that the repeats share one rate: the p-value, or None without standard errors.

    Q = sum of ((rate - weighted mean) / se)^2 follows chi-square with k - 1 degrees of freedom
    when the repeats measure one rate and their standard errors are right.
    """
    from scipy.stats import chi2

    if len(rates) < 2 or any(se is None or se <= 0 for se in ses):
        return None
    r, w = np.asarray(rates, dtype=np.float64), 1 / np.asarray(ses, dtype=np.float64) ** 2
    q = float((w * (r - (w * r).sum() / w.sum()) ** 2).sum())
    return float(chi2.sf(q, len(rates) - 1))


def intervals_overlap(lows: list[float], highs: list[float]) -> bool:
    """Every two intervals overlap (on a line: the largest low is not above the smallest high)."""
    return max(lows) <= min(highs)
