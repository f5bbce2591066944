"""The revision of a user's sources recorded with every run (issue 43): a real git repository
whose branch moves after the run started, a tarball's SHA-256, the facts in each guest's
environment of the run, and ``lab history``'s ``source`` version of each variant."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lab.app.history import changed_versions, run_versions
from lab.core.errors import HostCommandError
from lab.core.hostexec import Host, RecordingHost, Result
from lab.host.environment import NOT_AVAILABLE
from lab.run.environment import changes, twin_differences
from lab.run.sources import per_guest
from lab.run.workloads.gdb_build import WORKLOAD as GDB
from lab.run.workloads.revision import WORKLOAD as REVISION
from tests.unit.test_controller import ShellWorkload, make


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def commit(repo: Path, text: str) -> str:
    (repo / "prog.c").write_text(text)
    git(repo, "add", "prog.c")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", text)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository of three commits on branch main, the first tagged v1."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, "one")
    git(path, "tag", "v1")
    commit(path, "two")
    commit(path, "three")
    return path


def test_a_symbolic_revision_is_the_commit_its_checkout_was_made_of_after_the_branch_moves(
    tmp_path: Path, repo: Path
) -> None:
    heads = git(repo, "rev-list", "main").split()  # newest first
    params = {"repo": str(repo), "revs": "lab-thp=main,lab-shp1g=main~2", "argv": "./prog"}
    export = tmp_path / "nfs"
    REVISION.host_prepare(params, Host(), export)
    found = REVISION.source_versions(params, Host(), export)
    assert found["lab-thp"]["source_revision"] == heads[0]
    assert found["lab-shp1g"]["source_revision"] == heads[2]
    assert found["lab-shp1g"]["source_describe"] == "v1"
    assert found["lab-thp"]["source_describe"] == f"v1-2-g{heads[0][:7]}"
    assert found["lab-thp"]["source"] == f"{repo}@main"
    # the checkout is the commit recorded: its file is the third commit's
    tree = export / "checkouts" / "lab-thp" / "main-0"
    assert (tree / "prog.c").read_text() == "three"

    newer = commit(repo, "four")  # the branch moves on; a resumed run keeps its checkout
    REVISION.host_prepare(params, Host(), export)
    again = REVISION.source_versions(params, Host(), export)
    assert again["lab-thp"]["source_revision"] == heads[0] != newer
    assert (tree / "prog.c").read_text() == "three"
    # a new measurement (label) is a new checkout, of what the branch names now
    relabelled = {**params, "label": "1"}
    REVISION.host_prepare(relabelled, Host(), export)
    assert REVISION.source_versions(relabelled, Host(), export)["lab-thp"][
        "source_revision"] == newer  # fmt: skip
    assert (export / "checkouts" / "lab-thp" / "main-1" / "prog.c").read_text() == "four"
    assert not tree.exists()  # the earlier measurement's checkout and its commit file went
    assert sorted(p.name for p in (export / "checkouts" / "lab-thp").iterdir()) == [
        ".main-1.commit", "main-1"]  # fmt: skip


def test_without_a_checkout_the_revision_is_resolved_now_and_a_missing_one_is_not_available(
    tmp_path: Path, repo: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    params = {"repo": str(repo), "revs": "lab-thp=HEAD,lab-shp1g=no-such-branch", "argv": "x"}
    found = REVISION.source_versions(params, Host(), tmp_path / "nfs")
    assert found["lab-thp"]["source_revision"] == head
    assert found["lab-shp1g"]["source_revision"] == NOT_AVAILABLE
    assert found["lab-shp1g"]["source"] == f"{repo}@no-such-branch"


def test_a_tarball_is_its_name_and_sha256_for_every_guest(tmp_path: Path) -> None:
    tarball = tmp_path / "gdb_13.1.orig.tar.xz"
    tarball.write_bytes(bytes(range(256)) * 1000)
    found = GDB.source_versions({"source": str(tarball)}, Host(), tmp_path)
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert found == {"*": {"source": "gdb_13.1.orig.tar.xz", "source_revision": f"sha256:{digest}"}}
    host = RecordingHost()  # a host whose sha256sum fails
    argv = ("sha256sum", "--", "/gone.tar.xz")
    host.answers[argv] = Result(argv, 1, "", "No such file")
    assert GDB.source_versions({"source": "/gone.tar.xz"}, host, tmp_path)["*"][
        "source_revision"] == NOT_AVAILABLE  # fmt: skip


def test_every_guest_gets_the_common_facts_and_then_its_own() -> None:
    versions = {"*": {"source": "t.tar.xz", "x": "1"}, "b": {"x": "2"}}
    assert per_guest(versions, ["a", "b"]) == {
        "a": {"source": "t.tar.xz", "x": "1"}, "b": {"source": "t.tar.xz", "x": "2"}}  # fmt: skip
    assert per_guest({"b": {"x": "2"}}, ["a", "b"]) == {"b": {"x": "2"}}
    assert per_guest({}, ["a", "b"]) == {}


class SourcedWorkload(ShellWorkload):
    """A stand-in whose guests run two revisions, read from ``revisions`` at each start."""

    revisions: dict[str, str]

    def source_versions(self, params: Any, host: Any, export_dir: Path) -> dict[str, Any]:
        return {"*": {"source": "/src/prog@main"},
                **{g: {"source_revision": rev} for g, rev in self.revisions.items()}}  # fmt: skip


def test_a_run_records_each_guests_revision_at_every_start_and_history_shows_its_own(
    tmp_path: Path,
) -> None:
    workload = SourcedWorkload(["true"])
    workload.revisions = {"lab-thp": "a" * 40, "lab-shp1g": "b" * 40}
    controller, store = make(tmp_path, ["true"], n=1, workload=workload)
    controller.begin()
    controller.end()
    workload.revisions = {"lab-thp": "c" * 40, "lab-shp1g": "b" * 40}  # main moved: resumed
    again, _ = make(tmp_path, ["true"], n=1, workload=workload)
    again.begin()
    again.end()
    records = store.environment(controller.run_id)
    guests = {r.name: r.facts for r in records[-2:] if r.scope == "guest"}
    assert guests["lab-thp"]["source_revision"] == "c" * 40
    assert guests["lab-shp1g"]["source_revision"] == "b" * 40
    assert guests["lab-shp1g"]["source"] == "/src/prog@main"
    assert f"guest lab-thp source_revision: {'a' * 40} → {'c' * 40}" in changes(records)
    assert not [d for d in twin_differences(records) if d.fact.startswith("source")]
    first = records[: len(records) // 2]  # the first start's host and guests
    assert run_versions(first, "thp")["source"] == "a" * 12
    assert run_versions(first, "shp1g")["source"] == "b" * 12
    assert changed_versions(run_versions(first, "thp"), run_versions(records[len(first):],
                            "thp")) == {"source": ["a" * 12, "c" * 12]}  # fmt: skip


class FailingWorkload(ShellWorkload):
    """A stand-in whose repository cannot be read at all."""

    def source_versions(self, params: Any, host: Any, export_dir: Path) -> dict[str, Any]:
        raise HostCommandError(["git"], 128, "fatal: not a git repository")


def test_sources_that_cannot_be_read_are_warned_of_and_the_run_goes_on(tmp_path: Path) -> None:
    controller, store = make(tmp_path, ["true"], n=2, workload=FailingWorkload(["true"]))
    said: list[str] = []
    controller.ctx.warn = said.append  # type: ignore[method-assign]
    controller.run()
    assert [s for s in said if "sources is not recorded" in s and "not a git" in s]
    guests = [r.facts for r in store.environment(controller.run_id) if r.scope == "guest"]
    assert guests and not [f for f in guests if "source_revision" in f]
    assert len(store.values(metric="wall_s")[0].values) == 2
