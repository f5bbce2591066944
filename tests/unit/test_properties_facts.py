"""Property tests of the host (and guest) fact parsers: any text, and generated real-looking text.

On arbitrary text a parser returns its value or raises a LabError (``parse_thp_mode``: the
ValueError it documents), never anything else. Generated files in the kernel's and libvirt's
formats read back to the values they were generated from.
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.errors import LabError
from lab.guests.verify import hugetlb_mappings
from lab.host.accel import cpu_flags
from lab.host.facts import (
    hugetlbfs_mounts,
    parse_meminfo,
    parse_mounts,
    parse_proc_filesystems,
    parse_qemu_conf_hugetlbfs,
    parse_thp_mode,
)

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Pieces of the real formats, so arbitrary text often looks nearly right.
PIECES = st.sampled_from(
    ["MemAvailable:", "HugePages_Free:", " kB", "hugetlbfs", "pagesize=", "1G", "2M", "huge",
     "kernelpagesize_kB=", "N0=", "file=/dev/hugepages", "status:", "errors:", "detail:", "- ",
     "(", "'", "hugetlbfs_mount", " = ", '"', "[", "]", "#", "flags", ":", "never", "[madvise]",
     "nodev", " ", "\t", "\n", "0", "1048576", "x", "²", "\\040"]
)  # fmt: skip
TEXT = st.text(max_size=200) | st.lists(PIECES, max_size=60).map("".join)
WORD = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)


@FAST
@given(TEXT)
def test_no_parser_raises_on_any_text(text: str) -> None:
    assert all(isinstance(v, int) for v in parse_meminfo(text).values())
    assert all(isinstance(m, str) for m in parse_qemu_conf_hugetlbfs(text))
    assert all(isinstance(f, str) and f for f in parse_proc_filesystems(text))
    assert all(isinstance(f, str) for f in cpu_flags(text))
    assert all(m.page_kib > 0 and m.pages >= 0 for m in hugetlb_mappings(text))
    mounts = parse_mounts(text)
    with contextlib.suppress(LabError):  # a hugetlbfs mount with an unreadable pagesize
        assert all(size > 0 for size in hugetlbfs_mounts(mounts))
    with contextlib.suppress(ValueError):  # documented: no [selected] mode
        assert parse_thp_mode(text)


@FAST
@given(st.dictionaries(st.from_regex(r"[A-Za-z][A-Za-z0-9_()]{0,20}", fullmatch=True),
                       st.integers(0, 2**62), max_size=12),
       st.booleans())  # fmt: skip
def test_generated_meminfo_reads_back(values: dict[str, int], hugepage_counts: bool) -> None:
    text = "".join(
        f"{key}:{' ' * 8}{value}"
        + ("" if hugepage_counts and key.startswith("H") else " kB")
        + "\n"
        for key, value in values.items()
    )
    assert parse_meminfo(text) == values


MOUNT_PATH = st.from_regex(r"/[a-z0-9/_-]{0,20}", fullmatch=True)
SIZES = st.sampled_from([("2M", 2048), ("1024M", 1048576), ("1G", 1048576)])


@FAST
@given(st.lists(st.tuples(MOUNT_PATH, st.booleans(), SIZES, WORD), max_size=8))
def test_generated_mounts_read_back(rows: list[tuple[str, bool, tuple[str, int], str]]) -> None:
    lines, want = [], {}
    for target, huge, (size, kib), fstype in rows:
        spaced = target + " dir"  # the kernel writes a space in a path as \040
        if huge:
            lines.append(f"hugetlbfs {spaced.replace(' ', chr(92) + '040')} hugetlbfs "
                         f"rw,relatime,pagesize={size} 0 0")  # fmt: skip
            want.setdefault(kib, []).append(spaced)
        else:
            lines.append(f"{fstype} {target} {fstype} rw,nosuid 0 0")
    mounts = parse_mounts("\n".join(lines))
    assert len(mounts) == len(rows)
    assert hugetlbfs_mounts(mounts) == want


@FAST
@given(st.lists(st.lists(MOUNT_PATH, max_size=3), min_size=1, max_size=4), st.booleans())
def test_generated_qemu_conf_reads_back_the_last_assignment(
    assignments: list[list[str]], multiline: bool
) -> None:
    lines = ['# hugetlbfs_mount = "/commented"', 'user = "root"']
    for paths in assignments:
        quoted = [f'"{p}"' for p in paths]
        if len(paths) == 1 and not multiline:
            lines.append(f"hugetlbfs_mount = {quoted[0]}  # one mount")
        else:
            sep = ",\n    " if multiline else ", "
            lines.append(f"hugetlbfs_mount = [{sep.join(quoted)}]")
    assert parse_qemu_conf_hugetlbfs("\n".join(lines) + "\n") == assignments[-1]
