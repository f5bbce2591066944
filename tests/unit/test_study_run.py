"""Running a study with fake steps (the pair, each run, the report), and its file kept in the
store: resuming, refusals before anything runs, the plan as JSON."""

from __future__ import annotations

import hashlib
import io
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console

from lab.app.report import ReportRequest, ReportResult
from lab.app.run import RunOutcome, RunRequest
from lab.app.study import Study, load_study, parse_study
from lab.app.studyrun import (
    StudyActions,
    estimate_seconds,
    record_study,
    report_argv,
    report_request,
    run_argv,
    run_request,
    run_study,
)
from lab.app.up import HostOutcome, UpOutcome, UpRequest
from lab.cli import main
from lab.commands.study import plan_json
from lab.core.config import Config
from lab.core.context import Context
from lab.core.errors import LabError, StoreError, UsageError
from lab.guests.labstate import GuestRecord, LabState
from lab.guests.plan import TwinRequest
from lab.store import Store
from lab.store.schema import SCHEMA_V1
from tests.unit.test_study import (  # noqa: F401 (config: the autouse fixture)
    HEAD,
    ONE,
    STUDIES,
    VARIANTS,
    WORKLOADS,
    config,
    study,
)

# -- running it, with fake actions ------------------------------------------------------------


@dataclass
class FakeLab:
    """Records what `lab study run` asked for; a lab is up once `up` was called."""

    state: LabState | None = None
    ups: list[TwinRequest] = field(default_factory=list)
    runs: list[RunRequest] = field(default_factory=list)
    reports: list[ReportRequest] = field(default_factory=list)
    interrupt: set[str] = field(default_factory=set)  # workloads stopped by Ctrl-C
    shown: list[object] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # "up A,B", "run W", "down", in order

    def actions(self) -> StudyActions:
        return StudyActions(lab_state=lambda: self.state, up=self.up, run=self.run,
                            report=self.report, down=self.down)  # fmt: skip

    def down(self) -> None:
        self.log.append("down")
        self.state = None

    def up(self, request: UpRequest) -> UpOutcome:
        self.ups.append(request.twins)
        self.log.append("up " + ",".join(request.twins.variants))
        self.state = lab_state(request.twins.variants, request.twins.vcpus)
        return UpOutcome((HostOutcome("local"),))

    def run(self, request: RunRequest) -> RunOutcome:
        self.runs.append(request)
        self.log.append("run " + request.workload)
        stopped = request.workload in self.interrupt
        return RunOutcome(request.workload, f"{request.workload}-k", request.n, 2,
                          request.db or "", interrupted=stopped)  # fmt: skip

    def report(self, request: ReportRequest) -> ReportResult:
        self.reports.append(request)
        return ReportResult(Path(request.out or "r") / "index.html")


class Shown:
    """A :class:`lab.app.show.Show` that records what it was given."""

    def __init__(self, lab: FakeLab) -> None:
        self.lab = lab

    def __getattr__(self, kind: str) -> object:
        return lambda result: self.lab.shown.append((kind, result))


def lab_state(variants: list[str], vcpus: int = 1, image: str = "debian12") -> LabState:
    guests = [
        GuestRecord(f"lab-{v}", v, "52:54:00:00:00:01", "/d", list(range(vcpus)), 0, "key")
        for v in variants
    ]
    return LabState(guests, "qemu", "test", image, "h", "lab", "198.18.0.1", [0], 0.0)


def context(tmp_path: Path) -> Context:
    quiet = Console(file=io.StringIO())
    settings = Config(state_dir=str(tmp_path / "state"), reserve_host_cpus=0)
    return Context(config=settings, out=quiet, err=quiet)


def start(ctx: Context, got: Study, db: str, lab: FakeLab) -> int:
    return run_study(ctx, got, db, Shown(lab), lab.actions()).status


def test_run_brings_the_pair_up_runs_each_step_in_order_then_the_report(tmp_path: Path) -> None:
    demo = load_study(STUDIES / "demo.toml")
    db = str(tmp_path / "lab.db")
    lab = FakeLab()
    assert start(context(tmp_path), demo, db, lab) == 0
    assert lab.ups == [TwinRequest(["thp", "shp1g"], 1, "1G", 0)]
    assert lab.runs == [run_request(demo, w, db) for w in demo.workloads]
    assert [r.workload for r in lab.runs] == ["sysbench-memory", "iperf3", "demo-build"]
    assert lab.reports == [report_request(demo, db)]
    assert [kind for kind, _ in lab.shown] == ["up", "run", "run", "run", "report"]
    with Store.open(db) as store:
        (stored,) = store.studies()
    assert (stored.name, stored.description) == ("demo", demo.description)
    assert (stored.study_file, stored.study_hash) == (demo.text, demo.sha256)


