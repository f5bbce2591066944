"""lab.app.hostcheck.check_hosts and lab.app.prepare.release: `lab host check` and `lab
host release` host by host, as the commands print them."""

from __future__ import annotations

from pathlib import Path

from lab.app.hostcheck import check_hosts
from lab.app.prepare import Released, release
from lab.app.twins import TwinSizing
from lab.core.config import Config, config_from_mapping
from lab.core.context import Context
from lab.host.row import MISSING

LOOP = "qemu+ssh://root@127.0.0.1:2222/system?command=/tmp/hop/ssh&keyfile=/k/id"


def test_nothing_recorded_is_nothing_to_release_on_each_host(tmp_path: Path) -> None:
    config = config_from_mapping({"state_dir": str(tmp_path), "hosts": {"loop": LOOP}})
    ctx = Context(config=config)
    assert list(release(ctx)) == [Released("local", False, 0)]
    assert list(release(ctx, "all")) == [Released("local", False, 0), Released("loop", True, 0)]


def test_each_host_checked_says_whether_the_pair_can_come_up(tmp_path: Path) -> None:
    config = Config(libvirt_uri="test:///default", state_dir=str(tmp_path), reserve_host_cpus=0)
    (checked,) = check_hosts(Context(config=config), None, ["thp", "shp1g"], TwinSizing(1, "1G"))
    assert (checked.host, checked.remote, checked.uri) == ("local", False, "test:///default")
    assert checked.rows and checked.ready == all(r.state != MISSING for r in checked.rows)
