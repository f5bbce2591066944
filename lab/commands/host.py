"""``lab host check|prepare|release``: what the lab needs from the host, and getting it."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from lab.commands.guestoptions import add_twin_arguments, parse_pair
from lab.commands.show import print_prepared
from lab.core.context import Context
from lab.core.text import cell
from lab.host.hugepages import DEFAULT_HUGEPAGES

if TYPE_CHECKING:
    from lab.app.prepare import PrepareHostsRequest
from lab.commands.guestoptions import add_hosts_argument
from lab.guests.sites import chosen_sites


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


def run_check(args: argparse.Namespace, ctx: Context) -> int:
    # deferred: they load libvirt, lxml or numpy, and the parser is built for every command
    from lab.app.hostcheck import check_host
    from lab.report.hostcheck import print_rows, rows_json

    sites = chosen_sites(ctx, args.hosts)
    all_ready, documents = True, {}
    for site in sites:
        rows = check_host(ctx, parse_pair(args.pair), sizing=args, site=site)
        ready = all(row.state != "missing" for row in rows)
        all_ready = all_ready and ready
        if args.json:
            documents[site.name] = json.loads(rows_json(rows))
            continue
        if site.remote:
            ctx.out.print(cell(f"host {site.name} ({site.entry.uri}); fixes are run on that host"))
        print_rows(ctx, rows)
        if not ready:
            ctx.warn(
                f"host {site.name}: the pair cannot be brought up yet: fix the rows marked missing"
            )
    if args.json:  # one host: its document, as before; several: one per host by name
        ctx.print_json(documents[sites[0].name] if len(sites) == 1 else documents)
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
    from lab.host.prepare import release_host  # deferred: the parser is built for every command

    for site in chosen_sites(ctx, args.hosts):
        undone = release_host(ctx, site=site)
        name = f"host {site.name}" if site.remote else "host"
        ctx.note(
            f"{name} released: {undone} change(s) undone"
            if undone
            else f"nothing to release on {name}: no recorded changes"
        )
    return 0
