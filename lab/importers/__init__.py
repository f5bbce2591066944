"""``lab import``: results people already have, brought into the store with their file:line.

``inputs`` reads a file or standard input as lines of bounded length; ``tabular`` reads CSV
and ``jsonl`` JSON lines (one sample per row, each field checked by ``rowfields``);
``appended`` splits the files that hand-run loops leave behind (bash ``time`` output, sysbench
memory reports, iperf3 text or ``-J`` JSON appended run after run) and hands each run to
:mod:`lab.parsers.tools`, both as the lines come; ``foreign`` reads other benchmark tools'
results (hyperfine, pyperf, pytest-benchmark, GNU ``time -v``); ``malformed`` collects the
lines they cannot read; ``limits`` says which names and numbers are refused (and how a message
quotes them); ``ingest`` detects the format and stores the samples as they are read, in one
transaction: everything, or nothing; ``identity`` tells an input imported before by its bytes;
``batch`` holds where they go and what waits to be stored.
"""
