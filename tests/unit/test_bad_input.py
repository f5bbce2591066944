"""Bad input is refused with one line that says what to do, and nothing changes on the host.

Every test runs the real CLI entry point (:func:`lab.cli.main`) against libvirt's test
driver through a connection that records every call, with a :class:`RecordingHost` as the
host and the state, image and result folders in a temporary directory. After the refusal:
no host command ran, no file was written through the host, no libvirt object was defined,
created or changed, and none of the lab's folders was made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libvirt
import pytest

import lab.core.context
from lab.cli import main
from lab.core.context import Context
from lab.core.hostexec import RecordingHost
from lab.guests.labstate import GuestRecord, LabState, save_state

# libvirt calls that change something; reads (lookups, XML, capabilities) are fine.
CHANGES = re.compile(
    r"^(define|create|undefine|destroy|networkDefine|networkCreate|storage|interface|"
    r"nodeDevice|secretDefine|nwfilter|restore|domainXMLFromNative|setMemory|migrate)"
)
MEMINFO_4G = (
    "MemTotal:        8388608 kB\nMemFree:         4194304 kB\nMemAvailable:    4194304 kB\n"
)


class RecordingConnect:
    """libvirt's test driver behind a proxy that remembers the name of every method called."""

    def __init__(self, uri: str, calls: list[str]) -> None:
        self._conn = libvirt.open(uri)
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._conn, name)
        if callable(attr):
            self._calls.append(name)
        return attr


