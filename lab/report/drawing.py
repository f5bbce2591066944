"""The report's figures drawn in worker processes while the page is written (or here)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar

# Each workload·metric's figures are drawn in worker processes while this one computes the
# tables and writes the rest of the page: a figure costs a few tenths of a second of
# matplotlib's layout and drawing whatever its samples, and the report has dozens. The
# workers draw PNG bytes only; this process writes every file, so an error writing one
# (a full disk) is raised here, as before. Forked: they start with matplotlib imported.
PARALLEL_TASKS = 2  # below this many, everything is drawn here
Drawn = list[tuple[str, bytes, str]]  # (name, PNG, caption) of each figure
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Later(Protocol[T_co]):
    def result(self) -> T_co: ...


class Here(Generic[T]):
    """What a pool's future would give, computed here when it is asked for."""

    def __init__(self, call: Callable[..., T], *args: Any) -> None:
        self.call, self.args = call, args

    def result(self) -> T:
        return self.call(*self.args)


def later(pool: ProcessPoolExecutor | None, call: Callable[..., T], *args: Any) -> Later[T]:
    return Here(call, *args) if pool is None else pool.submit(call, *args)


@contextmanager
def figure_pool(count: int) -> Iterator[ProcessPoolExecutor | None]:
    workers = min(count, len(os.sched_getaffinity(0)))
    if (
        count < PARALLEL_TASKS
        or workers < 2
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        yield None
        return
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
