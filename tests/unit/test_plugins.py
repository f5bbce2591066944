"""Plug-ins that fail to load: the others load, and the broken one is an error naming its
file and the cause when it is asked for by name (`lab up`, a study) or listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.app.study import parse_study
from lab.cli import main
from lab.core.errors import ConfigError, PluginError, UnknownNameError
from lab.core.paths import DOMAINS_DIR
from lab.guests.variants import get_variant, load_variants
from lab.run.workload import load_workloads

GOOD = """\
from lab.guests.variant import TransparentHugePages

VARIANT = TransparentHugePages("{name}", "a THP twin under another name")
"""
CRASHES = """\
from lab.guests.variant import Variant

SHARE = 1 / 0
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "thp_again.py").write_text(GOOD.format(name="thp-again"))
    (tmp_path / "crashes.py").write_text(CRASHES)
    (tmp_path / "half_written.py").write_text("VARIANT = TransparentHugePages(\n")
    return tmp_path


def test_the_others_load_and_the_broken_ones_are_kept_with_their_cause(folder: Path) -> None:
    found = load_variants([DOMAINS_DIR, folder])
    assert {"thp", "shp1g", "thp-again"} <= set(found)
    assert sorted(found.broken) == ["crashes", "half-written"]
    crash = found.broken["crashes"]
    assert crash.path == str(folder / "crashes.py")
    assert crash.reason == "ZeroDivisionError: division by zero (line 3)"
    assert found.broken["half-written"].reason.startswith("SyntaxError: ")
    assert isinstance(crash.__cause__, ZeroDivisionError)


def test_a_broken_plugin_asked_for_is_its_error_and_the_others_still_work(folder: Path) -> None:
    found = load_variants([DOMAINS_DIR, folder])
    assert get_variant("thp-again", found).name == "thp-again"
    with pytest.raises(PluginError) as caught:
        get_variant("crashes", found)
    assert str(caught.value).startswith(
        f"variant plug-in {folder / 'crashes.py'} failed to load: ZeroDivisionError: division"
        " by zero (line 3)."
    )
    assert caught.value.exit_code == 2
    with pytest.raises(UnknownNameError):  # a name no file gives is still unknown
        get_variant("crashes2", found)


def test_a_later_folder_overrides_and_a_broken_override_is_broken(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "thp.py").write_text(CRASHES)
    assert "thp" in load_variants([first]).broken
    assert "thp" not in load_variants([first, DOMAINS_DIR]).broken  # mended by a later folder
    assert load_variants([first, DOMAINS_DIR])["thp"].description.startswith("no <memoryBacking>")
    (second / "thp.py").write_text(CRASHES)
    shadowed = load_variants([DOMAINS_DIR, second])
    assert "thp" not in shadowed and "thp" in shadowed.broken  # never the one it overrode


def test_listing_refuses_once_every_broken_file_is_named(folder: Path) -> None:
    found = load_variants([DOMAINS_DIR, folder])
    with pytest.raises(ConfigError) as caught:
        found.refuse_broken()
    assert caught.value.message == (
        f"2 variant plug-ins failed to load: {folder / 'crashes.py'}, {folder / 'half_written.py'}"
    )
    load_variants([DOMAINS_DIR]).refuse_broken()  # nothing broken: nothing raised


def test_a_study_naming_a_broken_variant_names_its_file(folder: Path) -> None:
    text = 'name = "s"\nvariants = ["thp", "crashes"]\nvcpus = 1\nmemory = "1G"\n'
    text += '[[workload]]\nname = "null"\nn = 3\n'
    with pytest.raises(ConfigError, match=r"crashes\.py failed to load: ZeroDivisionError"):
        parse_study(text, "s.toml", load_workloads(), load_variants([DOMAINS_DIR, folder]))


# -- folders from lab.toml, through the command line -----------------------------------------

WORKLOAD = """\
from lab.run.workload import Metric, Workload


class Sleep(Workload):
    name = "sleep-a-bit"
    description = "sleeps"
    metrics = (Metric("wall_s", "s", "lower"),)

    def spec(self, params, guest):
        return self._spec(guest, ["sleep", "0.1"])


WORKLOAD = Sleep()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lab.toml beside its own plug-in folders, on libvirt's test driver."""
    (tmp_path / "variants").mkdir()
    (tmp_path / "variants" / "thp_again.py").write_text(GOOD.format(name="thp-again"))
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "sleep_a_bit.py").write_text(WORKLOAD)
    (tmp_path / "lab.toml").write_text(
        'libvirt_uri = "test:///default"\nreserve_host_cpus = 0\n'
        "variant_dirs = ['variants']\nworkload_dirs = ['workloads']\n"
    )
    monkeypatch.setenv("LAB_CONFIG", str(tmp_path / "lab.toml"))
    monkeypatch.chdir("/")  # relative to lab.toml, not to where lab runs
    return tmp_path


def listed(capsys: pytest.CaptureFixture[str], command: str) -> tuple[int, dict, str]:
    status = main([command, "--json"])
    out, err = capsys.readouterr()
    return status, {entry["name"]: entry for entry in json.loads(out)}, err


def test_lab_toml_folders_add_a_variant_and_a_workload(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, variants, _ = listed(capsys, "variants")
    assert status == 0 and {"thp", "shp1g", "thp-again"} <= set(variants)
    status, workloads, _ = listed(capsys, "workloads")
    assert status == 0 and {"null", "sleep-a-bit"} <= set(workloads)
    assert main(["diff", "thp", "thp-again"]) == 0  # usable like a shipped one
    assert "unexplained" not in capsys.readouterr().out


def test_a_broken_file_is_listed_with_its_error_and_the_listing_fails(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "variants" / "crashes.py").write_text(CRASHES)
    status, variants, err = listed(capsys, "variants")
    assert status == 2
    assert variants["crashes"] == {
        "name": "crashes",
        "broken": True,
        "file": str(project / "variants" / "crashes.py"),
        "error": "ZeroDivisionError: division by zero (line 3)",
    }
    assert "thp-again" in variants and "thp" in variants
    assert f"variant plug-in {project / 'variants' / 'crashes.py'} failed to load" in err
    assert main(["diff", "thp", "thp-again"]) == 0  # not asked for: not in the way
    capsys.readouterr()
    assert main(["xml", "--variant", "crashes"]) == 2
    assert "crashes.py failed to load: ZeroDivisionError" in capsys.readouterr().err
    (project / "workloads" / "sleep_a_bit.py").write_text("WORKLOAD = None\n")
    status, workloads, err = listed(capsys, "workloads")
    assert status == 2 and workloads["sleep-a-bit"]["error"] == "it does not define WORKLOAD"
    assert "null" in workloads


def test_a_folder_that_is_not_there_names_the_key(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "lab.toml").write_text(
        (project / "lab.toml").read_text().replace("['variants']", "['variantz']")
    )
    assert main(["variants"]) == 2
    assert f"variant_dirs names {project / 'variantz'}, which is not a folder" in (
        capsys.readouterr().err
    )


def test_a_study_may_use_the_plugins_of_lab_toml(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = project / "s.toml"
    study.write_text(
        'name = "s"\nvariants = ["thp", "thp-again"]\nvcpus = 1\nmemory = "1G"\n'
        '[[workload]]\nname = "sleep-a-bit"\nn = 3\n'
    )
    assert main(["study", "check", str(study), "--db", str(project / "s.db")]) == 0
    assert f"{study}: valid" in capsys.readouterr().out
