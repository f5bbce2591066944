"""The README's plug-in examples are real: its files, written out exactly as the README
shows them, load through lab.toml and do what the README says; its table of variants is
the list of shipped ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lab.cli import main
from lab.core.config import load_config
from lab.core.hostexec import RecordingHost
from lab.guests.cpuplan import plan_cpus
from lab.guests.fairness import pair_changes
from lab.guests.twins import build_twins
from lab.guests.variant import RunningGuest
from lab.guests.variants import load_variants, variants_for
from lab.run.workload import workloads_for
from tests.unit.helpers import settings, topology
from tests.unit.test_verify import FakeShell
from tests.unit.test_workloads import GUEST

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PLUGINS = (ROOT / "docs" / "plugins.md").read_text()
# "`path`:" on a line of its own or ending a sentence, then the file in a fenced block
FILE = re.compile(r"`([\w./-]+\.(?:py|toml))`:\n\n```(?:python|toml)\n(.*?)```", re.DOTALL)
VARIANT_FILE = "my-plugins/variants/guest_mitigations_off.py"
WORKLOAD_FILE = "my-plugins/workloads/dd_zero.py"


def examples() -> dict[str, str]:
    section = PLUGINS[PLUGINS.index("## Adding a variant") :]
    return dict(FILE.findall(section))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The README's files in a folder of their own; lab runs elsewhere, on the test driver."""
    for name, text in examples().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "lab.toml"))
    monkeypatch.setenv("LIBVIRT_DEFAULT_URI", "test:///default")
    monkeypatch.chdir("/")
    return tmp_path


def test_the_readme_shows_a_lab_toml_a_variant_and_a_workload() -> None:
    assert sorted(examples()) == ["lab.toml", VARIANT_FILE, WORKLOAD_FILE]


def test_lab_lists_the_readme_plugins(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", "--json"]) == 0
    variants = {v["name"]: v for v in json.loads(capsys.readouterr().out)}
    assert variants["guest-mitigations-off"]["description"].endswith("mitigations=off")
    assert {"thp", "shp1g", "guest-thp-never"} <= set(variants)
    assert main(["workloads", "--json"]) == 0
    workloads = {w["name"]: w for w in json.loads(capsys.readouterr().out)}
    assert workloads["dd-zero"]["parameters"] == [
        {"name": "size_mib", "default": 1024, "help": "MiB to copy"}
    ]
    assert "sysbench-memory" in workloads
    assert main(["diff", "thp", "guest-mitigations-off", "--reserve-host-cpus", "0"]) == 0


def test_the_readme_variant_changes_the_kernel_command_line_and_checks_it(project: Path) -> None:
    variant = variants_for(load_config(project / "lab.toml"))["guest-mitigations-off"]
    plan = plan_cpus(topology(1, 2), 2, 1, reserve_host_cpus=0)
    thp, off = build_twins([load_variants()["thp"], variant], settings(1), plan)
    delta = [c for c in pair_changes(thp, off) if c.kind != "identity"]
    assert [(c.path, c.kind, c.by) for c in delta] == [
        ("/domain/os/cmdline/text()", "variant", "guest-mitigations-off")
    ]
    assert off.spec.boot.cmdline.endswith(" mitigations=off")
    shell = FakeShell(off.name, {("cat", "/proc/cmdline"): off.spec.boot.cmdline + "\n"})
    seen = RunningGuest(off.name, off.spec, shell, RecordingHost().read_text)
    assert variant.verify(seen) == []
    shell.answers[("cat", "/proc/cmdline")] = thp.spec.boot.cmdline
    assert variant.verify(seen) == [
        "lab-guest-mitigations-off: its kernel booted without mitigations=off"
    ]


def test_the_readme_workload_times_dd(project: Path) -> None:
    workload = workloads_for(load_config(project / "lab.toml"))["dd-zero"]
    spec = workload.spec({}, GUEST)
    assert spec.argv == ["dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=1024"]
    assert spec.metrics_from == {"wall_s": "wall_s"}
    assert workload.spec({"size_mib": "64"}, GUEST).argv[-1] == "count=64"


def test_the_readme_lists_every_shipped_variant() -> None:
    start = README.index("## Variants")
    section = README[start : README.index("\n## ", start)]  # to the next section (Factors)
    listed = re.findall(r"^\| `([\w-]+)` \|", section, re.MULTILINE)
    assert listed and sorted(listed) == sorted(load_variants())
