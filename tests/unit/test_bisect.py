"""``lab bisect``'s parts that need no guest (issue 43): the revision workload (each guest's
checkout, built and timed in it), the commits between GOOD and BAD of a real repository, and
the steps kept beside the store so that a bisection resumes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lab.app.bisect import (
    BisectRequest,
    Measurements,
    commits_between,
    steps_path,
    stored_steps,
)
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.hostexec import RecordingHost
from lab.run.workload import GuestInfo
from lab.run.workloads.revision import WORKLOAD, parse_revs, tree_name, tree_of
from lab.stats.bisection import Step

GUEST = GuestInfo("lab-thp", 1, 2**20, "198.18.0.1", 5201, "198.18.0.1:/lab", "/home/lab/run")
PARAMS = {"repo": "/src/prog", "revs": "lab-thp=aaa,lab-shp1g=bbb", "argv": "./prog --fast",
          "build": "make -j2"}  # fmt: skip


def test_each_guest_gets_its_own_checkout_built_and_timed_in_it(tmp_path: Path) -> None:
    host = RecordingHost()
    WORKLOAD.host_prepare(PARAMS, host, tmp_path)
    for guest, rev in (("lab-thp", "aaa"), ("lab-shp1g", "bbb")):
        own = str(tmp_path / "checkouts" / guest)
        tree = f"{own}/{rev}-0"  # named by revision and label: never a name removed before
        (archive,) = [c for c in host.commands if c[:4] == ("git", "-C", "/src/prog", "archive")
                      and c[-1] == rev]  # fmt: skip
        tar = archive[-2]  # git archive -o TAR REV, then tar -xf TAR -C TREE
        assert ("tar", "-xf", tar, "-C", tree) in host.commands
        at = host.commands.index
        others = ("find", own, "-mindepth", "1", "-maxdepth", "1", "!", "-name", f"{rev}-0",
                  "!", "-name", f".{rev}-0.commit", "-exec", "rm", "-rf", "{}", "+")  # fmt: skip
        assert at(others) < at(("mkdir", "-p", tree)) < at(archive)
        assert at(archive) < at(("chmod", "-R", "a+rwX", tree))
        assert not [c for c in host.commands if c[:2] == ("rm", "-rf")]  # guests hold handles
    resumed = RecordingHost(files={str(tmp_path / "checkouts/lab-thp/aaa-0"): ""})
    WORKLOAD.host_prepare({**PARAMS, "revs": "lab-thp=aaa"}, resumed, tmp_path)
    assert not [c for c in resumed.commands if c[0] == "git"]  # its checkout and build stay
    spec = WORKLOAD.spec(PARAMS, GUEST)
    assert spec.cwd == tree_of("lab-thp", "aaa", "0") == "/mnt/lab-nfs/checkouts/lab-thp/aaa-0"
    assert spec.argv == ["./prog", "--fast"]
    assert spec.setup_argv is not None and spec.setup_argv[2].endswith(
        "cd /mnt/lab-nfs/checkouts/lab-thp/aaa-0\nmake -j2"
    )
    assert "mount -t nfs4" in spec.setup_argv[2]
    # the guest never makes the checkout: a folder it cannot see is an error, not an empty tree
    check = next(line for line in spec.setup_argv[2].splitlines() if "aaa-0 ]" in line)
    assert "mkdir" not in spec.setup_argv[2].split("\n", 3)[-1]
    done = subprocess.run(["sh", "-c", check.replace("/mnt/lab-nfs", str(tmp_path / "none"))],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and "is not on the NFS export" in done.stderr


@pytest.mark.parametrize("revs", ["", "lab-thp", "lab-thp=a,lab-thp=b", "=a"])
def test_revisions_that_name_no_guest_or_one_twice_are_refused(revs: str) -> None:
    with pytest.raises(UsageError, match="revs"):
        parse_revs(revs)
    with pytest.raises(UsageError):
        WORKLOAD.resolve({**PARAMS, "revs": revs})


def repo(path: Path, count: int) -> list[str]:
    """A repository of ``count`` commits; their ids, oldest first."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], check=True, capture_output=True,
                              text=True)  # fmt: skip
        return done.stdout.strip()

    path.mkdir()
    git("init", "-q")
    for k in range(count):
        (path / "f").write_text(str(k))
        git("add", "f")
        git("commit", "-qm", f"c{k}")
    return git("rev-list", "--reverse", "HEAD").split()


