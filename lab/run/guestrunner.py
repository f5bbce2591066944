"""The runner of one run in one guest, as the controller drives it: the argument lists of
its commands, its zipapp copied in, its spec written, its log and free space read, and the
owner of its journal (which store's run it belongs to) read, written and retired."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from lab.core.errors import GuestCommandError, GuestError
from lab.guests.channel import Channel
from lab.guests.ssh import GuestShell
from lab.inguest.spec import Spec
from lab.run.shipping import runner_zipapp

# Python in the guest writes the spec from its argument; write_text closes the file, so a
# full disk fails the command (a bare open().write() lost the error at exit, leaving it empty).
WRITE_SPEC = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])"
# $1 renamed to $2 in folder $3, each step on disk before the next (coreutils' sync FILE is
# an fsync of that file; of a folder, of its entries).
DURABLE_RENAME = 'sync "$1" && mv -f "$1" "$2" && sync "$3"'


class GuestRunner:
    """Run ``key``'s runner in ``folder`` of the guest behind ``shell``."""

    def __init__(self, shell: GuestShell, folder: str, key: str) -> None:
        self.shell, self.folder, self.key = shell, folder, key
        self.app = runner_zipapp()

    @property
    def journal(self) -> str:
        return f"{self.folder}/{self.key}.journal"

    @property
    def owner_file(self) -> str:
        return f"{self.folder}/{self.key}.owner"

    def owner(self) -> str | None:
        """The token of the store's run this guest's journal belongs to (SFTP, no process);
        None when no run has claimed it (or its file is empty)."""
        data = self.shell.read_bytes(self.owner_file, 0, 4096)
        self.shell.forget(self.owner_file)  # read once per start: no handle kept open
        if data is None:
            return None
        return data.decode(errors="replace").strip() or None

    def has_journal(self) -> bool:
        return self.shell.read_bytes(self.journal, 0, 0) is not None

    def claim(self, token: str) -> None:
        """Record that the journal (there or to come) belongs to the run ``token`` names."""
        self.shell.run(["mkdir", "-p", self.folder])
        self.shell.put_bytes(f"{token}\n".encode(), self.owner_file)

    def retire(self, stamp: str) -> str:
        """Rename the journal out of the run's way (``KEY.retired-STAMP``), never over
        another; returns its new path. A journal still in place after that is an error: a
        runner started now would take up its iterations."""
        target = f"{self.folder}/{self.key}.retired-{stamp}"
        self.shell.forget(self.journal)  # a handle on it would read the retired file
        self.shell.run(["mv", "-n", "-T", self.journal, target])
        if self.has_journal():
            raise GuestCommandError(
                f"{self.shell.address.name}: could not rename {self.journal} to {target}",
                hint=f"Look at the runner's folder (lab ssh {self.shell.address.name} ls -l"
                f" {self.folder}), then run the same command again",
            )
        return target

    def argv(self, command: str, *extra: str) -> list[str]:
        """The argument list of a runner sub-command for this run."""
        app, folder = f"{self.folder}/{self.app.name}", self.folder
        return ["python3", app, command, "--dir", folder, "--run-key", self.key, *extra]

    def install(self) -> None:
        """Copy this version of the runner in, unless the guest has it whole (SFTP, no
        process).

        Whole: its last byte is there. A guest reset within half a minute of the copy kept
        the rename but not the data (ext4 writes it back later), and the runner, an empty
        file, then ended without a word at every start until the run gave up. So the copy
        is written to disk (``sync FILE``: its fsync) before it is renamed, and the rename
        after it, and a short one is copied again."""
        target, size = f"{self.folder}/{self.app.name}", len(self.app.data)
        last = self.shell.read_bytes(target, size - 1, 1)
        self.shell.forget(target)  # no handle kept on a file this may replace
        if last is not None and len(last) == 1:
            return
        self.shell.run(["mkdir", "-p", self.folder])
        partial = f"{target}.part"  # renamed once whole: a copy cut short is never run
        self.shell.put_bytes(self.app.data, partial)
        self.shell.run(["sh", "-c", DURABLE_RENAME, "sh", partial, target, self.folder])

    def status(self) -> dict[str, Any]:
        out = self.shell.run(self.argv("status"), timeout=60).stdout
        return dict(json.loads(out or "{}"))

    def running(self) -> bool:
        return bool(self.status().get("running"))

    def _write_spec(self, spec: Spec) -> str:
        path = f"{self.folder}/{self.key}.spec.json"
        # The spec travels as a file written by the guest's own python from an argument,
        # so nothing in it is ever interpreted by a shell.
        self.shell.run(["python3", "-c", WRITE_SPEC, path, spec.to_json()])
        return path

    def start(self, spec: Spec) -> None:
        path = self._write_spec(spec)
        self.shell.run(self.argv("start", "--spec", path), timeout=120)

    def steps(self, spec: Spec) -> Channel:
        """The runner in the foreground of a channel of its own, one iteration per step
        (``lab.inguest.stepper``): for the schedules that start each iteration themselves."""
        path = self._write_spec(spec)
        return self.shell.open_channel(self.argv("step", "--spec", path))

    def stop(self) -> None:
        self.shell.run(self.argv("stop"), check=False, timeout=60)

    def free_bytes(self) -> int | None:
        """Bytes a user may still write where the runner journals; None if unknown. Its
        folder's parent is asked too: on a full disk the folder may never have been made."""
        folder = self.folder
        try:
            result = self.shell.run(
                ["df", "-B1", "--output=avail", folder, str(PurePosixPath(folder).parent)],
                check=False, timeout=60,
            )  # fmt: skip
        except GuestError:
            return None
        values = [int(word) for word in result.stdout.split() if word.isdigit()]
        return min(values) if values else None

    def log_tail(self) -> str:
        """The end of the runner's log, to quote in a message ("" if there is none)."""
        try:
            log = f"{self.folder}/{self.key}.log"
            text = self.shell.run(["tail", "-c", "600", log], check=False, timeout=60).stdout
        except GuestError:
            return ""
        return f"; its log ends: {text.strip()[-600:]}" if text.strip() else ""
