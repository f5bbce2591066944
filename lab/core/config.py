"""User defaults from ``lab.toml``: every key documented, unknown keys and wrong types refused.

Looked up in order: ``--config PATH``, ``$LAB_CONFIG``, ``./lab.toml``,
``$XDG_CONFIG_HOME/lab/lab.toml`` (``~/.config/lab/lab.toml``). Missing file: the defaults
below. ``lab config`` prints them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from lab.core.errors import ConfigError, LabError
from lab.core.hosturi import LOCAL, parse_uri
from lab.core.names import check_name
from lab.core.paths import RESULTS_DIR
from lab.core.tomlfile import parse, read_text
from lab.core.units import parse_size_kib, parse_subnet


def _doc(text: str) -> dict[str, str]:
    return {"doc": text}


@dataclass(frozen=True)
class Config:
    libvirt_uri: str = field(default="qemu:///system", metadata=_doc("libvirt connection URI"))
    state_dir: str = field(
        default="/var/lib/lab",
        metadata=_doc("where guest disks, seeds, console logs and the lab's SSH keys live"),
    )
    image_dir: str = field(
        default="/var/cache/lab/images",
        metadata=_doc("where built base images are cached, one folder per recipe hash"),
    )
    image: str = field(default="debian12", metadata=_doc("base image recipe (images/NAME)"))
    network: str = field(default="lab", metadata=_doc("name of the lab's isolated libvirt network"))
    subnet: str = field(
        default="198.18.0.0/24",
        metadata=_doc("IPv4 subnet of the lab network; the host takes the first address"),
    )
    vcpus: int = field(default=1, metadata=_doc("vCPUs per guest"))
    memory: str = field(default="1G", metadata=_doc("memory per guest (binary suffixes)"))
    reserve_host_cpus: int = field(
        default=1, metadata=_doc("host CPUs kept free of vCPUs for the host and emulator threads")
    )
    accelerator: str = field(
        default="auto",
        metadata=_doc("'auto' (KVM when it can run guests, else TCG), 'kvm' or 'qemu' (TCG)"),
    )
    tcg_cpu: str = field(
        default="default",
        metadata=_doc(
            "guest CPU model under TCG: 'default' (QEMU's qemu64) or 'maximum' (every feature"
            " QEMU can emulate); on KVM guests always get the host's CPU"
        ),
    )
    store: str = field(
        default=str(RESULTS_DIR / "lab.db"),
        metadata=_doc("the SQLite result store ($LAB_DB, then --db, over it)"),
    )
    boot_timeout: int = field(
        default=600, metadata=_doc("seconds a guest may take to become ready")
    )
    guest_timeout: int = field(
        default=300,
        metadata=_doc(
            "seconds a run waits for a guest that stopped answering (destroyed, replaced,"
            " unreachable) before it stops with status 4 (lab run --guest-timeout)"
        ),
    )
    variant_dirs: list[str] = field(
        default_factory=list,
        metadata=_doc(
            "more folders of variant plug-ins (NAME.py defining VARIANT), read after the"
            " shipped domains/ (a later folder overrides a variant of the same name);"
            " relative to lab.toml's folder"
        ),
    )
    workload_dirs: list[str] = field(
        default_factory=list,
        metadata=_doc(
            "more folders of workload plug-ins (NAME.py defining WORKLOAD), read after the"
            " shipped lab/run/workloads/ (a later folder overrides a workload of the same"
            " name); relative to lab.toml's folder"
        ),
    )
    hosts: dict[str, str] = field(
        default_factory=dict,
        metadata=_doc(
            "more hosts, a table of NAME = libvirt URI, e.g. [hosts] rack2 ="
            " 'qemu+ssh://root@rack2/system'; this machine is always 'local' (libvirt_uri)"
        ),
    )

    def __post_init__(self) -> None:
        # Also for `replace(config, image=args.image)`: a bad value from the command line.
        for f in fields(self):
            if f.name in _CHECKS and getattr(self, f.name) != f.default:
                check_value(f.name, getattr(self, f.name))

    def describe(self) -> list[tuple[str, str, str]]:
        """(key, value, documentation) for every key."""
        return [(f.name, repr(getattr(self, f.name)), f.metadata["doc"]) for f in fields(self)]


def find_config_file(explicit: str | None, cwd: Path | None = None) -> Path | None:
    return config_origin(explicit, cwd)[0]


def config_origin(
    explicit: str | None, cwd: Path | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Path | None, str]:
    """The lab.toml to read (None: none, the defaults) and why that one, as ``lab config``
    says it: ``--config``, then ``$LAB_CONFIG``, then ``./lab.toml``, then
    ``$XDG_CONFIG_HOME/lab/lab.toml`` (``~/.config`` when XDG_CONFIG_HOME is unset)."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit), "named by --config"
    if env.get("LAB_CONFIG"):
        return Path(env["LAB_CONFIG"]), "named by $LAB_CONFIG"
    candidates: list[tuple[Path, str]] = []
    with contextlib.suppress(OSError):  # the current folder was removed: no lab.toml there
        candidates.append(((cwd or Path.cwd()) / "lab.toml", "found in the current folder"))
    xdg = env.get("XDG_CONFIG_HOME", "")
    home = os.path.expanduser("~")
    if os.path.isabs(xdg):  # the XDG spec: a relative value is to be ignored
        candidates.append((Path(xdg) / "lab/lab.toml", "found in $XDG_CONFIG_HOME/lab"))
    elif home != "~":  # no home (no $HOME, no passwd entry): no ~/.config to look in
        candidates.append((Path(home) / ".config/lab/lab.toml", "found in ~/.config/lab"))
    for candidate, why in candidates:
        try:
            if candidate.is_file():
                return candidate, why
        except OSError as err:  # a folder on the way that cannot be searched (EACCES)
            raise ConfigError(
                f"cannot look for {candidate}: {err.strerror or err}",
                hint="Make that folder readable, or name a lab.toml with --config or $LAB_CONFIG",
            ) from None
    looked = ", ".join(str(c) for c, _ in candidates) or "nowhere"
    return None, f"no lab.toml (looked for {looked}): the defaults"


