"""Two readings of B − A from runs with boots, besides Welch on the boot means (issue 40).

``lab.stats.boots`` reads B against A from one value per boot, its mean, with Welch's
interval. Two other readings use more of what such a run holds:

- **Paired boot means** (``paired_boots``). Under the ``sync`` schedule both twins reboot at
  the same moment, so boot i of A and boot i of B share whatever that moment brought (the
  host's state when both guests came up). The differences d_i = ȳ_B,i − ȳ_A,i of the paired
  boot means are independent and alike, and the interval is the one-sample t interval of
  their mean with b − 1 degrees of freedom (b boots in each arm). It is exact for normal boot
  means whatever the correlation between the pair, and narrower than Welch's only when that
  correlation outweighs the degrees of freedom it gives up (b − 1 against about 2b − 2).

- **A mixed model** (``mixed_boots``). value ~ arm + (1 | boot): each arm its own mean, every
  boot a random effect b ~ (0, σ²_between) shared by both arms' boots, and a within-boot
  error e ~ (0, σ²_within) shared too, fitted by REML. Where the between-boot variance is
  small the iterations then weigh in (a boot mean's variance is σ²_between + σ²_within / n,
  not a free value per arm). The interval of the arm contrast uses Satterthwaite's degrees
  of freedom (Giesbrecht and Burns, Biometrics 41, 1985; lmerTest's ``contest``):
  df = 2 φ² / (∇φᵀ A ∇φ), φ = Var(β̂_B − β̂_A), A the inverse of REML's expected
  information for (σ²_between, σ²_within).

  The fit needs only each boot's size n_g, mean ȳ_g and within-boot sum of squares: the
  within-boot contrasts (σ²_within χ²_{N−G}) and the boot means (ȳ_g ~ N(β_arm, v_g),
  v_g = σ²_between + σ²_within / n_g) are independent, so with γ = σ²_between / σ²_within,
  c_g = n_g / (1 + n_g γ), β̂_a = Σ_a c_g ȳ_g / Σ_a c_g and
  Q(γ) = SSW + Σ_g c_g (ȳ_g − β̂_arm(g))², REML's −2 log-likelihood with σ²_within profiled
  out (σ̂²_within = Q / (N − 2)) is, up to a constant,

      (N − 2) log Q(γ) + Σ_g log(1 + n_g γ) + Σ_a log Σ_{g∈a} c_g,

  minimised over γ ≥ 0 (a grid on ICC = γ / (1 + γ) in [0, 1), then Brent's method).
  Var(β̂_a) = 1 / W_a with W_a = Σ_{g∈a} 1 / v_g, so φ = 1/W_A + 1/W_B.

  **Balanced case.** With b boots of n samples in each arm and σ̂²_between > 0, REML is the
  ANOVA estimator: σ̂²_within = MSW and v̂ = σ̂²_between + σ̂²_within / n = s²_p, the pooled
  variance of the boot means about their arm's mean, on 2(b − 1) degrees of freedom. Then
  φ̂ = 2 s²_p / b, and since φ depends on the components only through v = σ²_between +
  σ²_within / n, ∇φᵀ A ∇φ = (2/b)² Var(v̂) with Var(v̂) = 2 v² / (2(b − 1)) (REML's
  information for v from G = 2b means with two fixed effects is (G − 2) / (2 v²)), so

      df = 2 (2v/b)² / ((2/b)² v² / (b − 1)) = 2(b − 1):

  the estimate, se and df are Student's pooled two-sample t on the boot means, which is
  Welch's on the boot means exactly when the two arms' boot means have the same sample
  variance (Welch's df is 2(b − 1) then, and below it otherwise). The df is 2(b − 1) on the
  boundary σ̂²_between = 0 too: the within-boot information only adds to σ²_within's, and
  with ∇φ ∝ (1, 1/n) the quadratic form ∇φᵀ A ∇φ does not depend on it; the iterations then
  narrow the se (σ̂²_within (1/N_A + 1/N_B)) but not the t quantile.

Neither is what ``lab compare`` reads; ``bench/boot_models.py`` is the coverage simulation
that decides whether either may be (docs/statistics.md, "Boots").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from lab.stats.boots import components
from lab.stats.descriptive import check_confidence

PAIRED = "paired boot means"
MIXED = "mixed model (REML, Satterthwaite df)"
_GRID = np.linspace(0.0, 0.999, 64)  # ICC = γ / (1 + γ): where REML's minimum is sought


@dataclass(frozen=True)
class BootModelFit:
    """B − A from one of the boot models: its estimate, standard error, degrees of freedom
    and interval at ``confidence``."""

    method: str
    confidence: float
    boots_a: int
    boots_b: int
    mean_a: float  # A's estimated mean (for a ratio or a percentage)
    estimate: float  # B − A
    se: float
    df: float
    interval: tuple[float, float]
    between: float = math.nan  # σ²_between (the mixed model's REML estimate)
    within: float = math.nan  # σ²_within


@dataclass(frozen=True, eq=False)
class BootSummary:
    """What the models need of an arm: each boot's size, mean and within-boot sum of squares
    (the sum of squared deviations from its own boot's mean)."""

    sizes: np.ndarray
    means: np.ndarray
    within_ss: float


def summarise(values: np.ndarray, boots: Sequence[object] | np.ndarray) -> BootSummary:
    """An arm's per-sample ``values`` and boot labels (as ``lab.stats.boots.components``
    takes them) reduced to its boots' sizes, means and within-boot sum of squares."""
    found = components(values, boots)
    pooled = found.samples - found.boots
    within_ss = found.within * pooled if pooled > 0 else 0.0
    return BootSummary(found.sizes, found.means, float(within_ss))


def _interval(estimate: float, se: float, df: float, level: float) -> tuple[float, float]:
    if se == 0:
        return (estimate, estimate)
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    return (estimate - half, estimate + half)


def paired_means(means_a: np.ndarray, means_b: np.ndarray, confidence: float) -> BootModelFit:
    """The paired-boots interval from the boot means in boot order (boot i of A with boot i of
    B): the t interval of the mean difference with b − 1 degrees of freedom."""
    level = check_confidence(confidence)
    a, b = np.asarray(means_a, dtype=np.float64), np.asarray(means_b, dtype=np.float64)
    if a.size != b.size:
        raise ValueError(
            f"paired boots need as many boots in each arm, not {a.size} and {b.size}: under"
            " `sync` both twins reboot together, so drop the unpaired last boot"
        )
    if a.size < 2:
        raise ValueError("paired boots need two boots or more in each arm")
    d = b - a
    estimate, se, df = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1.0
    return BootModelFit(PAIRED, level, a.size, b.size, float(a.mean()), estimate, se, df,
                        _interval(estimate, se, df, level))  # fmt: skip


def paired_boots(
    values_a: np.ndarray,
    boots_a: Sequence[object] | np.ndarray,
    values_b: np.ndarray,
    boots_b: Sequence[object] | np.ndarray,
    confidence: float,
) -> BootModelFit:
    """B − A from paired boot means: each arm's samples and boot labels, the boots paired in
    the order ``components`` gives them (first appearance, or the codes' order), which under
    ``sync`` is the order both twins rebooted in."""
    means_a = components(values_a, boots_a).means
    means_b = components(values_b, boots_b).means
    return paired_means(means_a, means_b, confidence)


def _deviance(gammas: np.ndarray, n: np.ndarray, ybar: np.ndarray, arm: np.ndarray,
              within_ss: float) -> np.ndarray:  # fmt: skip
    """REML's −2 log-likelihood with σ²_within profiled out (less a constant), for each γ."""
    g = gammas[:, None]
    c = n / (1.0 + n * g)  # (γ, boots)
    total = float(n.sum())
    dev = np.sum(np.log1p(n * g), axis=1)
    q = np.full(gammas.size, within_ss)
    for a in (0, 1):
        ca, ya = c[:, arm == a], ybar[arm == a]
        w = ca.sum(axis=1)
        beta = (ca * ya).sum(axis=1) / w
        q += (ca * (ya - beta[:, None]) ** 2).sum(axis=1)
        dev += np.log(w)
    return (total - 2.0) * np.log(q) + dev


def _reml_ratio(n: np.ndarray, ybar: np.ndarray, arm: np.ndarray, within_ss: float) -> float:
    """The γ = σ²_between / σ²_within that minimises REML's deviance (γ ≥ 0)."""
    grid = _GRID / (1.0 - _GRID)
    dev = _deviance(grid, n, ybar, arm, within_ss)
    best = int(np.argmin(dev))
    low, high = _GRID[max(best - 1, 0)], _GRID[min(best + 1, _GRID.size - 1)]

    def objective(icc: float) -> float:
        return float(_deviance(np.array([icc / (1.0 - icc)]), n, ybar, arm, within_ss)[0])

    found = optimize.minimize_scalar(objective, bounds=(low, high), method="bounded",
                                     options={"xatol": 1e-10})  # fmt: skip
    icc = float(found.x)
    if best == 0 and objective(0.0) <= found.fun:  # on the boundary: no between-boot variance
        icc = 0.0
    return icc / (1.0 - icc)


def _satterthwaite(n: np.ndarray, arm: np.ndarray, between: float, within: float,
                   samples: int) -> tuple[float, float]:  # fmt: skip
    """φ = Var(β̂_B − β̂_A) and its Satterthwaite degrees of freedom, from REML's expected
    information for (σ²_between, σ²_within): the within-boot contrasts give (N − G) / (2σ⁴)
    for σ²_within, the boot means ½ tr(P D_i P D_j) with P = diag(w) − w wᵀ / W in each arm,
    w_g = 1 / v_g, D_between = I and D_within = diag(1 / n_g)."""
    w = 1.0 / (between + within / n)
    d = np.stack([np.ones_like(n), 1.0 / n])  # ∂v_g / ∂(σ²_between, σ²_within)
    info = np.zeros((2, 2))
    info[1, 1] = (samples - n.size) / (2.0 * within**2)
    phi, grad = 0.0, np.zeros(2)
    for a in (0, 1):
        wa, da = w[arm == a], d[:, arm == a]
        total = float(wa.sum())
        p = np.diag(wa) - np.outer(wa, wa) / total
        p2 = p * p
        info += 0.5 * np.einsum("ig,gh,jh->ij", da, p2, da)
        phi += 1.0 / total
        grad += (da * wa**2).sum(axis=1) / total**2
    spread = float(grad @ np.linalg.solve(info, grad))
    return phi, (2.0 * phi**2 / spread if spread > 0 else math.inf)


def mixed_summaries(a: BootSummary, b: BootSummary, confidence: float) -> BootModelFit:
    """The mixed model from each arm's boot summaries (``summarise``)."""
    level = check_confidence(confidence)
    if a.sizes.size < 2 or b.sizes.size < 2:
        raise ValueError("the mixed model needs two boots or more in each arm")
    n = np.concatenate([a.sizes, b.sizes]).astype(np.float64)
    ybar = np.concatenate([a.means, b.means]).astype(np.float64)
    arm = np.repeat([0, 1], [a.sizes.size, b.sizes.size])
    samples = int(n.sum())
    within_ss = a.within_ss + b.within_ss
    if samples - n.size < 1 or within_ss <= 0:
        raise ValueError(
            "the mixed model needs boots of two samples or more that vary within a boot;"
            " read the boot means instead"
        )
    gamma = _reml_ratio(n, ybar, arm, within_ss)
    c = n / (1.0 + n * gamma)
    beta = [float(np.sum(c[arm == k] * ybar[arm == k]) / np.sum(c[arm == k])) for k in (0, 1)]
    q = within_ss + float(np.sum(c * (ybar - np.array(beta)[arm]) ** 2))
    within = q / (samples - 2)
    between = gamma * within
    phi, df = _satterthwaite(n, arm, between, within, samples)
    estimate, se = beta[1] - beta[0], math.sqrt(phi)
    return BootModelFit(MIXED, level, a.sizes.size, b.sizes.size, beta[0], estimate, se, df,
                        _interval(estimate, se, df, level), between, within)  # fmt: skip


def mixed_boots(
    values_a: np.ndarray,
    boots_a: Sequence[object] | np.ndarray,
    values_b: np.ndarray,
    boots_b: Sequence[object] | np.ndarray,
    confidence: float,
) -> BootModelFit:
    """B − A from value ~ arm + (1 | boot) by REML, with Satterthwaite's df: each arm's
    samples and boot labels, as ``lab.stats.boots.components`` takes them (A's boots and B's
    are different boots even when their labels are alike)."""
    return mixed_summaries(summarise(values_a, boots_a), summarise(values_b, boots_b),
                           confidence)  # fmt: skip
