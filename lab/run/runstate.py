"""What a run's controller knows: its plan and key, each guest's progress, and where each
guest's host and libvirt domain are (:class:`RunState`, which the controller's parts share)."""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lab.core.clock import Clock
from lab.core.context import Context
from lab.guests.channel import Channel
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.seed import GUEST_USER
from lab.guests.ssh import GuestShell
from lab.run.guestrunner import GuestRunner
from lab.stats.running import RunningMoments
from lab.stats.verdict import Threshold
from lab.store import Store

if TYPE_CHECKING:
    from lab.guests.sites import Site


RUNNER_DIR = f"/home/{GUEST_USER}/lab-runner"
RECENT = 50  # iterations whose wall times give the rate and the ETA


@dataclass
class GuestProgress:
    """What the controller knows about one guest's part of the run."""

    record: GuestRecord
    guest_id: int
    shell: GuestShell
    runner: GuestRunner
    offset: int = 0  # bytes of the journal already ingested
    completed: set[int] = field(default_factory=set)
    failed_attempts: int = 0
    last_error: str = ""
    check_runner: bool = True  # ask whether the runner runs (and start it if not)
    # Only what a long run needs stays here, so the controller's memory does not grow
    # with the journal: the recent wall times, the first metric's running mean, and its
    # value per iteration only with --until (whose rule needs every pair).
    walls: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    moments: RunningMoments = field(default_factory=RunningMoments)
    by_iteration: dict[int, float] = field(default_factory=dict)
    unreachable: bool = False
    lost_at: float | None = None  # when it first failed to answer, since it last answered
    domain_uuid: str | None = None  # its libvirt domain's, when the run started: tells a
    # guest replaced by another of the same name (a new `lab up`) from one that is slow
    journal_seen: bool = False  # the guest still has this run's journal
    runner_started: bool = False  # started by this controller, and not yet said it ended
    heard_at: float = 0.0  # when its journal last grew, or its runner was started or asked
    troubles: int = 0  # runner failures since the last attempt was recorded
    claimed: bool = False  # its journal is known to be this run's (claim_journal)
    # The paired schedules step a runner that stays up (lab.inguest.stepper) on a channel:
    channel: Channel | None = None
    stepping: int | None = None  # the iteration sent on it and not yet answered
    # Attempts taken from the channel's answers: their lines in the journal, read later,
    # are not counted twice (each is dropped from here once its journal line is read).
    live: set[tuple[int, int]] = field(default_factory=set)
    journal_read_at: float = -1e9  # when its journal was last read (ingest)
    looked_up_at: float = -1e9  # when libvirt was last asked of its domain (a silent step)
    last_boot: str | None = None  # the boot id of the last attempt taken (--reboot-every)


def run_key(
    study: str,
    workload: str,
    params: dict[str, Any],
    guests: list[str],
    n: int,
    schedule: str,
    until: str | None = None,
    swap_every: int | None = None,
    sweep: str | None = None,
    reboot_every: int | None = None,
    host_age: str | None = None,
    replicate: int = 1,
) -> str:
    """The same command on the same lab gives the same key: that is how it resumes. A run
    of a sweep (``lab.run.sweep``) has the sweep's key in its own."""
    asked: list[Any] = [study, workload, params, sorted(guests), n, schedule]
    if until:  # only then, so that keys of runs without a rule stay what they were
        asked.append(until)
    if swap_every:  # likewise
        asked.append({"swap_every": swap_every})
    if sweep:  # likewise
        asked.append({"sweep": sweep})
    if reboot_every:  # likewise
        asked.append({"reboot_every": reboot_every})
    if host_age:  # likewise: a study's block at another host age is another run
        asked.append({"host_age": host_age})
    if replicate > 1:  # likewise: a study's block repeated (its replicate) is another run
        asked.append({"replicate": replicate})
    text = json.dumps(asked, sort_keys=True)
    return f"{workload}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@dataclass
