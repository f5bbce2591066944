"""What every command that reads or writes the store shares: ``--db``, ``--study``,
``--warmup`` and the baseline order."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lab.core.context import Context
from lab.core.errors import UsageError
from lab.stats.discard import cut_warmup, describe_rule, parse_warmup
from lab.store.db import Store

if TYPE_CHECKING:
    from lab.stats.discard import Trimmed


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", metavar="PATH", help="the result store (default: the `store` key of lab.toml)"
    )


def add_study_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", metavar="NAME", help="only this study (default: every study)")


def warmup_rule(allow_none: bool) -> Callable[[str], str]:
    """An argparse ``type`` for ``--warmup``: its text checked by ``parse_warmup``."""

    def parse(text: str) -> str:

        try:
            return parse_warmup(text, allow_none=allow_none)
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


def store_path(args: argparse.Namespace, ctx: Context) -> Path:
    return Path(getattr(args, "db", None) or ctx.config.store)


def open_store(args: argparse.Namespace, ctx: Context) -> Store:
    return Store.open(store_path(args, ctx))


def variant_order(store: Store, study: str | None = None) -> list[str]:
    """Variants in the order their first guest was added: the first is the baseline A."""
    order: list[str] = []
    for guest in sorted(store.guests(study), key=lambda g: g.id):
        if guest.variant not in order:
            order.append(guest.variant)
    return order


def series_without_warmup(store: Store, args: argparse.Namespace) -> Trimmed:
    """The series ``--workload``, ``--metric`` and ``--study`` select, without their warm-up:
    ``--warmup`` when given, else what each run declared (``lab.stats.discard``)."""

    series = store.values(workload=args.workload, metric=args.metric, study=args.study)
    trimmed = cut_warmup(
        series,
        store.sample_boots(args.workload, args.metric, args.study),
        store.warmup_declarations(args.study),
        {r.id: r.key for r in store.runs(args.study)},
        args.warmup,
    )
    for before, after in zip(series, trimmed.series, strict=True):
        if before.values.size >= 2 > after.values.size:
            cut = trimmed.cuts[(before.study, before.workload, before.metric)]
            rules = ", ".join(sorted({describe_rule(a.rule) for a in cut.arms}))
            raise UsageError(
                f"{before.workload} · {before.metric}: discarding the warm-up ({rules}) leaves"
                f" {before.label} {after.values.size} of its {before.values.size} samples",
                hint="Pass --warmup none or a smaller count, or run more iterations",
            )
    return trimmed
