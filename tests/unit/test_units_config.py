"""Size and CPU-list parsing; lab.toml validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.config import Config, config_from_mapping, load_config
from lab.core.errors import ConfigError, UsageError
from lab.core.units import format_cpuset, format_kib, parse_cpuset, parse_size_kib


@pytest.mark.parametrize(
    ("text", "kib"),
    [
        ("1G", 1048576),
        ("1GiB", 1048576),
        ("512M", 524288),
        ("2048", 2048),
        ("1.5G", 1572864),
        ("4096G", 4096 * 1048576),
        ("64M", 65536),
    ],
)
def test_sizes(text: str, kib: int) -> None:
    assert parse_size_kib(text) == kib


@pytest.mark.parametrize("text", ["", "G", "-1G", "1X", "0", "1.3K"])
def test_bad_sizes_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size_kib(text)


def test_format_kib() -> None:
    assert [format_kib(k) for k in (1048576, 2048, 3)] == ["1G", "2M", "3K"]


def test_cpusets_round_trip() -> None:
    assert parse_cpuset("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpuset([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    for bad in ("3-1", "a", "1-", "^2"):
        with pytest.raises(UsageError):
            parse_cpuset(bad)


def test_config_unknown_key_and_wrong_type_name_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_text('vcpus = 2\nmemroy = "1G"\n')
    with pytest.raises(ConfigError, match=r"lab.toml: unknown key 'memroy'"):
        load_config(path)
    path.write_text('vcpus = "two"\n')
    with pytest.raises(ConfigError, match=r"key 'vcpus' must be a int, not str"):
        load_config(path)
    path.write_text('vcpus = 2\nmemory = "2G"\n')
    config = load_config(path)
    assert (config.vcpus, config.memory, config.network) == (2, "2G", "lab")


def test_every_key_is_documented() -> None:
    rows = Config().describe()
    assert len(rows) >= 10
    assert all(doc.strip() for _, _, doc in rows)
    with pytest.raises(ConfigError):
        config_from_mapping({"reserve_host_cpus": True})


def test_libvirt_default_uri_is_this_machines_uri_unless_lab_toml_sets_one(tmp_path: Path) -> None:
    env = {"LIBVIRT_DEFAULT_URI": "test:///default"}
    assert load_config(None, environ=env).libvirt_uri == "test:///default"
    assert load_config(None, environ={}).libvirt_uri == "qemu:///system"
    toml = tmp_path / "lab.toml"
    toml.write_text('libvirt_uri = "qemu:///session"\n')
    assert load_config(toml, environ=env).libvirt_uri == "qemu:///session"
    toml.write_text('network = "lab2"\n')
    got = load_config(toml, environ=env)
    assert (got.libvirt_uri, got.network) == ("test:///default", "lab2")


def test_plugin_folders_are_relative_to_lab_toml(tmp_path: Path) -> None:
    toml = tmp_path / "project" / "lab.toml"
    toml.parent.mkdir()
    toml.write_text(
        "variant_dirs = ['variants', '/opt/lab/variants']\nworkload_dirs = ['~/lab-workloads']\n"
    )
    config = load_config(toml, environ={})
    assert config.variant_dirs == [str(toml.parent / "variants"), "/opt/lab/variants"]
    assert config.workload_dirs == [str(Path.home() / "lab-workloads")]
    assert Config().variant_dirs == [] and Config().workload_dirs == []
    for bad in ("'plugins'", "[1]", "['']"):
        toml.write_text(f"variant_dirs = {bad}\n")
        with pytest.raises(ConfigError, match=r"key 'variant_dirs' must be a list of folders"):
            load_config(toml, environ={})


@pytest.mark.parametrize(
    ("key", "bound"),
    [("vcpus", "4,096"), ("reserve_host_cpus", "4,096"), ("boot_timeout", "604,800"),
     ("guest_timeout", "604,800")],
)  # fmt: skip
def test_config_numbers_are_bounded_naming_key_and_bound(
    tmp_path: Path, key: str, bound: str
) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(f"{key} = 100000000000000000000\n")
    with pytest.raises(ConfigError, match=rf"key '{key}' = 10+: must be {bound} or less"):
        load_config(path)
