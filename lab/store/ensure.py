"""The store's rows that name what was run: studies, guests, runs and sweeps, each found by
what identifies it or created (``ensure_*``), and refused where it contradicts what is
stored (a study from another file, a guest of another variant)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.core.errors import StoreError
from lab.store.records import MetricInfo


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


class Ensure:
    """The naming side of :class:`lab.store.Store`: its connection, path and transactions."""

    _conn: sqlite3.Connection
    path: Path
    if TYPE_CHECKING:

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def ensure_study(
        self,
        name: str,
        description: str = "",
        study_file: str | None = None,
        study_hash: str | None = None,
    ) -> int:
        """The id of study ``name``, created if new.

        A study made from one study file cannot be continued from a different one: a hash
        that differs from the stored one is refused.
        """
        with self._transaction() as conn:
            row = conn.execute("SELECT id, study_hash FROM study WHERE name=?", (name,)).fetchone()
            if row is None:
                cur = conn.execute(
                    "INSERT INTO study(name, created, description, study_file, study_hash)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (name, time.time(), description, study_file, study_hash),
                )
                return int(cur.lastrowid or 0)
            study_id, stored_hash = int(row[0]), row[1]
            if study_hash and stored_hash and study_hash != stored_hash:
                raise StoreError(
                    f"study {name!r} in {self.path} was made from a different study file"
                    f" (hash {stored_hash[:12]}, now {study_hash[:12]})",
                    hint="Give the changed study a new name, or restore the original study file",
                )
            if study_hash and not stored_hash:
                conn.execute(
                    "UPDATE study SET study_hash=?, study_file=? WHERE id=?",
                    (study_hash, study_file, study_id),
                )
            return study_id

    def ensure_guest(
        self,
        study_id: int,
        name: str,
        variant: str,
        domain_xml: str | None = None,
        host_facts: dict[str, Any] | None = None,
        guest_facts: dict[str, Any] | None = None,
        host: str = "local",
    ) -> int:
        """The id of guest ``name`` on ``host`` in the study; facts given are updated."""
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id, variant FROM guest WHERE study_id=? AND host=? AND name=?",
                (study_id, host, name),
            ).fetchone()
            if row is None:
                try:
                    cur = conn.execute(
                        "INSERT INTO guest(study_id, name, variant, host, domain_xml,"
                        " host_facts, guest_facts, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (study_id, name, variant, host, domain_xml, _json(host_facts),
                         _json(guest_facts), time.time()),
                    )  # fmt: skip
                except sqlite3.IntegrityError:
                    raise StoreError(
                        f"no study with id {study_id} in {self.path}",
                        hint="Create the study first with ensure_study()",
                    ) from None
                return int(cur.lastrowid or 0)
            guest_id, stored_variant = int(row[0]), row[1]
            if stored_variant != variant:
                raise StoreError(
                    f"guest {name!r} on {host} is variant {stored_variant!r} in this study,"
                    f" not {variant!r}",
                    hint="Each guest keeps one variant; give the other variant its own guest",
                )
            for column, value in (
                ("domain_xml", domain_xml),
                ("host_facts", _json(host_facts)),
                ("guest_facts", _json(guest_facts)),
            ):
                if value is not None:
                    conn.execute(f"UPDATE guest SET {column}=? WHERE id=?", (value, guest_id))
            return guest_id

    def ensure_run(
        self,
        study_id: int,
        key: str,
        workload: str,
        params: dict[str, Any],
        schedule: str | None,
        target_n: int | None,
        metrics: Sequence[MetricInfo],
    ) -> int:
        """The id of run ``key``, created if new; new metrics are added to it.

        An existing run must have the same study, workload and parameters; its schedule and
        target count are updated (a study may be extended).
        """
        params_json = json.dumps(params, sort_keys=True)
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id, study_id, workload, params FROM run WHERE key=?", (key,)
            ).fetchone()
            if row is None:
                try:
                    cur = conn.execute(
                        "INSERT INTO run(study_id, key, workload, params, schedule, target_n,"
                        " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (study_id, key, workload, params_json, schedule, target_n, time.time()),
                    )
                except sqlite3.IntegrityError:
                    raise StoreError(
                        f"no study with id {study_id} in {self.path}",
                        hint="Create the study first with ensure_study()",
                    ) from None
                run_id = int(cur.lastrowid or 0)
            else:
                run_id = int(row[0])
                if (int(row[1]), row[2], row[3]) != (study_id, workload, params_json):
                    raise StoreError(
                        f"run {key!r} already exists with another study, workload or"
                        f" parameters ({row[2]} {row[3]})",
                        hint="Use a new run key for a changed workload or parameters",
                    )
                conn.execute(
                    "UPDATE run SET schedule=?, target_n=? WHERE id=?",
                    (schedule, target_n, run_id),
                )
            for metric in metrics:
                known = conn.execute(
                    "SELECT unit, direction FROM metric WHERE run_id=? AND name=?",
                    (run_id, metric.name),
                ).fetchone()
                if known is None:
                    conn.execute(
                        "INSERT INTO metric(run_id, name, unit, direction) VALUES (?, ?, ?, ?)",
                        (run_id, metric.name, metric.unit, metric.direction),
                    )
                elif tuple(known) != (metric.unit, metric.direction):
                    raise StoreError(
                        f"run {key!r}: metric {metric.name!r} is stored as {known[0]}"
                        f" ({known[1]} is better), not {metric.unit} ({metric.direction})",
                        hint="Keep a metric's unit and direction, or name the new one differently",
                    )
            return run_id

    def ensure_sweep(
        self,
        study_id: int,
        key: str,
        workload: str,
        axes: Sequence[tuple[str, Sequence[str]]],
        order: str,
    ) -> int:
        """The id of sweep ``key``, created if new; an existing one must be the same sweep
        (its key is a hash of what was asked, so only a damaged store differs)."""
        axes_json = json.dumps([[k, list(v)] for k, v in axes])
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id, study_id, workload, axes, run_order FROM sweep WHERE key=?", (key,)
            ).fetchone()
            if row is not None:
                if (int(row[1]), row[2], row[3], row[4]) != (study_id, workload, axes_json, order):
                    raise StoreError(
                        f"sweep {key!r} already exists with another study, workload, axes or"
                        f" order ({row[2]} {row[3]} {row[4]})",
                        hint="The store may be damaged: lab store check",
                    )
                return int(row[0])
            try:
                cur = conn.execute(
                    "INSERT INTO sweep(study_id, key, workload, axes, run_order, created)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (study_id, key, workload, axes_json, order, time.time()),
                )
            except sqlite3.IntegrityError as err:
                raise StoreError(
                    f"cannot store sweep {key!r}: {err}",
                    hint="Create the study first with ensure_study(); the order is"
                    " 'interleaved' or 'blocked'",
                ) from None
            return int(cur.lastrowid or 0)

    def add_sweep_run(
        self, sweep_id: int, run_id: int, position: int, point: Mapping[str, Any]
    ) -> None:
        """Make run ``run_id`` the sweep's value at ``position`` (from 0); again is a no-op."""
        point_json = json.dumps(dict(point), sort_keys=True)
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO sweep_run(sweep_id, run_id, position, point)"
                " VALUES (?, ?, ?, ?)",
                (sweep_id, run_id, position, point_json),
            )
            row = conn.execute(
                "SELECT run_id, point FROM sweep_run WHERE sweep_id=? AND position=?",
                (sweep_id, position),
            ).fetchone()
            if row is None or (int(row[0]), row[1]) != (run_id, point_json):
                raise StoreError(
                    f"sweep id {sweep_id}: value {position} is stored with another run or"
                    f" point ({row}), not run id {run_id} at {point_json}",
                    hint="The store may be damaged: lab store check",
                )