def test_running_again_resumes_by_running_every_step_again_with_the_same_request(
    tmp_path: Path,
) -> None:
    demo = load_study(STUDIES / "demo.toml")
    db = str(tmp_path / "lab.db")
    lab = FakeLab(interrupt={"iperf3"})  # Ctrl-C during the second step
    assert start(context(tmp_path), demo, db, lab) == 130
    assert [r.workload for r in lab.runs] == ["sysbench-memory", "iperf3"]
    assert lab.reports == []
    first = list(lab.runs)
    lab.runs.clear()
    lab.interrupt.clear()
    assert start(context(tmp_path), demo, db, lab) == 0
    assert len(lab.ups) == 1  # the pair that is up is used
    assert lab.runs[:2] == first  # each run resumes by itself
    assert [r.workload for r in lab.runs] == ["sysbench-memory", "iperf3", "demo-build"]
    assert len(lab.reports) == 1
    with Store.open(db) as store:
        assert len(store.studies()) == 1


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (lab_state(["thp", "shp2m"]), r"variants shp2m,thp; the study 'demo' needs thp,shp1g"),
        (lab_state(["thp", "shp1g"], vcpus=2), r"2 vCPUs per guest; the study 'demo' asks for 1"),
    ],
)
def test_a_different_lab_that_is_up_is_refused(
    tmp_path: Path, state: LabState, message: str
) -> None:
    demo = load_study(STUDIES / "demo.toml")
    lab = FakeLab(state=state)
    with pytest.raises(UsageError, match=message) as refused:
        start(context(tmp_path), demo, str(tmp_path / "lab.db"), lab)
    assert "lab down" in str(refused.value)
    assert lab.runs == [] and lab.ups == []


def test_another_image_up_is_refused(tmp_path: Path) -> None:
    got = study(HEAD + 'image = "fedora32"\n' + ONE)
    lab = FakeLab(state=lab_state(["thp", "shp1g"]))
    with pytest.raises(UsageError, match=r"runs image 'debian12'.*asks for 'fedora32'"):
        start(context(tmp_path), got, str(tmp_path / "lab.db"), lab)


def test_a_step_the_run_would_refuse_stops_the_study_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The study file was checked when it was loaded; a run this lab still refuses (here a
    threshold no run takes) stops the study before the pair comes up or the store changes."""
    import lab.app.studyrun

    got = study(HEAD + ONE)
    refused = lambda s, w, db: RunRequest(w.name, w.n, study=s.name, db=db, threshold="200%")  # noqa: E731
    monkeypatch.setattr(lab.app.studyrun, "run_request", refused)
    fake = FakeLab()
    with pytest.raises(UsageError, match=r"--threshold '200%' must be at least 0 %"):
        start(context(tmp_path), got, str(tmp_path / "lab.db"), fake)
    assert fake.ups == [] and fake.runs == [] and not (tmp_path / "lab.db").exists()


def test_a_changed_study_file_is_refused_before_the_pair_comes_up(tmp_path: Path) -> None:
    db = str(tmp_path / "lab.db")
    lab = FakeLab()
    assert start(context(tmp_path), study(HEAD + ONE), db, lab) == 0
    changed = study(HEAD + ONE.replace("n = 3", "n = 4"))
    lab = FakeLab()
    with pytest.raises(StoreError, match=r"made from a different study file.*new name"):
        start(context(tmp_path), changed, db, lab)
    assert lab.ups == [] and lab.runs == []


def test_lab_study_run_of_a_bad_file_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + ONE.replace("n = 3\n", ""))
    db = tmp_path / "lab.db"
    assert main(["study", "run", str(path), "--db", str(db)]) == 2
    assert "has neither n nor until" in capsys.readouterr().err
    assert not db.exists() and not (tmp_path / "state").exists()


# -- the stored study file ---------------------------------------------------------------------


def test_the_study_file_and_its_hash_round_trip_through_the_store(tmp_path: Path) -> None:
    got = load_study(STUDIES / "thp-vs-shp1g.toml")
    db = tmp_path / "lab.db"
    with Store.open(db) as store:
        first = record_study(store, got)
        assert record_study(store, got) == first  # the same file again: the same study
    with Store.open(db) as store:
        (stored,) = store.studies()
    assert stored.study_file == (STUDIES / "thp-vs-shp1g.toml").read_text()
    digest = hashlib.sha256((STUDIES / "thp-vs-shp1g.toml").read_bytes()).hexdigest()
    assert stored.study_hash == digest
    assert load_study_from_text(stored.study_file).sha256 == stored.study_hash


def load_study_from_text(text: str) -> Study:
    return parse_study(text, "stored", WORKLOADS, VARIANTS)


def test_a_store_of_an_older_lab_takes_the_study_file_of_a_study_begun_by_lab_run(
    tmp_path: Path,
) -> None:
    """A store made before study files (schema 1, study rows by `lab run`) needs no
    migration: the study file and hash go into the study's own columns when it first runs."""
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_V1)
    conn.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '1')")
    conn.execute("INSERT INTO study(name, created, description) VALUES ('s', 0, 'lab run')")
    conn.commit()
    conn.close()
    got = study(HEAD + ONE)
    with Store.open(db) as store:
        study_id = record_study(store, got)
        (stored,) = store.studies()
    assert (stored.id, stored.study_hash, stored.study_file) == (study_id, got.sha256, got.text)
    with Store.open(db) as store, pytest.raises(LabError, match="different study file"):
        record_study(store, study(HEAD + ONE.replace("n = 3", "n = 5")))


