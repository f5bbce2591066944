"""sysbench-memory: sysbench's memory test with the reference study's defaults.

The study ran ``sysbench memory --memory-block-size=64M --memory-total-size=4096G
--time=500 --threads=14 run`` in 14-vCPU guests; here threads default to the guest's vCPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from lab.inguest.spec import Spec
from lab.run.workload import GuestInfo, Metric, Param, Workload

SIZE = r"[0-9]+[KMGT]?"


class SysbenchMemory(Workload):
    name = "sysbench-memory"
    description = "sysbench memory: time to write total_size in block_size blocks, and MiB/s"
    parameters = MappingProxyType(
        {
            "block_size": Param("64M", "--memory-block-size, e.g. 64M", str, SIZE),
            "total_size": Param("4096G", "--memory-total-size, e.g. 4096G", str, SIZE),
            "time": Param(500, "--time: seconds after which sysbench stops anyway", int),
            "threads": Param(None, "--threads (default: the guest's vCPUs)", int),
        }
    )
    metrics = (
        Metric("total_time_s", "s", "lower"),
        Metric("throughput_mib_s", "MiB/s", "higher"),
    )

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        seconds = int(p["time"] or 0)
        argv = [
            "sysbench",
            "memory",
            f"--memory-block-size={p['block_size']}",
            f"--memory-total-size={p['total_size']}",
            f"--time={seconds}",
            f"--threads={p['threads'] or guest.vcpus}",
            "run",
        ]
        # sysbench stops itself after --time; the margin covers start-up on a slow guest.
        return self._spec(guest, argv, parser="sysbench-memory", timeout_s=seconds * 1.5 + 120)


WORKLOAD = SysbenchMemory()
