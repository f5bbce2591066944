"""Fixtures shared by unit test modules: ``lab_env`` (the CLI against libvirt's test driver
and a recording host, checked to have changed nothing) for every module of bad input, and
``no_config`` for the modules that run the CLI without any lab.toml of the machine's, and
``runner_signals`` for tests that run the runner's commands in this process, and ``tmpfs``
for tests of a store on a mount of its own."""

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.test_bad_input import lab_env  # noqa: F401


@pytest.fixture
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """LAB_CONFIG names an empty file: the CLI sees the defaults, never this host's file.
    A module asks for it with ``pytestmark = pytest.mark.usefixtures("no_config")``."""
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")


@pytest.fixture
def runner_signals() -> Iterator[None]:
    """For a test that installs the runner's signal handlers in this process
    (``Children.install_signals``): pytest's own, and no interval timer, come back after it."""
    kinds = (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGHUP)
    saved = {kind: signal.getsignal(kind) for kind in kinds}
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    for kind, handler in saved.items():
        signal.signal(kind, handler)


@pytest.fixture(autouse=True)
def no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """No $COLUMNS from the test runner (pytest-xdist's workers have COLUMNS=80): lab's
    output honours it, and the tests read lab's output as a pipe without it shows it (160
    wide) unless they set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A folder that is an 8 MiB tmpfs of its own (a test may remount it read-only: root
    writes any file whatever its mode), unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "ro"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)
