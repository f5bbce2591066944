"""Static huge page pools as ``lab host prepare --hugepages`` asks for them by default.

A constant of the core so that the command's option (``lab.commands.host``) and the host's
pools (``lab.host.hugepages``) share it without the command reaching into ``lab.host``.
"""

from __future__ import annotations

DEFAULT_HUGEPAGES = "1G:2"  # `lab host prepare --hugepages`: SIZE:COUNT[@NODE],...
