"""When a guest is ready: cloud-init's own record of its network stage, read without cloud-init.

cloud-init keeps ``/run/cloud-init/status.json``, one entry per stage with its start,
finish and errors. The lab's image runs one stage only, ``init`` (the network stage: it
reads the seed, sets the hostname, creates the lab's user, writes the SSH host keys); the
final stage, which would write ``result.json``, has nothing to do here and is masked (see
the image recipe). So the guest is ready when ``v1.init.finished`` is set, and the
errors are those of every stage that ran.

Under TCG, ``cloud-init status --wait`` spends about 6 s importing cloud-init's Python
modules before it looks. A small fixed Python loop (isolated mode, no site packages)
reads the file every fifth of a second and prints it once the stage is over, so the lab
notices readiness almost at once and the guest does almost nothing meanwhile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

STATUS_FILE = "/run/cloud-init/status.json"
STAGE = "init"

# A fixed program (no user input in it): wait up to argv[1] seconds until the stage in
# file argv[2] has finished, print the file. A file being rewritten reads as junk: retry.
WAIT_PROGRAM = """\
import json, sys, time
limit = time.monotonic() + float(sys.argv[1])
while True:
    try:
        with open(sys.argv[2]) as f:
            text = f.read()
        if json.loads(text)["v1"][sys.argv[3]]["finished"] is not None:
            sys.stdout.write(text)
            break
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if time.monotonic() > limit:
        sys.exit(3)
    time.sleep(0.2)
"""
NOT_YET = 3  # the program's exit status when the time ran out


def wait_argv(seconds: int, path: str = STATUS_FILE) -> list[str]:
    """The guest command that waits for cloud-init's network stage and prints its record."""
    return ["python3", "-I", "-S", "-c", WAIT_PROGRAM, str(int(seconds)), path, STAGE]


@dataclass(frozen=True)
class CloudInitStatus:
    datasource: str
    finished: bool
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.finished and not self.errors


def parse_status(text: str) -> CloudInitStatus:
    """Parse status.json: ``{"v1": {"datasource": …, "init": {"finished": …, "errors": []}}}``."""
    try:
        v1 = json.loads(text)["v1"]
        stages = {name: entry for name, entry in v1.items() if isinstance(entry, dict)}
        errors = [
            f"{name}: {error}" for name, entry in stages.items() for error in entry["errors"] or []
        ]
        finished = stages[STAGE]["finished"] is not None
        return CloudInitStatus(str(v1.get("datasource") or ""), finished, tuple(errors))
    except (ValueError, KeyError, TypeError, AttributeError):
        snippet = text.strip()[:200] or "(empty)"
        return CloudInitStatus("", False, (f"unreadable {STATUS_FILE}: {snippet}",))
