"""The lab's isolated libvirt network: a bridge, DHCP and nothing else.

No ``<forward>`` element: libvirt then neither routes nor NATs, so nothing a guest sends
can leave the host. DNS is off too (dnsmasq would forward guests' queries outward). The
host takes the subnet's first address; guests get leases from ``.100`` up.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import libvirt
from lxml import etree

from lab.core.errors import LabError, RequirementError
from lab.core.units import parse_subnet

if TYPE_CHECKING:
    import libvirt

BRIDGE_PREFIX = "virbr-"
IFNAMSIZ = 15  # the kernel's limit on interface names, without the NUL
DHCP_FIRST_OFFSET = 100


@dataclass(frozen=True)
class NetworkInfo:
    name: str
    bridge: str
    host_ip: str
    prefix: int

    @property
    def subnet(self) -> str:
        return str(ipaddress.ip_interface(f"{self.host_ip}/{self.prefix}").network)


def bridge_name(name: str) -> str:
    return (BRIDGE_PREFIX + name)[:IFNAMSIZ]


def dhcp_range(network: ipaddress.IPv4Network) -> tuple[str, str]:
    """``.100`` to ``.254`` of the first /24 (the whole network when larger)."""
    start = network.network_address + DHCP_FIRST_OFFSET
    end = network.broadcast_address - 1
    return str(start), str(end)


def network_xml(name: str, subnet: str) -> str:
    """The libvirt ``<network>`` definition of an isolated lab network."""
    network = parse_subnet(subnet)
    host_ip = network.network_address + 1
    start, end = dhcp_range(network)
    root = etree.Element("network")
    etree.SubElement(root, "name").text = name
    etree.SubElement(root, "bridge", name=bridge_name(name), stp="on", delay="0")
    etree.SubElement(root, "dns", enable="no")
    ip = etree.SubElement(root, "ip", address=str(host_ip), prefix=str(network.prefixlen))
    dhcp = etree.SubElement(ip, "dhcp")
    etree.SubElement(dhcp, "range", start=start, end=end)
    return etree.tostring(root, pretty_print=True, encoding="unicode")


def parse_network_xml(xml: str) -> tuple[NetworkInfo, bool]:
    """(facts, forwards) of a libvirt network definition."""
    root = etree.fromstring(xml.encode())
    ip = root.find("ip")
    if ip is None or ip.get("address") is None:
        raise LabError(
            f"network {root.findtext('name')!r} has no IPv4 address",
            hint="It was not made by the lab; remove it or choose another name",
        )
    if ip.get("prefix"):
        prefix = int(ip.get("prefix", "24"))
    else:
        prefix = ipaddress.ip_network(f"0.0.0.0/{ip.get('netmask', '255.255.255.0')}").prefixlen
    bridge = root.find("bridge")
    info = NetworkInfo(
        name=root.findtext("name", default=""),
        bridge=bridge.get("name", "") if bridge is not None else "",
        host_ip=ip.get("address", ""),
        prefix=prefix,
    )
    return info, root.find("forward") is not None


def network_info(conn: libvirt.virConnect, name: str) -> NetworkInfo:
    """Facts of the existing lab network; a :class:`RequirementError` when it is missing."""

    try:
        net = conn.networkLookupByName(name)
    except libvirt.libvirtError:
        raise RequirementError(
            f"the lab network {name!r} does not exist", hint="Run: lab host prepare"
        ) from None
    info, _ = parse_network_xml(net.XMLDesc(0))
    return info


def ensure_network(
    conn: libvirt.virConnect, name: str, subnet: str, changes: list[str] | None = None
) -> NetworkInfo:
    """Define, start and autostart the lab network unless it already is.

    ``changes`` (when given) receives ``defined``, ``started``, ``autostarted`` for each
    step actually taken, so ``lab host release`` can undo exactly those. An existing
    network of that name that forwards traffic or has another subnet is refused.
    """

    done = changes if changes is not None else []
    wanted = parse_subnet(subnet)
    try:
        net = conn.networkLookupByName(name)
    except libvirt.libvirtError:
        net = conn.networkDefineXML(network_xml(name, subnet))
        done.append("defined")
    info, forwards = parse_network_xml(net.XMLDesc(0))
    if forwards:
        raise RequirementError(
            f"libvirt network {name!r} exists and forwards traffic off the host",
            hint=f"The lab needs an isolated network. Remove it (virsh net-destroy {name};"
            f" virsh net-undefine {name}) or set another `network` in lab.toml",
        )
    if ipaddress.ip_network(info.subnet) != wanted:
        raise RequirementError(
            f"libvirt network {name!r} exists with subnet {info.subnet}, not {subnet}",
            hint=f"Use --subnet {info.subnet}, or remove it (virsh net-destroy {name};"
            f" virsh net-undefine {name})",
        )
    if not net.isActive():
        try:
            net.create()
        except libvirt.libvirtError as err:
            raise LabError(
                f"cannot start libvirt network {name!r}: {err.get_error_message()}",
                hint="Is dnsmasq-base installed? Does another bridge use"
                f" {info.subnet}? (ip -4 addr)",
            ) from None
        done.append("started")
    if not net.autostart():
        net.setAutostart(1)
        done.append("autostarted")
    return info


def remove_network(conn: libvirt.virConnect, name: str, steps: list[str]) -> None:
    """Undo the ``steps`` :func:`ensure_network` recorded, newest first."""

    try:
        net = conn.networkLookupByName(name)
    except libvirt.libvirtError:
        return
    if "autostarted" in steps and "defined" not in steps:
        net.setAutostart(0)
    if ("started" in steps or "defined" in steps) and net.isActive():
        net.destroy()
    if "defined" in steps:
        net.undefine()


def leases_for(conn: libvirt.virConnect, network_name: str, mac: str) -> list[tuple[str, int]]:
    """Every IPv4 lease the lab network's DHCP server holds for ``mac``: (address, expiry)."""

    try:
        leases: list[dict[str, Any]] = conn.networkLookupByName(network_name).DHCPLeases()
    except libvirt.libvirtError:
        return []
    wanted = mac.lower()
    return [
        (str(lease["ipaddr"]), int(lease.get("expirytime", 0)))
        for lease in leases
        if str(lease.get("mac", "")).lower() == wanted
        and lease.get("type") == libvirt.VIR_IP_ADDR_TYPE_IPV4
    ]


def lease_for(
    conn: libvirt.virConnect,
    network_name: str,
    mac: str,
    ignore: frozenset[tuple[str, int]] = frozenset(),
) -> str | None:
    """The newest IPv4 address leased to ``mac``, leaving out the leases in ``ignore``.

    A guest re-created with the same MAC finds its predecessor's lease still there; pass
    the leases seen before it started as ``ignore`` so only its own counts.
    """
    matching = [lease for lease in leases_for(conn, network_name, mac) if lease not in ignore]
    if not matching:
        return None
    return max(matching, key=lambda lease: lease[1])[0]
