"""The durable result store: one SQLite file holding every attempt and every sample.

The file is opened in WAL mode with ``synchronous=FULL`` and foreign keys on, and each
:meth:`Store.record` call is one short transaction, so a ``SIGKILL`` at any moment leaves
either the whole batch or none of it. Records are immutable: re-recording the same
(run, guest, iteration, attempt) is ignored, which makes re-ingesting a journal idempotent.
``lab import`` writes through :meth:`Store.bulk` (:mod:`lab.store.bulk`) instead: one
transaction for all it imports, so that a failed or killed import leaves nothing either.

Layout (``meta.schema_version``; history in :mod:`lab.store.schema`)::

    study     one named experiment (a study file and its hash)
    guest     a twin guest of a study: its variant, host, domain XML and facts (JSON)
    run       one workload with its parameters, schedule and target iteration count
    metric    what a run measures: name, unit and which direction is better
    iteration every attempt of every iteration, failed ones included, with timing,
              exit status, boot id, the tail of the output and its source (file:line)
    sample    one value per metric, only for attempts that succeeded
    placement which CPU set ("own" or "swapped") a guest ran an iteration on, for runs
              that swap the twins' CPU sets (``lab run --swap-every``)
    warmup    the warm-up declared with a run (``lab run --warmup``): 'auto' or a count of
              iterations to discard after every boot
    sweep     a parameter sweep (``lab run --sweep``) and, in ``sweep_run``, its runs: one
              per value, with the swept parameters' values
    study_design  a factorial study's design as it ran: factors, a fraction's aliases,
              cells, blocks in run order, seed (JSON, ``lab study show``)

Iterations and attempts are numbered from 1.

Schema history: 1 = first version; 2 = the placement table; 3 = the warmup table; 4 and 5 =
a stopping rule's stop and its interval, the environment; 6 = sweeps; 7 = study designs (see
:mod:`lab.store.schema` for the whole history and how to add a version).
"""

from lab.stats.series import Direction, Series
from lab.store.db import Store
from lab.store.records import (
    EXPORT_COLUMNS,
    ExportRow,
    GuestRecord,
    IterationRecord,
    MetricInfo,
    RunRecord,
    StudyRecord,
    SweepRecord,
    SweepRunRecord,
)
from lab.store.schema import SCHEMA_VERSION

__all__ = [
    "EXPORT_COLUMNS",
    "SCHEMA_VERSION",
    "Direction",
    "ExportRow",
    "GuestRecord",
    "IterationRecord",
    "MetricInfo",
    "RunRecord",
    "Series",
    "Store",
    "StudyRecord",
    "SweepRecord",
    "SweepRunRecord",
]
