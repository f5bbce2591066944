"""Issue 33 §3: comparing, reporting, importing, exporting and planning run where libvirt-python
is not installed; a command that drives guests says in one line which extra it needs; the
distribution is not named after another project; the example studies ship."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lab.core.paths import STUDIES_DIR

ROOT = Path(__file__).resolve().parents[2]
# `import libvirt` fails in the child as it does where libvirt-python is not installed
WITHOUT_LIBVIRT = (
    "import sys; sys.modules['libvirt'] = None; sys.modules['libvirtmod'] = None;"
    " from lab.cli import main; sys.exit(main(sys.argv[1:]))"
)


def lab_without_libvirt(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_CONFIG": "/dev/null",
           "LAB_DB": str(tmp_path / "lab.db")}  # fmt: skip
    return subprocess.run([sys.executable, "-c", WITHOUT_LIBVIRT, *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


def test_analysis_needs_no_libvirt(tmp_path: Path) -> None:
    rows = ["variant,workload,metric,value"]
    rows += [f"thp,w,time_s,{1 + i % 3 / 100}" for i in range(12)]
    rows += [f"shp1g,w,time_s,{0.9 + i % 3 / 100}" for i in range(12)]
    (tmp_path / "r.csv").write_text("\n".join(rows) + "\n")
    for args in (("import", "r.csv"), ("compare",), ("report", "--out", "r.html"),
                 ("export", "--format", "csv"), ("plan", "--sd", "1", "--mean", "10",
                 "--effect", "3%"), ("runs",)):  # fmt: skip
        done = lab_without_libvirt(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "libvirt" not in done.stderr, args
    assert (tmp_path / "r.html").stat().st_size > 0


def test_a_host_command_without_libvirt_names_the_extra_in_one_line(tmp_path: Path) -> None:
    # `lab host check` reaches libvirt whether or not a lab is up here (`lab status` with none
    # up says so before it does)
    done = lab_without_libvirt(tmp_path, "host", "check")
    assert done.returncode == 3  # a missing requirement (README: Exit status)
    (line,) = done.stderr.splitlines()
    assert line.startswith("lab: error: lab host drives guests through libvirt")
    assert "pip install './[host]'" in line and "bug" not in line


def test_libvirt_python_is_the_host_extra_and_bootstrap_installs_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("libvirt")]
    assert [d for d in project["optional-dependencies"]["host"] if d.startswith("libvirt-python")]
    assert re.search(r"pip install -q -e '\.\[[a-z,]*host[a-z,]*\]'",
                     (ROOT / "scripts/bootstrap").read_text())  # fmt: skip


def test_the_distribution_is_not_the_index_project_called_lab() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] != "lab"
    readme = (ROOT / "README.md").read_text()
    # every install line names what installs this project: the checkout, or its name
    for line in re.findall(r"pip install [^`\n]*", readme):
        assert not re.match(r"pip install '?lab\b", line), line
    assert f"The distribution is `{project['name']}`" in readme


def test_study_help_points_at_the_shipped_examples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lab.cli import main

    with pytest.raises(SystemExit):
        main(["study", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"{STUDIES_DIR}/*.toml" in text
    assert sorted(p.name for p in STUDIES_DIR.glob("*.toml"))


def test_study_check_and_xml_need_no_libvirt(tmp_path: Path) -> None:
    # issue 39 §4c: both only read files and write XML, so they belong to the analysis install
    done = lab_without_libvirt(tmp_path, "study", "check", str(STUDIES_DIR / "demo.toml"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("demo.toml: valid")
    done = lab_without_libvirt(tmp_path, "xml", "--variant", "thp", "--vcpus", "1")
    assert done.returncode == 0, done.stderr
    assert "<domain" in done.stdout and "</domain>" in done.stdout
    assert "libvirt-python is not installed" in done.stderr  # says why it plans on a flat host
