"""thp: guest RAM left to the host's transparent huge pages (the default)."""

from lab.guests.variant import TransparentHugePages

VARIANT = TransparentHugePages(
    "thp", "no <memoryBacking>: guest memory uses the host's transparent huge pages"
)
