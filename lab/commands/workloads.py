"""``lab workloads``: the workloads `lab run` knows, their metrics and parameters."""

from __future__ import annotations

import argparse
from typing import Any

from lab.core.context import Context


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "workloads",
        help="list the workloads, their metrics and parameters",
        description="List the workload plug-ins (lab/run/workloads/*.py and lab.toml's"
        " workload_dirs): what each runs, what it records (unit, which way is better) and every"
        " parameter with its default; set parameters with `lab run WORKLOAD -p KEY=VALUE`. A"
        " plug-in file that failed to load is listed with its error, and the status is then 2.",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the workloads, metrics and parameters as JSON"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    from lab.app.catalogue import workloads as known
    from lab.core.text import cell

    workloads = known(ctx)
    if args.json:
        found: list[dict[str, object]] = [
            {
                "name": name,
                "description": w.description,
                "metrics": [
                    {"name": m.name, "unit": m.unit, "direction": m.direction} for m in w.metrics
                ],
                "params_declare_metrics": w.params_declare_metrics,
                "parameters": [
                    {"name": key, "default": p.default, "help": p.help}
                    for key, p in w.parameters.items()
                ],
            }
            for name, w in sorted(workloads.items())
        ]
        found += [
            {"name": name, "broken": True, "file": err.path, "error": err.reason}
            for name, err in sorted(workloads.broken.items())
        ]
        ctx.print_json(found)
        workloads.refuse_broken()
        return 0
    for name, workload in sorted(workloads.items()):
        table = Table(
            "parameter",
            "default",
            "meaning",
            title=cell(f"{name}: {workload.description}"),  # plug-in files' words: text
            title_justify="left",
        )
        for key, param in workload.parameters.items():
            default = "from the guest" if param.default is None else str(param.default)
            table.add_row(*map(cell, (key, default, param.help)))
        metrics = ", ".join(
            f"{m.name} ({m.unit}, {m.direction} is better)" for m in workload.metrics
        )
        if workload.params_declare_metrics:
            metrics += ", and the metrics its parameters declare"
        table.caption = cell(f"records: {metrics}")
        ctx.out.print(table)
    for name, err in sorted(workloads.broken.items()):
        ctx.out.print(cell(f"{name}: BROKEN: {err.path}: {err.reason}", "bold red"),
                      highlight=False)  # fmt: skip
    workloads.refuse_broken()
    return 0
