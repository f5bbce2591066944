"""What runs inside a guest: the run protocol and the runner that follows it.

Standard library only: a guest has nothing but ``python3`` (3.11), so this package may import
no other part of ``lab`` except :mod:`lab.parsers.tools` (import-linter checks it). The host
imports the same modules, so the run's spec and its journal are defined once, here. The
controller ships the package into each guest as one zipapp (``lab/run/shipping.py``) and runs
``python3 runner-HASH.pyz start|status|stop --dir DIR --run-key KEY ...``.

- :mod:`~lab.inguest.spec`: SPEC.json, what one start of the runner runs.
- :mod:`~lab.inguest.journal`: the journal's lines, their version, encoding and decoding.
- :mod:`~lab.inguest.journalfile`: the runner's append-only journal and its durability rule.
- :mod:`~lab.inguest.history`: what a journal says already happened, for resuming.
- :mod:`~lab.inguest.child`: one command started, timed, reaped, or stopped.
- :mod:`~lab.inguest.daemon`: detaching from the SSH session, the run key's lock.
- :mod:`~lab.inguest.runner`: the iterations of one start.
- :mod:`~lab.inguest.cli`: the command line (``start``, ``status``, ``stop``).
"""
