"""The host side of the lab: facts read off a host, and the changes `lab host prepare` makes.

``facts`` holds pure parsers; ``topology`` the host as libvirt describes it; ``accel``
the choice of KVM or TCG; ``remote`` runs a host's commands over SSH (the same interface
as ``lab.core.hostexec``); ``hugepages``, ``network``, ``nfs`` and ``daemons`` each own
one kind of change; ``prepare`` orchestrates them and records what it did so ``release``
undoes exactly that; ``check`` reports whether a pair can be brought up. May import:
``lab.core``.
"""
