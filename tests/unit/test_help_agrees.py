"""The README, --help and the output say one true thing (issue 40, §4): which correction a
three-variant verdict reads, and which imported variant is A."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.report.summary import family_note, summary_rows
from lab.stats.analysis import analyse
from lab.store import Series

pytestmark = pytest.mark.usefixtures("no_config")
README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def help_text(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def series(variant: str, mean: float) -> Series:
    values = mean + np.random.default_rng(len(variant)).normal(0, 1, 50)
    return Series(
        study="s", workload="w", metric="t", unit="s", direction="lower", variant=variant,
        guest=f"lab-{variant}", host="local", iterations=np.arange(1, 51), values=values,
    )  # fmt: skip


def test_three_variants_verdicts_are_named_bonferroni_everywhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--help said Benjamini–Hochberg where the README and the output said Bonferroni; the
    verdicts read Bonferroni's intervals (1 − α/m), only the Brunner–Munzel p is BH's."""
    (c,) = analyse([series(v, m) for v, m in (("a", 100), ("b", 90), ("c", 95))], 95, 0.01,
                   order=["a", "b", "c"])  # fmt: skip
    assert c.pairs[0].verdict_confidence == pytest.approx(1 - 0.05 / 3)
    assert "Bonferroni" in family_note([c]) and "Bonferroni" in summary_rows([c])[0].change
    said = help_text(capsys, "compare")
    assert "verdict Bonferroni-adjusted" in said
    assert not re.search(r"every pair, Benjamini", said)
    assert "its verdicts Bonferroni-adjusted" in README


def test_the_variant_imported_first_is_a_and_the_help_and_readme_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Swapping the import order turned "B worse +802 %" into "B better −88.9 %", and
    neither the README nor lab import --help said which variant is A."""
    files = {}
    for variant, value in (("thp", 10.0), ("shp1g", 9.0)):
        files[variant] = tmp_path / f"{variant}.csv"
        rows = "".join(f"{variant},w,t,{value + i / 100},{i}\n" for i in range(1, 11))
        files[variant].write_text("variant,workload,metric,value,iteration\n" + rows)
    for first, second in (("thp", "shp1g"), ("shp1g", "thp")):
        db = tmp_path / f"{first}.db"
        for name in (first, second):
            assert main(["import", "--db", str(db), "--direction", "lower", str(files[name])]) == 0
        capsys.readouterr()
        assert main(["compare", "--db", str(db), "--format", "json"]) == 0
        (c,) = json.loads(capsys.readouterr().out)
        assert [a["label"] for a in c["arms"]] == [first, second]
        assert main(["compare", "--db", str(db), "--format", "json", "--baseline", "thp"]) == 0
        (c,) = json.loads(capsys.readouterr().out)
        assert c["arms"][0]["label"] == "thp"
    assert "The variant stored first" in help_text(capsys, "import")
    assert "A is the variant stored first" in README and "--baseline" in README
