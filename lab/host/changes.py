"""The record of what ``lab host prepare`` changed, so ``lab host release`` undoes exactly that.

``<state_dir>/host-changes.json`` holds a list of changes, oldest first, each a kind and
the facts needed to undo it (the value before, the pid started, ...). It is written after
every change, so a prepare that fails half-way still leaves an exact record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.core.errors import StoreError
from lab.host.hugepages import size_text

CHANGES_FILE = "host-changes.json"
FORMAT = 1


@dataclass(frozen=True)
class Change:
    # hugepages, mkdir, mount, qemu_conf, dev_kvm, daemon, network, file, exports, knob, unit;
    # aging (lab host age's, in its own file)
    kind: str
    detail: dict[str, Any]

    def describe(self) -> str:
        d = self.detail
        match self.kind:
            case "hugepages":
                where = f"node {d['node']}" if d.get("node") is not None else "host"
                size = size_text(int(d["page_kib"]))
                return f"{size} huge pages on {where}: {d['before']} -> {d['after']}"
            case "mount":
                return f"mounted hugetlbfs (pagesize={d['pagesize']}) on {d['target']}"
            case "mkdir":
                return f"created {d['path']}"
            case "qemu_conf":
                return f"set hugetlbfs_mount in {d['path']}"
            case "dev_kvm":
                return f"{d['path']}: mode {d['mode']:o} -> 660, group kvm"
            case "daemon":
                return f"started {d['name']}" + (f" (pid {d['pid']})" if d.get("pid") else "")
            case "network":
                return f"libvirt network {d['name']}: {', '.join(d['steps'])}"
            case "file":
                return f"wrote {d['path']}"
            case "exports":
                return f"exported {d['path']} through the kernel NFS server"
            case "knob":
                return f"{d['name']}: {d['path']} {d['before']} -> {d['after']}"
            case "unit":
                return f"{d['action']} {d['unit']}"
            case "aging":
                return f"host aged to level {d['level']} by fragmenter pid {d['pid']}"
        return f"{self.kind} {d}"


@dataclass
class ChangeLog:
    path: Path
    changes: list[Change] = field(default_factory=list)
    added: list[Change] = field(default_factory=list)

    @classmethod
    def load(cls, state_dir: Path, name: str = CHANGES_FILE) -> ChangeLog:
        """The record in ``state_dir``: prepare's, or another kept alike (``lab host age``'s)."""
        path = Path(state_dir) / name
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text())
            changes = [Change(c["kind"], dict(c["detail"])) for c in data["changes"]]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise StoreError(
                f"cannot read {path}: {err}",
                hint="Fix or remove the file; release then has nothing to undo",
            ) from None
        return cls(path, changes)

    def add(self, kind: str, **detail: Any) -> Change:
        change = Change(kind, detail)
        self.changes.append(change)
        self.added.append(change)
        self.save()
        return change

    def save(self) -> None:
        if not self.changes:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "format": FORMAT,
            "changes": [{"kind": c.kind, "detail": c.detail} for c in self.changes],
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.path)

    def find(self, kind: str, **match: Any) -> Change | None:
        for change in self.changes:
            if change.kind == kind and all(change.detail.get(k) == v for k, v in match.items()):
                return change
        return None
