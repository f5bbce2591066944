"""`lab host prepare --tune` on a fake sysfs/procfs tree: each knob written and recorded,
`lab host release` writing back the value before, a knob the host lacks skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lab.cli import build_parser
from lab.commands.host import prepare_request
from lab.core.errors import LabError
from lab.host.changes import ChangeLog
from lab.host.facts import parse_thp_mode
from lab.host.prepare import HostLayout, release_host
from lab.host.tune import tune_host
from tests.unit.test_host_noise import CAPTURE
from tests.unit.test_host_prepare import TreeHost, context

CPU = "devices/system/cpu"
DEFRAG = "kernel/mm/transparent_hugepage/defrag"
MODES = "always defer defer+madvise madvise never"


class SysfsHost(TreeHost):
    """Writes a THP mode file the way the kernel shows it: every mode, the chosen in []."""

    def write_text(self, path: str | Path, text: str) -> None:
        old = Path(path).read_text()
        if "[" in old:
            text = " ".join(f"[{m}]" if m == text.strip() else m for m in MODES.split()) + "\n"
        Path(path).write_text(text)


def layout_of(root: Path) -> HostLayout:
    return HostLayout(root=root, sysfs=root / "sys", proc=root / "proc", dev=root / "dev")


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def noisy(tmp_path: Path) -> HostLayout:
    """A host with every knob there and noisy (AMD-style boost file)."""
    layout = layout_of(tmp_path / "host")
    sys, proc = layout.sysfs, layout.proc
    put(sys / CPU / "online", "0-1\n")
    for cpu in (0, 1):
        put(sys / CPU / f"cpu{cpu}/cpufreq/scaling_governor", "powersave\n")
        put(sys / CPU / f"cpu{cpu}/cpufreq/scaling_available_governors", "performance powersave\n")
    put(sys / CPU / "cpufreq/boost", "1\n")
    put(sys / "kernel/mm/ksm/run", "1\n")
    put(sys / DEFRAG, "[always] defer defer+madvise madvise never\n")
    put(proc / "sys/kernel/numa_balancing", "1\n")
    return layout


@pytest.fixture
def state(tmp_path: Path) -> Path:
    (tmp_path / "state").mkdir()
    return tmp_path / "state"


def knobs(layout: HostLayout) -> dict[str, str]:
    sys = layout.sysfs
    return {
        "cpu0": (sys / CPU / "cpu0/cpufreq/scaling_governor").read_text().strip(),
        "cpu1": (sys / CPU / "cpu1/cpufreq/scaling_governor").read_text().strip(),
        "boost": (sys / CPU / "cpufreq/boost").read_text().strip(),
        "ksm": (sys / "kernel/mm/ksm/run").read_text().strip(),
        "defrag": parse_thp_mode((sys / DEFRAG).read_text()),
        "numa": (layout.proc / "sys/kernel/numa_balancing").read_text().strip(),
    }


NOISY = {
    "cpu0": "powersave",
    "cpu1": "powersave",
    "boost": "1",
    "ksm": "1",
    "defrag": "always",
    "numa": "1",
}


def test_tune_writes_each_knob_and_release_restores_it(noisy: HostLayout, state: Path) -> None:
    host = SysfsHost()
    log = ChangeLog.load(state)
    tune_host(context(state, host), log, noisy.path, systemd=True)
    assert knobs(noisy) == {
        "cpu0": "performance",
        "cpu1": "performance",
        "boost": "0",
        "ksm": "0",
        "defrag": "madvise",
        "numa": "0",
    }
    assert ("systemctl", "stop", "irqbalance") in host.commands  # active, says TreeHost
    assert [c.kind for c in log.added] == ["knob"] * 6 + ["unit"]
    assert log.added[5].describe() == (f"THP defrag: {noisy.sysfs / DEFRAG} always -> madvise")
    again = ChangeLog.load(state)
    tune_host(context(state, SysfsHost()), again, noisy.path, systemd=False)
    assert again.added == []  # tuned already: nothing written, nothing recorded

    host = SysfsHost()
    assert release_host(context(state, host), noisy) == 7
    assert knobs(noisy) == NOISY
    assert ("systemctl", "start", "irqbalance") in host.commands


def test_release_leaves_a_knob_someone_changed_since(
    noisy: HostLayout, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tune_host(context(state, SysfsHost()), ChangeLog.load(state), noisy.path, systemd=False)
    (noisy.sysfs / "kernel/mm/ksm/run").write_text("2\n")
    release_host(context(state, SysfsHost()), noisy)
    assert knobs(noisy) == {**NOISY, "ksm": "2"}
    assert "ksm/run is 2 since lab host prepare --tune wrote 0" in capsys.readouterr().err


def test_a_refused_write_is_a_warning_and_not_recorded(
    noisy: HostLayout, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class Refusing(SysfsHost):
        def write_text(self, path: str | Path, text: str) -> None:
            if str(path).endswith("boost"):
                raise PermissionError(13, "Permission denied")
            super().write_text(path, text)

    log = ChangeLog.load(state)
    tune_host(context(state, Refusing()), log, noisy.path, systemd=False)
    assert "could not write 0 to" in capsys.readouterr().err
    assert "boost" not in " ".join(c.detail["path"] for c in log.added)
    assert knobs(noisy)["ksm"] == "0"


def test_a_governor_the_cpu_does_not_offer_is_skipped(noisy: HostLayout, state: Path) -> None:
    put(noisy.sysfs / CPU / "cpu1/cpufreq/scaling_available_governors", "powersave\n")
    log = ChangeLog.load(state)
    tune_host(context(state, SysfsHost()), log, noisy.path, systemd=False)
    assert knobs(noisy)["cpu1"] == "powersave"
    assert knobs(noisy)["cpu0"] == "performance"


def test_this_host_s_missing_knobs_are_skipped_and_said(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No cpufreq, no boost: skipped; KSM, NUMA balancing, THP defrag: quiet already."""
    root = tmp_path / "this"
    shutil.copytree(CAPTURE, root)
    log = ChangeLog.load(state)
    tune_host(context(state, SysfsHost()), log, layout_of(root).path, systemd=False)
    assert log.added == []
    err = capsys.readouterr().err
    assert "CPU governor not available on this host (no cpufreq); skipped" in err
    assert "CPU boost not available on this host; skipped" in err
    assert "KSM not available" not in err
    assert release_host(context(state, SysfsHost()), layout_of(root)) == 0


def test_a_knob_gone_at_release_stays_recorded(noisy: HostLayout, state: Path) -> None:
    tune_host(context(state, SysfsHost()), ChangeLog.load(state), noisy.path, systemd=False)
    (noisy.sysfs / "kernel/mm/ksm/run").unlink()
    with pytest.raises(LabError, match="1 change\\(s\\) could not be undone"):
        release_host(context(state, SysfsHost()), noisy)
    assert [c.detail["name"] for c in ChangeLog.load(state).changes] == ["KSM"]


def test_only_tune_asks_for_it() -> None:
    parse = build_parser().parse_args
    assert prepare_request(parse(["host", "prepare"])).tune is False
    assert prepare_request(parse(["host", "prepare", "--tune"])).tune is True
