"""The command line: help, xml, diff, and the one error handler."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lab.cli import main
from lab.core.context import Context


@pytest.fixture(autouse=True)
def test_driver_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the CLI at libvirt's test driver so no daemon is needed."""
    config = tmp_path / "lab.toml"
    config.write_text('libvirt_uri = "test:///default"\nreserve_host_cpus = 0\n')
    monkeypatch.setenv("LAB_CONFIG", str(config))
    return config


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for command in ("variants", "xml", "diff", "config"):
        assert command in out


def test_a_command_line_registers_only_the_command_it_runs() -> None:
    from lab.cli import COMMAND_MODULES, build_parser, command_word

    assert command_word(["--config", "compare", "runs", "--db", "x"]) == "runs"
    assert command_word(["--config=lab.toml", "--debug", "compare"]) == "compare"
    assert command_word(["--debug"]) is None

    def commands(command: str | None) -> set[str]:
        (sub,) = [a for a in build_parser(command)._actions if a.choices and a.dest == "command"]
        return set(sub.choices)  # type: ignore[arg-type]

    assert commands("compare") == {"compare"}
    assert commands("import") == {"import"}
    every = commands(None)
    assert len(every) == len(COMMAND_MODULES)
    assert commands("comapre") == commands("completion") == every  # a typo's message names all


def test_xml_passes_virt_xml_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not (shutil.which("virt-xml-validate") and shutil.which("xmllint")):
        pytest.skip(
            "virt-xml-validate and xmllint are needed"
            " (apt-get install libvirt-clients libxml2-utils)"
        )
    assert main(["xml", "--variant", "shp1g", "--vcpus", "1", "--memory", "1G"]) == 0
    xml = capsys.readouterr().out
    assert '<page size="1048576" unit="KiB"/>' in xml
    path = tmp_path / "d.xml"
    path.write_text(xml)
    done = subprocess.run(["virt-xml-validate", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "validates" in done.stderr + done.stdout


def test_unknown_variant_is_one_line_with_the_known_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["xml", "--variant", "shp3g"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "lab: error: unknown variant 'shp3g'."
        " Known variants: guest-thp-never, shp1g, shp2m, thp, thp-prealloc"
    ]


def test_debug_shows_the_traceback() -> None:
    from lab.core.errors import UnknownNameError

    with pytest.raises(UnknownNameError):
        main(["--debug", "xml", "--variant", "nope"])


def test_diff_shows_variant_and_identity_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "thp", "shp1g"]) == 0
    out = capsys.readouterr().out
    assert "variant" in out and "identity" in out and "unexplained" not in out
    assert "lab-thp" in out and "lab-shp1g" in out


