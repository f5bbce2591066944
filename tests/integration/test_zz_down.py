"""Last in the session: `lab down` leaves no domain, clone or seed, and returns the page."""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.conftest import STATE_DIR, Pair, free_1g_pages

pytestmark = pytest.mark.integration


def test_down_removes_everything_and_returns_the_huge_page(pair: Pair) -> None:
    guest_dirs = [STATE_DIR / "guests" / name for name in ("lab-thp", "lab-shp1g")]
    assert all((d / "disk.qcow2").exists() and (d / "seed.iso").exists() for d in guest_dirs)
    pair.lab("down")
    pair.down = True
    domains = subprocess.run(
        ["virsh", "-c", "qemu:///system", "list", "--all", "--name"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "lab-thp" not in domains and "lab-shp1g" not in domains
    assert not any(d.exists() for d in guest_dirs)
    assert not (STATE_DIR / "lab.json").exists()
    assert free_1g_pages() == pair.free_before_up
    assert "no lab is up" in pair.lab("status").stdout