def load_config(path: Path | None, environ: Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (None: defaults). Unknown keys and wrong types name the file and key.

    Where the file sets no ``libvirt_uri``, libvirt's own ``LIBVIRT_DEFAULT_URI`` (from
    ``environ``, the process's environment by default) is this machine's URI, as for virsh.
    ``LAB_DB`` names the store over the file's ``store`` (``--db`` still over both).
    """
    data: dict[str, Any] = {}
    if path is not None:
        data = parse(read_text(path, "config file"), str(path))
    env = os.environ if environ is None else environ
    uri = env.get("LIBVIRT_DEFAULT_URI")
    if uri and "libvirt_uri" not in data:
        config_from_mapping({"libvirt_uri": uri}, source="LIBVIRT_DEFAULT_URI")  # checks it
        data = {**data, "libvirt_uri": uri}
    if env.get("LAB_DB"):  # the store for every command, as --db: over lab.toml's
        data = {**data, "store": env["LAB_DB"]}
    config = config_from_mapping(data, source=str(path) if path else "config")
    if path is None:
        return config
    return replace(
        config,
        variant_dirs=[_beside(d, path.parent) for d in config.variant_dirs],
        workload_dirs=[_beside(d, path.parent) for d in config.workload_dirs],
    )


# Keys that list folders: read as a list of strings, each relative to lab.toml's folder.
FOLDER_LISTS = ("variant_dirs", "workload_dirs")


def _beside(folder: str, base: Path) -> str:
    """A folder lab.toml names: absolute, from the home directory (``~``), or relative to
    the folder of lab.toml itself, so a project's lab.toml can sit beside its plug-ins."""
    expanded = os.path.expanduser(folder)
    return expanded if os.path.isabs(expanded) else str(base / expanded)


def config_from_mapping(data: dict[str, Any], source: str = "config") -> Config:
    known = {f.name: f for f in fields(Config)}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key {key!r}", hint=f"Known keys: {', '.join(sorted(known))}"
            )
        if key == "hosts":
            check_hosts(value, source)
            changes[key] = dict(value)
            continue
        if key in FOLDER_LISTS:
            if not isinstance(value, list) or not all(isinstance(d, str) and d for d in value):
                raise ConfigError(
                    f"{source}: key {key!r} must be a list of folders, not {value!r}",
                    hint=f"e.g. {key} = ['plugins']; {known[key].metadata['doc']}",
                )
            changes[key] = list(value)
            continue
        expected = type(known[key].default)
        if type(value) is not expected:
            raise ConfigError(
                f"{source}: key {key!r} must be a {expected.__name__},"
                f" not {type(value).__name__} ({value!r})",
                hint=f"{key}: {known[key].metadata['doc']}; default {known[key].default!r}",
            )
        check_value(key, value, source)
        changes[key] = value
    return replace(Config(), **changes)