def test_bad_config_key_is_reported(
    test_driver_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test_driver_config.write_text("cpus = 3\n")
    assert main(["config"]) == 2
    assert "unknown key 'cpus'" in capsys.readouterr().err


def test_variants_and_workloads_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from lab.guests.variants import load_variants
    from lab.run.workload import load_workloads

    assert main(["variants", "--json"]) == 0
    variants = json.loads(capsys.readouterr().out)
    assert [v["name"] for v in variants] == sorted(load_variants())
    shp1g = next(v for v in variants if v["name"] == "shp1g")
    assert "1 GiB" in shp1g["description"] and "1GB huge pages" in shp1g["needs"]
    assert main(["workloads", "--json"]) == 0
    workloads = {w["name"]: w for w in json.loads(capsys.readouterr().out)}
    assert set(workloads) == set(load_workloads())
    sysbench = workloads["sysbench-memory"]
    assert {"name": "throughput_mib_s", "unit": "MiB/s", "direction": "higher"} in sysbench[
        "metrics"
    ]
    assert any(p["name"] == "block_size" for p in sysbench["parameters"])
    assert sysbench["params_declare_metrics"] is False
    assert workloads["command"]["params_declare_metrics"] is True


def test_status_as_json_with_no_lab_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    config = tmp_path / "lab.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n')
    assert main(["--config", str(config), "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"hosts": []}


def test_image_list_as_json_of_an_empty_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    config = tmp_path / "images.toml"
    config.write_text(f'image_dir = "{tmp_path / "images"}"\n')
    assert main(["--config", str(config), "image", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_plan_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from lab.stats.planning import FORMULA, plan_samples

    argv = ["plan", "--sd", "2", "--mean", "100", "--effect", "3%", "--iteration-time", "3"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = plan_samples(2.0, 3.0, 99.99, 0.9, 0.0, 3.0, threshold=0.01, mean=100.0)
    assert doc["formula"] == FORMULA
    (plan,) = doc["plans"]
    assert (plan["n"], plan["delta"], plan["sd"]) == (expected.n, 3.0, 2.0)
    assert (plan["threshold"], plan["bound"]) == (0.01, 1.0)
    assert (plan["goal"], plan["verdict"], plan["derived"]) == ("superiority", "faster", True)
    curve = dict(plan["curve"])  # samples per variant → P("faster")
    assert sorted(curve) == [round(expected.n * f) for f in (0.25, 0.5, 1, 2)]
    assert curve[round(expected.n / 2)] < 0.9 <= curve[expected.n]
    assert plan["n_from_zero"] < plan["n"]  # telling 3 % from 0 is the easier question
    assert plan["duration_concurrent_s"] == expected.n * 3.0
    assert plan["duration_sequential_s"] == 2 * expected.n * 3.0
    assert main(["plan", "--sd", "2", "--mean", "100", "--goal", "equivalence", "--json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)["plans"]
    assert (plan["delta"], plan["verdict"], plan["derived"]) == (0.0, "equivalent", False)
    assert plan["n_from_zero"] is None


def test_plan_says_which_verdict_and_when_none(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--sd", "2", "--mean", "100", "--confidence", "95"]
    assert main([*argv, "--effect", "0.5%"]) == 0
    out = capsys.readouterr().out
    assert 'planned for "equivalent" (the effect lies within the threshold)' in out
    assert "P(verdict) at ½ n" in out and "→" in out
    assert main([*argv, "--effect", "0.5%", "--goal", "superiority"]) == 2
    assert 'cannot reach "faster"' in capsys.readouterr().err
    assert main([*argv, "--effect", "3%", "--threshold", "4%"]) == 0
    assert 'planned for "equivalent"' in capsys.readouterr().out
    # a bare number is in the metric's unit: 0.01 of a mean of 100, far within the effect
    assert main([*argv, "--effect", "3%", "--threshold", "0.01"]) == 0
    assert 'planned for "faster"' in capsys.readouterr().out
    assert main([*argv, "--effect", "3%", "--threshold", "1 percent"]) == 2
    assert "in the metric's unit" in capsys.readouterr().err


def test_demo_runs_every_step_with_the_config_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lab --config X demo`: every step acts with the demo's own context, so reads X.

    The steps' actions are fakes (tests/unit/test_demo.py): nothing here touches the host."""
    import lab.app.demo
    from tests.unit.test_demo import FakeActions

    config = tmp_path / "other.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\nstore = "{tmp_path / "x.db"}"\n')
    fake = FakeActions()
    seen: list[str] = []

    def actions(ctx: Context) -> lab.app.demo.DemoActions:
        seen.append(ctx.config.state_dir)
        return fake.actions()

    monkeypatch.setattr(lab.app.demo, "real_actions", actions)
    assert main(["--config", str(config), "demo", "--n", "2", "--db", str(tmp_path / "d.db")]) == 0
    assert seen == [str(tmp_path / "state")]
    assert [type(r).__name__ for r in fake.requests][:2] == ["PrepareHostsRequest", "BuildRequest"]
    assert len(fake.requests) == 11


def test_diff_as_json_shows_the_kernel_command_line_as_the_variants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    assert main(["diff", "thp", "guest-thp-never", "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert [c for c in changes if c["kind"] != "identity"] == [
        {
            "kind": "variant",
            "path": "/domain/os/cmdline/text()",
            "a": "root=/dev/vda rw console=ttyS0 quiet",
            "b": "root=/dev/vda rw console=ttyS0 quiet transparent_hugepage=never",
            "by": "guest-thp-never",
        }
    ]