def test_the_commits_run_from_good_to_bad_oldest_first(tmp_path: Path) -> None:
    shas = repo(tmp_path / "r", 6)
    ctx = Context(config=Config(state_dir=str(tmp_path)))
    assert commits_between(ctx, tmp_path / "r", shas[1], shas[4]) == tuple(shas[1:5])
    with pytest.raises(UsageError, match="does not descend"):
        commits_between(ctx, tmp_path / "r", shas[4], shas[1])
    with pytest.raises(UsageError, match="no commit 'nope'"):
        commits_between(ctx, tmp_path / "r", "nope", shas[1])


def test_the_latest_record_of_each_step_is_resumed_from(tmp_path: Path) -> None:
    request = BisectRequest(tmp_path, "g", "b", "./prog", tmp_path / "lab.db")
    path = steps_path(request, ("g1", "b1"))
    assert path == steps_path(request, ("g1", "b1")) != steps_path(request, ("g1", "b2"))
    assert stored_steps(path) == []
    early = Step(0, "b1", "gap", 0.01, ((1.2, 1.0),) * 10)
    late = Step(0, "b1", "gap", 0.01, ((1.2, 1.0),) * 20, "bad", True, 0.18, (0.1, 0.2))
    probe = Step(1, "m1", "probe", 0.01, ((1.0, 1.0),) * 10)
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in (early, late, probe)))
    assert stored_steps(path) == [late, probe]


def test_no_checkout_name_comes_back_within_a_bisection_and_a_resume_counts_on() -> None:
    # seen on the real pair: GOOD's checkout beside the gap step's first measurement and
    # beside the first candidate's had one name; the second was made after the first was
    # removed, and the guest's NFS client saw the removed folder, empty
    guests = ("lab-thp", "lab-shp1g")
    plan = Measurements(ident="b1")
    names, made = set(), []
    for commit, n in [("bad", 10), ("bad", 10), ("bad", 10), ("c2", 10), ("c2", 10), ("c1", 10)]:
        first, second, label, done = plan.next(commit, n, guests)
        made.append((commit, done, first, label))
        for guest, rev in ((first, commit), (second, "good")):
            name = f"{guest}/{tree_name(rev, label)}"
            assert name not in names, name
            names.add(name)
    # each commit's pairs swap between the twins every tenth pair
    assert [f for c, _, f, _ in made if c == "bad"] == ["lab-thp", "lab-shp1g", "lab-thp"]
    assert [f for c, _, f, _ in made if c == "c2"] == ["lab-thp", "lab-shp1g"]
    assert [d for c, d, _, _ in made if c == "bad"] == [0, 10, 20]
    # resumed from the stored steps after c2: c1's measurement gets the label it had
    stored = [
        Step(0, "bad", "gap", 0.01, tuple((1.0, 1.0) for _ in range(30))),
        Step(1, "c2", "probe", 0.01, tuple((1.0, 1.0) for _ in range(20))),
    ]
    again = Measurements(stored, ident="b1")
    assert again.next("c1", 10, guests)[2] == made[-1][3] == "b1-50"


def test_with_a_larger_batch_the_twins_swap_at_every_measurement() -> None:
    plan = Measurements(ident="b2", batch=20)
    firsts = [plan.next("c", 20, ("lab-thp", "lab-shp1g"))[0] for _ in range(4)]
    assert firsts == ["lab-thp", "lab-shp1g", "lab-thp", "lab-shp1g"]
