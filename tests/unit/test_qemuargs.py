"""What QEMU was really told: the twins' live command lines (captured here from the pair's
QEMU processes under TCG), compared option by option and classified."""

from __future__ import annotations

from pathlib import Path

from lab.run.qemuargs import (
    CONSEQUENCE,
    IDENTITY,
    UNEXPLAINED,
    VARIANT,
    compare_cmdlines,
    declared_options,
    normalise,
    parse_cmdline,
)

CAPTURES = Path(__file__).parents[1] / "fixtures" / "captures"
THP = (CAPTURES / "qemu-7.2-cmdline-lab-thp-tcg.bin").read_bytes()
SHP = (CAPTURES / "qemu-7.2-cmdline-lab-shp1g-tcg.bin").read_bytes()


def test_a_command_line_is_read_as_flags_with_their_arguments() -> None:
    options = parse_cmdline(SHP)
    raw = [a for a in SHP.decode().split("\0") if a]
    assert options[0].flag == "-name" and options[0].value == "guest=lab-shp1g,debug-threads=on"
    assert sum(1 + bool(o.value) for o in options) == len(raw) - 1  # every argument placed
    assert any(o.flag == "-S" and o.value == "" for o in options)  # a flag without argument


def test_the_twins_differ_in_the_backend_its_consequences_and_their_identity_only() -> None:
    found = compare_cmdlines(parse_cmdline(THP), parse_cmdline(SHP), "lab-thp", "lab-shp1g")
    kinds = {(d.kind, d.option) for d in found}
    assert (VARIANT, "-object pc.ram qom-type") in kinds
    consequences = {d.option for d in found if d.kind == CONSEQUENCE}
    assert {"-object pc.ram prealloc", "-object pc.ram mem-path",
            "-object thread-context tc-pc.ram"} <= consequences  # fmt: skip
    prealloc = next(d for d in found if d.option == "-object pc.ram prealloc")
    assert (prealloc.a, prealloc.b) == ("(absent)", "true") and "preallocated" in prealloc.meaning
    identity = {d.option for d in found if d.kind == IDENTITY}
    assert {"-name", "-uuid", "-device net0", "-netdev hostnet0"} <= identity
    assert not [d for d in found if d.kind == UNEXPLAINED]


def test_anything_else_is_unexplained() -> None:
    more_cpus = SHP.replace(b"1,sockets=1,cores=1,threads=1", b"2,sockets=1,cores=2,threads=1")
    found = compare_cmdlines(parse_cmdline(THP), parse_cmdline(more_cpus), "lab-thp", "lab-shp1g")
    odd = [d for d in found if d.kind == UNEXPLAINED]
    assert [d.option for d in odd] == ["-smp"]


def test_identity_is_the_name_uuids_macs_and_descriptors() -> None:
    assert normalise('{"fd":"33","mac":"52:54:00:d2:90:9b"}', []) == '{"fd":"<fd>","mac":"<mac>"}'
    assert normalise("/var/lib/libvirt/qemu/domain-3-lab-thp/x", ["lab-thp"]) == (
        "/var/lib/libvirt/qemu/<domain>/x"
    )


def test_the_kernel_command_line_is_the_variants_where_one_declares_it() -> None:
    never = THP.replace(
        b"console=ttyS0 quiet\0", b"console=ttyS0 quiet transparent_hugepage=never\0"
    )
    assert never != THP
    found = compare_cmdlines(parse_cmdline(THP), parse_cmdline(never), "lab-thp", "lab-thp")
    assert [(d.kind, d.option) for d in found] == [(UNEXPLAINED, "-append")]
    declared = declared_options(
        {"thp": ("/domain/memoryBacking",), "guest-thp-never": ("/domain/os/cmdline",)}
    )
    assert declared == {"-append": "guest-thp-never"}
    (append,) = compare_cmdlines(
        parse_cmdline(THP), parse_cmdline(never), "lab-thp", "lab-thp", declared
    )
    assert (append.kind, append.b, append.meaning) == (
        VARIANT,
        "root=/dev/vda rw console=ttyS0 quiet transparent_hugepage=never",
        "declared by guest-thp-never",
    )


def test_preallocation_is_the_variants_where_one_declares_it_and_a_consequence_elsewhere() -> None:
    """thp against thp-prealloc (captured from a real pair): libvirt tells QEMU
    ``"prealloc":true`` because thp-prealloc asks for ``<allocation mode='immediate'/>``, so
    it is that variant's delta, not a consequence of hugetlb pages as it is for shp1g."""
    from lab.guests.variants import load_variants

    prealloc = (CAPTURES / "qemu-7.2-cmdline-lab-thp-prealloc-tcg.bin").read_bytes()
    a, b = parse_cmdline(THP), parse_cmdline(prealloc)
    undeclared = compare_cmdlines(a, b, "lab-thp", "lab-thp-prealloc")
    kinds = {d.option: d.kind for d in undeclared if d.kind != IDENTITY}
    assert kinds["-object pc.ram prealloc"] == CONSEQUENCE
    variants = load_variants()
    declared = declared_options({v: variants[v].changes for v in ("thp", "thp-prealloc")})
    found = compare_cmdlines(a, b, "lab-thp", "lab-thp-prealloc", declared)
    # (the thp capture is of an older image: its kernel's paths differ too, unexplained)
    kinds = {d.option: d.kind for d in found if "pc.ram" in d.option}
    assert kinds == {
        "-object pc.ram prealloc": VARIANT,
        "-object pc.ram prealloc-context": CONSEQUENCE,
        "-object thread-context tc-pc.ram": CONSEQUENCE,
    }
    row = next(d for d in found if d.option == "-object pc.ram prealloc")
    assert (row.a, row.b) == ("(absent)", "true")
    assert row.meaning.startswith("declared by thp-prealloc: guest RAM preallocated")
    # shp1g declares only its backing: its preallocation stays libvirt's consequence
    shp = {v: variants[v].changes for v in ("thp", "shp1g")}
    found = compare_cmdlines(a, parse_cmdline(SHP), "lab-thp", "lab-shp1g", declared_options(shp))
    assert next(d for d in found if d.option == "-object pc.ram prealloc").kind == CONSEQUENCE


def test_a_long_name_cut_in_libvirts_domain_folder_is_the_guests_identity() -> None:
    # a cell's guest name is longer than the 20 characters libvirt keeps in domain-N-NAME:
    # its master key's path differed between the twins and read as unexplained
    names = ["lab-page-thp.guest-thp-never", "lab-page-thp.prealloc-on"]
    a = '{"file":"/var/lib/libvirt/qemu/domain-30-lab-page-thp.guest-t/master-key.aes"}'
    b = '{"file":"/var/lib/libvirt/qemu/domain-31-lab-page-thp.preallo/master-key.aes"}'
    assert normalise(a, names[:1]) == normalise(b, names[1:])
    assert "<domain>" in normalise(a, names[:1])
