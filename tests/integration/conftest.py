"""One real pair per test session: host prepared, image built (cached), thp + shp1g booted.

Integration tests drive the real `lab` command line against real libvirt, QEMU and
guests. On a host that cannot run them (not root, no QEMU) they skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PAIR = ("thp", "shp1g")
SYSFS_1G = Path("/sys/kernel/mm/hugepages/hugepages-1048576kB")
STATE_DIR = Path("/var/lib/lab")


@dataclass
class Lab:
    """Runs `lab` as a user would, as a subprocess of this Python."""

    env: dict[str, str]

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 1800
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "lab", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"lab {' '.join(args)} exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def state(self) -> dict:
        return json.loads((STATE_DIR / "lab.json").read_text())


def free_1g_pages() -> int:
    return int((SYSFS_1G / "free_hugepages").read_text())


@pytest.fixture(scope="session")
def lab() -> Lab:
    if os.geteuid() != 0:
        pytest.skip("integration tests need root (they prepare the host and boot guests)")
    if not shutil.which("qemu-system-x86_64") or not shutil.which("virsh"):
        pytest.skip("QEMU and libvirt are not installed: run `bash scripts/bootstrap`")
    env = dict(os.environ)
    env.pop("LAB_CONFIG", None)
    return Lab(env)


@pytest.fixture(scope="session")
def prepared_host(lab: Lab) -> Lab:
    lab("host", "prepare", "--hugepages", "1G:2")
    lab("image", "build")
    return lab


@dataclass
class Pair:
    lab: Lab
    free_before_up: int
    up_output: str
    down: bool = False


@pytest.fixture(scope="session")
def pair(prepared_host: Lab) -> Iterator[Pair]:
    lab = prepared_host
    lab("down")  # a pair left by a killed session would block this one
    before = free_1g_pages()
    up = lab(
        "up", "--pair", ",".join(PAIR), "--vcpus", "1", "--memory", "1G", "--reserve-host-cpus", "0"
    )
    state = Pair(lab, before, up.stdout + up.stderr)
    yield state
    if not state.down:
        lab("down", check=False)


# The host and image tests run before any pair exists (one of them releases and
# re-prepares the host, which it skips while guests run); then the checks of the fresh
# pair, the tests that use it (in file order), `lab down`, the pairs of other variants (each
# module brings its own up and down: one lab is up at a time), and the unit tests last,
# with no guests left to slow them down.
ORDER = (
    "test_host_image.py",
    "test_pair.py",
    None,
    "test_zz_down.py",
    "test_variants.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        if "integration" not in item.path.parts:
            return len(ORDER)
        name = item.path.name
        return ORDER.index(name) if name in ORDER else ORDER.index(None)

    items.sort(key=rank)  # stable: the order within each rank is kept
