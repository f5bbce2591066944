"""The store's export: every sample with its context, for ``lab export``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from lab.store.records import ExportRow


class Export:
    """The export side of :class:`lab.store.Store`; needs only its connection."""

    _conn: sqlite3.Connection

    def export_rows(
        self, workload: str | None = None, study: str | None = None, run: str | None = None
    ) -> Iterator[ExportRow]:
        """Every sample with its context, in (study, workload, variant, guest, iteration) order."""
        cur = self._conn.execute(
            "SELECT st.name, r.key, r.workload, r.params, g.variant, g.name, g.host, s.iteration,"
            " i.attempt, s.metric, m.unit, m.direction, s.value, i.started, i.ended, i.source"
            " FROM sample s JOIN run r ON r.id=s.run_id JOIN study st ON st.id=r.study_id"
            " JOIN guest g ON g.id=s.guest_id"
            " JOIN metric m ON m.run_id=s.run_id AND m.name=s.metric"
            " JOIN iteration i ON i.run_id=s.run_id AND i.guest_id=s.guest_id"
            " AND i.iteration=s.iteration AND i.ok=1"
            " WHERE (?1 IS NULL OR r.workload=?1) AND (?2 IS NULL OR st.name=?2)"
            " AND (?3 IS NULL OR r.key=?3)"
            " ORDER BY st.name, r.workload, r.key, g.variant, g.host, g.name, s.iteration,"
            " s.metric",
            (workload, study, run),
        )
        for row in cur:
            yield ExportRow(*row)
