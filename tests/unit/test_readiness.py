"""cloud-init's result.json, parsed from real captures, and the wait script run for real."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from lab.readiness import NOT_YET, RESULT_FILE, parse_result, wait_argv
from tests.unit.helpers import FIXTURES

CAPTURES = FIXTURES / "captures_lead"


def test_a_finished_clean_boot_is_ok() -> None:
    result = parse_result((CAPTURES / "cloud-init-22.4.2-result-done.json").read_text())
    assert result.ok
    assert result.datasource.startswith("DataSourceNoCloud [seed=/dev/sr0]")


def test_a_failed_module_is_reported_with_its_name() -> None:
    result = parse_result((CAPTURES / "cloud-init-22.4.2-result-error.json").read_text())
    assert not result.ok
    assert len(result.errors) == 1 and "runcmd" in result.errors[0]


def test_junk_is_an_error_not_a_crash() -> None:
    result = parse_result("Permission denied\n")
    assert not result.ok and "unreadable" in result.errors[0]
    assert not parse_result('{"v1": null}').ok


def test_the_guest_command_targets_cloud_inits_file() -> None:
    argv = wait_argv(30)
    assert argv[:2] == ["sh", "-c"] and argv[-2:] == ["30", RESULT_FILE]


def test_the_wait_script_gives_up_with_its_own_status(tmp_path: Path) -> None:
    done = subprocess.run(wait_argv(0, str(tmp_path / "absent.json")), capture_output=True)
    assert done.returncode == NOT_YET and done.stdout == b""


def test_the_wait_script_notices_the_file_within_a_fraction_of_a_second(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    text = (CAPTURES / "cloud-init-22.4.2-result-done.json").read_text()
    written_at: list[float] = []

    def finish_later() -> None:
        time.sleep(0.6)
        (tmp_path / "partial").write_text(text)  # cloud-init writes it atomically too
        (tmp_path / "partial").replace(target)
        written_at.append(time.monotonic())

    writer = threading.Thread(target=finish_later)
    writer.start()
    done = subprocess.run(wait_argv(10, str(target)), capture_output=True, text=True)
    noticed = time.monotonic()
    writer.join()
    assert done.returncode == 0 and parse_result(done.stdout).ok
    assert noticed - written_at[0] < 1.0
