"""``lab host check|prepare|release|age``: what the lab needs from the host, and getting it."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from lab.commands.guestoptions import (
    add_hosts_argument,
    add_twin_arguments,
    parse_pair,
    twin_sizing,
)
from lab.commands.show import print_prepared
from lab.core.context import Context
from lab.core.hugepages import DEFAULT_HUGEPAGES
from lab.core.text import cell

if TYPE_CHECKING:
    from lab.app.prepare import PrepareHostsRequest


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "host",
        help="check, prepare or release the host",
        description="The host the twins run on: check what is ready, prepare what is not,"
        " release what prepare changed.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    check = actions.add_parser(
        "check",
        help="show whether a pair can be brought up, and how to fix what is missing",
        description="Print every host requirement with its state (ok, warn, missing, not"
        " available) and the command that fixes it, then what makes timings noisy (governor,"
        " boost, SMT siblings shared by the twins, KSM, NUMA balancing, THP defrag, irqbalance;"
        " `lab host prepare --tune` quiets them). Exit status 0 only when the pair can be"
        " brought up.",
    )
    check.add_argument("--json", action="store_true", help="print the rows as JSON")
    check.add_argument("--pair", default="thp,shp1g", help="the pair to check for (A,B)")
    add_twin_arguments(check)
    add_hosts_argument(check, default="local")
    check.set_defaults(run=run_check)

    prepare = actions.add_parser(
        "prepare",
        help="make the host ready (idempotent; recorded for release)",
        description="Reserve huge pages per NUMA node, mount hugetlbfs and tell libvirt, fix"
        " /dev/kvm permissions, start libvirtd, virtlogd, rpcbind and the NFS server when no"
        " init system does, create the isolated lab network and export the lab's NFS"
        " directory to it. Every change is recorded in STATE_DIR/host-changes.json. With"
        " --hosts, another host of lab.toml's [hosts] is prepared over its SSH and libvirt"
        " (no daemons started and no NFS there; the record is kept here, in"
        " STATE_DIR/hosts/NAME/host-changes.json).",
    )
    prepare.add_argument(
        "--hugepages",
        default=DEFAULT_HUGEPAGES,
        metavar="SIZE:COUNT[@NODE],...",
        help="huge pages to reserve on every NUMA node (or only @NODE), e.g. 1G:2,2M:0"
        f" (default {DEFAULT_HUGEPAGES})",
    )
    prepare.add_argument(
        "--subnet",
        default=None,
        metavar="CIDR",
        help="IPv4 subnet of the lab network (config: subnet)",
    )
    prepare.add_argument("--no-nfs", action="store_true", help="do not start an NFS server")
    prepare.add_argument(
        "--tune",
        action="store_true",
        help="also quiet what makes timings noisy (`lab host check`'s noise rows): governor"
        " performance, boost off, KSM off, NUMA balancing off, THP defrag madvise, irqbalance"
        " stopped; each value before is recorded, so release restores it",
    )
    add_hosts_argument(prepare, default="local")
    prepare.set_defaults(run=run_prepare)

    release = actions.add_parser(
        "release",
        help="undo exactly what `lab host prepare` changed, in reverse",
        description="Undo the changes recorded in STATE_DIR/host-changes.json, newest first"
        " (for another host: those recorded in STATE_DIR/hosts/NAME/host-changes.json here).",
    )
    add_hosts_argument(release, default="local")
    release.set_defaults(run=run_release)

    age = actions.add_parser(
        "age",
        help="fragment free memory to a level (THP's worst case), hold it, give it back",
        description="Fragment this machine's free memory so that the share of it that cannot"
        " serve a 2 MiB block (the order-9 unusable free space index of /proc/buddyinfo, all"
        " zones) is LEVEL, and hold it so: a small process takes free 2 MiB blocks whole (as"
        " transparent huge pages) and keeps one 4 KiB page of each, so the rest stays free but"
        " in holes, until `lab host age --undo` stops it (its pid is kept in"
        " STATE_DIR/host-aging.json). Level 1 breaks every free block: the worst case a THP"
        " twin meets. The huge page pools are never touched; at its peak max(2 GiB, 10 % of"
        " MemTotal) of MemAvailable and --keep-free stay available.",
    )
    what = age.add_mutually_exclusive_group(required=True)
    what.add_argument("--level", type=float, metavar="F", help="the index to reach, 0 to 1")
    what.add_argument("--undo", action="store_true", help="give back all the memory held")
    what.add_argument("--status", action="store_true", help="print the index now, and the holder")
    age.add_argument(
        "--keep-free",
        default=None,
        metavar="SIZE",
        help="memory left available for the guests besides the margin (default: twice the"
        " configured memory per guest)",
    )
    age.set_defaults(run=run_age)


def run_check(args: argparse.Namespace, ctx: Context) -> int:
    # deferred: they load libvirt, lxml or numpy, and the parser is built for every command
    from lab.app.hostcheck import check_hosts
    from lab.report.hostcheck import print_rows, rows_json

    all_ready, documents = True, {}
    for checked in check_hosts(ctx, args.hosts, parse_pair(args.pair), twin_sizing(args)):
        all_ready = all_ready and checked.ready
        if args.json:
            documents[checked.host] = json.loads(rows_json(checked.rows))
            continue
        if checked.remote:
            ctx.out.print(cell(f"host {checked.host} ({checked.uri}); fixes are run on that host"))
        print_rows(ctx, checked.rows)
        if not checked.ready:
            ctx.warn(
                f"host {checked.host}: the pair cannot be brought up yet: fix the rows marked"
                " missing"
            )
    if args.json:  # one host: its document, as before; several: one per host by name
        ctx.print_json(next(iter(documents.values())) if len(documents) == 1 else documents)
    return 0 if all_ready else 1


def run_prepare(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.prepare import prepare  # deferred: the parser is built for every command

    print_prepared(ctx, prepare(ctx, prepare_request(args)))
    return 0


def prepare_request(args: argparse.Namespace) -> PrepareHostsRequest:
    from lab.app.prepare import PrepareHostsRequest  # deferred, as above

    return PrepareHostsRequest(
        args.hugepages, args.subnet, not args.no_nfs, args.hosts, tune=args.tune
    )


def run_release(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app.prepare import release  # deferred: the parser is built for every command

    for released in release(ctx, args.hosts):
        undone = released.undone
        name = f"host {released.host}" if released.remote else "host"
        ctx.note(
            f"{name} released: {undone} change(s) undone"
            if undone
            else f"nothing to release on {name}: no recorded changes"
        )
        if not released.remote:
            _warn_if_aged(ctx)
    return 0


def _warn_if_aged(ctx: Context) -> None:
    from lab.app.aging import aging_state  # deferred, as above

    state = aging_state(ctx)
    if state.running:
        ctx.warn(
            f"the host is still aged (level {state.level:g}, fragmenter pid {state.pid} holding"
            f" {_gib(state.held_bytes)}): release does not undo that; run `lab host age --undo`"
        )


def run_age(args: argparse.Namespace, ctx: Context) -> int:
    from lab.app import aging  # deferred: the parser is built for every command

    if args.undo:
        undone = aging.unage(ctx)
        if undone is None:
            ctx.note("nothing to undo: the host is not aged (no fragmenter recorded)")
            return 0
        state = aging.aging_state(ctx)
        how = "stopped" if undone.was_running else "had ended already"
        ctx.note(
            f"host age undone: fragmenter pid {undone.pid} {how}, {_gib(undone.held_bytes)} given"
            f" back and memory compacted; order-9 unusable free space index now"
            f" {state.index:.3f} (unmovable pages allocated while the host was aged, the"
            " kernel's own, may hold some of its holes still)"
        )
        return 0
    if args.status:
        state = aging.aging_state(ctx)
        ctx.out.print(
            cell(
                f"order-9 unusable free space index {state.index:.3f} of"
                f" {_gib(state.free_bytes)} free (/proc/buddyinfo, all zones)"
            )
        )
        if state.pid is None:
            ctx.out.print(cell("not aged by the lab"))
        else:
            alive = "running" if state.running else "ended: run `lab host age --undo`"
            ctx.out.print(
                cell(
                    f"aged to level {state.level:g} by fragmenter pid {state.pid} ({alive}),"
                    f" holding {_gib(state.held_bytes)}"
                )
            )
        return 0
    aged = aging.age(ctx, aging.AgeRequest(args.level, args.keep_free))
    if aged.pid is None:
        ctx.note(
            f"the index is {aged.index:.3f} already, at or above {aged.level:g}: nothing to do"
        )
        return 0
    ctx.note(
        f"host aged: order-9 unusable free space index {aged.index_before:.3f} ->"
        f" {aged.index:.3f} (asked {aged.level:g}) in {aged.seconds:.0f} s; fragmenter pid"
        f" {aged.pid} holds {_gib(aged.held_bytes)} (peak {_gib(aged.peak_bytes)}) until"
        " `lab host age --undo`"
    )
    return 0


def _gib(size: int) -> str:
    return f"{size / 2**30:.2f} GiB"
