"""Bad lab.toml contents and files that are not what they claim (images, imports) are
refused with one line that says what to do, and nothing changes on the host (the checks of
:func:`tests.unit.test_bad_input.lab_env`)."""

from __future__ import annotations

import pytest

from tests.unit.test_bad_input import Lab

# -- lab.toml ----------------------------------------------------------------------------------


def test_lab_toml_unknown_key(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab_env.config.write_text(lab_env.config.read_text() + 'memroy = "1G"\n')
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g")
    assert lab_env.status == 2
    assert err.startswith(f"lab: error: {lab_env.config}: unknown key 'memroy'. Known keys: ")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('vcpus = "two"', "key 'vcpus' must be a int, not str ('two')"),
        ("memory = 1024", "key 'memory' must be a str, not int (1024)"),
        ("vcpus = 0", "key 'vcpus' = 0: must be 1 or more"),
        ('accelerator = "xen"', "key 'accelerator' = 'xen': must be one of 'auto', 'kvm', 'qemu'"),
        ('subnet = "10.0.0.1/8"', "key 'subnet' = '10.0.0.1/8': cannot use subnet"),
        ("vcpus = ", "not valid TOML"),
    ],
)
def test_lab_toml_wrong_type_or_value(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    lab_env.config.write_text(lab_env.config.read_text() + line + "\n")
    err = lab_env.lab(capsys, "up", "--pair", "thp,shp1g")
    assert lab_env.status == 2
    assert err.startswith(f"lab: error: {lab_env.config}: ")
    assert message in err


# -- files -------------------------------------------------------------------------------------


def test_image_import_of_a_missing_file(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    missing = lab_env.root / "nope.qcow2"
    err = lab_env.lab(capsys, "image", "import", str(missing))
    assert err.startswith(f"lab: error: {missing} does not exist or is not a file. Give the path")


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"\0" * 4096, "raw"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "PNG"),
        (b"KDMV" + b"\1" * 64, "vmdk"),
        (b"QFI", "raw"),
        (b"", "raw"),
    ],
)
def test_image_import_of_a_file_that_is_not_qcow2(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], content: bytes, kind: str
) -> None:
    path = lab_env.root / "disk.img"
    path.write_bytes(content)
    lab_env.made.add("disk.img")
    err = lab_env.lab(capsys, "image", "import", str(path))
    assert err == (
        f"lab: error: {path} is a {kind} image, not qcow2 (a qcow2 file starts with QFI\\xfb)."
        f" Convert it first: qemu-img convert -O qcow2 {path} disk.qcow2"
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (bytes(range(256)) * 8, "it holds a NUL byte at offset 0"),
        (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "it holds a NUL byte at offset 8"),
        (b"variant,workload,metric,value\n\xff\xfe\n", "byte 0xff at offset 30 is not UTF-8"),
    ],
)
def test_import_of_binary_junk(
    lab_env: Lab, capsys: pytest.CaptureFixture[str], content: bytes, why: str
) -> None:
    path = lab_env.root / "results.csv"
    path.write_bytes(content)
    lab_env.made.add("results.csv")
    err = lab_env.lab(capsys, "import", str(path))
    assert lab_env.status == 2
    assert err.startswith(f"lab: error: {path} is not a text results file ({why}); nothing was")
    assert not lab_env.store.exists()


def test_import_of_random_bytes(lab_env: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    import random

    path = lab_env.root / "random.bin"
    path.write_bytes(random.Random(6).randbytes(10_000))
    lab_env.made.add("random.bin")
    err = lab_env.lab(capsys, "import", str(path))
    assert f"{path} is not a text results file" in err and "nothing was stored" in err


def test_import_of_a_malformed_file_opens_no_store(
    lab_env: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    path = lab_env.root / "results.csv"
    path.write_text("variant,workload,metric,value\nthp,w,m,fast\n")
    lab_env.made.add("results.csv")
    err = lab_env.lab(capsys, "import", str(path))
    assert err.startswith(f"lab: error: {path}:2: value 'fast' is not a number; nothing was")
    assert not lab_env.store.exists()
