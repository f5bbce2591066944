"""``lab report``: an offline page whose images exist, with tables, verdicts and metadata."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.report.plots import smoothed, thin
from lab.store import Store
from tests.unit.test_compare import study_store


@pytest.fixture(autouse=True)
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    db = study_store(folder / "lab.db", n=300)
    with Store.open(db) as store:
        study = store.ensure_study("hugepages")
        store.ensure_guest(study, "lab-thp", "thp", host_facts={"kernel": "6.1.0", "cpus": 2})
    assert main(["report", "--db", str(db), "--out", str(folder / "out")]) == 0
    return folder / "out" / "index.html"


def test_page_is_offline_and_every_image_exists(report: Path) -> None:
    page = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no CDN, no network
    sources = re.findall(r'<img src="([^"]+)"', page)
    assert len(sources) == 2 * 6  # two workload·metric blocks, six figures each
    for src in sources:
        assert not src.startswith("/")  # relative to the page
        assert (report.parent / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_page_has_tables_verdicts_and_metadata(report: Path) -> None:
    page = report.read_text()
    assert "the study&#x27;s table" in page and "Margin of error" in page
    assert 'class="faster"' in page and "shp1g is faster than thp" in page
    verdicts = re.findall(r'<span class="(faster|slower|equivalent|inconclusive)">', page)
    assert len(verdicts) == 2  # one per workload·metric, in the summary at the top
    assert "Skewness" in page and "Lag-1 autocorrelation" in page
    assert "Domain XML: lab-thp → lab-shp1g" in page
    assert "-&lt;domain&gt;&lt;name&gt;lab-thp&lt;/name&gt;&lt;/domain&gt;" in page
    assert "&quot;kernel&quot;: &quot;6.1.0&quot;" in page  # host facts
    assert 'data-images="pending"' in page and "naturalWidth" in page


def test_embed_writes_one_file(tmp_path: Path) -> None:
    db = study_store(tmp_path / "lab.db", n=50)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed",
                 "--workload", "iperf3"]) == 0  # fmt: skip
    page = (tmp_path / "r" / "index.html").read_text()
    assert page.count('<img src="data:image/png;base64,') == 6
    assert not (tmp_path / "r" / "figures").exists()


def test_report_of_empty_store_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--db", str(tmp_path / "x.db"), "--out", str(tmp_path / "r")]) == 2
    assert "no samples" in capsys.readouterr().err


def test_thin_and_smoothed() -> None:
    assert thin(np.arange(10.0), 20).tolist() == list(range(10))
    idx = thin(np.arange(1000.0), 11)
    assert idx.size == 11 and idx[0] == 0 and idx[-1] == 999 and np.all(np.diff(idx) > 0)
    x, y = smoothed(np.arange(1, 101), np.r_[np.zeros(50), np.ones(50)], bins=2)
    assert x.tolist() == [25.5, 75.5] and y.tolist() == [0.0, 1.0]


def test_synchronised_runs_get_the_paired_table(tmp_path: Path) -> None:
    from tests.unit.test_compare import synced_store

    db = synced_store(tmp_path / "sync.db", n=120)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "paired by iteration (synchronised runs)" in page
    assert "Wilcoxon signed-rank p" in page and "Variance removed by pairing" in page
    assert "pairing removed" in page and "narrower than Welch" in page


def test_unsynchronised_runs_have_no_paired_table(report: Path) -> None:
    assert "paired by iteration" not in report.read_text()
