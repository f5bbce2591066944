"""revision: a command timed in each guest's own checkout of a git revision (``lab bisect``'s
step: the candidate commit on one twin, GOOD on the other).

Before the run the host checks each guest's revision out of ``repo`` (``git archive``, no
working tree of the repository is touched) into the NFS export, ``trees/GUEST``; the guest
runs ``build`` there once per runner start (untimed), then times ``argv`` there each
iteration. The revisions are parameters, so they are stored with the run, and each is
resolved to its commit as the run starts (the guest's facts ``source_revision`` and
``source_describe``), so a branch or ``HEAD~3`` stays what it was when it moves on::

    lab run revision --n 20 -p repo=/src/prog -p revs=lab-thp=a1b2c3,lab-shp1g=d4e5f6 \\
        -p build='make' -p argv='./prog'
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from lab.core.errors import UsageError
from lab.core.hostexec import Host
from lab.inguest.spec import Spec
from lab.run.sources import GIT_HINT, git_commit, git_revision
from lab.run.workload import GuestInfo, Param, ParamValue, Workload
from lab.run.workloads._build import NFS_MOUNT, setup_argv
from lab.run.workloads._command import TIMES

TREES = "checkouts"  # under the export: a folder per guest, a checkout per revision and label
EXAMPLE = "e.g. -p repo=/src/prog -p revs=lab-thp=a1b2c3,lab-shp1g=d4e5f6 -p argv=./prog"


def parse_revs(text: str) -> dict[str, str]:
    """``GUEST=REV[,GUEST=REV...]`` as guest -> revision."""
    found: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        guest, equals, rev = part.partition("=")
        if not (equals and guest and rev) or guest in found:
            raise UsageError(
                f"revs: {part!r} is not GUEST=REV (each guest once)",
                hint="e.g. -p revs=lab-thp=a1b2c3,lab-shp1g=d4e5f6",
            )
        found[guest] = rev
    if not found:
        raise UsageError("revs is empty", hint="e.g. -p revs=lab-thp=a1b2c3,lab-shp1g=d4e5f6")
    return found


def tree_name(rev: str, label: object) -> str:
    """The checkout's folder: named by revision and label, so a measurement never reuses a
    name an earlier one removed. The NFS server (and the guests' clients) remember names: a
    folder removed and made anew under the same name was a stale handle in the guests, and
    one emptied and refilled in place showed them its old entries."""
    return f"{''.join(c for c in rev if c.isalnum() or c in '._-')[:40]}-{label}"


def commit_file(name: str) -> str:
    """The file beside checkout ``name`` that holds the commit it was made of."""
    return f".{name}.commit"


def tree_of(guest: str, rev: str, label: object) -> str:
    """Where guest ``guest`` sees its checkout of ``rev`` for measurement ``label``."""
    return f"{NFS_MOUNT}/{TREES}/{guest}/{tree_name(rev, label)}"


class Revision(Workload):
    name = "revision"
    description = "a command timed in each guest's own checkout of a git revision (lab bisect)"
    uses_nfs = True
    parameters = MappingProxyType(
        {
            "repo": Param("", "the git repository on the host (required)"),
            "revs": Param("", "GUEST=REV[,GUEST=REV] the revision each guest runs (required)"),
            "argv": Param(
                "", "the command to time in the checkout (required), split as a shell would"
            ),
            "build": Param("", "untimed, once per runner start, in the checkout, e.g. 'make'"),
            "label": Param(
                "0",
                "names a measurement: a new label is a new run and a new checkout",
                str,
                r"[A-Za-z0-9._-]{1,80}",
            ),
        }
    )
    metrics = TIMES

    def resolve(self, overrides: Mapping[str, object] | None = None) -> dict[str, ParamValue]:
        params = super().resolve(overrides)
        for key in ("repo", "revs", "argv"):
            if not str(params[key] or "").strip():
                raise UsageError(
                    f"revision needs -p {key}=...", hint=__doc__.splitlines()[-2].strip()
                )
        parse_revs(str(params["revs"]))
        for key in ("argv", "build"):
            try:
                shlex.split(str(params[key] or ""))
            except ValueError as err:
                raise UsageError(f"{key}: {err}", hint="Quote as in a shell") from None
        return params

    def host_prepare(self, params: Mapping[str, object], host: Host, export_dir: Path) -> None:
        p = self.resolve(params)
        repo = str(p["repo"])
        for guest, rev in parse_revs(str(p["revs"])).items():
            own = export_dir / TREES / guest  # never removed: guests hold its handle
            name = tree_name(rev, p["label"])
            tree = own / name
            host.run(["mkdir", "-p", str(own)])
            host.run(["find", str(own), "-mindepth", "1", "-maxdepth", "1", "!", "-name", name,
                      "!", "-name", commit_file(name), "-exec", "rm", "-rf", "{}", "+"]
                     )  # earlier measurements'  # fmt: skip
            if host.exists(tree):  # this measurement resumed: its checkout and build stay
                continue
            commit = git_commit(host, repo, rev)  # what the checkout is, if the branch moves
            host.run(["mkdir", "-p", str(tree)])
            with tempfile.NamedTemporaryFile(suffix=".tar") as archive:
                host.run(["git", "-C", repo, "archive", "--format=tar", "-o", archive.name,
                          commit or rev], hint=GIT_HINT.format(repo=repo, rev=rev))  # fmt: skip
                host.run(["tar", "-xf", archive.name, "-C", str(tree)])
            host.run(["chmod", "-R", "a+rwX", str(tree)])  # the guest's user builds in it
            if commit:
                host.write_text(own / commit_file(name), f"{commit}\n")

    def source_versions(
        self, params: Mapping[str, object], host: Host, export_dir: Path
    ) -> dict[str, dict[str, str]]:
        """Each guest's revision as the commit its checkout was made of (a resumed run's
        checkout stays what it was when the branch has moved since), or, without a checkout
        the lab made, the commit the revision names now."""
        p = self.resolve(params)
        found = {}
        for guest, rev in parse_revs(str(p["revs"])).items():
            marker = export_dir / TREES / guest / commit_file(tree_name(rev, p["label"]))
            try:
                commit = host.read_text(marker).strip() if host.exists(marker) else None
            except OSError:
                commit = None
            found[guest] = git_revision(host, str(p["repo"]), rev, commit)
        return found

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        revs = parse_revs(str(p["revs"]))
        if guest.name not in revs:
            raise UsageError(f"revs names no revision for {guest.name}", hint=EXAMPLE)
        tree = tree_of(guest.name, revs[guest.name], p["label"])
        setup = setup_argv(guest, tree, make=False)  # made by host_prepare: never empty
        build = str(p["build"] or "").strip()
        if build:
            setup = ["sh", "-c", f"{setup[2]}\ncd {shlex.quote(tree)}\n{build}"]
        return self._spec(
            guest, shlex.split(str(p["argv"])), setup_argv=setup, cwd=tree,
            metrics_from={m.name: m.name for m in TIMES},
        )  # fmt: skip


WORKLOAD = Revision()
