"""A factorial study's design as it ran (schema 7): its factors and levels, a fraction's
generators and alias sets, its cells, the cells left out and why, its blocks in run order and
their seed, one JSON document per study (``lab.app.design.design_json``).

The study file's text is stored too, but a design is also what this lab made of it (its seed,
the cells libvirt refused): the document records that, so ``lab study show`` tells what ran
even after the lab that ran it has changed. The first design stored for a study is kept: a
study file that changed is refused before (``ensure_study``), so a later one is the same.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

DESIGN_FORMAT = 1  # the document's own version ("format"), for a later lab reading it


def design_problem(document: object) -> str | None:
    """Why ``document`` is no design as lab writes it (``lab import`` of an export's design
    line); None when it is one."""
    if not isinstance(document, dict):
        return "a design is not a JSON object"
    factors, cells, blocks = document.get("factors"), document.get("cells"), document.get("blocks")
    if not isinstance(factors, dict) or not all(
        isinstance(levels, list) and all(isinstance(v, str) for v in levels)
        for levels in factors.values()
    ):
        return "a design's factors are not an object of lists of levels"
    if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
        return "a design's cells are not a list of names"
    if not isinstance(blocks, list) or not all(
        isinstance(b, list) and len(b) == 2 and set(b) <= set(cells) for b in blocks
    ):
        return "a design's blocks are not pairs of its cells"
    if not isinstance(document.get("seed"), int) or not isinstance(document.get("left_out"), list):
        return "a design has no seed or no list of cells left out"
    return None


class StudyDesigns:
    """The design side of :class:`lab.store.Store`."""

    _conn: sqlite3.Connection
    if TYPE_CHECKING:

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def record_design(self, study_id: int, design: Mapping[str, Any]) -> dict[str, Any]:
        """Store ``design`` as study ``study_id``'s unless one is stored already; the one
        stored, either way."""
        document = {"format": DESIGN_FORMAT, **design}
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO study_design(study_id, design, recorded) VALUES (?, ?, ?)",
                (study_id, json.dumps(document), time.time()),
            )
            row = conn.execute(
                "SELECT design FROM study_design WHERE study_id=?", (study_id,)
            ).fetchone()
        return dict(json.loads(row[0]))

    def study_design(self, study: str) -> dict[str, Any] | None:
        """The design stored for ``study`` (None: a study of two variants, or one run
        before designs were stored)."""
        row = self._conn.execute(
            "SELECT d.design FROM study_design d JOIN study st ON st.id=d.study_id WHERE st.name=?",
            (study,),
        ).fetchone()
        return None if row is None else dict(json.loads(row[0]))