@dataclass
class Lab:
    root: Path
    config: Path
    host: RecordingHost
    calls: list[str] = field(default_factory=list)
    made: set[str] = field(default_factory=set)  # files a test put there itself
    status: int = 0

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def image_dir(self) -> Path:
        return self.root / "images"

    @property
    def store(self) -> Path:
        return self.root / "results" / "lab.db"

    def files(self) -> set[str]:
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*")} - self.made

    def lab(self, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
        """Run `lab ARGV`, which must fail: its one line of stderr (``status``: its exit)."""
        before = self.files()
        self.status = main(list(argv))
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert self.status != 0
        self.assert_untouched(before)
        return err[0]

    def assert_untouched(self, before: set[str]) -> None:
        assert self.host.commands == [], self.host.commands
        assert self.host.written == {}
        changed = [c for c in self.calls if CHANGES.match(c)]
        assert changed == [], changed
        assert self.files() == before, self.files() ^ before


@pytest.fixture
def lab_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    config = tmp_path / "lab.toml"
    config.write_text(
        'libvirt_uri = "test:///default"\n'
        "reserve_host_cpus = 0\n"
        f'state_dir = "{tmp_path / "state"}"\n'
        f'image_dir = "{tmp_path / "images"}"\n'
        f'store = "{tmp_path / "results" / "lab.db"}"\n'
    )
    monkeypatch.setenv("LAB_CONFIG", str(config))
    env = Lab(tmp_path, config, RecordingHost(files={"/proc/meminfo": MEMINFO_4G}))
    env.made = {"lab.toml"}
    real_context = Context

    def context(config: Any) -> Context:
        return real_context(
            config=config, host=env.host, connect=lambda uri: RecordingConnect(uri, env.calls)
        )

    monkeypatch.setattr(lab.core.context, "Context", context)
    yield env


def with_state(env: Lab, facts: dict[str, object] | None = None) -> None:
    """A lab that is up (as far as the state file says), for `lab run`; its guests have
    ``facts`` as `lab up` found them."""
    guests = [
        GuestRecord(
            f"lab-{v}",
            v,
            f"52:54:00:00:00:0{i}",
            str(env.root),
            [i],
            0,
            "",
            ip="127.0.0.1",
            facts=dict(facts or {}),
        )
        for i, v in enumerate(("thp", "shp1g"))
    ]
    save_state(
        env.state_dir, LabState(guests, "qemu", "t", "img", "h", "lab", "198.18.0.1", [0], 0)
    )
    env.made |= {"state", "state/lab.json"}


# -- unknown names ---------------------------------------------------------------------------


def test_unknown_variant(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp3g")
    assert lab_env.status == 2
    assert err == (
        "lab: error: unknown variant 'shp3g'."
        " Known variants: guest-thp-never, shp1g, shp2m, thp, thp-prealloc"
    )


def test_unknown_workload(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "run", "sysbench-cpu", "--n", "3")
    assert lab_env.status == 2
    assert err.startswith("lab: error: unknown workload 'sysbench-cpu'. Known workloads: ")
    assert "null" in err and "sysbench-memory" in err


def test_unknown_guest(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    with_state(lab_env)
    err = lab_env.lab(capsys, "run", "null", "--n", "3", "--guests", "lab-thp;reboot")
    assert lab_env.status == 2
    assert err == "lab: error: unknown guest 'lab-thp;reboot'. Known guests: lab-shp1g, lab-thp"


def test_unknown_host(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--hosts", "local,rack9")
    assert lab_env.status == 2
    assert err == "lab: error: unknown host 'rack9'. Known hosts: local"


@pytest.mark.parametrize("pairs", ["0", "-2"])
def test_pairs_below_one(lab_env: Lab, capsys: pytest.CaptureFixture[str], pairs: str) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--pairs", pairs)
    assert lab_env.status == 2
    assert err == f"lab: error: --pairs must be 1 or more, not {pairs}. e.g. --pairs 2"


def test_more_pairs_than_hosts_without_a_lab(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """'local' has a lab up, so of two hosts one is free: two pairs cannot be placed, and
    nothing is started on the free one either."""
    with open(lab_env.config, "a") as config:
        config.write('[hosts]\nrack2 = "qemu+ssh://root@rack2/system"\n')
    with_state(lab_env)
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--pairs", "2")
    assert lab_env.status == 2
    assert err.startswith(
        "lab: error: 2 pair(s) need 2 host(s), one pair per host: 1 of the 2 host(s) asked"
        " for have no lab up (rack2); a lab is up on local. Add hosts under [hosts]"
    )


def test_a_workload_with_host_servers_on_a_remote_host(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """iperf3 needs a server the lab starts on this machine only: refused before any run."""
    with open(lab_env.config, "a") as config:
        config.write('[hosts]\nrack2 = "qemu+ssh://root@rack2/system"\n')
    with_state(lab_env)
    record = GuestRecord(
        "lab-rack2-thp", "thp", "52:54:00:00:01:01", "/d", [0], 0, "", host="rack2"
    )
    save_state(
        lab_env.state_dir / "hosts/rack2",
        LabState([record], "qemu", "t", "img", "h", "lab", "198.18.0.1", [0], 0, host="rack2"),
    )
    lab_env.made |= {"state/hosts", "state/hosts/rack2", "state/hosts/rack2/lab.json"}
    err = lab_env.lab(capsys, "run", "iperf3", "--n", "3")
    assert lab_env.status == 2
    assert "iperf3 needs servers on the guests' host" in err and "rack2" in err
    assert "--hosts local" in err


def test_unknown_workload_parameter(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    with_state(lab_env)
    err = lab_env.lab(capsys, "run", "null", "--n", "3", "-p", "time=5")
    assert err == "lab: error: workload null has no parameter time. Its parameters: (none)"


def test_a_parameter_of_the_wrong_type(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    with_state(lab_env)
    err = lab_env.lab(capsys, "run", "iperf3", "--n", "3", "-p", "duration=5; reboot")
    assert "parameter duration must be an integer, not '5; reboot'" in err


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (["argv="], "command needs the command to time (argv)"),
        (["argv=make 'all"], "command: argv=\"make 'all\": No closing quotation"),
        (["argv=true", "regex=(?P<rate>[0-9]+", "metrics=rate:ops/s:higher"],
         "does not compile"),
        (["argv=true", "regex=([0-9]+) ops/s", "metrics=rate:ops/s:higher"],
         "has no named group"),
        (["argv=true", "regex=(?P<rate>[0-9]+)", "metrics=rate:ops/s:up"],
         "rate's direction 'up' is neither lower nor higher"),
        (["argv=true", "regex=(?P<rate>[0-9]+)", "metrics=rate:o p s:higher"],
         "rate's unit 'o p s' is not a unit"),
    ],
)  # fmt: skip
def test_a_command_that_cannot_run_is_refused_before_anything_runs(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], params: list[str], message: str
) -> None:
    with_state(lab_env)
    argv = [arg for param in params for arg in ("-p", param)]
    err = lab_env.lab(capsys, "run", "command", "--n", "5", *argv)
    assert lab_env.status == 2
    assert message in err
    assert not lab_env.store.exists()


@pytest.mark.parametrize(
    ("sweep", "said"),
    [
        (["nope=1,2"], "--sweep nope: workload sysbench-memory has no parameter nope. Its"
         " parameters: block_size, threads, time, total_size"),
        (["total_size=16M,64Q"], "--sweep total_size=64Q: sysbench-memory: parameter"
         " total_size='64Q' does not look right"),
        (["time=1,2.5"], "--sweep time=2.5: sysbench-memory: parameter time must be an"
         " integer, not '2.5'"),
        (["total_size="], "--sweep 'total_size=' gives total_size no values"),
        (["total_size=4M..4G"], "cannot read the range --sweep total_size=4M..4G"),
        (["total_size=4G..4M:x4"], "the range --sweep total_size=4G..4M:x4 runs backwards"),
        (["total_size=4M..4G:x1.0001"], "--sweep total_size makes more than 64 runs; a sweep"
         " makes at most 64"),
        (["total_size=1M..1G:x2", "block_size=1K..64K:x2"], "--sweep (11 total_size × 7"
         " block_size) makes 77 runs; a sweep makes at most 64"),
        (["total_size=16M,16M"], "--sweep total_size: 16M is 16M again"),
        (["time=1,2", "time=3"], "--sweep sweeps time twice"),
    ],
)  # fmt: skip
def test_a_sweep_that_cannot_be_is_refused_before_anything_runs(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], sweep: list[str], said: str
) -> None:
    with_state(lab_env)
    argv = ["run", "sysbench-memory", "--n", "3"]
    for text in sweep:
        argv += ["--sweep", text]
    err = lab_env.lab(capsys, *argv)
    assert lab_env.status == 2
    assert err.startswith(f"lab: error: {said}"), err
    assert not lab_env.store.exists()  # no store was made either


def test_a_swept_parameter_cannot_also_be_given_nor_a_sweep_stop_on_a_rule(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    with_state(lab_env)
    run = ["run", "sysbench-memory", "--n", "3", "--sweep", "time=1,2"]
    err = lab_env.lab(capsys, *run, "-p", "time=1")
    assert err.startswith("lab: error: time is both given (-p) and swept (--sweep)")
    err = lab_env.lab(capsys, *run, "--until", "verdict")
    assert err.startswith("lab: error: --until stops one run on its verdict")


@pytest.mark.parametrize(
    ("workload", "param", "message"),
    [
        ("sysbench-oltp", "buffer_pool_size=900M",
         "buffer_pool_size=900M is more than 75% of the guest's 1024 MiB"),
        ("stream", "array_size=100000000", "take 2289 MiB, more than 75% of the guest's 1024 MiB"),
    ],
)  # fmt: skip
def test_a_parameter_the_guests_cannot_take_is_refused_before_the_run_is_stored(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], workload: str, param: str, message: str
) -> None:
    """Checked against each guest as `lab up` found it (its memory), before anything runs."""
    with_state(lab_env, {"mem_total_kib": 2**20, "cpus": 1})
    err = lab_env.lab(capsys, "run", workload, "--n", "3", "-p", param)
    assert lab_env.status == 2
    assert message in err
    assert not lab_env.store.exists()


# -- numbers out of range ----------------------------------------------------------------------


@pytest.mark.parametrize("n", ["0", "-3"])
def test_n_below_one(lab_env: Lab, capsys: pytest.CaptureFixture[str], n: str) -> None:
    with_state(lab_env)
    err = lab_env.lab(capsys, "run", "null", "--n", n)
    assert lab_env.status == 2
    assert err == f"lab: error: --n must be 1 or more, not {n}. e.g. --n 30"


def test_negative_max_failures(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    with_state(lab_env)
    err = lab_env.lab(capsys, "run", "null", "--n", "3", "--max-failures", "-1")
    assert err == "lab: error: --max-failures must be 0 or more, not -1"


@pytest.mark.parametrize("option", ["1G:2;reboot", "1G:-1", "1G:²", "3X:1", "1G:2@node0", "1G"])
def test_hugepages_option_that_cannot_be_read(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    err = lab_env.lab(capsys, "host", "prepare", "--hugepages", option)
    assert lab_env.status == 2
    assert "Write SIZE:COUNT[@NODE], e.g. --hugepages 1G:2,2M:0" in err or "cannot read size" in err


def test_demo_n_below_one_before_preparing_anything(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    err = lab_env.lab(capsys, "demo", "--n", "0")
    assert err == (
        "lab: error: --n must be 2 or more, not 0: the demo compares the twins, which takes two"
        " samples each. e.g. lab demo --n 5"
    )


def test_memory_beyond_what_the_host_has(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,thp", "--memory", "3G")
    assert lab_env.status == 3
    assert err == (
        "lab: error: the guests need about 6656 MiB of host memory outside huge page pools"
        " (lab-thp-a 3G, lab-thp-b 3G, plus 256 MiB each for QEMU), but the host has 4096 MiB"
        " available. Use --memory 1792M or less, or stop other guests; `lab host check` shows"
        " the memory row"
    )


def test_with_a_lab_up_the_fix_is_lab_down_not_less_memory(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    with_state(lab_env)
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--memory", "64G")
    assert err == "lab: error: a lab is already up. See `lab status`; run `lab down` first"


def test_without_memavailable_nothing_is_refused() -> None:
    from lab.guests.memory import check_memory

    check_memory([], "")
    check_memory([], "MemTotal: 1 kB\n")


def test_huge_page_backed_memory_is_not_counted_against_free_memory(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--memory", "8G")
    assert "(lab-thp 8G, plus 256 MiB each for QEMU)" in err
    assert "Use --memory 3584M or less" in err


@pytest.mark.parametrize(
    ("memory", "message"),
    [("0", "size '0' is not a positive whole number of KiB"), ("lots", "cannot read size 'lots'")],
)
def test_memory_that_is_no_size(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], memory: str, message: str
) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--memory", memory)
    assert message in err


def test_more_vcpus_than_the_cpu_plan_allows(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--vcpus", "64")
    assert lab_env.status == 3
    assert "2 guests x 64 vCPU(s) + 0 CPU(s) kept for the host = 128 CPUs, but the host has" in err
    assert "Use fewer --vcpus" in err


def test_zero_vcpus(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--vcpus", "0")
    assert err == "lab: error: --vcpus must be 1 or more, not 0"


# -- names that would become paths or reach other programs ---------------------------------------


@pytest.mark.parametrize("name", ["../../etc", "a/b", "x;reboot", "$(id)", "-rf", ".hidden", ""])
def test_image_name_in_lab_toml(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    lab_env.config.write_text(lab_env.config.read_text() + f"image = {json.dumps(name)}\n")
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g")
    assert lab_env.status == 2
    assert err.startswith(
        f"lab: error: {lab_env.config}: key 'image' = {name!r}: image name {name!r}"
        " is not a plain name. Use letters, digits"
    )


def test_network_name_in_lab_toml(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab_env.config.write_text(lab_env.config.read_text() + 'network = "lab`reboot`"\n')
    err = lab_env.lab(capsys, "host", "prepare")
    assert f"{lab_env.config}: key 'network' = 'lab`reboot`': network name" in err


def test_image_option_with_a_path(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g", "--image", "../../etc/passwd")
    assert "image '../../etc/passwd': image name '../../etc/passwd' is not a plain name" in err


def test_recipe_option_with_a_path(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    err = lab_env.lab(capsys, "image", "build", "--recipe", "../images/debian12")
    assert "--recipe: recipe name '../images/debian12' is not a plain name" in err


def test_import_name_with_shell_characters(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = lab_env.root / "cloud.qcow2"
    disk.write_bytes(b"QFI\xfb" + b"\0" * 100)
    lab_env.made.add("cloud.qcow2")
    err = lab_env.lab(capsys, "image", "import", str(disk), "--name", "a b;c")
    assert "--name: image name 'a b;c' is not a plain name" in err
