"""Runs: workloads on the twins, every attempt stored as it happens.

What a workload is (``workload``) and the plug-ins (``workloads/``), the host's side of a
run (``hostside``), the journal the in-guest runner writes (``journal``), the controller
that streams it into the store (``controller``, built on ``runstate``, ``trouble``,
``ownership``, ``ingesting`` and ``steps``), a sweep's runs made by one command
(``sweep``), counterbalanced placement (``placement``), one run per lab (``lock``) and its
progress (``progress``). May import: ``lab.guests`` and everything below it, ``lab.store``,
``lab.stats``, ``lab.parsers``.
"""
