"""The host side of the lab: facts read off the host, and the changes `lab host prepare` makes.

``facts`` holds pure parsers; ``hugepages``, ``network``, ``nfs`` and ``daemons`` each own
one kind of change; ``prepare`` orchestrates them and records what it did so ``release``
undoes exactly that; ``check`` reports whether a pair can be brought up.
"""