def test_the_plan_as_json_names_each_step_its_command_and_time() -> None:
    import json

    got = study(HEAD + ONE + ONE.replace("null", "iperf3") + 'schedule = "alternate"\n')
    doc = json.loads(plan_json(got, "lab.db", {"null": 10.0, "iperf3": 10.0}, "debian12"))
    assert [s["workload"] for s in doc["steps"]] == ["null", "iperf3"]
    for step, workload in zip(doc["steps"], got.workloads, strict=True):
        assert step["argv"] == ["lab", *run_argv(got, workload, "lab.db")]
        assert step["estimated_s"] == estimate_seconds(workload, 10.0)
    assert doc["estimated_s"] == 30.0 + 60.0
    assert doc["report_argv"] == ["lab", *report_argv(got, "lab.db")]
    assert (doc["name"], doc["sha256"], doc["image"]) == (got.name, got.sha256, "debian12")
    unknown = json.loads(plan_json(got, "lab.db", {"null": 10.0}, "debian12"))
    assert unknown["steps"][1]["estimated_s"] is None and unknown["estimated_s"] is None


FACTORIAL = """name = "pages"
vcpus = 1
memory = "1G"
[factors]
page = ["thp", "1g"]
prealloc = ["off", "on"]
[[workload]]
name = "null"
n = 5
[[workload]]
name = "sysbench-memory"
n = 3
"""


def test_a_factorial_study_runs_every_pair_of_cells_once_each_a_block(tmp_path: Path) -> None:
    """page × prealloc: 3 cells libvirt can express (1 GiB on demand left out), so 3 blocks
    of 2, each brought up in turn (the one before brought down) and every workload run on it."""
    got = parse_study(FACTORIAL)
    assert got.design is not None
    assert [c for c, _ in got.design.left_out] == ["page-1g.prealloc-off"]
    assert "libvirt" in got.design.left_out[0][1]
    pairs = got.pairs
    assert sorted(tuple(sorted(p)) for p in pairs) == sorted(
        tuple(sorted(p)) for p in [("page-thp.prealloc-off", "page-thp.prealloc-on"),
                                   ("page-thp.prealloc-off", "page-1g.prealloc-on"),
                                   ("page-thp.prealloc-on", "page-1g.prealloc-on")]
    )  # fmt: skip
    assert parse_study(FACTORIAL).pairs == pairs  # the same file, the same plan (resumable)
    lab = FakeLab(state=lab_state(["thp", "shp1g"]))  # another pair is up: brought down first
    assert start(context(tmp_path), got, str(tmp_path / "lab.db"), lab) == 0
    expected = []
    for pair in pairs:
        expected += ["down", f"up {','.join(pair)}", "run null", "run sysbench-memory"]
    assert lab.log == expected
    assert len(lab.reports) == 1


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('[factors]\npage = ["thp", "1g"]\n', "either variants (a pair) or factors"),
        ("", "either variants (a pair) or factors"),
    ],
)
def test_variants_and_factors_together_or_neither_are_refused(table: str, expected: str) -> None:
    head = 'name = "s"\nvcpus = 1\nmemory = "1G"\n'
    variants = 'variants = ["thp", "shp1g"]\n' if table else ""
    text = head + variants + table + '[[workload]]\nname = "null"\nn = 5\n'
    with pytest.raises(LabError, match=re.escape(expected)):
        parse_study(text)


@pytest.mark.parametrize(
    ("factors", "expected"),
    [
        ('page = ["thp", "4k"]', "factor 'page' has no level '4k'"),
        ('pages = ["thp", "1g"]', "unknown factor 'pages'"),
        ('page = ["thp"]', "two or more distinct levels"),
        ('page = ["1g"]\nprealloc = ["off", "on"]', "two or more distinct levels"),
    ],
)
def test_a_factor_or_level_the_lab_lacks_is_refused(factors: str, expected: str) -> None:
    text = f'name = "s"\nvcpus = 1\nmemory = "1G"\n[factors]\n{factors}\n'
    with pytest.raises(LabError, match=expected):
        parse_study(text + '[[workload]]\nname = "null"\nn = 5\n')
