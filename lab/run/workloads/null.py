"""null: runs ``true``, to measure what the harness itself adds to an iteration."""

from __future__ import annotations

from collections.abc import Mapping

from lab.inguest.spec import Spec
from lab.run.workload import GuestInfo, Metric, Workload


class Null(Workload):
    name = "null"
    description = "runs `true`: the runner's own overhead per iteration (wall time)"
    metrics = (Metric("wall_s", "s", "lower"),)

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        self.resolve(params)
        return self._spec(guest, ["true"], timeout_s=60.0)


WORKLOAD = Null()