def check_hosts(value: Any, source: str = "config") -> None:
    """The ``[hosts]`` table: plain names to libvirt URIs; 'local' is this machine's own."""

    where = f"{source}: key 'hosts'"
    example = "[hosts]\nrack2 = 'qemu+ssh://root@rack2/system'"
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table of NAME = URI", hint=f"e.g. {example}")
    for name, uri in value.items():
        try:
            check_name("host", name, where)
        except LabError as err:
            raise ConfigError(err.message, hint=err.hint) from None
        if name == LOCAL:
            raise ConfigError(
                f"{where}: may not name a host {LOCAL!r}",
                hint="This machine is always 'local' (its URI is the key libvirt_uri)",
            )
        if not isinstance(uri, str):
            raise ConfigError(f"{where}: {name} must be a URI string", hint=example)
        parse_uri(uri, where=f"{where}: {name}")


def _at_least(low: int, high: int) -> Any:
    def check(value: Any) -> None:
        if value < low:
            raise ValueError(f"must be {low} or more")
        if value > high:
            raise ValueError(f"must be {high:,} or less")

    return check


def _one_of(*choices: str) -> Any:
    def check(value: Any) -> None:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(map(repr, choices))}")

    return check


def _name(kind: str) -> Any:
    def check(value: Any) -> None:

        check_name(kind, value)

    return check


def _size(value: Any) -> None:

    parse_size_kib(value)


def _subnet(value: Any) -> None:

    parse_subnet(value)


# KVM on x86 takes at most 4096 vCPUs a guest; a timeout past a week is a typo, and one past
# 2^31 s overflows the waits it is handed to.
_MAX_VCPUS = 4096
_MAX_SECONDS = 7 * 24 * 3600

# Values a type alone does not rule out: each check raises ValueError, TypeError or a LabError.
_CHECKS: dict[str, Any] = {
    "image": _name("image"),
    "network": _name("network"),
    "vcpus": _at_least(1, _MAX_VCPUS),
    "reserve_host_cpus": _at_least(0, _MAX_VCPUS),
    "boot_timeout": _at_least(1, _MAX_SECONDS),
    "guest_timeout": _at_least(1, _MAX_SECONDS),
    "memory": _size,
    "accelerator": _one_of("auto", "kvm", "qemu"),
    "tcg_cpu": _one_of("default", "maximum"),
    "subnet": _subnet,
}


def check_value(key: str, value: Any, source: str = "") -> None:
    """Refuse a value of the right type that cannot work, naming ``source`` and ``key``."""
    check = _CHECKS.get(key)
    if check is None:
        return
    try:
        check(value)
    except (ValueError, TypeError, LabError) as err:
        reason = err.message if isinstance(err, LabError) else str(err)
        field = next(f for f in fields(Config) if f.name == key)
        hint = getattr(err, "hint", None) or (
            f"{key}: {field.metadata['doc']}; default {field.default!r}"
        )
        where = f"{source}: key {key!r} = {value!r}" if source else f"{key} {value!r}"
        raise ConfigError(f"{where}: {reason}", hint=hint) from None
