"""Early stopping stays valid with swaps on correlated samples (issue 32, item 4).

A simulation written here, vectorised and seeded, applies the stopping rule at every look to
AR(1) samples with no true difference: one observation per pair, or per balanced block of
2·K iterations with --swap-every K; the sequence on batch means whose size grows with n, and
with the lag-1 r where it is significant. Wrong stops must stay at or below α. A few studies
are checked against the library's own rule_view and check_stop, so that the vectorised rule
is the one a run applies.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from lab.stats.sequential import check_stop, parse_until, radius
from lab.stats.verdict import Threshold
from tests.unit.helpers import ar1


def batch_sizes(n: np.ndarray, r1: np.ndarray) -> np.ndarray:
    """m³ ≥ n; with r₁ significant at 5 % (N(−1/n, 1/n) under independence, from 8
    observations) at least ⌈√n⌉ and 20·r/(1 − r²) rounded up to a power of 2."""
    cube = np.ceil(np.cbrt(n) - 1e-9).astype(int)
    significant = (n >= 8) & ((r1 + 1 / n) * np.sqrt(n) > stats.norm.isf(0.05))
    r = np.clip(np.nan_to_num(r1), 0, 0.99)
    bound = 2 ** np.ceil(np.log2(np.maximum(1.0, 20 * r / (1 - r**2))))
    wanted = np.maximum.reduce([cube, np.ceil(np.sqrt(n)).astype(int), bound.astype(int)])
    return np.where(significant, wanted, cube)


def first_stops(a: np.ndarray, b: np.ndarray, alpha: float, tuned_for: int) -> np.ndarray:
    """Each study's first look whose sequence on batch means excludes 0 (0: none)."""
    studies, most = a.shape
    d = b - a
    n = np.arange(1, most + 1)
    total, squares = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    lagged = np.concatenate([np.zeros((studies, 1)), np.cumsum(d[:, :-1] * d[:, 1:], axis=1)], 1)
    mean = total / n
    with np.errstate(all="ignore"):  # r₁ of every prefix
        cross = lagged - mean * ((total - d) + (total - d[:, :1])) + (n - 1) * mean**2
        r1 = cross / (squares - n * mean**2)
    size = batch_sizes(np.broadcast_to(n, d.shape), r1)
    sums = np.concatenate([np.zeros((studies, 1)), np.cumsum(d, axis=1)], axis=1)
    hits = np.zeros((studies, most), dtype=bool)
    for look in range(2, most + 1):
        for m in np.unique(size[:, look - 1]):
            rows = size[:, look - 1] == m
            k = look // m
            if k < 2:
                continue
            means = np.diff(sums[rows][:, : k * m + 1 : m], axis=1) / m
            r = radius(k, 1 - alpha, max(1, tuned_for // m))
            with np.errstate(all="ignore"):
                hits[rows, look - 1] = np.abs(means.mean(axis=1)) > r * means.std(axis=1, ddof=1)
    return np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)


def blocks(x: np.ndarray, swap_every: int) -> np.ndarray:
    """Each balanced block's mean: 2·swap_every iterations."""
    length = 2 * swap_every
    k = x.shape[1] // length
    return x[:, : k * length].reshape(x.shape[0], k, length).mean(axis=2)


@pytest.mark.parametrize(
    ("r", "swap_every", "iterations", "alpha"),
    [(0.5, 1, 400, 0.05), (0.5, 1, 400, 0.01), (0.9, 1, 400, 0.05), (0.9, 0, 300, 0.05),
     (0.5, 0, 200, 0.05), (0.7, 0, 200, 0.05), (0.0, 1, 400, 0.05), (0.7, 5, 1000, 0.05),
     (0.9, 50, 4000, 0.05)],
)  # fmt: skip
def test_wrong_stops_stay_at_or_below_alpha(
    r: float, swap_every: int, iterations: int, alpha: float
) -> None:
    rng = np.random.default_rng(int(r * 100) + swap_every + int(alpha * 1000))
    studies = 2000
    a, b = ar1(rng, r, (studies, iterations)), ar1(rng, r, (studies, iterations))
    if swap_every:
        a, b = blocks(a, swap_every), blocks(b, swap_every)
    stops = first_stops(a, b, alpha, max(2, a.shape[1] // 2))
    wrong = int((stops > 0).sum())
    print(
        f"\nr = {r}, swap every {swap_every or '-'}, α = {alpha}: wrong stops {wrong / studies:.4f}"
    )
    assert stats.binomtest(wrong, studies, alpha, alternative="greater").pvalue > 0.001
    rule, zero = parse_until("verdict", a.shape[1]), Threshold(0.0, relative=False)
    for i in np.flatnonzero(stops)[:3]:  # the vectorised rule is the library's
        at = int(stops[i])
        assert check_stop(rule, a[i, :at], b[i, :at], 1 - alpha, zero).stop
        assert not check_stop(rule, a[i, : at - 1], b[i, : at - 1], 1 - alpha, zero).stop


def test_the_run_batches_block_means_it_used_to_take_as_independent() -> None:
    # swap every 1 at r 0.5: the blocks' means correlate, and the sequence on them unbatched
    # (what a run did) stopped wrongly far above α; the run's rule now batches them
    from lab.stats.stopping import rule_view

    rng = np.random.default_rng(3)
    studies, alpha = 1500, 0.05
    a, b = ar1(rng, 0.5, (studies, 400)), ar1(rng, 0.5, (studies, 400))
    ba, bb = blocks(a, 1), blocks(b, 1)
    n = np.arange(1, ba.shape[1] + 1)
    d = bb - ba
    mean = np.cumsum(d, axis=1) / n
    with np.errstate(all="ignore"):
        var = (np.cumsum(d * d, axis=1) - n * mean**2) / (n - 1)
        plain = np.abs(mean) > np.sqrt(var) * radius(n, 1 - alpha, 100)
    assert plain[:, 1:].any(axis=1).mean() > 2.5 * alpha
    view = rule_view(list(range(1, 401)), list(a[0]), list(b[0]), swap_every=1)
    assert np.allclose(view.a, ba[0]) and math.isclose(view.per_observation, 2)


def test_a_swapping_run_lets_the_rule_batch_its_block_means(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the controller with the real runner (tests/unit/test_controller_swaps.py's lab): its
    # stopping rule on balanced blocks is no longer told the blocks are batched already
    import lab.stats.sequential as sequential
    from tests.unit.test_controller_swaps import FakeLibvirt, attach, make_pair

    seen: list[int | None] = []
    real = sequential.check_stop

    def spy(*args: object, **kwargs: object) -> sequential.Decision:
        seen.append(kwargs.get("batch_size"))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sequential, "check_stop", spy)
    conn = FakeLibvirt()
    conn.add("lab-thp", [0], [0])
    conn.add("lab-shp1g", [1], [0])
    sleeps = {"lab-thp": "0", "lab-shp1g": "0.01"}
    controller, _ = make_pair(tmp_path, 8, "sync", sleeps, "verdict", 1, libvirt=conn)
    attach(conn, controller)
    controller.run()
    assert controller.decision is not None and controller.decision.stop  # at the maximum
    assert seen and all(size is None for size in seen)  # sequence_batch_size decides
