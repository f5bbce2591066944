"""Why ``--until`` uses a confidence sequence: thousands of simulated studies.

With no true difference, stopping at the first look where the sequence excludes zero keeps
the false-positive rate below α, while stopping at the first Welch p < α does not. With a
true 1 % difference, the sequential design stops, on average, well before the fixed-n
design that has the same power; so does a group-sequential design with five planned looks and
Lan–DeMets O'Brien–Fleming boundaries. Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from lab.stats.planning import plan_samples
from lab.stats.sequential import check_stop, obrien_fleming_boundaries, parse_until, radius
from tests.unit.helpers import ar1

STUDIES = 20_000
MAX_N = 200
TUNED_FOR = MAX_N // 2  # what parse_until chooses for this maximum


def running(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running means and sample variances along each row (NaN variance at n = 1)."""
    n = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / n
    with np.errstate(all="ignore"):
        var = (np.cumsum(x * x, axis=1) - n * mean**2) / (n - 1)
    return mean, var


def looks(a: np.ndarray, b: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    """At every n: does the sequence exclude 0, and is Welch's p below α?"""
    n = np.arange(1, a.shape[1] + 1)
    mean_d, var_d = running(b - a)
    with np.errstate(all="ignore"):
        sequence = np.abs(mean_d) > np.sqrt(var_d) * radius(n, 1 - alpha, TUNED_FOR)
        mean_a, var_a = running(a)
        mean_b, var_b = running(b)
        se2 = (var_a + var_b) / n
        df = se2**2 / ((var_a / n) ** 2 / (n - 1) + (var_b / n) ** 2 / (n - 1))
        welch_p = 2 * stats.t.sf(np.abs(mean_b - mean_a) / np.sqrt(se2), df)
    return {"sequence": sequence, "naive": np.nan_to_num(welch_p, nan=1.0) < alpha}


def batched_hits(a: np.ndarray, b: np.ndarray, alpha: float, relative: bool = False) -> np.ndarray:
    """At every n: does the library's sequence (on batch means, ``sequence_batch_size``)
    exclude zero (the difference) or one (the ratio, with ``relative``)?"""
    studies, most = a.shape
    n = np.arange(1, most + 1)
    d = b - a
    total, squares = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    lagged = np.concatenate([np.zeros((studies, 1)), np.cumsum(d[:, :-1] * d[:, 1:], axis=1)], 1)
    mean = total / n
    with np.errstate(all="ignore"):  # r₁ of every prefix, expanded around its mean
        cross = lagged - mean * ((total - d) + (total - d[:, :1])) + (n - 1) * mean**2
        r1 = cross / (squares - n * mean**2)
        significant = (n >= 8) & ((r1 + 1 / n) * np.sqrt(n) > stats.norm.isf(0.05))
    cube = np.ceil(np.cbrt(n) - 1e-9).astype(int)
    clipped = np.clip(np.nan_to_num(r1), 0, 0.99)
    bound = 2 ** np.ceil(np.log2(np.maximum(1.0, 20 * clipped / (1 - clipped**2))))
    wanted = np.maximum(np.maximum(cube, np.ceil(np.sqrt(n)).astype(int)), bound.astype(int))
    size = np.where(significant, wanted, cube)
    zero = np.zeros((studies, 1))
    sums_a = np.concatenate([zero, np.cumsum(a, axis=1)], axis=1)
    sums_b = np.concatenate([zero, np.cumsum(b, axis=1)], axis=1)
    hits = np.zeros((studies, most), dtype=bool)
    for look in range(2, most + 1):
        for m in np.unique(size[:, look - 1]):
            rows = size[:, look - 1] == m
            k = look // m
            if k < 2:
                continue
            xa = np.diff(sums_a[:, : k * m + 1 : m][rows], axis=1) / m  # the batch means
            xb = np.diff(sums_b[:, : k * m + 1 : m][rows], axis=1) / m
            r = radius(k, 1 - alpha, max(1, TUNED_FOR // m))
            with np.errstate(all="ignore"):
                if relative:
                    ma, mb = xa.mean(axis=1, keepdims=True), xb.mean(axis=1, keepdims=True)
                    spread = np.std(xb / mb - xa / ma, axis=1, ddof=1)
                    hit = np.abs(np.log(mb[:, 0] / ma[:, 0])) > r * spread
                else:
                    dd = xb - xa
                    hit = np.abs(dd.mean(axis=1)) > r * dd.std(axis=1, ddof=1)
            hits[rows, look - 1] = hit
    return hits


def first_stop(hits: np.ndarray) -> np.ndarray:
    """The n of each study's first hit, MAX_N when there is none."""
    return np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, hits.shape[1])


def not_above(count: int, alpha: float) -> bool:
    """A false-positive count no higher than α allows (one-sided binomial test at 0.001)."""
    return float(stats.binomtest(count, STUDIES, alpha, alternative="greater").pvalue) > 0.001


def test_vectorised_looks_agree_with_check_stop() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.normal(100, 2, (8, MAX_N)), rng.normal(99, 2, (8, MAX_N))
    expected = first_stop(batched_hits(a, b, 0.05))
    rule = parse_until("verdict", MAX_N)  # threshold 0: "faster" or "slower" = excludes zero
    for i in range(8):
        stop = next(
            n for n in range(1, MAX_N + 1) if check_stop(rule, a[i, :n], b[i, :n], 95, 0).stop
        )
        assert stop == expected[i]
    # the naive rule's p is Welch's, as scipy computes it
    p = stats.ttest_ind(b[0, :50], a[0, :50], equal_var=False).pvalue
    assert looks(a[:1, :50], b[:1, :50], p + 1e-12)["naive"][0, -1]
    assert not looks(a[:1, :50], b[:1, :50], p - 1e-12)["naive"][0, -1]


@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_no_difference_false_positives_stay_below_alpha(alpha: float) -> None:
    rng = np.random.default_rng(2024)
    a = rng.normal(100, 2, (STUDIES, MAX_N))
    b = rng.normal(100, 2, (STUDIES, MAX_N))
    hits = looks(a, b, alpha)
    hits["sequence"] = batched_hits(a, b, alpha)
    every = {name: int(h[:, 1:].any(axis=1).sum()) for name, h in hits.items()}  # from n = 2
    planned = {name: int(h[:, 19::20].any(axis=1).sum()) for name, h in hits.items()}  # 10 looks
    rates = {k: v / STUDIES for k, v in every.items()}
    planned_rates = {k: v / STUDIES for k, v in planned.items()}
    print(
        f"\nα = {alpha}, {STUDIES:,} studies with no difference, at most {MAX_N} pairs:"
        f"\n  looks after every pair: confidence sequence {rates['sequence']:.4f},"
        f" naive first Welch p < α {rates['naive']:.4f}"
        f"\n  10 planned looks (every 20): confidence sequence {planned_rates['sequence']:.4f},"
        f" naive {planned_rates['naive']:.4f}"
    )
    assert not_above(every["sequence"], alpha) and not_above(planned["sequence"], alpha)
    for count in (every["naive"], planned["naive"]):
        assert stats.binomtest(count, STUDIES, alpha, alternative="greater").pvalue < 1e-6
    assert rates["naive"] > 4 * alpha  # every look is another chance to be wrong


def test_relative_interval_keeps_the_rate_on_skewed_data() -> None:
    """The interval the verdict reads, with gamma (right-skewed) run times, threshold 0."""
    rng = np.random.default_rng(99)
    alpha = 0.05
    a = 100 + rng.gamma(2.0, 1.5, (STUDIES, MAX_N))
    b = 100 + rng.gamma(2.0, 1.5, (STUDIES, MAX_N))
    hits = batched_hits(a, b, alpha, relative=True)
    rule = parse_until("verdict", MAX_N)
    for i in range(5):  # the vectorised looks are the library's
        n = int(first_stop(hits[i : i + 1])[0])
        decision = check_stop(rule, a[i, :n], b[i, :n], 1 - alpha, 0)
        assert decision.stop and (n == MAX_N or decision.verdict.outcome != "inconclusive")
    count = int(hits[:, 1:].any(axis=1).sum())
    print(f"\nskewed (gamma) data, relative interval, every look: {count / STUDIES:.4f}")
    assert not_above(count, alpha)


def test_true_one_percent_difference_stops_early() -> None:
    rng = np.random.default_rng(7)
    studies, alpha, sd = 10_000, 0.05, 2.0  # a 2 % coefficient of variation
    a = rng.normal(100, sd, (studies, MAX_N))
    b = rng.normal(99, sd, (studies, MAX_N))  # 1 % faster
    hits = batched_hits(a, b, alpha)
    detected = hits.any(axis=1)
    power = float(detected.mean())
    stops = first_stop(hits)
    fixed = plan_samples(sd, 1.0, 1 - alpha, power).n
    fixed_90 = plan_samples(sd, 1.0, 1 - alpha, 0.9).n
    median_detected = float(np.median(stops[detected]))
    print(
        f"\ntrue 1 % difference, sd 2 %, α = {alpha}, at most {MAX_N} pairs:"
        f" power {power:.3f}, mean stopping n {stops.mean():.1f}"
        f" (median of the detected {median_detected:.0f});"
        f" a fixed-n design with the same power needs n = {fixed} (power 0.9: n = {fixed_90})"
    )
    assert power > 0.95
    # batches of consecutive pairs (against autocorrelation) cost: 77 pairs on average unbatched
    assert stops.mean() < 0.85 * fixed


def welch_z(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Welch's statistic (B − A)/SE at every n."""
    n = np.arange(1, a.shape[1] + 1)
    mean_a, var_a = running(a)
    mean_b, var_b = running(b)
    with np.errstate(all="ignore"):
        return (mean_b - mean_a) / np.sqrt((var_a + var_b) / n)


def test_five_planned_looks_with_obrien_fleming_boundaries() -> None:
    rng = np.random.default_rng(31)
    studies, alpha, sd = 10_000, 0.05, 2.0
    at = np.array([40, 80, 120, 160, 200])  # the planned looks, n per variant
    bounds = obrien_fleming_boundaries(5, 1 - alpha)
    null = welch_z(rng.normal(100, sd, (studies, MAX_N)), rng.normal(100, sd, (studies, MAX_N)))
    false = int(np.any(np.abs(null[:, at - 1]) >= bounds, axis=1).sum())
    alt = welch_z(rng.normal(100, sd, (studies, MAX_N)), rng.normal(99, sd, (studies, MAX_N)))
    crossed = np.abs(alt[:, at - 1]) >= bounds
    power = float(crossed.any(axis=1).mean())
    stops = np.where(crossed.any(axis=1), at[crossed.argmax(axis=1)], MAX_N)
    fixed = plan_samples(sd, 1.0, 1 - alpha, power).n
    print(
        f"\n5 planned looks at n = {at.tolist()}, Lan–DeMets O'Brien–Fleming z ="
        f" {np.round(bounds, 3).tolist()}: false positives {false / studies:.4f};"
        f" true 1 % difference: power {power:.3f}, mean stopping n {stops.mean():.1f},"
        f" fixed n for the same power {fixed}"
    )
    assert stats.binomtest(false, studies, alpha, alternative="greater").pvalue > 0.001
    assert stops.mean() < fixed


@pytest.mark.parametrize("r", [0.0, 0.2, 0.5])
def test_autocorrelated_samples_keep_the_wrong_stops_below_alpha(r: float) -> None:
    """AR(1) samples, no difference: the batched sequence against the plain one (issue 19)."""
    rng = np.random.default_rng(int(r * 10) + 40)
    studies, alpha = 6000, 0.05
    a = 100 + 2 * ar1(rng, r, (studies, MAX_N))
    b = 100 + 2 * ar1(rng, r, (studies, MAX_N))
    wrong = int(batched_hits(a, b, alpha).any(axis=1).sum())
    n = np.arange(1, MAX_N + 1)
    mean_d, var_d = running(b - a)
    with np.errstate(all="ignore"):
        plain = np.abs(mean_d) > np.sqrt(var_d) * radius(n, 1 - alpha, TUNED_FOR)
    unbatched = int(plain[:, 1:].any(axis=1).sum())
    print(
        f"\nAR(1) r = {r}, no difference, {studies} studies of at most {MAX_N} pairs, α = {alpha}:"
        f" wrong stops {wrong / studies:.4f} on batch means, {unbatched / studies:.4f} unbatched"
    )
    assert stats.binomtest(wrong, studies, alpha, alternative="greater").pvalue > 0.001
    rule = parse_until("verdict", MAX_N)
    for i in range(3):  # the vectorised looks are the library's
        stop = first_stop(batched_hits(a[i : i + 1], b[i : i + 1], alpha))[0]
        assert check_stop(rule, a[i, :stop], b[i, :stop], 1 - alpha, 0).stop
    if r >= 0.5:
        assert unbatched > 3 * alpha * studies  # what the batches mend
