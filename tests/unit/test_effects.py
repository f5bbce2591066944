"""Factorial effects (lab.stats.effects) against a published example and independent arithmetic.

Jain, "The Art of Computer Systems Performance Analysis" (1991), Example 18.1 (memory A and
cache B, 2^2 with r = 3) gives q0 = 41, qA = 21.5, qB = 9.5, qAB = 5; Example 18.2 gives
SST = 7032 = SSA 5547 + SSB 1083 + SSAB 300 + SSE 102, that is A 78.9 %, B 15.4 %, AB 4.3 %
and error 1.5 % of the variation; Example 18.3: s_e = √(102/8) = 3.57, s_q = s_e/√12 = 1.03,
t[0.95; 8] = 1.86 and the 90 % intervals q ± 1.92. (The brief for issue 41 quoted the shares
as 76.5/15.5/4.5/3.5 %: those do not follow from the y values, whose sums of squares are the
book's, recomputed below.) Everything else is checked against numpy arithmetic on cell
means, an exact truth, or scipy's t quantiles, not against the code under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from lab.core.errors import UsageError
from lab.stats.designs import fractional
from lab.stats.effects import fit_effects
from lab.stats.pairblocks import pair_blocks

JAIN = {
    ("-", "-"): (15, 18, 12),
    ("+", "-"): (45, 48, 51),
    ("-", "+"): (25, 28, 19),
    ("+", "+"): (75, 75, 81),
}


def jain_samples() -> tuple[list[float], dict[str, list[str]]]:
    values, a, b = [], [], []
    for (la, lb), ys in JAIN.items():
        for y in ys:
            values.append(float(y))
            a.append(la)
            b.append(lb)
    return values, {"A": a, "B": b}


def fit_jain(**kwargs: object) -> dict[str, object]:
    values, factors = jain_samples()
    fit = fit_effects(values, factors, levels={"A": "-+", "B": "-+"}, **kwargs)  # type: ignore[arg-type]
    return {"fit": fit, **{e.term: e for e in fit.effects}}


def test_jain_example_18_1_effects_intervals_and_shares() -> None:
    got = fit_jain(confidence=0.90, correction="none")
    fit = got["fit"]
    # The book's numbers.
    assert fit.mean == pytest.approx(41)  # type: ignore[attr-defined]
    assert [got[t].estimate for t in ("A", "B", "AB")] == pytest.approx([21.5, 9.5, 5])  # type: ignore[attr-defined]
    shares = {s.term: s for s in fit.shares}  # type: ignore[attr-defined]
    assert [shares[t].sum_of_squares for t in ("A", "B", "AB", "error")] == pytest.approx(
        [5547, 1083, 300, 102]
    )
    assert [round(100 * shares[t].share, 1) for t in ("A", "B", "AB", "error")] == [
        78.9, 15.4, 4.3, 1.5,
    ]  # fmt: skip
    for term, (lo, hi) in {"A": (19.58, 23.42), "B": (7.58, 11.42), "AB": (3.08, 6.92)}.items():
        assert got[term].ci == pytest.approx((lo, hi), abs=0.01)  # type: ignore[attr-defined]
    assert fit.mean_ci == pytest.approx((39.08, 42.92), abs=0.01)  # type: ignore[attr-defined]
    assert fit.df_error == 8  # type: ignore[attr-defined]

    # Recomputed with numpy, Jain's way: the sign table times the cell means.
    x = np.array([[1, -1, -1, 1], [1, 1, -1, -1], [1, -1, 1, -1], [1, 1, 1, 1]])  # I A B AB
    cells = np.array([np.mean(v) for v in JAIN.values()])
    q = x.T @ cells / 4
    y = np.array([v for ys in JAIN.values() for v in ys], dtype=float)
    sse = sum(float(np.sum((np.array(v) - np.mean(v)) ** 2)) for v in JAIN.values())
    sst = float(np.sum((y - y.mean()) ** 2))
    half = stats.t.ppf(0.95, 8) * math.sqrt(sse / 8) / math.sqrt(12)
    assert half == pytest.approx(1.92, abs=0.005)
    for i, term in enumerate(("A", "B", "AB"), start=1):
        assert got[term].estimate == pytest.approx(q[i])  # type: ignore[attr-defined]
        assert got[term].ci == pytest.approx((q[i] - half, q[i] + half))  # type: ignore[attr-defined]
        assert shares[term].share == pytest.approx(12 * q[i] ** 2 / sst)
    assert shares["error"].share == pytest.approx(sse / sst)
    assert sum(s.share for s in shares.values()) == pytest.approx(1)

    # Balanced, type 2 and type 3 agree: statsmodels' plain formula with type 2 sums of squares.
    values, factors = jain_samples()
    plain = smf.ols("y ~ C(A, Sum) * C(B, Sum)", pd.DataFrame({"y": values, **factors})).fit()
    type2 = anova_lm(plain, typ=2)["sum_sq"].to_numpy()
    assert type2 == pytest.approx([shares[t].sum_of_squares for t in ("A", "B", "AB", "error")])


def test_bonferroni_widens_every_interval_by_the_family_quantile() -> None:
    got = fit_jain(confidence=0.90)  # bonferroni by default
    s_q = math.sqrt(102 / 8) / math.sqrt(12)
    half = stats.t.ppf(1 - 0.10 / (2 * 3), 8) * s_q  # three effects reported
    for term in ("A", "B", "AB"):
        e = got[term]
        assert e.ci == pytest.approx((e.estimate - half, e.estimate + half))  # type: ignore[attr-defined]


def test_ratios_from_the_log_fit() -> None:
    """An exactly multiplicative truth: A's high level ×1.5, B's ×0.8, A:B a further ×1.1 at
    both high levels (so exp(2·q_AB) = √1.1... times: solved below from the cell logs)."""
    rng = np.random.default_rng(3)
    mu = {("-", "-"): 100.0, ("+", "-"): 150.0, ("-", "+"): 80.0, ("+", "+"): 150 * 0.8 * 1.1}
    values, a, b = [], [], []
    for (la, lb), m in mu.items():
        for _ in range(4):
            values.append(m * math.exp(rng.normal(0, 1e-6)))
            a.append(la)
            b.append(lb)
    fit = fit_effects(values, {"A": a, "B": b}, levels={"A": "-+", "B": "-+"})
    got = {e.term: e for e in fit.effects}
    logs = {k: math.log(v) for k, v in mu.items()}
    ratio_a = math.exp((logs["+", "-"] + logs["+", "+"] - logs["-", "-"] - logs["-", "+"]) / 2)
    assert got["A"].ratio == pytest.approx(ratio_a, rel=1e-5)
    assert got["A"].ratio == pytest.approx(1.5 * math.sqrt(1.1), rel=1e-5)
    assert got["B"].ratio == pytest.approx(0.8 * math.sqrt(1.1), rel=1e-5)
    assert got["AB"].ratio == pytest.approx(math.sqrt(1.1), rel=1e-5)
    # A's ratio at B's high level is the main ratio times the interaction's, at B's low divided.
    assert got["A"].ratio * got["AB"].ratio == pytest.approx(150 * 0.8 * 1.1 / 80, rel=1e-5)  # type: ignore[operator]
    lo, hi = got["A"].ratio_ci  # type: ignore[misc]
    assert lo < got["A"].ratio < hi and hi / lo < 1.0001  # type: ignore[operator]
    assert fit_effects([-1.0, 2, 3, 4, 5], {"A": list("--+++")}).effects[0].ratio is None


def mixed_samples(seed: int) -> tuple[np.ndarray, list[str], list[str], dict[tuple[str, str], int]]:
    """A 3 × 2 design with unequal replication (2 to 5 a cell) and a real interaction."""
    rng = np.random.default_rng(seed)
    reps = {("always", "off"): 2, ("madvise", "off"): 5, ("never", "off"): 3,
            ("always", "on"): 4, ("madvise", "on"): 2, ("never", "on"): 5}  # fmt: skip
    truth = {("always", "off"): 10, ("madvise", "off"): 12, ("never", "off"): 15,
             ("always", "on"): 11, ("madvise", "on"): 16, ("never", "on"): 14}  # fmt: skip
    y, g, p = [], [], []
    for cell, r in reps.items():
        for _ in range(r):
            y.append(truth[cell] + rng.normal(0, 1))
            g.append(cell[0])
            p.append(cell[1])
    return np.array(y), g, p, reps


def test_unequal_mixed_design_against_cell_mean_arithmetic() -> None:
    y, g, p, reps = mixed_samples(5)
    fit = fit_effects(y, {"thp": g, "prealloc": p}, levels={"prealloc": ["off", "on"]},
                      confidence=0.95, correction="none")  # fmt: skip
    cells = list(reps)
    ybar = {c: y[[i for i in range(len(y)) if (g[i], p[i]) == c]].mean() for c in cells}
    sse = sum(float(np.sum((y[[i for i in range(len(y)) if (g[i], p[i]) == c]] - ybar[c]) ** 2))
              for c in cells)  # fmt: skip
    df = len(y) - 6
    sigma2 = sse / df
    assert fit.df_error == df
    gl = ("always", "madvise", "never")

    def weights(term: str, level: tuple[str, ...]) -> dict[tuple[str, str], float]:
        # sum-to-zero effects as contrasts of the six cell means
        w = {}
        for c in cells:
            if term == "thp":
                w[c] = (c[0] == level[0]) / 2 - 1 / 6
            elif term == "prealloc":
                w[c] = (c[1] == level[0]) / 3 - 1 / 6
            else:
                w[c] = (c == level) - (c[0] == level[0]) / 2 - (c[1] == level[1]) / 3 + 1 / 6
        return w

    expected = [("thp", (lv,)) for lv in gl] + [("prealloc", ("on",))]
    expected += [("thp:prealloc", (lv, "on")) for lv in gl]
    got = [(e.term, tuple(e.level.split(":"))) for e in fit.effects]
    assert got == expected
    t = stats.t.ppf(0.975, df)
    for e, (term, level) in zip(fit.effects, expected, strict=True):
        w = weights(term, level)
        est = sum(w[c] * ybar[c] for c in cells)
        se = math.sqrt(sigma2 * sum(w[c] ** 2 / reps[c] for c in cells))
        assert e.estimate == pytest.approx(est)
        assert e.ci == pytest.approx((est - t * se, est + t * se))
    assert sum(e.estimate for e in fit.effects if e.term == "thp") == pytest.approx(0, abs=1e-9)


def test_unequal_type_3_sums_of_squares_are_the_reduced_models_extra_error() -> None:
    """Type 3 SS of a term: the increase in SSE when its sum-to-zero columns are dropped from
    the full model (numpy least squares), the definition anova_lm(typ=3) must agree with."""
    y, g, p, _ = mixed_samples(8)
    fit = fit_effects(y, {"thp": g, "prealloc": p}, levels={"prealloc": ["off", "on"]})
    gi = np.array([("always", "madvise", "never").index(v) for v in g])
    pi = np.array([("off", "on").index(v) for v in p])
    a = np.column_stack([np.where(gi == 0, -1, gi == j) for j in (1, 2)]).astype(float)
    b = np.where(pi == 0, -1.0, 1.0)[:, None]
    ab = np.column_stack([a[:, 0] * b[:, 0], a[:, 1] * b[:, 0]])
    one = np.ones((len(y), 1))

    def sse(*blocks: np.ndarray) -> float:
        x = np.hstack(blocks)
        r = y - x @ np.linalg.lstsq(x, y, rcond=None)[0]
        return float(r @ r)

    full = sse(one, a, b, ab)
    sst = float(np.sum((y - y.mean()) ** 2))
    shares = {s.term: s for s in fit.shares}
    assert shares["thp"].share == pytest.approx((sse(one, b, ab) - full) / sst)
    assert shares["prealloc"].share == pytest.approx((sse(one, a, ab) - full) / sst)
    assert shares["thp:prealloc"].share == pytest.approx((sse(one, a, b) - full) / sst)
    assert shares["error"].share == pytest.approx(full / sst)
    assert (shares["thp"].df, shares["prealloc"].df, shares["error"].df) == (2, 1, len(y) - 6)


def test_fractional_design_fits_one_term_per_alias_set() -> None:
    design = fractional("ABC", ["D = ABC"])
    rng = np.random.default_rng(11)
    x = 2 * np.array(design.runs) - 1
    truth = 50 + 4 * x[:, 0] - 3 * x[:, 1] + 2 * x[:, 3] + 1.5 * x[:, 0] * x[:, 1]
    values, levels = [], {f: [] for f in design.factors}  # type: ignore[var-annotated]
    for run, mu in zip(design.cells(), truth, strict=True):
        for _ in range(2):
            values.append(mu + rng.normal(0, 0.5))
            for f in design.factors:
                levels[f].append(run[f])
    fit = fit_effects(values, levels, levels=design.level_order())
    assert fit == fit_effects(values, levels)  # '-' is the low level by default too
    assert [e.term for e in fit.effects] == ["A", "B", "C", "D", "AB", "AC", "AD"]
    assert [tuple(e.term) for e in fit.effects] == design.estimable_terms()
    assert {e.term: e.aliases for e in fit.effects}["AB"] == ("CD",)
    assert {e.term: e.aliases for e in fit.effects}["A"] == ("BCD",)
    assert set(fit.not_estimable) == {"BC", "BD", "CD", "ABC", "ABD", "ACD", "BCD", "ABCD"}
    # Jain's sign table on the eight run means
    means = np.array(values).reshape(8, 2).mean(axis=1)
    for e in fit.effects:
        column = np.prod(x[:, ["ABCD".index(f) for f in e.term]], axis=1)
        assert e.estimate == pytest.approx(column @ means / 8)
    assert fit.df_error == 8


def test_pair_blocks_as_additive_blocks_recover_the_effects() -> None:
    """Four cells run two at a time (every pair twice), each block with its own large offset:
    the block-adjusted fit recovers the true effects, which a fit ignoring blocks does not."""
    cells = ["a-.b-", "a+.b-", "a-.b+", "a+.b+"]
    truth = {"a-.b-": 100.0, "a+.b-": 110.0, "a-.b+": 96.0, "a+.b+": 112.0}
    rng = np.random.default_rng(2)
    values, a, b, blocks = [], [], [], []
    for k, block in enumerate(pair_blocks(cells, seed=4, replicates=2)):
        offset = rng.normal(0, 20)
        for cell in block:
            for _ in range(3):
                values.append(truth[cell] + offset + rng.normal(0, 0.01))
                a.append(cell[:2])
                b.append(cell[3:])
                blocks.append(f"block{k}")
    order = {"a": ["a-", "a+"], "b": ["b-", "b+"]}
    fit = fit_effects(values, {"a": a, "b": b}, levels=order, blocks=blocks)
    got = {e.term: e.estimate for e in fit.effects}
    assert got["a"] == pytest.approx((110 + 112 - 100 - 96) / 4, abs=0.01)
    assert got["b"] == pytest.approx((96 + 112 - 100 - 110) / 4, abs=0.01)
    assert got["ab"] == pytest.approx((100 + 112 - 110 - 96) / 4, abs=0.01)
    shares = {s.term: s for s in fit.shares}
    assert shares["block"].df == 11 and shares["block"].share > 0.5
    naive = {
        e.term: e.estimate for e in fit_effects(values, {"a": a, "b": b}, levels=order).effects
    }
    assert abs(naive["a"] - got["a"]) > 0.1  # the offsets do not cancel without blocks


def test_incomplete_factorial_fits_what_its_cells_support() -> None:
    """README's three cells: page-thp.prealloc-off, page-1g.prealloc-on, page-1g.prealloc-off
    (1 GiB pages on demand cannot be had): the main effects, no interaction."""
    truth = {("thp", "off"): 10.0, ("1g", "off"): 12.0, ("1g", "on"): 15.0}
    rng = np.random.default_rng(4)
    cells = [c for c in truth for _ in range(4)]
    values = [truth[c] + rng.normal(0, 1e-6) for c in cells]
    order = {"page": ["thp", "1g"], "prealloc": ["off", "on"]}
    fit = fit_effects(values, {"page": [c[0] for c in cells], "prealloc": [c[1] for c in cells]},
                      levels=order)  # fmt: skip
    assert [e.term for e in fit.effects] == ["page", "prealloc"]
    assert fit.not_estimable == ("page:prealloc",)
    got = {e.term: e for e in fit.effects}
    assert 2 * got["page"].estimate == pytest.approx(2.0, abs=1e-5)  # 1g − thp, prealloc off
    assert 2 * got["prealloc"].estimate == pytest.approx(3.0, abs=1e-5)  # on − off, 1g pages
    with pytest.raises(UsageError, match="confounded with the blocks"):
        fit_effects(values, {"page": [c[0] for c in cells]}, blocks=[str(c) for c in cells])


def test_unreplicated_design_needs_max_order() -> None:
    rng = np.random.default_rng(0)
    runs = list(itertools.product("-+", repeat=3))
    values = list(rng.normal(10, 1, 8))
    factors = {f: [r[i] for r in runs] for i, f in enumerate("ABC")}
    with pytest.raises(UsageError, match="degrees of freedom"):
        fit_effects(values, factors)
    fit = fit_effects(values, factors, max_order=2)
    assert fit.df_error == 1 and len(fit.effects) == 6


def test_bad_input_is_refused_with_a_hint() -> None:
    values, factors = jain_samples()
    with pytest.raises(UsageError, match="correction"):
        fit_effects(values, factors, correction="holm")
    with pytest.raises(UsageError, match="only the level"):
        fit_effects(values, {"A": ["x"] * 12})
    with pytest.raises(UsageError, match="not listed"):
        fit_effects(values, factors, levels={"A": ["-"]})
    with pytest.raises(UsageError, match="one level"):
        fit_effects(values, {"A": factors["A"][:5]})


def test_intervals_cover_in_a_small_simulation() -> None:
    """A quick guard (bench/effects_coverage.py runs 1,000 designs of three kinds): 100
    simulated 2^2 designs with r = 3; 300 per-term 90 % intervals should cover 90 % of the
    time (binomial sd 1.7 points; intervals at α instead of α/2 a side would cover 80 %), and
    Bonferroni's family of three all at once in at least 90 % (sd 3 points), where
    uncorrected ones manage about 0.9³ ≈ 73 %."""
    rng = np.random.default_rng(21)
    _, factors = jain_samples()
    x = {"-": -1.0, "+": 1.0}
    a = np.array([x[v] for v in factors["A"]])
    b = np.array([x[v] for v in factors["B"]])
    mean = 40 + 20 * a + 10 * b + 5 * a * b
    truth = {"A": 20.0, "B": 10.0, "AB": 5.0}
    single = family_none = family_bonf = 0
    for _ in range(100):
        y = mean + rng.normal(0, 4, len(mean))
        for correction in ("none", "bonferroni"):
            fit = fit_effects(y, factors, levels={"A": "-+", "B": "-+"}, confidence=0.9,
                              correction=correction)  # fmt: skip
            cover = [e.ci[0] <= truth[e.term] <= e.ci[1] for e in fit.effects]
            if correction == "none":
                single += sum(cover)
                family_none += all(cover)
            else:
                family_bonf += all(cover)
    assert 0.85 <= single / 300 <= 0.95
    assert family_bonf / 100 >= 0.84
    assert family_none < family_bonf


def test_a_metric_that_never_moves_is_fitted_without_a_warning_reaching_the_user() -> None:
    # seen on the real pair: lab report of page × age over two runs printed statsmodels'
    # ValueWarning and "invalid value encountered in divide" for a metric that is 0 in every
    # sample (the 1 GiB twin's anonymous huge pages): a rank-0 Wald test, F = 0/0
    import warnings

    page = ["thp", "1g"] * 16
    age = ["fresh"] * 16 + ["f70"] * 16
    blocks = ["r0"] * 16 + ["r1"] * 16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_effects([0.0] * 32, {"page": page, "age": age}, blocks=blocks,
                          levels={"page": ["thp", "1g"], "age": ["fresh", "f70"]})  # fmt: skip
    assert fit.confounded == ("age",)
    assert all(e.estimate == 0 and e.ci == (0, 0) for e in fit.effects)
