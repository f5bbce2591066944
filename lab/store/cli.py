"""What every command that reads or writes the store shares: ``--db`` and the baseline order."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.context import Context
from lab.store.db import Store


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", metavar="PATH", help="the result store (default: the `store` key of lab.toml)"
    )


def add_study_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", metavar="NAME", help="only this study (default: every study)")


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
