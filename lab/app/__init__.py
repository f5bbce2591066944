"""The application: what a user asks for, as actions the commands call.

Each action takes the :class:`~lab.core.context.Context` and a frozen request and returns a
result for the command to print: ``up`` (pairs, one outcome per host), ``run``
(``run_workload``, a sweep too), ``analyse`` (the samples and comparisons ``lab compare``
and ``lab report`` share), ``report``, ``plan`` (a sweep's samples per value), ``down``,
``prepare``, ``image`` (``build``), ``studyrun`` (``run_study``) and ``demo``, which call
the others in this process rather than building command lines. A study file (``study``) is
the whole design of a study. May import: every layer below (``lab.run``, ``lab.guests``,
``lab.report``, ``lab.store`` and the rest); never ``lab.commands`` or ``lab.cli``
(``lint-imports`` checks it).
"""
