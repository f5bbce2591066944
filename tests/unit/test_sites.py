"""Several hosts without a second machine: the inventory, SSH argv, remote facts, names.

The remote host is a :class:`RecordingHost` standing in for the ``ssh`` program; the
facts it answers with are real files captured on this machine. That the lab really
brings a pair up over ``qemu+ssh`` and runs it is tests/integration/test_two_hosts.py.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

import libvirt
import pytest
from lxml import etree

from lab.core.config import Config, config_from_mapping
from lab.core.context import Context
from lab.core.errors import ConfigError, HostCommandError, UnknownNameError, UsageError
from lab.core.hostexec import RecordingHost, Result
from lab.core.inventory import (
    SSHTarget,
    guest_prefix,
    inventory,
    parse_uri,
    select_hosts,
    spread_pairs,
)
from lab.guests.bringup import shared_cpus
from lab.guests.cpuplan import plan_cpus
from lab.guests.labstate import GuestRecord, LabState, load_state, save_state
from lab.guests.plan import Twins
from lab.guests.sites import site_for
from lab.guests.storagepool import pool_xml, volume_xml
from lab.guests.twins import build_twins
from lab.guests.variants import get_variant, load_variants
from lab.host.accel import choose_accelerator
from lab.host.remote import RemoteHost
from lab.host.site import parse_pool_listing, remote_accel_facts
from tests.unit.helpers import FIXTURES, settings, topology

LOOP = "qemu+ssh://root@127.0.0.1:2222/system?command=/tmp/hop/ssh&keyfile=/k/id"


@pytest.mark.parametrize(
    "uri, expected",
    [
        ("qemu:///system", None),
        ("test:///default", None),
        (LOOP, SSHTarget("127.0.0.1", "root", 2222, "/k/id", "/tmp/hop/ssh")),
        ("qemu+ssh://rack2/system", SSHTarget("rack2")),
    ],
)
def test_uris_name_this_machine_or_an_ssh_target(uri: str, expected: SSHTarget | None) -> None:
    assert parse_uri(uri) == expected


@pytest.mark.parametrize(
    "uri, words",
    [
        ("qemu+tls://rack2/system", "not a libvirt URI the lab can use"),
        ("qemu+ssh://rack2/session", "not a system connection"),
        ("qemu+ssh:///system", "not a libvirt URI the lab can use"),
    ],
)
def test_uris_the_lab_cannot_use_are_refused(uri: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_uri(uri, where="lab.toml")


def test_hosts_table_is_checked_where_it_is_read() -> None:
    config = config_from_mapping({"hosts": {"loop": LOOP}})
    assert list(inventory(config)) == ["local", "loop"]
    with pytest.raises(ConfigError, match="may not name a host 'local'"):
        config_from_mapping({"hosts": {"local": LOOP}}, source="lab.toml")
    with pytest.raises(ConfigError, match=r"lab.toml: key 'hosts': host name '\.\./x'"):
        config_from_mapping({"hosts": {"../x": LOOP}}, source="lab.toml")
    with pytest.raises(ConfigError, match="key 'hosts' must be a table"):
        config_from_mapping({"hosts": LOOP}, source="lab.toml")


def test_hosts_are_chosen_by_name_or_all() -> None:
    config = Config(hosts={"loop": LOOP, "rack2": "qemu+ssh://root@rack2/system"})
    assert [h.name for h in select_hosts(config, None)] == ["local"]
    assert [h.name for h in select_hosts(config, "all")] == ["local", "loop", "rack2"]
    assert [h.name for h in select_hosts(config, "rack2,loop,rack2")] == ["rack2", "loop"]
    with pytest.raises(UnknownNameError, match="Known hosts: local, loop, rack2"):
        select_hosts(config, "rack3")


@pytest.mark.parametrize(
    ("names", "up", "pairs", "chosen"),
    [
        (["local", "loop", "rack2"], set(), 1, ["local"]),
        (["local", "loop", "rack2"], set(), 3, ["local", "loop", "rack2"]),
        (["local", "loop", "rack2"], {"local"}, 1, ["loop"]),
        (["local", "loop", "rack2"], {"loop"}, 2, ["local", "rack2"]),
        (["rack2", "loop"], set(), 1, ["rack2"]),  # the order --hosts gave
    ],
)
def test_pairs_go_one_per_host_to_hosts_without_a_lab(
    names: list[str], up: set[str], pairs: int, chosen: list[str]
) -> None:
    assert spread_pairs(names, up, pairs) == chosen


@pytest.mark.parametrize(
    ("names", "up", "pairs", "words"),
    [
        (["local"], set(), 2, "2 pair(s) need 2 host(s), one pair per host: 1 of the 1 host(s)"),
        (["local", "loop"], {"local", "loop"}, 1, "0 of the 2 host(s) asked for have no lab up;"
         " a lab is up on local, loop"),
        (["local"], set(), 0, "--pairs must be 1 or more, not 0"),
    ],
)  # fmt: skip
def test_pairs_that_do_not_fit_are_refused(
    names: list[str], up: set[str], pairs: int, words: str
) -> None:
    with pytest.raises(UsageError) as caught:
        spread_pairs(names, up, pairs)
    assert words in str(caught.value)


def test_the_ssh_argv_never_asks_and_the_proxy_reaches_the_guest() -> None:
    target = parse_uri(LOOP)
    assert target is not None
    argv = target.argv("-T")
    assert argv[0] == "/tmp/hop/ssh"
    assert "BatchMode=yes" in argv and argv[-2:] == ["-T", "root@127.0.0.1"]
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-i") + 1] == "/k/id"
    proxy = shlex.split(target.proxy_command("198.18.0.7"))
    assert proxy[-3:] == ["-W", "198.18.0.7:22", "root@127.0.0.1"]


def test_remote_commands_are_quoted_words_and_a_lost_host_says_so() -> None:
    local = RecordingHost()
    host = RemoteHost("loop", SSHTarget("h", "root"), local)
    host.run(["cat", "/var/lib/lab/a file; rm -rf /"], check=False)
    sent = local.commands[-1]
    assert sent[sent.index("--") + 1] == "cat '/var/lib/lab/a file; rm -rf /'"
    lost = RecordingHost(answers={})
    host = RemoteHost("loop", SSHTarget("h", "root"), lost)
    key = (*SSHTarget("h", "root").argv("-T"), "--", "true")
    lost.answers[key] = Result(key, 255, "", "ssh: connect to host h port 22: Connection refused")
    with pytest.raises(HostCommandError, match="Connection refused") as err:
        host.run(["true"])
    assert "Cannot reach host 'loop'" in str(err.value)


def test_remote_files_are_read_and_written_through_the_shell() -> None:
    target = SSHTarget("h")
    local = RecordingHost()
    host = RemoteHost("loop", target, local)
    missing = (*target.argv("-T"), "--", "cat /nope")
    local.answers[missing] = Result(missing, 1, "", "cat: /nope: No such file or directory")
    with pytest.raises(FileNotFoundError, match="loop:/nope"):
        host.read_text("/nope")
    host.write_text("/tmp/x y", "text")
    assert local.commands[-1][-1] == "sh -c 'cat > \"$1\"' sh '/tmp/x y'"


def test_pool_listing_parses_a_real_host_with_both_1g_pages_taken() -> None:
    text = (FIXTURES / "host/sysfs-hugepages-grep-two-shp1g.txt").read_text()
    pools = parse_pool_listing(text)
    assert [(p.node, p.page_kib, p.total, p.free) for p in pools] == [
        (None, 2048, 0, 0),
        (None, 1048576, 2, 0),
        (0, 2048, 0, 0),
        (0, 1048576, 2, 0),
    ]


def test_remote_accel_facts_choose_tcg_on_this_kind_of_host() -> None:
    cpuinfo = (FIXTURES / "host/host-cpuinfo-flags.txt").read_text()
    host = RecordingHost(
        files={"/proc/cpuinfo": cpuinfo, "/sys/module/kvm": "", "/sys/module/kvm_pvm": ""}
    )
    stat = ("stat", "-Lc", "%a %G", "/dev/kvm")
    host.answers[stat] = Result(stat, 0, "660 kvm\n", "")
    ctx = Context(config=Config(), host=host)
    facts = remote_accel_facts(ctx)
    assert facts.modules == frozenset({"kvm", "kvm_pvm"})
    assert facts.dev_kvm_exists and facts.dev_kvm_usable
    choice = choose_accelerator(facts)
    assert choice.is_tcg and "kvm-pvm" in choice.reason


def test_remote_guests_are_named_by_host_and_get_their_own_macs() -> None:
    variants = load_variants()
    chosen = [get_variant("thp", variants), get_variant("shp1g", variants)]
    plan = plan_cpus(topology(1, 2), 2, 1, 0)
    here = build_twins(chosen, settings(), plan)
    there = build_twins(chosen, replace(settings(), prefix=guest_prefix("loop")), plan)
    assert [g.name for g in there] == ["lab-loop-thp", "lab-loop-shp1g"]
    assert not {g.spec.network.mac for g in here} & {g.spec.network.mac for g in there}
    assert there[0].spec.disk.path == "/var/lib/lab/guests/lab-loop-thp/disk.qcow2"


def test_other_running_guests_on_the_planned_cpus_are_found() -> None:
    """libvirt's test driver runs a domain 'test' whose vCPUs may use every CPU."""
    conn = libvirt.open("test:///default")
    variants = load_variants()
    chosen = [get_variant("thp", variants), get_variant("shp1g", variants)]
    plan = plan_cpus(topology(1, 2), 2, 1, 0)
    twins = Twins(build_twins(chosen, settings(), plan), plan, None, topology(1, 2))  # type: ignore[arg-type]
    assert shared_cpus(conn, twins) == "test may run on CPU 0,1"
    # test:///default is one driver per process: its 'test' runs again after, for the tests
    # that read its state (tests/unit/test_status.py) in the same pytest worker
    conn.lookupByName("test").destroy()
    try:
        assert shared_cpus(conn, twins) == ""
    finally:
        conn.lookupByName("test").create()


