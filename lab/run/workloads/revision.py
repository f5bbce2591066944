"""revision: a command timed in each guest's own checkout of a git revision (``lab bisect``'s
step: the candidate commit on one twin, GOOD on the other).

Before the run the host checks each guest's revision out of ``repo`` (``git archive``, no
working tree of the repository is touched) into the NFS export, ``trees/GUEST``; the guest
runs ``build`` there once per runner start (untimed), then times ``argv`` there each
iteration. The revisions are parameters, so they are stored with the run::

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
from lab.run.workload import GuestInfo, Param, ParamValue, Workload
from lab.run.workloads._build import NFS_MOUNT, setup_argv
from lab.run.workloads._command import TIMES

TREES = "trees"  # under the export: one checkout per guest
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


def tree_name(rev: str, round_: object) -> str:
    """The checkout's folder: a new name for every revision and round, never one a guest's
    NFS client has seen (a folder emptied and refilled in place showed the guest its old
    entries: make found the old binary up to date, and it was gone)."""
    return f"{''.join(c for c in rev if c.isalnum() or c in '._-')[:40]}-{round_}"


def tree_of(guest: str, rev: str, round_: object) -> str:
    """Where guest ``guest`` sees its checkout of ``rev`` for round ``round_``."""
    return f"{NFS_MOUNT}/{TREES}/{guest}/{tree_name(rev, round_)}"


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
            "round": Param(0, "a label that makes a repeated measurement a run of its own", int),
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
            own = export_dir / TREES / guest  # kept: guests hold its handle
            tree = own / tree_name(rev, p["round"])
            host.run(["mkdir", "-p", str(own)])
            host.run(["find", str(own), "-mindepth", "1", "-maxdepth", "1", "-exec", "rm", "-rf",
                      "{}", "+"])  # the checkouts of earlier rounds  # fmt: skip
            host.run(["mkdir", "-p", str(tree)])
            with tempfile.NamedTemporaryFile(suffix=".tar") as archive:
                host.run(["git", "-C", repo, "archive", "--format=tar", "-o", archive.name, rev],
                         hint=f"Is {repo} a git repository holding {rev}?")  # fmt: skip
                host.run(["tar", "-xf", archive.name, "-C", str(tree)])
            host.run(["chmod", "-R", "a+rwX", str(own)])  # the guest's user builds in it

    def spec(self, params: Mapping[str, object], guest: GuestInfo) -> Spec:
        p = self.resolve(params)
        revs = parse_revs(str(p["revs"]))
        if guest.name not in revs:
            raise UsageError(f"revs names no revision for {guest.name}", hint=EXAMPLE)
        tree = tree_of(guest.name, revs[guest.name], p["round"])
        setup = setup_argv(guest, tree)
        build = str(p["build"] or "").strip()
        if build:
            setup = ["sh", "-c", f"{setup[2]}\ncd {shlex.quote(tree)}\n{build}"]
        return self._spec(
            guest, shlex.split(str(p["argv"])), setup_argv=setup, cwd=tree,
            metrics_from={m.name: m.name for m in TIMES},
        )  # fmt: skip


WORKLOAD = Revision()
