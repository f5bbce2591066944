"""Workload plug-ins: one file per workload, each defining ``WORKLOAD``.

Files starting with ``_`` hold shared code and are not plug-ins. The registry is
:func:`lab.run.workload.load_workloads`.
"""
