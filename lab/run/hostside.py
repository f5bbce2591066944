"""The host's side of a run: servers the guests talk to and files they build, for its length.

:func:`host_side` is a context manager: what it starts (iperf3 servers, the NFS export's
contents) is there for the run and the servers are stopped afterwards, also on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lab.core.context import Context
from lab.core.errors import RequirementError
from lab.guests.labstate import GuestRecord, LabState
from lab.host.nfs import choose_server, export_for, is_serving
from lab.run.workload import GuestInfo, Workload

NFS_SUBDIR = "nfs"


def nfs_source(state_dir: Path, host_ip: str, proc: Path = Path("/proc")) -> str:
    """What a guest mounts: the export path differs between kernel nfsd and NFS-Ganesha."""

    server = choose_server((proc / "filesystems").read_text())
    return export_for(server, host_ip, state_dir / NFS_SUBDIR).source


def guest_infos(
    state: LabState, records: Sequence[GuestRecord], work_dir: str, nfs: str = ""
) -> list[GuestInfo]:
    """What workloads know of each guest; the iperf3 port follows the lab's guest order."""
    order = [g.name for g in state.guests]
    return [
        GuestInfo(
            name=record.name,
            vcpus=int(str(record.facts.get("cpus", 1) or 1)),
            memory_kib=int(str(record.facts.get("mem_total_kib", 0) or 0)),
            host_ip=state.host_ip,
            iperf_port=5201 + order.index(record.name),
            nfs_export=nfs,
            work_dir=work_dir,
        )
        for record in records
    ]


@contextlib.contextmanager
def host_side(
    ctx: Context,
    workload: Workload,
    params: Sequence[Mapping[str, Any]],
    state: LabState,
    records: Sequence[GuestRecord],
    work_dir: str,
) -> Iterator[None]:
    """The host prepared for each of ``params`` (one run's, or each value's of a sweep), and
    the workload's servers, one set for all of them, while the block runs."""
    state_dir = Path(ctx.config.state_dir)
    if workload.uses_nfs:
        if not is_serving(state.host_ip):
            raise RequirementError(
                f"{workload.name} builds on NFS, but no NFS server answers at {state.host_ip}",
                hint="Run: lab host prepare",
            )
        for each in params:
            workload.host_prepare(each, ctx.host, state_dir / NFS_SUBDIR)
    servers: list[subprocess.Popen[bytes]] = []
    try:
        infos = guest_infos(state, records, work_dir)
        for i, argv in enumerate(workload.host_servers(infos, state_dir)):
            servers.append(ctx.host.spawn(argv, state_dir / f"{workload.name}-server-{i}.log"))
        yield
    finally:
        for proc in servers:
            proc.terminate()
        for proc in servers:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
