"""A guest that does not answer, or whose runner keeps failing: waited for, said so once,
and the run stopped (:class:`GuestLost`, :class:`RunFailed`) when it lasts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lab.core.errors import GuestCommandError, GuestError, LabError
from lab.run.runstate import GuestProgress, RunState

MAX_TROUBLES = 3  # runner failures in a row, with no attempt recorded, before a run stops
MIN_GUEST_FREE = 1024 * 1024  # bytes free in the runner's folder below which a guest is "full"
GONE = "its domain no longer exists (destroyed and undefined: `lab down`, or virsh)"


class RunFailed(LabError):
    """A run stopped because iterations kept failing."""

    exit_code = 6


class GuestLost(GuestError):
    """A run stopped because one of its guests did not answer for ``guest_timeout``."""


class GuestTrouble(RunState):
    """A guest that cannot be reached, a runner that fails: waited for, or the run stopped."""

    def why_lost(self, guest: GuestProgress, err: GuestError) -> str:
        """Why ``guest`` does not answer, as far as its host's libvirt can tell."""
        return self.domain_down(guest) or f"SSH fails: {err.message}"

    def domain_down(self, guest: GuestProgress) -> str | None:
        """Why no answer can come from ``guest``, as its host's libvirt tells: its domain is
        gone, replaced or not running. None when it runs, or when no libvirt can tell."""
        import libvirt  # deferred: loaded already wherever a hypervisor is at hand

        try:
            dom = self._domain(guest.record)
            uuid, active = str(dom.UUIDString()), bool(dom.isActive())
        except libvirt.libvirtError as lookup:
            if lookup.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return GONE
            return None
        except Exception:  # no hypervisor at hand: SSH's word is all there is
            return None
        if guest.domain_uuid is not None and uuid != guest.domain_uuid:
            return "it was replaced by another guest of the same name (a new `lab up`)"
        if not active:
            return "its domain is not running (`lab status`)"
        return None

    def check_failures(self, guest: GuestProgress) -> None:
        if guest.failed_attempts > self.plan.max_failures:
            raise RunFailed(
                f"{guest.record.name}: {guest.failed_attempts} failed attempts (more than"
                f" --max-failures {self.plan.max_failures}); last: {guest.last_error[:300]}",
                hint="Every attempt is in the store (lab export). Fix the cause and re-run the"
                " same command to resume",
            )

    def with_guest(self, guest: GuestProgress, action: Callable[[GuestProgress], Any]) -> Any:
        """Run ``action``; a guest that cannot be reached is marked and retried later, for
        at most the plan's ``guest_timeout`` (then :class:`GuestLost`)."""
        try:
            value = action(guest)
        except GuestCommandError as err:  # the guest answered: something in it is wrong
            self._trouble(guest, err.message)
            return None
        except GuestError as err:
            if guest.channel is not None:  # it went with the connection
                guest.channel.close()
                guest.channel = None
            guest.shell.close()  # the next try opens one afresh: one connection at a time
            self._unanswered(guest, err)
            return None
        guest.lost_at = None
        if guest.unreachable:
            self.ctx.note(f"{guest.record.name} reachable again")
            guest.unreachable = False
            guest.check_runner = True  # whatever ran before may be gone
        return value

    def _unanswered(self, guest: GuestProgress, err: GuestError) -> None:
        """Say once that the run waits for ``guest``, and why; stop the run once it has
        waited ``guest_timeout`` (not while it stops its runners: Ctrl-C stays Ctrl-C). A
        guest whose domain libvirt no longer has stops the run at once: no answer can come
        from it, where a silent or shut-off guest may come back."""
        now, timeout = self.clock.monotonic(), self.plan.guest_timeout
        name = guest.record.name
        if not self.stopping and guest.lost_at is None and self.domain_down(guest) == GONE:
            raise GuestLost(
                f"{name}: {GONE}; the run stopped with {len(guest.completed)} of"
                f" {self.plan.n} iterations stored for it",
                hint="Every stored iteration is kept. Bring the pair back (lab down, then lab"
                f" up with the same pair), then resume with {self.plan.resume}",
            )
        if guest.lost_at is None:
            guest.lost_at, guest.unreachable = now, True
            self.ctx.warn(
                f"{name} unreachable, will retry for up to {timeout:.0f} s, then the run stops"
                f" (status 4): {self.why_lost(guest, err)}"
            )
            return
        if self.stopping or now - guest.lost_at < timeout:
            return
        done = len(guest.completed)
        raise GuestLost(
            f"{name} did not answer for {now - guest.lost_at:.0f} s (--guest-timeout"
            f" {timeout:g}): {self.why_lost(guest, err)}; the run stopped with {done} of"
            f" {self.plan.n} iterations stored for it",
            hint=f"Every stored iteration is kept. Bring the guest back (lab status; lab up"
            f" if it is gone), then resume with {self.plan.resume}",
        )

    def _trouble(self, guest: GuestProgress, what: str) -> None:
        """A runner command failed, or a runner ended without a word. A full disk in the
        guest stops the run at once, since nothing can be journalled; anything else after
        MAX_TROUBLES in a row with no attempt recorded in between."""
        guest.troubles += 1
        name, folder = guest.record.name, self.plan.runner_dir
        free = guest.runner.free_bytes()
        if free is not None and free < MIN_GUEST_FREE:
            raise RunFailed(
                f"{name}: the guest's disk is full ({free} bytes free for {folder}), so its"
                f" runner cannot journal; {what}",
                hint=f"Free space in the guest (lab ssh {name} df -h /), then re-run the same"
                " command to resume",
            )
        if guest.troubles >= MAX_TROUBLES:
            raise RunFailed(
                f"{name}: the runner failed {guest.troubles} times in a row with no attempt"
                f" recorded; last: {what}",
                hint=f"See the runner's log (lab ssh {name} cat {folder}/{self.key}.log), fix"
                " the cause, then re-run the same command to resume",
            )
        self.ctx.warn(f"{name}: {what}; will try again")
