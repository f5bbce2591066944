"""cloud-init's status.json, parsed from a real capture, and the wait program run for real."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

from lab.guests.readiness import NOT_YET, STATUS_FILE, parse_status, wait_argv
from tests.unit.helpers import FIXTURES

CAPTURES = FIXTURES / "captures_lead"
# Captured from a lab guest (cloud-init 22.4.2) once every stage it ran had finished.
DONE = CAPTURES / "cloud-init-22.4.2-status-init-and-final-done.json"


def with_init(finished: float | None, errors: list[str] | None = None) -> str:
    """The real capture with the network stage still running, or failed."""
    status = json.loads(DONE.read_text())
    status["v1"]["init"]["finished"] = finished
    status["v1"]["init"]["errors"] = errors or []
    return json.dumps(status, indent=1)


def test_a_finished_clean_boot_is_ok() -> None:
    status = parse_status(DONE.read_text())
    assert status.ok and status.finished
    assert status.datasource.startswith("DataSourceNoCloudNet [seed=/dev/sr0]")


def test_a_stage_still_running_is_not_ready() -> None:
    status = parse_status(with_init(None))
    assert not status.finished and not status.ok and status.errors == ()


def test_a_failed_module_is_reported_with_its_stage() -> None:
    # the error text cloud-init 22.4.2 recorded for a failing module (result-error capture)
    recorded = json.loads((CAPTURES / "cloud-init-22.4.2-result-error.json").read_text())
    error = recorded["v1"]["errors"][0]
    status = parse_status(with_init(1795431085.4, [error]))
    assert status.finished and not status.ok
    assert status.errors == (f"init: {error}",)


def test_junk_is_an_error_not_a_crash() -> None:
    for text in ("Permission denied\n", '{"v1": null}', '{"v1": {"init": {}}}', ""):
        status = parse_status(text)
        assert not status.ok and "unreadable" in status.errors[0]


def test_the_guest_command_targets_cloud_inits_status_and_its_network_stage() -> None:
    argv = wait_argv(30)
    assert argv[:4] == ["python3", "-I", "-S", "-c"]
    assert argv[-3:] == ["30", STATUS_FILE, "init"]


def test_the_wait_program_gives_up_with_its_own_status(tmp_path: Path) -> None:
    absent = subprocess.run(wait_argv(0, str(tmp_path / "absent.json")), capture_output=True)
    running = tmp_path / "status.json"
    running.write_text(with_init(None))
    waiting = subprocess.run(wait_argv(0, str(running)), capture_output=True)
    assert absent.returncode == waiting.returncode == NOT_YET
    assert absent.stdout == waiting.stdout == b""


def test_the_wait_program_notices_the_finished_stage_within_a_fraction_of_a_second(
    tmp_path: Path,
) -> None:
    target = tmp_path / "status.json"
    target.write_text(with_init(None))  # the stage has started
    written_at: list[float] = []

    def finish_later() -> None:
        time.sleep(0.6)
        target.write_text("{\n")  # caught half-written: read as junk, retried
        time.sleep(0.3)
        target.write_text(DONE.read_text())
        written_at.append(time.monotonic())

    writer = threading.Thread(target=finish_later)
    writer.start()
    done = subprocess.run(wait_argv(10, str(target)), capture_output=True, text=True)
    noticed = time.monotonic()
    writer.join()
    assert done.returncode == 0 and parse_status(done.stdout).ok
    assert noticed - written_at[0] < 1.0
