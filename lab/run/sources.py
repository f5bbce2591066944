"""The revision of a user's sources a run builds or runs (issue 43), read on the host at each
start of the run and stored with each guest's facts (``lab.run.evidence``).

A workload that builds a user's sources says which through
:meth:`lab.run.workload.Workload.source_versions`: guest name (or :data:`EVERY_GUEST`) ->
facts. A git revision is resolved to its commit then (``git rev-parse REV^{commit}``), so a
branch or ``HEAD~3`` stays the commit it was when the branch moves on; a tarball is its
file name and its SHA-256. ``lab runs show`` and ``lab export`` carry the facts, ``lab
history`` shows :data:`REVISION` as its ``source`` version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from lab.core.errors import LabError
from lab.core.hostexec import Host
from lab.host.environment import NOT_AVAILABLE

EVERY_GUEST = "*"
SOURCE = "source"  # what the sources are: REPO@REV as asked, or the tarball's file name
REVISION = "source_revision"  # the commit the revision was, or sha256:HEX of a tarball
DESCRIBE = "source_describe"  # git describe --always of that commit
SOURCE_FACTS = frozenset({SOURCE, REVISION, DESCRIBE})
GIT_HINT = "Is {repo} a git repository holding {rev}?"


def git_commit(host: Host, repo: str | Path, rev: str) -> str:
    """The full commit id ``rev`` names in ``repo`` now (HostCommandError if none)."""
    done = host.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                     f"{rev}^{{commit}}"], hint=GIT_HINT.format(repo=repo, rev=rev))  # fmt: skip
    return done.stdout.strip()


def git_revision(
    host: Host, repo: str | Path, rev: str, commit: str | None = None
) -> dict[str, str]:
    """The facts of revision ``rev`` of ``repo``: its commit (``commit`` when the checkout's
    is known, else what ``rev`` names now) and ``git describe --always`` of it; a repository
    that cannot say is :data:`NOT_AVAILABLE`."""
    facts = {SOURCE: f"{repo}@{rev}", REVISION: NOT_AVAILABLE, DESCRIBE: NOT_AVAILABLE}
    try:
        commit = commit or git_commit(host, repo, rev)
    except LabError:
        return facts
    facts[REVISION] = commit
    described = host.run(["git", "-C", str(repo), "describe", "--always", "--tags", commit],
                         check=False)  # fmt: skip
    if described.ok and described.stdout.strip():
        facts[DESCRIBE] = described.stdout.strip()
    return facts


def file_sha256(host: Host, path: str | Path) -> str:
    """``sha256:HEX`` of the file at ``path`` on the host (sha256sum: a remote host's too),
    :data:`NOT_AVAILABLE` where it cannot be read."""
    try:
        done = host.run(["sha256sum", "--", str(path)], check=False)
    except LabError:
        return NOT_AVAILABLE
    digest = done.stdout.split()[0] if done.ok and done.stdout.strip() else ""
    if len(digest) != 64:
        return NOT_AVAILABLE
    return f"sha256:{digest}"


def tarball_revision(host: Host, path: str | Path) -> dict[str, str]:
    """The facts of a source tarball: its file name and its SHA-256."""
    return {SOURCE: Path(path).name, REVISION: file_sha256(host, path)}


def per_guest(
    versions: Mapping[str, Mapping[str, str]], guests: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Each of ``guests``' source facts: :data:`EVERY_GUEST`'s, and then its own."""
    common = dict(versions.get(EVERY_GUEST, {}))
    return {g: {**common, **versions.get(g, {})} for g in guests if common or g in versions}
