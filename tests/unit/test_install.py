"""A real install: the wheel ships the variants, the image recipes and the in-guest runner,
and the installed `lab` finds them from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def listed_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return list(config["packages"])


def test_every_package_of_the_tree_is_listed() -> None:
    found = sorted(
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "lab").rglob("__init__.py")
    )
    assert sorted(p for p in listed_packages() if ".shipped" not in p) == found


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this tree, installed (without its dependencies, which this
    interpreter has) into a folder of its own."""
    wheels, target = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(ROOT)], check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    (wheel,) = wheels.glob("kvm_lab-*.whl")  # not "lab": another project's name
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("lab/shipped/domains/shp1g.py", "lab/shipped/guest/__main__.py",
                    "lab/inguest/cli.py", "lab/shipped/images/debian12/recipe.toml",
                    "lab/parsers/tools.py", "lab/run/workloads/stream.c",
                    "lab/shipped/studies/thp-vs-shp1g.toml"):  # fmt: skip
        assert shipped in names
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    return target


def lab_from_root(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}
    env.pop("LAB_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd="/", env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_installed_lab_is_not_this_checkout(installed: Path) -> None:
    done = lab_from_root(installed, "config")
    assert done.returncode == 0, done.stderr
    script = "import lab.core.paths as p; print(p.FROM_CHECKOUT, p.DOMAINS_DIR)"
    env = {**os.environ, "PYTHONPATH": str(installed)}
    out = subprocess.run([sys.executable, "-c", script], cwd="/", env=env, capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    assert out == ["False", str(installed / "lab" / "shipped" / "domains")]


def test_the_installed_lab_lists_its_variants_and_workloads(installed: Path) -> None:
    variants = lab_from_root(installed, "variants")
    assert variants.returncode == 0, variants.stderr
    for name in ("thp", "shp1g", "shp2m"):
        assert f"│ {name} " in variants.stdout
    workloads = lab_from_root(installed, "workloads")
    assert workloads.returncode == 0, workloads.stderr
    for name in (
        "sysbench-memory", "sysbench-oltp", "iperf3", "gdb-build", "null", "stream", "command",
    ):  # fmt: skip
        assert name in workloads.stdout


def test_the_installed_lab_ships_a_runner_that_runs_with_python_alone(
    installed: Path, tmp_path: Path
) -> None:
    script = (
        "import sys; from pathlib import Path; from lab.run.shipping import write_zipapp;"
        " print(write_zipapp(Path(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": str(installed)}
    app = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd="/", env=env,
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    status = subprocess.run(
        [sys.executable, "-I", "-S", app, "status", "--dir", str(tmp_path / "run"),
         "--run-key", "k"], capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    reply = json.loads(status.stdout)
    assert (reply["run_key"], reply["running"], reply["journal_bytes"]) == ("k", False, 0)


def test_the_installed_lab_keeps_its_store_where_the_readme_says(
    installed: Path, tmp_path: Path
) -> None:
    """Issue 40: the README said `results/lab.db`; installed, it is the user's data folder."""
    env = {**os.environ, "PYTHONPATH": str(installed), "HOME": str(tmp_path), "COLUMNS": "300"}
    for name in ("XDG_DATA_HOME", "LAB_DB", "LAB_CONFIG", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "lab", "config"], cwd="/", env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"'{tmp_path}/.local/share/lab/lab.db'" in done.stdout
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    said = "after `pip install`, `lab.db` in your data folder (`~/.local/share/lab/lab.db`"
    assert said in readme
