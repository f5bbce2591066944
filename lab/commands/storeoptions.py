"""The options of every command that reads or writes the store: ``--db``, ``--study``,
``--run``, ``--sweep`` and ``--warmup`` (the samples they select: :mod:`lab.app.analyse`).

Not a command (it registers nothing): the commands that take these options import it."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", metavar="PATH", help="the result store (default: the `store` key of lab.toml)"
    )


def add_study_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", metavar="NAME", help="only this study (default: every study)")


def add_run_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run", metavar="KEY", dest="run_key",  # args.run is the command's function
        help="only this run: its key or a unique prefix of it (`lab runs` lists them); needed"
        " where a study holds several runs of one workload, which are never pooled",
    )  # fmt: skip


def add_sweep_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sweep", metavar="KEY", dest="sweep_key",
        help="only this sweep (lab run --sweep): its key or a unique prefix of it (`lab runs`"
        " lists them); needed where a study holds a sweep and other runs of its workload",
    )  # fmt: skip


def warmup_rule(allow_none: bool) -> Callable[[str], str]:
    """An argparse ``type`` for ``--warmup``: its text checked by ``warmup_text``."""

    def parse(text: str) -> str:
        from lab.app.warmup import warmup_text  # deferred: the parser is built for every command

        try:
            return warmup_text(text, allow_none=allow_none)
        except (TypeError, ValueError) as err:
            raise argparse.ArgumentTypeError(f"{text!r} {err}") from None

    return parse


def add_warmup_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warmup", metavar="K|auto|none", type=warmup_rule(allow_none=True),
        help="leave out the warm-up before every statistic: K discards the first K iterations"
        " after every boot of each guest; auto the leading iterations a CUSUM test finds (the"
        " longer of the arms' findings, from both); none keeps every sample. Within a run the"
        " same iterations leave every arm, so pairs stay aligned (default: what each run"
        " declared with lab run --warmup, else none)",
    )  # fmt: skip


def add_factor_from_runs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--factor-from-runs", action="append", choices=("age",), metavar="FACTOR",
        help="age: take the host age each run recorded (lab run --host-age, lab host age) as"
        " a factor of its samples, beside their variants: runs of one pair at several host"
        " ages are fitted as a factorial (variant × age), whose interaction says how much of"
        " B's difference from A comes from the host's age. A study whose [factors] has age"
        " does so by itself",
    )  # fmt: skip
