"""The lab network: valid libvirt XML, isolated, and idempotent on libvirt's test driver."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import libvirt
import pytest
from lxml import etree

from lab.core.errors import RequirementError, UsageError
from lab.host.network import (
    IFNAMSIZ,
    NetworkInfo,
    bridge_name,
    ensure_network,
    lease_for,
    network_info,
    network_xml,
    parse_network_xml,
    remove_network,
)

SCHEMA = Path("/usr/share/libvirt/schemas/network.rng")
HOST = Path(__file__).parent.parent / "fixtures" / "host"


@pytest.fixture(scope="module")
def relaxng() -> etree.RelaxNG:
    if not SCHEMA.exists():
        pytest.skip("libvirt's RelaxNG schemas are not installed (apt-get install libvirt-daemon)")
    return etree.RelaxNG(etree.parse(str(SCHEMA)))


@pytest.fixture
def conn() -> libvirt.virConnect:
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    return libvirt.open("test:///default")


def attr(root: etree._Element, path: str, name: str) -> str | None:
    element = root.find(path)
    assert element is not None, f"no <{path}>"
    return element.get(name)


def unique(prefix: str = "lab") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.mark.parametrize("subnet", ["198.18.0.0/24", "10.77.0.0/16"])
def test_network_xml_is_valid_against_libvirt_schema(relaxng: etree.RelaxNG, subnet: str) -> None:
    xml = etree.fromstring(network_xml("lab", subnet).encode())
    assert relaxng.validate(xml), relaxng.error_log


def test_network_xml_is_isolated_with_dhcp_from_100() -> None:
    root = etree.fromstring(network_xml("lab", "198.18.0.0/24").encode())
    assert root.find("forward") is None
    assert attr(root, "dns", "enable") == "no"
    assert attr(root, "bridge", "name") == "virbr-lab"
    assert (attr(root, "ip", "address"), attr(root, "ip", "prefix")) == ("198.18.0.1", "24")
    assert attr(root, "ip/dhcp/range", "start") == "198.18.0.100"
    assert attr(root, "ip/dhcp/range", "end") == "198.18.0.254"


def test_bridge_name_fits_the_kernel_limit() -> None:
    assert bridge_name("lab") == "virbr-lab"
    long = bridge_name("a-very-long-network-name")
    assert len(long) == IFNAMSIZ
    assert long.startswith("virbr-")


@pytest.mark.parametrize("subnet", ["198.18.0.0/25", "198.18.0.1/24", "fd00::/64", "nonsense"])
def test_unusable_subnets_are_refused(subnet: str) -> None:
    with pytest.raises(UsageError):
        network_xml("lab", subnet)


def test_parse_captured_live_network() -> None:
    info, forwards = parse_network_xml((HOST / "libvirt-9.0-net-dumpxml-lab.xml").read_text())
    assert info == NetworkInfo(name="lab", bridge="virbr-lab", host_ip="198.18.0.1", prefix=24)
    assert info.subnet == "198.18.0.0/24"
    assert forwards is False


def test_parse_netmask_form() -> None:
    xml = (
        "<network><name>n</name><forward mode='nat'/><bridge name='br0'/>"
        "<ip address='10.1.2.1' netmask='255.255.0.0'/></network>"
    )
    info, forwards = parse_network_xml(xml)
    assert (info.prefix, info.subnet, forwards) == (16, "10.1.0.0/16", True)


def test_define_on_test_driver_round_trips(conn: libvirt.virConnect) -> None:
    name = unique()
    net = conn.networkDefineXML(network_xml(name, "198.18.0.0/24"))
    try:
        back = etree.fromstring(net.XMLDesc(0).encode())
        assert back.findtext("name") == name
        assert back.find("forward") is None
        assert attr(back, "dns", "enable") == "no"
        assert attr(back, "ip", "address") == "198.18.0.1"
        assert attr(back, "ip/dhcp/range", "start") == "198.18.0.100"
        assert attr(back, "ip/dhcp/range", "end") == "198.18.0.254"
    finally:
        net.undefine()


def test_ensure_network_is_idempotent_and_records_its_steps(conn: libvirt.virConnect) -> None:
    name = unique()
    steps: list[str] = []
    info = ensure_network(conn, name, "198.18.0.0/24", steps)
    assert steps == ["defined", "started", "autostarted"]
    assert info.host_ip == "198.18.0.1"
    net = conn.networkLookupByName(name)
    assert net.isActive() and net.autostart()
    again: list[str] = []
    assert ensure_network(conn, name, "198.18.0.0/24", again) == info
    assert again == []
    assert network_info(conn, name) == info
    remove_network(conn, name, steps)
    with pytest.raises(libvirt.libvirtError):
        conn.networkLookupByName(name)


def test_ensure_network_starts_a_stopped_one(conn: libvirt.virConnect) -> None:
    name = unique()
    conn.networkDefineXML(network_xml(name, "198.18.0.0/24"))
    steps: list[str] = []
    ensure_network(conn, name, "198.18.0.0/24", steps)
    assert steps == ["started", "autostarted"]
    remove_network(conn, name, steps)
    net = conn.networkLookupByName(name)  # defined by someone else: stays defined
    assert not net.isActive() and not net.autostart()
    net.undefine()


def test_a_forwarding_network_of_that_name_is_refused(conn: libvirt.virConnect) -> None:
    name = unique()
    xml = network_xml(name, "198.18.0.0/24").replace(
        f"<name>{name}</name>", f"<name>{name}</name><forward mode='nat'/>"
    )
    net = conn.networkDefineXML(xml)
    try:
        with pytest.raises(RequirementError, match="forwards traffic off the host"):
            ensure_network(conn, name, "198.18.0.0/24")
        assert not net.isActive()  # refused before starting it
    finally:
        net.undefine()


def test_another_subnet_of_that_name_is_refused(conn: libvirt.virConnect) -> None:
    name = unique()
    net = conn.networkDefineXML(network_xml(name, "10.9.0.0/24"))
    try:
        with pytest.raises(RequirementError, match=re.escape("10.9.0.0/24, not 198.18.0.0/24")):
            ensure_network(conn, name, "198.18.0.0/24")
    finally:
        net.undefine()


def test_network_info_of_a_missing_network(conn: libvirt.virConnect) -> None:
    with pytest.raises(RequirementError, match=re.escape("does not exist. Run: lab host prepare")):
        network_info(conn, unique())


class LeasingConn:
    """A connection whose network hands out the leases captured by `virsh net-dhcp-leases`."""

    def __init__(self, leases: list[dict[str, Any]]) -> None:
        self.leases = leases

    def networkLookupByName(self, name: str) -> LeasingConn:
        if name != "lab":
            raise libvirt.libvirtError("no network")
        return self

    def DHCPLeases(self) -> list[dict[str, Any]]:
        return self.leases


def captured_leases() -> list[dict[str, Any]]:
    leases = []
    for line in (HOST / "virsh-net-dhcp-leases.txt").read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) < 6:
            continue
        leases.append(
            {
                "mac": parts[2],
                "ipaddr": parts[4].split("/")[0],
                "prefix": 24,
                "hostname": parts[5],
                "type": libvirt.VIR_IP_ADDR_TYPE_IPV4,
                "expirytime": 1000,
            }
        )
    return leases


def test_lease_for_the_captured_guests() -> None:
    conn: Any = LeasingConn(captured_leases())
    assert lease_for(conn, "lab", "52:54:00:20:e8:6e") == "198.18.0.102"
    assert lease_for(conn, "lab", "52:54:00:9D:AE:9D") == "198.18.0.168"
    assert lease_for(conn, "lab", "52:54:00:00:00:01") is None
    assert lease_for(conn, "other", "52:54:00:20:e8:6e") is None


def test_lease_for_takes_the_newest_ipv4_lease() -> None:
    mac = "52:54:00:aa:bb:cc"
    conn: Any = LeasingConn(
        [
            {"mac": mac, "ipaddr": "198.18.0.100", "type": 0, "expirytime": 10},
            {"mac": mac, "ipaddr": "198.18.0.101", "type": 0, "expirytime": 20},
            {"mac": mac, "ipaddr": "fd00::5", "type": 1, "expirytime": 30},
        ]
    )
    assert lease_for(conn, "lab", mac) == "198.18.0.101"
