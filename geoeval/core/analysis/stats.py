"""Uncertainty for every number: intervals on means, and paired comparisons of two runs.

Pure functions over per-sample values (floats; NaN means "no value": the sample errored or the
metric does not apply, and is skipped, so `n` counts only the samples that have a value).

- `mean_interval`: the mean with a 95% percentile bootstrap interval (`n_boot` = 2000 resamples,
  seeded, so the same input gives the same interval) and a standard error; clustered when samples
  share a cluster (whole clusters are resampled, not samples). `wilson_interval` is the closed-form
  alternative for 0/1 metrics.
- `paired_comparison`: two runs' values on the same samples: the mean difference (B - A) with a
  paired (clustered) bootstrap interval and a paired test: McNemar's exact test for 0/1 metrics
  whose samples are independent, otherwise a sign-flip permutation test on the cluster totals of
  the differences (exact up to `EXACT_SIGN_FLIP_MAX` clusters, Monte Carlo beyond).
- `cluster_of`: which samples are not independent (see its docstring for the rule).
- `summary_with_intervals`: `aggregate.group_table`'s rows with `<metric>_ci_low`,
  `<metric>_ci_high` and `<metric>_n` added, for console tables and MLflow.

Why clusters: MapTab asks many questions about one map; a model that misreads the map gets them
all wrong together, so 100 questions on 5 maps carry far less information than 100 independent
ones. Resampling maps (not questions) gives an interval that says so. Several epochs of one sample
are one cluster for the same reason.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from geoeval.core.analysis.aggregate import DEFAULT_SUM_METRICS, dimension_value, group_keys, group_table
from geoeval.core.records import SampleResult

#: Bootstrap resamples unless a caller says otherwise.
DEFAULT_N_BOOT = 2000
#: Random sign patterns of the Monte Carlo sign-flip test.
DEFAULT_N_PERM = 10000
#: Up to this many clusters with a non-zero difference the sign-flip test enumerates every one of
#: the 2**m sign patterns (65,536 at 16), so its p-value is exact.
EXACT_SIGN_FLIP_MAX = 16
#: With fewer clusters than this, a bootstrap interval understates the uncertainty (it can even
#: have zero width when the clusters happen to agree) and a sign-flip p-value cannot go below
#: 2 / 2**k; reports say so.
FEW_CLUSTERS = 10
#: Above this many discordant pairs McNemar's binomial tail is summed in log space (exact integer
#: arithmetic below it).
_EXACT_BINOMIAL_MAX = 2000
#: Bootstrap work is done in chunks of about this many drawn indices (bounds memory).
_CHUNK_CELLS = 2_000_000

#: A sample may name its own cluster in `Dimensions.extra[CLUSTER_EXTRA_KEY]`; it wins over the
#: suite's rule.
CLUSTER_EXTRA_KEY = "cluster"
#: The dimension whose samples share a cluster, per suite (MapTab: the map every question is
#: about). Extend with `register_cluster_key`.
SUITE_CLUSTER_KEYS: dict[str, str] = {"maptab": "map"}
#: `cluster_of(result, key=SAMPLE_CLUSTER)` makes every sample (all its epochs) its own cluster.
SAMPLE_CLUSTER = "sample"


# -- clusters -----------------------------------------------------------------------------------


def register_cluster_key(suite: str, key: str) -> None:
    """Make `key` (a dimension `aggregate.dimension_value` knows, e.g. an `extra` key) the
    cluster of every sample of `suite` that has it."""
    SUITE_CLUSTER_KEYS[suite] = key


def cluster_of(result: SampleResult, key: str | None = None) -> str:
    """The cluster `result` belongs to, as text; samples of one cluster are resampled together.

    The rule, first match wins:
    1. `key` given: `"sample"` makes each sample its own cluster; any other name is a dimension
       (e.g. `"map"`, `"task"`, an `extra` key) whose value is the cluster;
    2. the sample's own `dims.extra["cluster"]` (how a suite steers single samples);
    3. the suite's dimension in `SUITE_CLUSTER_KEYS` (MapTab: `extra["map"]`);
    4. the sample itself: its `sample_id` (so the epochs of one sample are one cluster).
    A sample without the dimension a rule names falls through to the next rule. The returned text
    is prefixed with where it came from, so a map and a sample id of the same name never merge.
    """
    if key == SAMPLE_CLUSTER:
        return f"sample:{result.sample_id}"
    if key is not None:
        value = dimension_value(result, key)
        if value:
            return f"{key}:{value}"
        return f"sample:{result.sample_id}"
    own = result.dims.extra.get(CLUSTER_EXTRA_KEY)
    if own:
        return f"{CLUSTER_EXTRA_KEY}:{own}"
    suite_key = SUITE_CLUSTER_KEYS.get(result.dims.suite)
    if suite_key is not None:
        value = dimension_value(result, suite_key)
        if value:
            return f"{suite_key}:{value}"
    return f"sample:{result.sample_id}"


# -- one set of values --------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A mean (or a total) with its interval.

    `low`/`high` are NaN when there are fewer than two clusters (one cluster says nothing about
    the spread); `value` is NaN when no sample has a value. `se` is the (cluster-robust) standard
    error; `method` names how the interval was made ("bootstrap")."""

    value: float
    low: float
    high: float
    se: float
    n: int
    n_clusters: int
    method: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite_pairs(
    values: Sequence[float] | np.ndarray, clusters: Sequence[Hashable] | None
) -> tuple[np.ndarray, list[Hashable]]:
    """The values that are not NaN, with their clusters (each its own cluster when None)."""
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"{len(values)} values but {len(clusters)} clusters")
    keep = [i for i, v in enumerate(values) if v is not None and not math.isnan(v)]
    kept_values = np.array([float(values[i]) for i in keep], dtype=float)
    kept_clusters: list[Hashable] = list(keep) if clusters is None else [clusters[i] for i in keep]
    return kept_values, kept_clusters


