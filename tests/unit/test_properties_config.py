"""Property tests of ``lab.toml`` loading: any file gives a Config or a ConfigError naming it.

Generated well-formed files load to exactly the values written; a wrong type or an unknown
key is refused with the file and the key in the message.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.config import Config, config_from_mapping, load_config
from lab.core.errors import ConfigError

KEYS = [f.name for f in fields(Config)]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOML_VALUES = st.recursive(
    st.none().map(lambda _: "") | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip
# Values that pass every key's check, by key.
GOOD: dict[str, st.SearchStrategy[Any]] = {
    "libvirt_uri": st.sampled_from(["qemu:///system", "test:///default", "qemu+ssh://h/system"]),
    "state_dir": st.text(min_size=1, max_size=30),
    "image_dir": st.text(min_size=1, max_size=30),
    "image": st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True),
    "network": st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
    "subnet": st.sampled_from(["198.18.0.0/24", "10.9.0.0/16", "192.168.77.0/24"]),
    "vcpus": st.integers(1, 512),
    "memory": st.builds(lambda n, s: f"{n}{s}", st.integers(1, 4096), st.sampled_from("KMG")),
    "reserve_host_cpus": st.integers(0, 64),
    "accelerator": st.sampled_from(["auto", "kvm", "qemu"]),
    "tcg_cpu": st.sampled_from(["default", "maximum"]),
    "store": st.text(min_size=1, max_size=30),
    "boot_timeout": st.integers(1, 7 * 24 * 3600),
    "guest_timeout": st.integers(1, 7 * 24 * 3600),
    "variant_dirs": st.lists(
        st.from_regex(r"/[a-z0-9_-]{1,10}(/[a-z0-9_-]{1,10})?", fullmatch=True), max_size=3
    ),
    "workload_dirs": st.lists(st.from_regex(r"/[a-z0-9_-]{1,10}", fullmatch=True), max_size=3),
    "hosts": st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(lambda n: n != "local"),
        st.builds(
            lambda user, host, port: f"qemu+ssh://{user}@{host}{port}/system",
            st.sampled_from(["root", "lab"]),
            st.sampled_from(["h", "10.0.0.2", "rack2.example"]),
            st.sampled_from(["", ":2222"]),
        ),
        max_size=3,
    ),
}


def toml_value(value: Any) -> str:
    """A JSON string or integer is a TOML one, but for the escapes TOML lacks or needs; a
    table is written inline."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def test_every_key_has_a_generator() -> None:
    assert sorted(GOOD) == sorted(KEYS)


@FAST
@given(st.text(max_size=200))
def test_any_file_loads_or_is_a_config_error_naming_it(tmp_path_factory: Any, text: str) -> None:
    path = Path(tmp_path_factory.mktemp("toml")) / "lab.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        config = load_config(path)
    except ConfigError as err:
        assert str(path) in str(err)
        return
    assert isinstance(config, Config)


@FAST
@given(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), TOML_VALUES, max_size=5))
def test_any_mapping_is_a_config_or_a_config_error_naming_the_key(data: dict[str, Any]) -> None:
    try:
        config = config_from_mapping(data, source="lab.toml")
    except ConfigError as err:
        assert str(err).startswith("lab.toml: ")
        assert any(repr(key) in err.message for key in data)
        return
    for key, value in data.items():
        assert getattr(config, key) == value


@FAST
@given(st.fixed_dictionaries({}, optional=GOOD))
def test_generated_files_load_to_their_values(tmp_path_factory: Any, data: dict[str, Any]) -> None:
    path = Path(tmp_path_factory.mktemp("toml")) / "lab.toml"
    path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in data.items()))
    config = load_config(path)
    for f in fields(Config):
        assert getattr(config, f.name) == data.get(f.name, getattr(Config(), f.name))


@FAST
# A list of integers, never empty: an empty list is a valid list of folders.
@given(
    st.sampled_from(KEYS),
    st.booleans() | st.floats(allow_nan=False) | st.lists(st.integers(), min_size=1),
)
def test_a_wrong_type_names_the_file_and_the_key(key: str, value: Any) -> None:
    try:
        config_from_mapping({key: value}, source="/etc/lab.toml")
    except ConfigError as err:
        assert err.message.startswith(f"/etc/lab.toml: key {key!r} must be a ")
        return
    raise AssertionError(f"{key} = {value!r} was accepted")
