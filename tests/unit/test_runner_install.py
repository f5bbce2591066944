"""The runner's zipapp in a guest survives a reset soon after it was copied in.

Seen on the real pair: `virsh reset` a few seconds into a run kept the zipapp's name but not
its bytes (ext4 writes data back up to 30 s later), so the runner, an empty file, ended
without a word at every start until the run gave up (status 6). The shell here runs the
guest's side on this machine (tests/unit/test_controller.py's LocalShell), so the commands
are the real ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lab.core.hostexec import Result
from lab.run.guestrunner import GuestRunner
from tests.unit.test_controller import LocalShell


class RecordingShell(LocalShell):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.commands: list[list[str]] = []

    def run(
        self, argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
        sudo: bool = False,
    ) -> Result:  # fmt: skip
        self.commands.append(list(argv))
        return super().run(argv, check=check, timeout=timeout, sudo=sudo)


def test_a_runner_file_left_short_by_a_reset_is_copied_again(tmp_path: Path) -> None:
    shell = RecordingShell("g")
    runner = GuestRunner(shell, str(tmp_path), "key")
    target = tmp_path / runner.app.name
    target.write_bytes(b"")  # the rename survived the reset, the data did not
    runner.install()
    assert target.read_bytes() == runner.app.data
    assert not list(tmp_path.glob("*.part"))


def test_a_whole_runner_file_is_not_copied_again(tmp_path: Path) -> None:
    shell = RecordingShell("g")
    runner = GuestRunner(shell, str(tmp_path), "key")
    runner.install()
    shell.commands.clear()
    runner.install()
    assert shell.commands == []  # one SFTP read of its last byte, nothing run


def test_the_copy_is_on_disk_before_its_rename_and_the_rename_after(tmp_path: Path) -> None:
    shell = RecordingShell("g")
    runner = GuestRunner(shell, str(tmp_path / "runner"), "key")
    runner.install()
    (script,) = [c for c in shell.commands if c[:2] == ["sh", "-c"]]
    assert script[2].split(" && ") == ['sync "$1"', 'mv -f "$1" "$2"', 'sync "$3"']
    partial, target, folder = script[4:]
    assert partial == f"{target}.part" and Path(target).parent == Path(folder)
    assert Path(target).read_bytes() == runner.app.data
