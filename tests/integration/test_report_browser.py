"""The report in a real browser: headless Chromium loads the page offline and every image decodes.

The page marks ``<html data-images="loaded">`` from its own script once every ``<img>`` has
``naturalWidth > 0`` (``broken`` otherwise); ``--dump-dom`` returns the DOM after the load
event, so the attribute says what the browser saw. A copy with one figure damaged must read
``broken``: the check can fail. A screenshot shows the plots rendered.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lab.cli import main
from tests.unit.test_compare import study_store

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists()
                                        else None)  # fmt: skip

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (apt-get install -y chromium); the report's"
    " browser check needs it",
)


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        f"--user-data-dir={profile}", "--virtual-time-budget=15000", *extra, page.as_uri(),
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("browser")
    db = study_store(folder / "lab.db", n=400)
    (folder / "none.toml").write_text("")  # defaults, whatever lab.toml the host has
    assert main(["--config", str(folder / "none.toml"), "report", "--db", str(db),
                 "--out", str(folder / "report")]) == 0  # fmt: skip
    return folder / "report" / "index.html"


def images_state(dom: str) -> tuple[str, int]:
    match = re.search(r'<html[^>]*\bdata-images="(\w+)"[^>]*\bdata-image-count="(\d+)"', dom)
    assert match, f"the page's check did not run: {dom[:300]!r}"
    return match.group(1), int(match.group(2))


def test_every_image_loads(report: Path, tmp_path: Path) -> None:
    done = chromium(report, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert images_state(done.stdout) == ("loaded", 13)  # the forest plot, then 2 x 6


def test_a_damaged_image_is_noticed(report: Path, tmp_path: Path) -> None:
    # the figures are embedded in the page (data URIs): the first one's PNG is damaged
    copy = tmp_path / "copy"
    shutil.copytree(report.parent, copy)
    page = (copy / "index.html").read_text()
    start = page.index("data:image/png;base64,") + len("data:image/png;base64,")
    (copy / "index.html").write_text(page[:start] + "bm90IGEgcG5n" + page[start + 400 :])
    done = chromium(copy / "index.html", tmp_path / "profile", "--dump-dom")
    assert images_state(done.stdout)[0] == "broken"


def test_screenshot_shows_the_plots(report: Path, tmp_path: Path) -> None:
    import matplotlib.image

    shot = tmp_path / "shot.png"
    done = chromium(report, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,3000")
    assert shot.exists(), done.stderr[-2000:]
    pixels = matplotlib.image.imread(shot)[..., :3]
    # the figures put coloured (not grey) pixels on the page: histogram and violin fills
    colourful = np.ptp(pixels, axis=2) > 0.2
    assert colourful.mean() > 0.01
