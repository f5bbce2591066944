"""thp-prealloc: as thp, with all guest RAM allocated when QEMU starts."""

from lab.guests.variant import TransparentHugePages

VARIANT = TransparentHugePages(
    "thp-prealloc",
    "<memoryBacking><allocation mode='immediate'/>: host THP, all RAM preallocated",
    prealloc=True,
)
