"""When a guest is ready: cloud-init's own "finished" record, read without cloud-init.

cloud-init writes ``/run/cloud-init/result.json`` when its last stage (modules-final)
ends, with every stage's errors; ``cloud-init status`` reads that same file. Under TCG,
``cloud-init status --wait`` spends about 6 s importing cloud-init's Python modules
before it looks; a shell loop that waits for the file and prints it notices readiness
within a fifth of a second and costs the guest almost nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

RESULT_FILE = "/run/cloud-init/result.json"

# A fixed script (no user input in it): wait up to $1 seconds for file $2, print it.
WAIT_SCRIPT = (
    'i=0; while [ ! -e "$2" ]; do'
    ' [ "$i" -ge "$(( $1 * 5 ))" ] && exit 3; i=$((i + 1)); sleep 0.2; done; cat "$2"'
)
NOT_YET = 3  # the script's exit status when the time ran out


def wait_argv(seconds: int, path: str = RESULT_FILE) -> list[str]:
    """The guest command that waits for cloud-init's result and prints it."""
    return ["sh", "-c", WAIT_SCRIPT, "wait-cloud-init", str(int(seconds)), path]


@dataclass(frozen=True)
class CloudInitResult:
    datasource: str
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


def parse_result(text: str) -> CloudInitResult:
    """Parse result.json (``{"v1": {"datasource": ..., "errors": [...]}}``)."""
    try:
        v1 = json.loads(text)["v1"]
        errors = v1.get("errors") or []
        return CloudInitResult(str(v1.get("datasource") or ""), tuple(str(e) for e in errors))
    except (ValueError, KeyError, TypeError, AttributeError):
        snippet = text.strip()[:200] or "(empty)"
        return CloudInitResult("", (f"unreadable {RESULT_FILE}: {snippet}",))
