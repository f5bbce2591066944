"""What several commands read from their options the same way, as the app's requests.

Not a command (it registers nothing): the commands that share options import it instead
of each other.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.app.analyse import Selection


THRESHOLD_HELP = (
    "smallest change that matters: a percentage of A's mean (1%%), or a value in the metric's"
    " own unit (0.5), judged on the difference B − A; a mean of 0 or below is always judged on"
    " the difference"
)


def selection(args: argparse.Namespace) -> Selection:
    """The samples ``--db``, ``--study``, ``--run``, ``--sweep``, ``--workload``, ``--metric``,
    ``--warmup`` and ``--baseline`` select (``lab compare`` and ``lab report`` take them alike)."""
    from lab.app.analyse import Selection  # deferred: the parser is built for every command

    return Selection(
        db=args.db, study=args.study, workload=args.workload, metric=args.metric,
        warmup=args.warmup, baseline=tuple(args.baseline.split(",")) if args.baseline else (),
        run=args.run_key, against=getattr(args, "against", None),
        sweep=getattr(args, "sweep_key", None),
        from_runs=tuple(getattr(args, "factor_from_runs", None) or ()),
    )  # fmt: skip
