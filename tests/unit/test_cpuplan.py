"""The CPU planner on tables of topologies, including the real 2-CPU host captured here."""

from __future__ import annotations

import pytest

from lab.core.errors import PlanError
from lab.guests.cpuplan import plan_cpus
from lab.host.topology import parse_capabilities
from tests.unit.helpers import FIXTURES, topology


def captured_host():
    return parse_capabilities(
        (FIXTURES / "captures_lead/libvirt-9.0-capabilities-host.xml").read_text()
    )


def test_real_two_cpu_host_gives_cpu0_and_cpu1_when_told_to_keep_none() -> None:
    plan = plan_cpus(captured_host(), guests=2, vcpus=1, reserve_host_cpus=0)
    assert [p.vcpu_cpus for p in plan.guests] == [(0,), (1,)]
    assert plan.emulator_cpus == (0, 1)  # nothing left: the emulator shares, equally for both
    assert plan.host_cpus == ()


def test_real_two_cpu_host_refuses_overcommit_with_the_numbers() -> None:
    with pytest.raises(PlanError) as err:
        plan_cpus(captured_host(), guests=2, vcpus=1, reserve_host_cpus=1)
    assert "2 guests x 1 vCPU(s) + 1 CPU(s) kept for the host = 3 CPUs, but the host has 2" in str(
        err.value
    )
    assert "--reserve-host-cpus 0" in str(err.value)


def test_reserved_cpus_take_the_emulator_threads() -> None:
    plan = plan_cpus(topology(1, 8), guests=2, vcpus=2, reserve_host_cpus=1)
    assert plan.host_cpus == (0,)
    assert [p.vcpu_cpus for p in plan.guests] == [(1, 2), (3, 4)]
    assert plan.emulator_cpus == (0, 5, 6, 7)


def test_siblings_stay_with_one_guest() -> None:
    # 4 cores x 2 threads: core k has CPUs k and k+4.
    plan = plan_cpus(topology(1, 4, threads=2), guests=2, vcpus=2, reserve_host_cpus=1)
    assert plan.host_cpus == (0, 4)
    assert [p.vcpu_cpus for p in plan.guests] == [(1, 5), (2, 6)]
    for placement in plan.guests:
        cores = {cpu % 4 for cpu in placement.vcpu_cpus}
        assert len(cores) == 1


def test_each_guest_on_one_numa_node_when_possible() -> None:
    # 2 nodes x 4 cores; host keeps CPU 0; guest A fits on node 0 (1-3), guest B
    # would straddle if packed, so it goes to node 1.
    plan = plan_cpus(topology(2, 4), guests=2, vcpus=3, reserve_host_cpus=1)
    assert [p.vcpu_cpus for p in plan.guests] == [(1, 2, 3), (4, 5, 6)]
    assert [p.node for p in plan.guests] == [0, 1]


def test_guest_sets_are_disjoint_on_many_shapes() -> None:
    for nodes, cores, threads in [(1, 16, 2), (2, 8, 2), (4, 4, 1)]:
        for vcpus in (1, 2, 3, 4):
            plan = plan_cpus(topology(nodes, cores, threads), 2, vcpus, reserve_host_cpus=1)
            a, b = (set(p.vcpu_cpus) for p in plan.guests)
            assert not a & b and len(a) == len(b) == vcpus
            assert not (a | b) & set(plan.host_cpus)


@pytest.mark.parametrize(("guests", "vcpus", "reserve"), [(0, 1, 0), (1, 0, 0), (1, 1, -1)])
def test_nonsense_requests_are_refused(guests: int, vcpus: int, reserve: int) -> None:
    with pytest.raises(PlanError):
        plan_cpus(topology(1, 4), guests, vcpus, reserve)
