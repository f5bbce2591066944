"""shp1g: guest RAM backed by static 1 GiB huge pages."""

from lab.guests.variant import StaticHugePages

VARIANT = StaticHugePages(
    "shp1g", "<memoryBacking> with static 1 GiB huge pages", page_kib=1024 * 1024
)