def _cluster_totals(values: np.ndarray, clusters: list[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (in order of first appearance): the sum of its values and how many it has."""
    index: dict[Hashable, int] = {}
    codes = np.array([index.setdefault(c, len(index)) for c in clusters], dtype=np.int64)
    sums = np.bincount(codes, weights=values, minlength=len(index)) if len(values) else np.zeros(0)
    counts = np.bincount(codes, minlength=len(index)).astype(float) if len(values) else np.zeros(0)
    return sums, counts


def _bootstrap_means(sums: np.ndarray, counts: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """`n_boot` means of a cluster bootstrap: each draws k clusters with replacement from the k
    there are and takes the mean over every sample of the drawn clusters."""
    k = len(sums)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // max(k, 1))
    means = np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        drawn = rng.integers(0, k, size=(stop - start, k))
        means[start:stop] = sums[drawn].sum(axis=1) / counts[drawn].sum(axis=1)
    return means


def _percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def cluster_standard_error(values: Sequence[float] | np.ndarray, clusters: Sequence[Hashable] | None = None) -> float:
    """The standard error of the mean, cluster-robust: with k clusters whose residual totals are
    e_j = sum over the cluster of (x - mean), SE^2 = k / (k - 1) * sum(e_j^2) / n^2. When every
    sample is its own cluster this is the textbook s / sqrt(n). NaN values are skipped; NaN when
    fewer than two clusters have a value."""
    kept, kept_clusters = _finite_pairs(values, clusters)
    if len(kept) == 0:
        return math.nan
    residual_sums, _ = _cluster_totals(kept - kept.mean(), kept_clusters)
    k = len(residual_sums)
    if k < 2:
        return math.nan
    return math.sqrt(k / (k - 1) * float(np.sum(residual_sums**2)) / len(kept) ** 2)


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> Estimate:
    """The mean of `values` with a percentile bootstrap interval (see the module docstring).
    `clusters[i]` is the cluster of `values[i]` (None: every value its own cluster)."""
    _check_confidence(confidence)
    kept, kept_clusters = _finite_pairs(values, clusters)
    if len(kept) == 0:
        return Estimate(math.nan, math.nan, math.nan, math.nan, 0, 0, "bootstrap")
    sums, counts = _cluster_totals(kept, kept_clusters)
    mean = float(math.fsum(kept) / len(kept))
    se = cluster_standard_error(kept, kept_clusters)
    if len(sums) < 2:
        return Estimate(mean, math.nan, math.nan, se, len(kept), len(sums), "bootstrap")
    low, high = _percentile_interval(_bootstrap_means(sums, counts, n_boot, seed), confidence)
    return Estimate(mean, low, high, se, len(kept), len(sums), "bootstrap")


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a proportion `successes / n` (NaN, NaN when n is 0)."""
    _check_confidence(confidence)
    if n == 0:
        return math.nan, math.nan
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def is_binary(values: Sequence[float]) -> bool:
    """True when every value that is not NaN is 0 or 1 (and there is at least one)."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return bool(kept) and all(v in (0.0, 1.0) for v in kept)


# -- paired comparison --------------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p-value: `b` pairs where only A succeeded, `c` where only B did.
    Under "no difference" each discordant pair goes either way with probability 1/2, so
    p = min(1, 2 * P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2); 1.0 without discordant pairs."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    if n <= _EXACT_BINOMIAL_MAX:
        tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
        return float(min(Fraction(1), 2 * tail))
    log_terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(k + 1)
    ]
    top = max(log_terms)
    log_tail = top + math.log(math.fsum(math.exp(t - top) for t in log_terms))
    return min(1.0, 2 * math.exp(log_tail))


def sign_flip_test(
    differences: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = 0,
) -> tuple[float, str]:
    """A paired permutation test of "A and B do equally well": under that hypothesis the sign of
    each cluster's total difference is a coin flip. The statistic is |sum of the totals|; the
    p-value is the share of sign patterns at least as extreme. Returns (p, name): exact
    ("sign_flip_exact", every pattern) when at most `EXACT_SIGN_FLIP_MAX` clusters differ, else
    Monte Carlo ("sign_flip_monte_carlo", `n_perm` seeded patterns, p = (1 + hits) / (1 + n_perm)).
    NaN differences are skipped; p is 1.0 when no cluster differs."""
    kept, kept_clusters = _finite_pairs(differences, clusters)
    totals, _ = _cluster_totals(kept, kept_clusters)
    totals = totals[np.abs(totals) > 1e-12]
    m = len(totals)
    if m == 0:
        return 1.0, "sign_flip_exact"
    observed = abs(float(totals.sum()))
    # a pattern ties the observed sum up to rounding: compare with a relative tolerance
    threshold = observed - 1e-9 * max(1.0, observed)
    if m <= EXACT_SIGN_FLIP_MAX:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1) * 2 - 1
        extreme = np.abs(patterns @ totals) >= threshold
        return float(extreme.mean()), "sign_flip_exact"
    rng = np.random.default_rng(seed)
    hits, chunk = 0, max(1, _CHUNK_CELLS // m)
    for start in range(0, n_perm, chunk):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(min(chunk, n_perm - start), m))
        hits += int(np.sum(np.abs(signs @ totals) >= threshold))
    return (1 + hits) / (1 + n_perm), "sign_flip_monte_carlo"


@dataclass(frozen=True)
class PairedComparison:
    """Two runs on their common samples (pairs where either value is NaN are left out).

    `difference` = `mean_b` - `mean_a`, with the paired bootstrap interval [`low`, `high`] (NaN
    with fewer than two clusters); `test` and `p_value` from `paired_test`. `only_a` / `only_b`:
    for McNemar, the pairs where only A / only B scored 1 (None for other tests)."""

    n: int
    n_clusters: int
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    test: str
    p_value: float
    only_a: int | None = None
    only_b: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_comparison(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = 0,
) -> PairedComparison:
    """Compare paired values `a[i]`, `b[i]` (one sample in run A and run B; `clusters[i]` its
    cluster). The test: McNemar exact when both sides are 0/1 and every cluster holds one pair;
    otherwise the sign-flip test on the cluster totals of b - a (a clustered 0/1 metric too,
    because McNemar assumes independent pairs)."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} values in A but {len(b)} in B")
    if clusters is not None and len(clusters) != len(a):
        raise ValueError(f"{len(a)} pairs but {len(clusters)} clusters")
    keep = [i for i in range(len(a)) if _has_value(a[i]) and _has_value(b[i])]
    va = np.array([float(a[i]) for i in keep])
    vb = np.array([float(b[i]) for i in keep])
    kept_clusters: list[Hashable] = list(keep) if clusters is None else [clusters[i] for i in keep]
    n = len(keep)
    if n == 0:
        return PairedComparison(0, 0, math.nan, math.nan, math.nan, math.nan, math.nan, "none", math.nan)
    differences = vb - va
    estimate = mean_interval(differences, kept_clusters, confidence=confidence, n_boot=n_boot, seed=seed)
    mean_a, mean_b = math.fsum(va) / n, math.fsum(vb) / n
    singletons = estimate.n_clusters == n
    if singletons and is_binary(list(va)) and is_binary(list(vb)):
        only_a = int(np.sum((va == 1) & (vb == 0)))
        only_b = int(np.sum((va == 0) & (vb == 1)))
        return PairedComparison(
            n,
            estimate.n_clusters,
            mean_a,
            mean_b,
            mean_b - mean_a,
            estimate.low,
            estimate.high,
            "mcnemar_exact",
            mcnemar_exact(only_a, only_b),
            only_a,
            only_b,
        )
    p_value, test = sign_flip_test(differences, kept_clusters, n_perm=n_perm, seed=seed)
    return PairedComparison(
        n, estimate.n_clusters, mean_a, mean_b, mean_b - mean_a, estimate.low, estimate.high, test, p_value
    )


def _has_value(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


# -- summary rows -------------------------------------------------------------------------------

#: The `by` names that split a sample into one group per capability it lists.


def summary_with_intervals(
    results: Sequence[SampleResult],
    metrics: Sequence[str],
    by: Sequence[str] = (),
    *,
    sum_metrics: frozenset[str] = DEFAULT_SUM_METRICS,
    cluster_key: str | None = None,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """`aggregate.group_table(results, by, metrics)`'s rows (same groups, order, values and `n`,
    `n_errors` when any errored), each with, per metric, `<metric>_ci_low` and `<metric>_ci_high`
    (the 95% clustered bootstrap interval; None when the group has no value, NaN with fewer than
    two clusters) and `<metric>_n` (the samples with a value). Clusters come from
    `cluster_of(result, cluster_key)`. A metric in `sum_metrics` (MapTab's DS) is a total: its
    interval is that of the mean times `<metric>_n`."""
    rows = group_table(results, by, metrics, sum_metrics=sum_metrics)
    members: dict[tuple[str, ...], list[SampleResult]] = {}
    for result in results:
        for key in group_keys(result, by):
            members.setdefault(key, []).append(result)
    for row in rows:
        group = members.get(tuple(row[name] for name in by), [])
        clusters = [cluster_of(r, cluster_key) for r in group]
        for metric in metrics:
            values = [r.scores.get(metric, math.nan) for r in group]
            estimate = mean_interval(values, clusters, confidence=confidence, n_boot=n_boot, seed=seed)
            scale = estimate.n if metric in sum_metrics else 1
            row[f"{metric}_n"] = estimate.n
            if estimate.n == 0:
                row[f"{metric}_ci_low"] = row[f"{metric}_ci_high"] = None
            else:
                row[f"{metric}_ci_low"] = estimate.low * scale
                row[f"{metric}_ci_high"] = estimate.high * scale
    return rows


def interval_metrics(
    results: Sequence[SampleResult], metrics: Sequence[str], *, sum_metrics: frozenset[str] = DEFAULT_SUM_METRICS
) -> dict[str, float]:
    """Each overall metric's 95% interval and n as MLflow metrics: `<metric>/ci95_low`,
    `<metric>/ci95_high` and `<metric>/n` (the same numbers as the summary table's Overall row;
    no key where the metric has no value, NaN bounds from a single cluster are left out)."""
    (row,) = summary_with_intervals(results, metrics, [], sum_metrics=sum_metrics) or [{}]
    out: dict[str, float] = {}
    for metric in metrics:
        n = row.get(f"{metric}_n")
        if not n:
            continue
        out[f"{metric}/n"] = float(n)
        low, high = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
        if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
            out[f"{metric}/ci95_low"], out[f"{metric}/ci95_high"] = float(low), float(high)
    return out
