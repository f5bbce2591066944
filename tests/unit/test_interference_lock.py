"""`lab down` and `lab up` leave a running study its guests: refused (exit 8) while another
process holds the run lock, naming it; ``--force`` goes ahead and says what it breaks.

The holder is a real second process (tests/unit/test_runlock.py's fixture) holding the lock
as `lab run null --n 500` does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lab.cli import main
from lab.guests.labstate import GuestRecord, LabState, clear_state, load_state, save_state
from lab.run.lock import LabInUseError, RunLockedError, changing_guests
from tests.unit.test_runlock import holder

__all__ = ["holder"]  # the fixture, used by name below


@pytest.fixture
def lab_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lab recorded as up (on libvirt's test driver, where its guests do not exist)."""
    state_dir = tmp_path / "state"
    guests = tmp_path / "guests"
    guests.mkdir()
    record = GuestRecord("lab-thp", "thp", "52:54:00:00:00:01", str(guests), [0], 0, "")
    save_state(state_dir, LabState([record], "qemu", "t", "img", "h", "lab", "198.18.0.1", [0], 0))
    config = tmp_path / "lab.toml"
    config.write_text(
        f'libvirt_uri = "test:///default"\nstate_dir = "{state_dir}"\n'
        f'store = "{tmp_path / "lab.db"}"\nreserve_host_cpus = 0\n'
    )
    monkeypatch.setenv("LAB_CONFIG", str(config))
    return state_dir


@pytest.mark.parametrize("argv", [["down"], ["up", "--pair", "thp,shp1g"]], ids=["down", "up"])
def test_down_and_up_are_refused_while_a_run_holds_the_lab(
    argv: list[str],
    lab_up: Path,
    holder: subprocess.Popen[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    if argv[0] == "up":  # as after `lab down --force`: no lab up, the run still holding on
        clear_state(lab_up)
    assert main(argv) == RunLockedError.exit_code == 8
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"lab: error: lab {argv[0]} would take the guests of a running study")
    assert f"pid {holder.pid}" in err[0] and "command `lab run null --n 500`" in err[0]
    assert f"kill {holder.pid}" in err[0] and "--force" in err[0]
    assert (load_state(lab_up) is None) == (argv[0] == "up")  # nothing taken down or made
    assert holder.poll() is None


def test_down_with_force_goes_ahead_and_says_what_it_breaks(
    lab_up: Path, holder: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["down", "--force"]) == 0
    err = capsys.readouterr().err
    assert "--force: lab down goes ahead while a run holds the lab" in err
    assert f"pid {holder.pid}" in err and "loses its guests and stops (status 4)" in err
    assert load_state(lab_up) is None


def test_changing_guests_holds_the_lock_so_that_no_run_starts_meanwhile(tmp_path: Path) -> None:
    """A second process asking is refused while `lab down` works; this process (a demo's
    steps) is not."""
    from lab.run.lock import run_lock

    with changing_guests(tmp_path, ["lab", "down"], "lab down"):
        code = (
            "import sys; from pathlib import Path; from lab.run.lock import run_lock\n"
            "try:\n"
            "    with run_lock(Path(sys.argv[1]), ['lab', 'run', 'null']): print('ran')\n"
            "except Exception as err: print(type(err).__name__, err)\n"
        )
        other = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)],
            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
            check=True,
        )  # fmt: skip
        assert other.stdout.startswith("RunLockedError another lab run is using this lab")
        assert "command `lab down`" in other.stdout
        with run_lock(tmp_path, ["lab", "run", "null"]):  # re-entrant here
            pass


def test_a_refusal_is_a_run_locked_error_with_the_holder(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    with (
        pytest.raises(LabInUseError) as caught,
        changing_guests(tmp_path / "state", ["lab", "up"], "lab up"),
    ):
        pass
    assert isinstance(caught.value, RunLockedError)
    assert caught.value.holder is not None and caught.value.holder.pid == holder.pid
