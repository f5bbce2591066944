"""Pure parsers of benchmark tools' output.

:mod:`lab.parsers.tools` uses only the standard library: it is also copied into each guest,
beside the in-guest runner, which has nothing but ``python3``.
"""
