"""iperf3: TCP throughput from the guest to an iperf3 server on the host's lab address.

One iperf3 server serves one client at a time, so every guest has its own server on its own
port: guest number ``i`` of the lab (0-based, in the lab's guest order) gets port
``BASE_PORT + i``. The controller starts the servers from :func:`host_servers` as child
processes for the length of the run and stops them at its end (also on Ctrl-C).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from lab.inguest.spec import Spec
from lab.run.workload import GuestInfo, Metric, Param, Workload

BASE_PORT = 5201


def iperf_port_for(index: int) -> int:
    """The port of the host-side server for the guest at ``index`` (0-based)."""
    return BASE_PORT + index


def host_servers(guests: Sequence[GuestInfo], state_dir: Path) -> list[list[str]]:
    """One ``iperf3 -s`` per guest, bound to the lab address and the guest's port."""
    return [
        ["iperf3", "-s", "-B", guest.host_ip, "-p", str(guest.iperf_port)]
        for guest in guests
    ]  # fmt: skip


class Iperf3(Workload):
    name = "iperf3"
    description = "iperf3 client in the guest to a server on the host: TCP sender bits/s"
    parameters = MappingProxyType(
        {
            "duration": Param(10, "-t: seconds each test transmits", int),
            "parallel": Param(1, "-P: parallel client streams", int),
        }
    )
    metrics = (
        Metric("sender_bits_per_s", "bit/s", "higher"),
        Metric("retransmits", "count", "lower"),
    )

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        duration = int(p["duration"] or 0)
        argv = [
            "iperf3", "-c", guest.host_ip, "-p", str(guest.iperf_port),
            "-t", str(duration), "-P", str(p["parallel"]), "-J",
        ]  # fmt: skip
        return self._spec(guest, argv, parser="iperf3", timeout_s=duration + 60.0)

    def host_servers(self, guests: Sequence[GuestInfo], state_dir: Path) -> list[list[str]]:
        return host_servers(guests, state_dir)


WORKLOAD = Iperf3()
