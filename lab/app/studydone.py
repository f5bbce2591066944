"""Which blocks of a study the store holds complete, so that ``lab study run`` run again skips
them instead of bringing their pair up (and aging the host) only for every run to find it has
nothing left to do.

A block's runs are found by the key ``lab run`` would give them (:func:`lab.run.runstate.run_key`:
the study, the workload and its resolved parameters, the pair's guest names, n, the schedule
and the rest of the request, the host age and the replicate), and a run is done when
``lab runs`` would call it complete or stopped early by its rule (``RunSummary.finished``).
A workload with a sweep (one run per value) is never taken for done here: the block runs, and
its runs resume.
"""

from __future__ import annotations

from pathlib import Path

from lab.app.run import RunRequest
from lab.app.runs import summaries
from lab.core.errors import LabError
from lab.guests.twins import guest_names
from lab.run.runstate import run_key
from lab.run.workload import Workload
from lab.store import Store


def request_key(request: RunRequest, workload: Workload, pair: tuple[str, str]) -> str:
    """The key of the run ``request`` makes on ``pair`` (no sweep): as the controller makes it."""
    return run_key(
        request.study, workload.name, workload.resolve(dict(request.params)),
        guest_names(list(pair)), request.n, request.schedule, request.until,
        request.swap_every, None, request.reboot_every, request.host_age, request.replicate,
    )  # fmt: skip


def block_done(db: str, pair: tuple[str, str], requests: list[tuple[RunRequest, Workload]]) -> bool:
    """Whether every run the block's ``requests`` make on ``pair`` is done in store ``db``;
    False where the store is missing or unreadable (the block then runs, and resumes)."""
    if not Path(db).exists() or any(request.sweep for request, _ in requests):
        return False
    keys = {request_key(request, workload, pair) for request, workload in requests}
    study = {request.study for request, _ in requests}
    try:
        with Store.open(Path(db), create=False) as store:
            finished = {s.key for name in study for s in summaries(store, name) if s.finished}
    except (LabError, OSError):
        return False
    return keys <= finished
