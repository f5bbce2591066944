"""The files of one run in the runner's folder, all named after the run key.

KEY.journal (:mod:`lab.inguest.journalfile`); KEY.pid (the runner's pid, and an flock held
while it lives: that, not the pid, says whether it runs); KEY.log (the runner's own output);
KEY.out and KEY.err (the current command's output).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True)
class RunFiles:
    dir: Path
    key: str

    def path(self, suffix: str) -> Path:
        return self.dir / f"{self.key}.{suffix}"