def test_each_host_keeps_its_own_record_here(tmp_path: Path) -> None:
    config = Config(state_dir=str(tmp_path), hosts={"loop": LOOP})
    ctx = Context(config=config, host=RecordingHost())
    loop = site_for(ctx, inventory(config)["loop"])
    assert loop.state_dir == tmp_path / "hosts/loop"
    assert loop.ctx.config.libvirt_uri == LOOP and isinstance(loop.ctx.host, RemoteHost)
    record = GuestRecord("lab-loop-thp", "thp", "52:54:00:00:00:01", "/d", [0], 0, "k", host="loop")
    state = LabState(
        [record], "qemu", "r", "debian12", "h", "lab", "198.18.0.1", [0], 0.0, host="loop"
    )
    save_state(loop.state_dir, state)
    assert load_state(loop.state_dir) == state
    assert load_state(tmp_path) is None  # this machine's record is another file


def test_pool_and_volume_xml_are_what_libvirt_reads_back() -> None:
    conn = libvirt.open("test:///default")
    pool = conn.storagePoolCreateXML(pool_xml("lab-images", "/var/lib/lab/images"), 0)
    assert etree.fromstring(pool.XMLDesc(0)).findtext("target/path") == "/var/lib/lab/images"
    vol = pool.createXML(volume_xml("base.qcow2", 2**30, "qcow2"), 0)
    clone = pool.createXML(
        volume_xml("disk.qcow2", 2**30, "qcow2", backing=vol.path(), mode="0600"), 0
    )
    xml = etree.fromstring(clone.XMLDesc(0))
    assert xml.findtext("backingStore/path") == vol.path()
    assert xml.find("target/format").get("type") == "qcow2"
    assert int(xml.findtext("capacity")) == 2**30


def test_an_upload_is_told_once_per_tenth_however_it_is_chunked() -> None:
    from lab.guests.storagepool import UploadProgress

    told: list[str] = []
    counter = UploadProgress(1000 * 2**20, told.append)
    for _ in range(1000):
        counter.sent(2**20)
    assert told == [f"uploading image {p} % of 1000 MiB" for p in range(10, 101, 10)]
    told.clear()
    counter = UploadProgress(1000, told.append)
    for size in (100, 150, 300, 449, 1):  # 10 %, 25 %, 55 %, 99.9 %, 100 %
        counter.sent(size)
    assert [int(line.split()[2]) for line in told] == [10, 20, 50, 90, 100]
