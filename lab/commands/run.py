"""``lab run WORKLOAD --n N``: iterations on the twins, every sample stored as it happens."""

from __future__ import annotations

import argparse
from typing import Any

from lab.app.run import DEFAULT_STUDY, RunRequest, run_workload
from lab.commands.guestoptions import add_hosts_argument
from lab.commands.options import THRESHOLD_HELP
from lab.commands.show import print_run
from lab.commands.storeoptions import warmup_rule
from lab.core.context import Context
from lab.core.errors import UsageError
from lab.core.sweeps import MAX_SWEEP_RUNS, ORDERS, parse_axis

INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as lab.cli answers it


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a workload on the twins and store every sample",
        description="Run WORKLOAD for N iterations on the lab's guests (iteration i on both"
        " together by default: --schedule sync). A runner inside each guest does the"
        " iterations and journals each one"
        " durably; the controller streams the journals into the result store. Re-running the"
        " same command resumes where it stopped (after Ctrl-C, a killed controller, a lost"
        " connection or a rebooted guest); failed iterations are kept and repeated.",
        epilog="Workloads and their parameters: lab workloads",
    )
    parser.add_argument("workload", help="workload name (see `lab workloads`)")
    parser.add_argument(
        "--n",
        type=int,
        required=True,
        help="iterations per guest (with --until: the most it may take)",
    )
    parser.add_argument("--guests", help="comma-separated guest names (default: all)")
    add_hosts_argument(parser, default="every host where a lab is up")
    parser.add_argument(
        "--schedule",
        choices=("concurrent", "alternate", "sync"),
        default="sync",
        help="sync (the default): iteration i starts on all guests together and i+1 only"
        " when all finished i, so samples pair up (lab compare --paired: whatever disturbed"
        " the host disturbed both), perf counts each iteration, and --swap-every can swap"
        " the CPU sets; it adds about 0.05 s per iteration under emulation (bench/"
        "schedules.py). alternate: one guest at a time, iteration by iteration (the twins"
        " never share the host). concurrent: all guests at once, each at its own pace: the"
        " fastest, but unpaired and without counters",
    )
    parser.add_argument(
        "--until",
        metavar="RULE",
        help="stop before --n once the rule holds: 'verdict' (faster, slower or equivalent"
        " by --threshold) or 'ci-halfwidth<0.5%%'. Checked after every pair of samples with"
        " an anytime-valid confidence sequence, so looking often does not inflate the"
        " false-positive rate (plain repeated t-tests would)",
    )
    parser.add_argument(
        "--swap-every",
        type=int,
        metavar="K",
        help="with --schedule sync: swap the two twins' CPU sets (live vCPU pins; the"
        " emulator threads keep their shared CPUs) every K iterations, so iterations"
        " K+1..2K, 3K+1..4K, ... run on each other's CPUs and the rest on their own. Each"
        " sample's placement is stored, and lab compare and lab report then show the"
        " effect of the variant and the effect of the CPU set separately, so 'which CPUs'"
        " cannot pass for 'which variant'. The pins are put back when the run ends",
    )
    parser.add_argument(
        "--reboot-every",
        type=int,
        metavar="K",
        help="power-cycle the guests (shutdown, start: a new QEMU, its memory allocated"
        " again) after every K iterations, when both twins have done them, so the run holds"
        " several boots of K iterations each; lab compare then takes the boot as the unit of"
        " replication (iterations of one boot measure that boot: which host pages it got)."
        " A cycle takes about a minute under emulation",
    )
    parser.add_argument(
        "--host-age",
        metavar="LEVEL",
        help="the host age this run is at, as a study's age factor names it: fresh (no `lab"
        " host age` held) or fNN (held at unusable free space index NN %%, f80 for `lab host"
        " age --level 0.8`). Refused unless the host is held so; part of the run's key, so a"
        " run at another age is another run (lab study run passes it for its age factor)",
    )
    parser.add_argument(
        "--replicate", type=int, default=1, metavar="K",
        help="the K-th run of the same settings: another run, not a resume of the first (lab"
        " study run passes it for a block its design repeats, e.g. one pair at each host age"
        " twice); default 1",
    )  # fmt: skip
    parser.add_argument(
        "--warmup",
        metavar="K|auto",
        type=warmup_rule(allow_none=False),
        help="declare the warm-up, stored with the run: K discards the first K iterations"
        " after every boot of each guest, auto the leading iterations a CUSUM test finds;"
        " lab compare and lab report then leave them out unless told otherwise (--warmup"
        " there). Every iteration still runs and is stored, and the run's key does not"
        " change: a resumed run records the latest --warmup; without one it keeps its own",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=99.99,
        metavar="PCT",
        help="confidence level for --until, in percent (default 99.99, as the reference study)",
    )
    parser.add_argument(
        "--threshold",
        default="1%",
        metavar="T",
        help=f"for --until verdict: the {THRESHOLD_HELP} (default 1%%)",
    )
    parser.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a workload parameter (repeatable), e.g. -p time=10",
    )
    parser.add_argument(
        "--counters", choices=("none", "software", "all"), default="all",
        help="count each guest's QEMU vCPU threads with perf stat over every iteration (sync"
        " and alternate schedules), stored as metrics perf.<event>: software events (task-clock,"
        " page-faults, context-switches, cpu-migrations), or all that this host counts (TLB"
        " misses, cycles, instructions; a VM without a PMU has none) (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--sweep", action="append", default=[], metavar="KEY=VALUES",
        help="one run per value of a workload parameter (repeatable: several keys give their"
        " cartesian product), all made and resumed by this one command, e.g. --sweep"
        " total_size=16M,64M,256M, or a geometric range A..B:xF (total_size=4M..4G:x4) or an"
        f" arithmetic one A..B:+S (threads=1..8:+1); at most {MAX_SWEEP_RUNS} runs. lab compare"
        " then shows a row per value, its verdicts corrected together, and where the variant"
        " starts to matter",
    )  # fmt: skip
    parser.add_argument(
        "--sweep-order", choices=ORDERS, default="interleaved",
        help="interleaved: iteration i of every value before iteration i+1 of any, so a drift"
        " of the host spreads over every value (default); blocked: one value's n iterations,"
        " then the next value's",
    )  # fmt: skip
    parser.add_argument("--study", default=DEFAULT_STUDY, help="study name the samples belong to")
    parser.add_argument("--db", help="result store (config: store)")
    parser.add_argument(
        "--max-failures",
        type=int,
        default=10,
        metavar="K",
        help="stop when a guest has more than K failed attempts (default 10)",
    )
    parser.add_argument(
        "--guest-timeout",
        type=float,
        metavar="S",
        help="seconds to wait for a guest that stopped answering (destroyed, replaced,"
        " unreachable) before the run stops with status 4; it says once that it waits, and"
        " why (config: guest_timeout, default 300)",
    )
    parser.add_argument(
        "--adopt",
        action="store_true",
        help="take up the iterations a guest's journal holds for this run when the store does"
        " not hold the run (it was deleted, or this is another store), and say how many; by"
        " default such a journal is retired (renamed KEY.retired-TIME in the guest) and the run"
        " starts from its first iteration",
    )
    parser.set_defaults(run=run)


def pair_items(pairs: list[str]) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` strings as pairs; the workload converts and checks the values."""
    items = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"parameter {pair!r} is not KEY=VALUE", hint="e.g. -p time=10")
        items.append((key, value))
    return tuple(items)


def run(args: argparse.Namespace, ctx: Context) -> int:
    outcome = run_workload(ctx, request(args))
    print_run(ctx, outcome)
    return INTERRUPTED if outcome.interrupted else 0


def request(args: argparse.Namespace) -> RunRequest:
    return RunRequest(
        workload=args.workload, n=args.n, params=pair_items(args.param), study=args.study,
        db=args.db, schedule=args.schedule, until=args.until, confidence=args.confidence,
        threshold=args.threshold, swap_every=args.swap_every, warmup=args.warmup,
        guests=tuple(args.guests.split(",")) if args.guests else (), hosts=args.hosts,
        max_failures=args.max_failures, counters=args.counters,
        sweep=tuple(parse_axis(text) for text in args.sweep), sweep_order=args.sweep_order,
        guest_timeout=args.guest_timeout, adopt=args.adopt, reboot_every=args.reboot_every,
        host_age=args.host_age,
        replicate=args.replicate,
    )  # fmt: skip
