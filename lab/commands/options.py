"""What several commands read from their options the same way, as the app's requests.

Not a command (it registers nothing): the commands that share options import it instead
of each other.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.app.analyse import Selection


def selection(args: argparse.Namespace) -> Selection:
    """The samples ``--db``, ``--study``, ``--run``, ``--workload``, ``--metric``,
    ``--warmup`` and ``--baseline`` select (``lab compare`` and ``lab report`` take them alike)."""
    from lab.app.analyse import Selection  # deferred: the parser is built for every command

    return Selection(
        db=args.db, study=args.study, workload=args.workload, metric=args.metric,
        warmup=args.warmup, baseline=tuple(args.baseline.split(",")) if args.baseline else (),
        run=args.run_key, against=getattr(args, "against", None),
    )  # fmt: skip
