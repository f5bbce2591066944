"""What every command that reads or writes the store shares: ``--db``, ``--study``,
``--warmup`` and the baseline order (the samples they select: :mod:`lab.app.analyse`)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.core.context import Context
from lab.store.db import Store


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
    """An argparse ``type`` for ``--warmup``: its text checked by ``parse_warmup``."""

    def parse(text: str) -> str:
        from lab.stats.discard import parse_warmup  # deferred: heavy (scipy)

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


def open_store(args: argparse.Namespace, ctx: Context, create: bool = True) -> Store:
    """The store --db names (or lab.toml's); ``create=False`` for commands that only read."""
    return Store.open(store_path(args, ctx), create=create)


@contextmanager
def open_store_all_or_nothing(args: argparse.Namespace, ctx: Context) -> Iterator[Store]:
    """:func:`open_store`, for a command that stores all or nothing (``lab import``): a store
    that it created is removed again when it fails, and so are the folders made for it, so a
    failed first import leaves no file behind."""
    path = store_path(args, ctx)
    try:
        made = [] if path.exists() else [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        folder = path.parent
        while made and not folder.exists():  # the folders Store.open makes, deepest first
            made.append(folder)
            folder = folder.parent
    except OSError:  # a folder that cannot be searched: Store.open says so, and makes nothing
        made = []
    store = open_store(args, ctx)
    try:
        yield store
    except BaseException:
        store.close()
        for leftover in made:
            if leftover.is_dir():
                with contextlib.suppress(OSError):  # not empty: something else put files there
                    leftover.rmdir()
            else:
                leftover.unlink(missing_ok=True)
        raise
    store.close()


def variant_order(store: Store, study: str | None = None) -> list[str]:
    """Variants in the order their first guest was added: the first is the baseline A."""
    order: list[str] = []
    for guest in sorted(store.guests(study), key=lambda g: g.id):
        if guest.variant not in order:
            order.append(guest.variant)
    return order
