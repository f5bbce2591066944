"""``lab report``: an offline page whose images exist, with tables, verdicts and metadata."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from lab.report.plots import smoothed, thin
from lab.store import Store
from tests.unit.test_compare import study_store

pytestmark = pytest.mark.usefixtures("no_config")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    db = study_store(folder / "lab.db", n=300)
    with Store.open(db) as store:
        study = store.ensure_study("hugepages")
        store.ensure_guest(study, "lab-thp", "thp", host_facts={"kernel": "6.1.0", "cpus": 2})
    assert main(["report", "--db", str(db), "--out", str(folder / "out"), "--no-embed"]) == 0
    return folder / "out" / "index.html"


def test_page_is_offline_and_every_image_exists(report: Path) -> None:
    page = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no CDN, no network
    sources = re.findall(r'<img src="([^"]+)"', page)
    assert len(sources) == 1 + 2 * 6  # the forest plot, then two blocks of six figures
    for src in sources:
        assert not src.startswith("/")  # relative to the page
        assert (report.parent / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_opens_with_the_summary_table_and_the_forest_plot(report: Path) -> None:
    page = report.read_text()
    summary = page[page.index('<h2 id="summary">') : page.index("<h2>Verdicts</h2>")]
    rows = re.findall(r'<tr class="(faster|slower|equivalent|inconclusive)">(.*?)</tr>', summary)
    assert len(rows) == 2  # one per workload·metric, as lab compare prints it
    assert all("(n=300)" in cells for _, cells in rows)
    assert [(kind, "B better" in cells) for kind, cells in rows] == [
        ("inconclusive", False), ("faster", True)
    ]  # fmt: skip
    assert 'src="figures/forest.png"' in summary


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
    assert page.count('<img src="data:image/png;base64,') == 7  # the forest plot, then 6
    assert not (tmp_path / "r" / "figures").exists()


def test_the_report_is_one_file_by_default_and_moved_alone_keeps_its_figures(
    tmp_path: Path,
) -> None:
    """Issue 40: the README called the report self-contained, and moved alone its 37 PNGs
    in figures/ broke."""
    db = study_store(tmp_path / "lab.db", n=300)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    assert [p.name for p in (tmp_path / "r").iterdir()] == ["index.html"]
    moved = tmp_path / "elsewhere.html"
    (tmp_path / "r" / "index.html").rename(moved)
    page = moved.read_text()
    sources = re.findall(r'<img src="([^"]+)"', page)
    assert len(sources) == 1 + 2 * 6 and all(
        s.startswith("data:image/png;base64,") for s in sources
    )
    for src in sources:
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert moved.stat().st_size < 250_000 * len(sources)  # about 0.1 MB a figure


def test_report_of_empty_store_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Store.open(tmp_path / "x.db").close()
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


def test_swapped_cpu_sets_get_the_placement_table_and_a_line_by_the_verdict(
    tmp_path: Path,
) -> None:
    from tests.unit.test_compare import placement_store

    db = placement_store(tmp_path / "placed.db", n=120)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Placement: variant and CPU set told apart" in page
    assert "Placement effect (B&#x27;s CPUs − A&#x27;s), variants balanced" in page
    assert "Mean of B on A&#x27;s CPUs (swapped)" in page
    assert "CPU set (Placement table): on shp1g&#x27;s CPUs instead of thp&#x27;s +" in page
    assert "paired by iteration" in page  # a sync run: the paired table is there too


def test_runs_without_a_swap_have_no_placement_table(report: Path) -> None:
    page = report.read_text()
    assert "Placement" not in page and "CPU set" not in page


def _with_study_file_and_image(tmp_path: Path, manifest: dict[str, object] | None) -> Path:
    """A store whose study ran from a study file, its guests cloned from one image."""
    import json

    image_hash = "423464de88071c0525c7600585e8fc85d08b96266a2f16920968cc4c9b0619af"
    db = study_store(tmp_path / "lab.db", n=40)
    with Store.open(db) as store:
        study = store.ensure_study("hugepages", study_file='name = "hugepages"  # <b>\n',
                                   study_hash="ab" * 32)  # fmt: skip
        for variant in ("thp", "shp1g"):
            facts = {"image": "debian12", "image_hash": image_hash}
            store.ensure_guest(study, f"lab-{variant}", variant, host_facts=facts)
    images = tmp_path / "images"
    if manifest is not None:
        folder = images / f"debian12-{image_hash[:12]}"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"hash": image_hash, **manifest}))
    config = tmp_path / "lab.toml"
    config.write_text(f'image_dir = "{images}"\n')
    return db


def test_the_study_file_and_the_image_manifest_are_in_the_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = {
        "kernel_version": "6.1.0-56-cloud-amd64",
        "packages": {"bash": "5.2", "sysbench": "1.0.20", "iperf3": "3.12"},
        "trims": [{"why": "no background timers", "run": "systemctl mask fstrim.timer"},
                  {"why": "datasource fixed to NoCloud", "run": ""}],
    }  # fmt: skip
    db = _with_study_file_and_image(tmp_path, manifest)
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "lab.toml"))
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'id="study-file-hugepages">Study file of hugepages</h3>' in page
    assert "ab" * 32 in page
    assert "<pre>name = &quot;hugepages&quot;  # &lt;b&gt;\n</pre>" in page  # exactly, escaped
    assert page.count("<h3>Base image debian12</h3>") == 1  # one image for both guests
    assert "<td>kernel</td><td>6.1.0-56-cloud-amd64</td>" in page
    assert "<td>packages</td><td class=n>3</td>" in page
    assert "<li>no background timers <code>systemctl mask fstrim.timer</code></li>" in page
    assert "<li>datasource fixed to NoCloud</li>" in page


def test_without_the_manifest_the_image_hash_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _with_study_file_and_image(tmp_path, None)
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "lab.toml"))
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--embed"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "<code>423464de88071c0525c7600585e8fc85d08b96266a2f16920968cc4c9b0619af</code>" in page
    assert "not in this host's image cache" in page and "Image manifest" not in page


def test_image_summaries_read_only_the_exact_image() -> None:
    from lab.report.images import image_summaries, summary_from_manifest

    old = summary_from_manifest("debian12", "h", {"trims": ["package lists removed"]})
    assert old.trims == (("package lists removed", ""),) and old.manifest_found
    assert old.kernel is None and old.packages is None
    assert summary_from_manifest("debian12", "h", None).manifest_found is False
    assert image_summaries([], Path("/nonexistent")) == []


def test_a_manifest_of_another_hash_is_not_used(tmp_path: Path) -> None:
    from lab.report.images import read_manifest

    folder = tmp_path / "debian12-aaaaaaaaaaaa"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"hash": "aaaaaaaaaaaaXX"}')
    assert read_manifest(tmp_path, "debian12", "aaaaaaaaaaaaYY") is None
    assert read_manifest(tmp_path, "debian12", "aaaaaaaaaaaaXX") == {"hash": "aaaaaaaaaaaaXX"}
    (folder / "manifest.json").write_text("not json")
    assert read_manifest(tmp_path, "debian12", "aaaaaaaaaaaaXX") is None
