"""Putting it together: arm order, every pair with Benjamini–Hochberg, trimming side by side."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from lab.core.errors import UsageError
from lab.report.summary import family_note, summary_rows
from lab.stats.analysis import ALL, TRIMMED, analyse
from lab.store import Series


def series(variant: str, values: np.ndarray, metric: str = "time") -> Series:
    return Series(
        study="s", workload="w", metric=metric, unit="s", direction="lower", variant=variant,
        guest=f"lab-{variant}", host="local", iterations=np.arange(1, values.size + 1),
        values=values,
    )  # fmt: skip


def bh_by_hand(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q[i] = running
    return q


def test_three_variants_every_pair_with_bh() -> None:
    rng = np.random.default_rng(1)
    arms = [series(v, rng.normal(mu, 1, 60)) for v, mu in (("a", 10), ("b", 10.3), ("c", 10.6))]
    (c,) = analyse(arms, 95, 0.01, order=["a", "b", "c"])
    assert [(p.a, p.b) for p in c.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    raw = [p.difference.brunner_munzel_p for p in c.pairs]
    assert [p.p_adjusted for p in c.pairs] == pytest.approx(bh_by_hand(raw))


def test_two_variants_are_not_adjusted_and_order_follows_baseline() -> None:
    rng = np.random.default_rng(2)
    arms = [series("shp1g", rng.normal(98, 1, 100)), series("thp", rng.normal(100, 1, 100))]
    (c,) = analyse(arms, 99.99, 0.01, order=["thp", "shp1g"])
    assert [a.label for a in c.arms] == ["thp", "shp1g"]
    (pair,) = c.pairs
    assert (pair.a, pair.b, pair.p_adjusted) == ("thp", "shp1g", None)
    assert pair.difference.diff < 0 and pair.verdict.outcome.value == "faster"


def test_trim_adds_a_side_by_side_subset_without_far_outliers() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(100, 1, 500)
    x[10] = 500.0
    full, trimmed = analyse([series("thp", x), series("shp1g", rng.normal(99, 1, 500))],
                            95, 0.01, order=["thp"], trim=True)  # fmt: skip
    assert (full.subset, trimmed.subset) == (ALL, TRIMMED)
    assert full.arms[0].summary.n == 500 and full.arms[0].dropped == 0
    assert trimmed.arms[0].summary.n == 499 and trimmed.arms[0].dropped == 1
    assert trimmed.arms[0].summary.max < 500
    assert 10 + 1 not in trimmed.arms[0].iterations  # the outlier's iteration is gone


def test_metrics_are_compared_separately() -> None:
    rng = np.random.default_rng(4)
    got = analyse([series("a", rng.normal(1, 1, 20), "x"), series("a", rng.normal(1, 1, 20), "y")],
                  95, 0.01)  # fmt: skip
    assert [(c.metric, len(c.arms), len(c.pairs)) for c in got] == [("x", 1, 0), ("y", 1, 0)]


def test_single_sample_arm_refused() -> None:
    with pytest.raises(UsageError, match="fewer than 2 samples"):
        analyse([series("a", np.array([1.0])), series("b", np.array([1.0, 2.0]))], 95, 0.01)


def test_paired_for_the_named_workloads_only() -> None:
    rng = np.random.default_rng(5)
    common = rng.normal(0, 2, 200)
    a, b = 100 + common + rng.normal(0, 1, 200), 99 + common + rng.normal(0, 1, 200)
    arms = [series("thp", a), series("shp1g", b)]
    (plain,) = analyse(arms, 95, 0.01, order=["thp"])
    (synced,) = analyse(arms, 95, 0.01, order=["thp"], paired={"w"})
    (other,) = analyse(arms, 95, 0.01, order=["thp"], paired={"x"})
    assert plain.paired == () and other.paired == ()
    (q,) = synced.paired
    assert (q.a, q.b, q.paired.n) == ("thp", "shp1g", 200)
    assert q.paired.diff == pytest.approx(synced.pairs[0].difference.diff)  # same samples
    assert q.welch_ci == synced.pairs[0].difference.diff_ci
    assert q.paired.diff_ci[1] - q.paired.diff_ci[0] < (q.welch_ci[1] - q.welch_ci[0]) / 1.5
    full, trimmed = analyse(arms, 95, 0.01, order=["thp"], trim=True, paired=True)
    assert len(full.paired) == len(trimmed.paired) == 1


def test_trimming_leaves_an_arm_with_no_interquartile_range_whole() -> None:
    """Issue 19: quantised samples (80 % at one value) have IQR 0 (scipy.stats.iqr), so the
    3 IQR fences sat on the quartile and dropped every other value; both arms became constant
    and the trimmed view called a 0.4 % difference "equivalent". Such an arm is kept whole."""
    rng = np.random.default_rng(19)
    a = np.where(rng.random(400) < 0.8, 100.0, 101.0)
    b = np.where(rng.random(400) < 0.8, 100.0, 99.0)
    assert stats.iqr(a) == 0 and stats.iqr(b) == 0
    full, trimmed = analyse([series("a", a), series("b", b)], 99, 0.001, order=["a"], trim=True)
    assert [arm.dropped for arm in trimmed.arms] == [0, 0]
    assert all("interquartile range is 0" in arm.untrimmed for arm in trimmed.arms)
    assert full.pairs[0].verdict.outcome.value == "faster"
    assert trimmed.pairs[0].verdict.outcome == full.pairs[0].verdict.outcome


def test_two_guests_of_one_variant_on_one_host_get_their_own_labels() -> None:
    """Issue 19: both were labelled "thp", so the summary (keyed by label) showed one guest's
    mean for both. Each arm's mean must be its own guest's (numpy's mean of its samples)."""
    rng = np.random.default_rng(6)
    values = {"lab-thp": rng.normal(100, 1, 30), "lab-thp-2": rng.normal(110, 1, 30)}
    group = [replace(series("thp", x), guest=g) for g, x in values.items()]
    group.append(series("shp1g", rng.normal(105, 1, 30)))
    (c,) = analyse(group, 95, 0.01, order=["thp", "shp1g"])
    assert [a.label for a in c.arms] == ["thp (lab-thp)", "thp (lab-thp-2)", "shp1g"]
    rows = summary_rows([c])
    assert rows[0].a.startswith(f"thp (lab-thp) {values['lab-thp'].mean():,.2f}")
    assert rows[0].b.startswith(f"thp (lab-thp-2) {values['lab-thp-2'].mean():,.2f}")


def test_with_three_arms_each_verdict_reads_bonferroni_intervals() -> None:
    """Issue 19: with m = 3 pairs each verdict reads its interval at 1 − α/3. Its interval is
    checked against the closed form (log ratio ± t·√(vA + vB), t at Welch–Satterthwaite
    degrees of freedom from scipy); a threshold between the plain and the adjusted bound makes
    the plain interval say "faster" and the adjusted one "inconclusive"."""
    rng = np.random.default_rng(7)
    arms = [series(v, rng.normal(mu, 1, 40)) for v, mu in (("a", 100), ("b", 99), ("c", 100))]
    (probe,) = analyse(arms, 95, 0.0, order=["a", "b", "c"])
    a, b = arms[0].values, arms[1].values
    wider = 1 - 0.05 / 3
    va, vb = a.var(ddof=1) / (a.size * a.mean() ** 2), b.var(ddof=1) / (b.size * b.mean() ** 2)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = stats.t.ppf(0.5 + wider / 2, df) * np.sqrt(va + vb)
    log_ratio = np.log(b.mean() / a.mean())
    benefit = (100 * (1 - np.exp(log_ratio + half)), 100 * (1 - np.exp(log_ratio - half)))
    pair = probe.pairs[0]
    assert (pair.a, pair.b, pair.verdict_confidence) == ("a", "b", pytest.approx(wider))
    assert pair.verdict.benefit_ci == pytest.approx(benefit)
    plain_low = -pair.difference.percent_ci[1]  # lower is better: the benefit is −change
    assert benefit[0] < plain_low  # the adjusted interval is wider
    threshold = (benefit[0] + plain_low) / 2 / 100
    (c,) = analyse(arms, 95, threshold, order=["a", "b", "c"])
    assert c.pairs[0].verdict.outcome.value == "inconclusive"
    assert "Bonferroni for the 3 pairs" in c.pairs[0].verdict.text
    (two,) = analyse(arms[:2], 95, threshold, order=["a", "b"])  # one pair: not adjusted
    assert two.pairs[0].verdict.outcome.value == "faster"
    assert two.pairs[0].verdict_confidence is None
    assert "Bonferroni" not in two.pairs[0].verdict.text
    assert family_note([two]) == ""
    assert family_note([c, two]).startswith("4 verdicts. ")
