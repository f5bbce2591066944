"""The scipy that pyproject.toml declares is one the statistics can run on.

`scipy>=1.10` was declared while `lab compare` called ``stats.false_discovery_control`` and
``ttest_ind(...).confidence_interval`` / ``.df``, which came in scipy 1.11 (checked in a
throwaway venv: scipy 1.10.1 has none of the three, 1.11.0 has all and passes
tests/unit/test_stats_*.py). This test fails when a new scipy call is not listed here, when
the installed scipy lacks one, or when the declared minimum is older than the newest need.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import scipy
from packaging.requirements import Requirement
from packaging.version import Version
from scipy import integrate, optimize, stats

ROOT = Path(__file__).resolve().parents[2]

# Every scipy name lab calls, with the release that brought what lab needs of it.
NEEDS = {
    "stats.false_discovery_control": "1.11",  # new in 1.11
    "stats.ttest_ind": "1.11",  # its result's confidence_interval() and df: 1.11
    "stats.ttest_rel": "1.10",  # its result's confidence_interval(): 1.10
    "stats.kendalltau": "1.9",  # .statistic
    "stats.theilslopes": "1.8",  # .slope, .low_slope, .high_slope
    "stats.wilcoxon": "1.0",
    "stats.skew": "1.0",
    "stats.kurtosis": "1.0",
    "stats.kstwobign": "1.0",
    "stats.brunnermunzel": "1.0",
    "stats.norm": "1.0",
    "stats.t": "1.0",
    "stats.nct": "1.0",
    "stats.chi2": "1.0",
    "integrate.trapezoid": "1.6",
    "integrate.fixed_quad": "1.0",
    "optimize.brentq": "1.0",
    "optimize.minimize_scalar": "1.0",  # method="bounded" (lab.stats.bootmodels)
}


def declared_minimum() -> Version:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (req,) = [Requirement(d) for d in project["dependencies"] if d.startswith("scipy")]
    (spec,) = [s for s in req.specifier if s.operator == ">="]
    return Version(spec.version)


def names_used() -> set[str]:
    """``stats.X``, ``integrate.X`` and ``optimize.X`` in every module of lab importing scipy
    (``lab.stats.x`` module paths are not scipy's)."""
    pattern = re.compile(r"(?<![\w.])(stats|integrate|optimize)\.([A-Za-z_]\w*)")
    found = set()
    for path in (ROOT / "lab").rglob("*.py"):
        text = path.read_text()
        if "from scipy import" in text:
            found |= {".".join(m) for m in pattern.findall(text)}
    return found


def test_every_scipy_name_lab_uses_is_listed_and_exists() -> None:
    used = names_used()
    assert "stats.false_discovery_control" in used  # the scan sees what it is meant to see
    assert used <= set(NEEDS), f"add to NEEDS, with the scipy release: {used - set(NEEDS)}"
    modules = {"stats": stats, "integrate": integrate, "optimize": optimize}
    for name in NEEDS:
        module, attr = name.split(".")
        assert hasattr(modules[module], attr), name


def test_the_result_attributes_lab_reads_exist() -> None:
    x = np.arange(10.0)
    y = x[::-1] + np.r_[0.5, np.zeros(9)]
    welch = stats.ttest_ind(x, y, equal_var=False)
    assert welch.confidence_interval(0.95).low < welch.confidence_interval(0.95).high
    assert welch.df > 0
    assert stats.ttest_rel(x, y).confidence_interval(confidence_level=0.9).high > 0
    assert -1 <= stats.kendalltau(x, y).statistic <= 1
    slopes = stats.theilslopes(y, x, alpha=0.95)
    assert slopes.low_slope <= slopes.slope <= slopes.high_slope
    assert 0 <= stats.wilcoxon(x - y + 0.1, zero_method="wilcox").pvalue <= 1


def test_the_declared_minimum_has_everything_and_is_installed() -> None:
    minimum = declared_minimum()
    assert minimum >= max(Version(v) for v in NEEDS.values())
    assert Version(scipy.__version__) >= minimum
