"""The core: what every other layer works with, and nothing of the lab's own above it.

The one exception root (``errors``), the side effects a command is handed (``context``: the
clock, the host's commands, libvirt, the consoles), user defaults (``config``) and the hosts
they name (``inventory``), sizes and CPU lists as people write them (``units``), a sweep's
axes as people write them (``sweeps``), the names a user chooses (``names``), where the
lab's own files are (``paths``), the huge pages a host gets by default (``hugepages``),
waiting and progress. May import: the standard library and third-party packages only.
"""
