"""Base guest images: a folder per recipe hash (``image``), built from ``images/NAME``
(``build``), old ones pruned (``prune``). May import: ``lab.host``, ``lab.domainxml``,
``lab.core``.
"""
