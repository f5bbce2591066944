"""``lab import``: results people already have, brought into the store with their file:line.

``tabular`` reads CSV and JSONL (one sample per row), ``appended`` splits the files that
hand-run loops leave behind (bash ``time`` output, sysbench memory reports, iperf3 text or
``-J`` JSON appended run after run) and hands each run to :mod:`lab.parsers.tools`;
``ingest`` detects the format and stores everything in one transaction, or nothing.
"""
