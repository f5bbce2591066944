"""shp2m: guest RAM backed by static 2 MiB huge pages."""

from lab.guests.variant import StaticHugePages

VARIANT = StaticHugePages("shp2m", "<memoryBacking> with static 2 MiB huge pages", page_kib=2048)
