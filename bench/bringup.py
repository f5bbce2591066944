#!/usr/bin/env python3
"""How long `lab up` takes, phase by phase, and how much of it is the lab's own work.

Brings a pair up and down --cycles times (default thp,shp1g, 1 vCPU and 1 GiB each,
both booting at once) through the lab's own code, timestamping every phase event:
clone+seed, define, start (until QEMU runs), boot to DHCP lease, SSH, cloud-init done,
verification. It prints each cycle, then the median and spread per phase, and:

- the time from `lab up` to a verified pair (target: median under 60 s under TCG);
- the lab's own share (target: under 3 s): everything before both guests run, the delay
  between a guest being ready (cloud-init's network stage finished, per
  /run/cloud-init/status.json, and sshd listening, per systemd; put on the host's clock
  by measuring the guest clock's offset over SSH) and the lab noticing it, and the
  verification after the last guest is ready. "noticing" includes the first SSH login,
  whose key exchange and authentication are mostly sshd's work in the guest under TCG;
- the CPU time the lab's own process (and its children, such as qemu-img) used during
  `lab up`, which is what the lab costs whatever the guests do.

At the end it prints `systemd-analyze`, `blame` and `critical-chain` from one guest, so
the slow units are named. Needs a prepared host and a built image; run it as root with
no lab up (it refuses otherwise). Usage: .venv/bin/python bench/bringup.py [--cycles 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from lab.core.config import find_config_file, load_config
from lab.core.context import Context
from lab.guests.bringup import bring_down, bring_up, shell_for
from lab.guests.labstate import LabState, load_state
from lab.guests.plan import TwinRequest
from lab.guests.readiness import STAGE, STATUS_FILE

ORDER = ["clone", "define", "start", "booting", "lease", "ssh", "cloud-init"]


@dataclass
class Cycle:
    t0: float = 0.0
    events: dict[str, dict[str, float]] = field(default_factory=dict)  # guest -> phase -> wall
    verified: float = 0.0
    finished_in_guest: dict[str, float] = field(default_factory=dict)  # host clock
    down_s: float = 0.0
    cpu_s: float = 0.0  # CPU the lab used during `lab up`, its children (qemu-img...) included

    def record(self, guest: str, phase: str) -> None:
        self.events.setdefault(guest, {})[phase] = time.time()

    def phases(self, guest: str) -> dict[str, float]:
        """Seconds spent in each phase of one guest (from that phase's event to the next)."""
        ev = self.events[guest]
        marks = [(p, ev[p]) for p in ORDER if p in ev] + [("verified", self.verified)]
        return {f"{a}->{b}": round(tb - ta, 2) for (a, ta), (b, tb) in pairwise(marks)}

    def lab_share(self) -> dict[str, float]:
        before = max(ev["booting"] for ev in self.events.values()) - self.t0
        noticed = {g: ev["cloud-init"] - self.finished_in_guest[g] for g, ev in self.events.items()}
        after = self.verified - max(ev["cloud-init"] for ev in self.events.values())
        share = {
            "before boot": before,
            "noticing (max)": max(noticed.values()),
            "verification": after,
        }
        share["lab total"] = sum(share.values())
        share["lab CPU time"] = self.cpu_s
        return {k: round(v, 2) for k, v in share.items()}


READY_SCRIPT = (
    "date +%s.%N; cut -d' ' -f1 /proc/uptime;"
    " systemctl show -p ActiveEnterTimestampMonotonic --value ssh.service; cat {status}"
)


def guest_finish_times(ctx: Context) -> dict[str, float]:
    """When each guest became ready, on the host's clock.

    Ready means cloud-init's network stage has finished (its "finished" time in
    status.json) and sshd listens (ssh.service active, which systemd orders after
    cloud-init): the earliest moment anyone could log in and see a configured guest.
    """
    state = load_state_or_fail(ctx)
    times = {}
    for record in state.guests:
        shell = shell_for(ctx, record)
        sent = time.time()
        out = shell.run(["sh", "-c", READY_SCRIPT.format(status=STATUS_FILE)]).stdout
        received = time.time()
        now, uptime, sshd_us, status = out.split("\n", 3)
        offset = float(now) - (sent + received) / 2  # guest clock minus host clock
        booted = float(now) - float(uptime)  # guest clock at boot
        sshd = booted + int(sshd_us) / 1e6
        init = float(json.loads(status)["v1"][STAGE]["finished"])
        times[record.name] = max(init, sshd) - offset
        shell.close()
    return times


def load_state_or_fail(ctx: Context) -> LabState:
    state = load_state(Path(ctx.config.state_dir))
    if state is None:
        raise SystemExit("no lab is up")
    return state


def systemd_report(ctx: Context) -> str:
    record = load_state_or_fail(ctx).guests[0]
    shell = shell_for(ctx, record)
    script = "systemd-analyze; systemd-analyze blame | head -15; systemd-analyze critical-chain"
    text = shell.run(["sh", "-c", script]).stdout
    shell.close()
    return f"--- inside {record.name} ---\n{text}"


def spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):6.2f} s  (min {min(values):.2f}, max {max(values):.2f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--pair", default="thp,shp1g")
    parser.add_argument("--vcpus", type=int, default=1)
    parser.add_argument("--memory", default="1G")
    parser.add_argument("--reserve-host-cpus", type=int, default=0)
    args = parser.parse_args()

    ctx = Context(config=load_config(find_config_file(None)))
    if load_state(Path(ctx.config.state_dir)) is not None:
        raise SystemExit("a lab is up: run `lab down` first")
    request = TwinRequest(args.pair.split(","), args.vcpus, args.memory, args.reserve_host_cpus)
    cycles: list[Cycle] = []
    report = ""
    for number in range(1, args.cycles + 1):
        cycle = Cycle(t0=time.time())
        before = os.times()
        try:
            bring_up(ctx, request, cycle.record)
            cycle.verified = time.time()
            after = os.times()
            cycle.cpu_s = sum(after[:4]) - sum(before[:4])
            cycle.finished_in_guest = guest_finish_times(ctx)
            if number == args.cycles:
                report = systemd_report(ctx)
        finally:
            start_down = time.time()
            bring_down(ctx)
            cycle.down_s = time.time() - start_down
        cycles.append(cycle)
        total = cycle.verified - cycle.t0
        print(f"cycle {number}: verified pair after {total:.1f} s; lab's share {cycle.lab_share()}")
        for guest in cycle.events:
            print(f"  {guest}: {cycle.phases(guest)}")

    print(f"\n{len(cycles)} cycles, {args.pair}, {args.vcpus} vCPU and {args.memory} each")
    print(f"lab up -> verified pair: {spread([c.verified - c.t0 for c in cycles])}")
    for key in cycles[0].lab_share():
        print(f"  lab's own, {key:15s} {spread([c.lab_share()[key] for c in cycles])}")
    guests = list(cycles[0].events)
    for step in cycles[0].phases(guests[0]):
        values = [c.phases(g)[step] for c in cycles for g in guests]
        print(f"  phase {step:22s} {spread(values)}")
    print(f"  lab down                     {spread([c.down_s for c in cycles])}")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