class RunPlan:
    study: str
    workload: Any  # lab.run.workload.Workload
    params: dict[str, Any]
    n: int
    schedule: str
    max_failures: int
    poll_interval: float = 1.0
    runner_dir: str = RUNNER_DIR  # where the runner and its journals live in the guest
    until: str | None = None  # a stopping rule (lab.stats.sequential); n is then the maximum
    confidence: float = 99.99  # percent, for the rule's interval and verdict
    threshold: float | Threshold = 0.01  # the verdict's threshold: a fraction, or Threshold
    swap_every: int | None = None  # sync only: swap the twins' CPU sets every K iterations
    warmup: str | None = None  # K or "auto": what the stopping rule leaves out (not the key)
    counters: str = "all"  # perf events per iteration: none, software or all (that work)
    sweep: str | None = None  # the key of the sweep this run is a value of (lab.run.sweep)
    guest_timeout: float = 300.0  # seconds a guest may not answer before the run stops
    adopt: bool = False  # take up iterations a guest journalled for a run this store lacks
    reboot_every: int | None = None  # power-cycle the guests every K iterations (lab.run.reboot)
    host_age: str | None = None  # the host age level asked for (lab.host.agelevels): in the key
    replicate: int = 1  # the k-th run of the same settings (a study's repeated block): in the key
    resume: str = "the same `lab run` command"  # what resumes the run, for the messages


class RunState:
    """What the parts of a run's controller share: set by :class:`lab.run.controller.Controller`'s
    constructor, and where each guest's host and libvirt domain are."""

    ctx: Context
    store: Store
    state: LabState  # this machine's lab
    sites: dict[str, tuple[Site, LabState]]  # every host's (with --hosts), by name
    plan: RunPlan
    key: str
    owner: str  # what a guest's journal of this run must be claimed by
    existed: bool  # the store held the run before this start
    run_id: int
    metrics: list[Any]
    guests: list[GuestProgress]
    rule: Any  # lab.stats.sequential's rule of --until, or None
    decision: Any  # lab.stats.sequential.Decision once the rule stopped the run
    upto: int  # the last iteration of this pass (advance)
    stopping: bool  # stop_runners was called: a lost guest no longer stops the run
    untaken: list[tuple[GuestProgress, list[Any]]]  # store_taken() stores them

    def state_of(self, record: GuestRecord) -> LabState:
        """The lab state of the host ``record`` runs on."""
        site = self.sites.get(record.host)
        return site[1] if site else self.state

    def _domain_xml(self, record: GuestRecord) -> str | None:
        site = self.sites.get(record.host)
        try:
            conn = site[0].ctx.libvirt if site else self.ctx.libvirt
            return str(conn.lookupByName(record.name).XMLDesc(0))
        except Exception:  # the guest may be down; the XML is context, not a requirement
            return None

    def _defined_xml(self, record: GuestRecord) -> str | None:
        """The domain as defined (VIR_DOMAIN_XML_INACTIVE, 2): what the user defined, the
        same in every boot until it is redefined."""
        site = self.sites.get(record.host)
        try:
            conn = site[0].ctx.libvirt if site else self.ctx.libvirt
            return str(conn.lookupByName(record.name).XMLDesc(2))
        except Exception:  # as _domain_xml: context, not a requirement
            return None

    def _domain(self, record: GuestRecord) -> Any:
        """The guest's libvirt domain (raises libvirt's error when there is none)."""
        site = self.sites.get(record.host)
        conn = site[0].ctx.libvirt if site else self.ctx.libvirt
        return conn.lookupByName(record.name)

    def _domain_uuid(self, record: GuestRecord) -> str | None:
        try:
            return str(self._domain(record).UUIDString())
        except Exception:  # the guest may be down, or no hypervisor is at hand
            return None

    @property
    def clock(self) -> Clock:
        return self.ctx.clock
