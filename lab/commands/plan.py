"""``lab plan``: how many samples per variant a question needs, and how long they take."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lab.commands.storeoptions import add_db_argument, add_run_argument
from lab.core import units
from lab.core.context import Context
from lab.core.text import cell

if TYPE_CHECKING:
    from lab.app.factorialplan import FactorialPlanResult
    from lab.app.plan import BootPlan, MetricBootPlan, Plan, PlanRequest, PlanRow


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan", help="samples per variant lab compare's verdict needs",
        description="Print the samples per variant at which lab compare's verdict reaches"
        " --power at --confidence and --threshold when the true difference is --effect:"
        " \"faster\" (or \"slower\") when the effect lies beyond the threshold, \"equivalent\""
        " when it lies within it (or as --goal says), with P(verdict) at a quarter, half and"
        " twice that n. The standard deviation comes from --sd, or from a pilot run in the"
        " store with --from-store; n is inflated for lag-1 autocorrelation, and the duration"
        " is given at --iteration-time. The formula is printed with the result. With a"
        " factorial (--factors, or --study FILE with [factors]): the samples per cell per"
        " block at which lab compare's intervals find each main effect of ratio --effect.",
    )  # fmt: skip
    parser.add_argument("--sd", type=float, metavar="S", help="standard deviation of one sample")
    parser.add_argument(
        "--effect", metavar="E",
        help="the true difference assumed, B better by E: a percentage of --mean (2%%) or an"
        " absolute value in the metric's unit (default: 2%%, or 0%% with --goal equivalence)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", default="1%", metavar="T",
        help="lab compare's threshold: a percentage of the mean, or a value in the metric's"
        " unit; 0%% plans to tell B from A"
        " only (default: 1%%, as lab compare)",
    )  # fmt: skip
    parser.add_argument(
        "--goal", choices=["superiority", "equivalence"],  # lab.stats.planning.Goal
        help="plan for \"faster\"/\"slower\" (superiority) or \"equivalent\" (equivalence);"
        " default: superiority when the effect lies beyond the threshold, else equivalence",
    )  # fmt: skip
    parser.add_argument("--mean", type=float, metavar="M", help="mean, for a percentage effect")
    parser.add_argument("--confidence", type=float, default=99.99, metavar="PERCENT",
                        help="confidence level (default: 99.99)")  # fmt: skip
    parser.add_argument("--power", type=float, default=0.9, metavar="P",
                        help="probability of reaching the verdict (default: 0.9)")  # fmt: skip
    parser.add_argument(
        "--direction", choices=["lower", "higher"], default="lower",
        help="which way is better (default: lower, a time); the verdict reads the ratio of"
        " means, so the same effect is planned a little differently each way (--from-store:"
        " the metric's own)",
    )  # fmt: skip
    parser.add_argument("--autocorrelation", type=float, default=0.0, metavar="R",
                        help="lag-1 autocorrelation of samples (default: 0)")  # fmt: skip
    parser.add_argument("--iteration-time", type=float, metavar="SECONDS",
                        help="seconds one iteration takes, for the duration")  # fmt: skip
    parser.add_argument(
        "--from-store", action="store_true",
        help="take sd, mean, autocorrelation and iteration time from the samples in the store;"
        " where the pilot's arms have several boots each, also plan boots × iterations per"
        " boot (Kalibera and Jones's split, the boot as the unit of lab compare's verdict)",
    )  # fmt: skip
    parser.add_argument(
        "--reboot-cost", type=float, metavar="SECONDS",
        help="with --from-store: seconds one reboot costs (default: the pilot's median gap"
        " between boots, else 60, said so)",
    )  # fmt: skip
    parser.add_argument(
        "--iteration-cost", type=float, metavar="SECONDS",
        help="with --from-store: seconds one iteration costs in the boots plan (default:"
        " --iteration-time, else the pilot's median iteration)",
    )  # fmt: skip
    parser.add_argument(
        "--sweep", nargs="?", const="", metavar="KEY", dest="sweep_key",
        help="plan each value of a pilot sweep (lab run --sweep) in the store: the samples per"
        " value for the verdict at each, from that value's sd and, unless --effect says, its"
        " own difference between the twins; each at 1 − α/m for m values, so its verdict"
        " survives the sweep's correction (KEY: one sweep, or a unique prefix; none: every"
        " sweep of --study/--workload)",
    )  # fmt: skip
    add_db_argument(parser)
    parser.add_argument(
        "--study", metavar="NAME|FILE",
        help="only this study of the store (default: every study); or a study FILE (.toml)"
        " with [factors]: plan its factorial, the samples per cell per block (n of each"
        " [[workload]]) at which lab compare finds each main effect of --effect",
    )  # fmt: skip
    add_run_argument(parser)
    parser.add_argument("--workload", metavar="W", help="with --from-store: only this workload")
    parser.add_argument("--metric", metavar="M", help="with --from-store: only this metric")
    parser.add_argument("--json", action="store_true", help="print the plans as JSON")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="json: as --json")  # fmt: skip
    _add_factorial_arguments(parser)
    parser.set_defaults(run=run)


def _add_factorial_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a factorial's plan (``--study FILE`` with [factors], or ``--factors``)."""
    parser.add_argument(
        "--factors", metavar="SPEC",
        help="plan a factorial of the lab's factors, e.g. 'page=thp,1g prealloc=off,on', its"
        " cells run two at a time as lab study run runs [factors]; --effect is then the ratio"
        " each main effect changes the metric by (5%% or 1.05), --sd the residual sd on the"
        " log scale (or, with --mean, in the metric's unit)",
    )  # fmt: skip
    parser.add_argument("--cv", metavar="CV",
                        help="with a factorial: the residual coefficient of variation, 2%% or"
                        " 0.02, instead of --sd")  # fmt: skip
    parser.add_argument("--interaction", action="append", default=[], metavar="TERM",
                        help="with a factorial: also plan for this interaction, e.g."
                        " page:prealloc (repeatable)")  # fmt: skip
    parser.add_argument(
        "--effects-correction", choices=("bonferroni", "none"), default="bonferroni",
        help="with a factorial: as lab compare's, the intervals of all the effects it reports"
        " at once (default), or each on its own",
    )  # fmt: skip


def format_duration(seconds: float | None) -> str:
    return "–" if seconds is None else units.format_duration(seconds)


# option -> (its value must be above 0, what it is): inf, nan and (where marked) 0 or less
# mean nothing to a plan; each is refused naming its option before anything is computed.
_NUMBERS = {
    "sd": (True, "a standard deviation"),
    "mean": (False, "a mean"),
    "iteration_time": (True, "a duration in seconds"),
    "confidence": (True, "a percentage"),
    "power": (True, "a probability"),
    "autocorrelation": (False, "a correlation"),
    "reboot_cost": (True, "a duration in seconds"),
    "iteration_cost": (True, "a duration in seconds"),
}


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse a numeric option that is inf, nan, or not above 0 where it must be."""
    from lab.core.errors import UsageError

    for name, (positive, what) in _NUMBERS.items():
        value = getattr(args, name, None)
        if value is None:
            continue
        option = "--" + name.replace("_", "-")
        if not math.isfinite(value) or (positive and value <= 0):
            need = "a finite number above 0" if positive else "a finite number"
            raise UsageError(
                f"{option} {value:g} is not {what}: it must be {need}",
                hint=f"e.g. {option} {_EXAMPLES[name]}",
            )


_EXAMPLES = {"sd": "0.8", "mean": "42.5", "iteration_time": "30", "confidence": "99.99",
             "power": "0.9", "autocorrelation": "0.2", "reboot_cost": "60",
             "iteration_cost": "30"}  # fmt: skip


def request(args: argparse.Namespace) -> PlanRequest:
    from lab.app.analyse import Selection  # deferred: the parser is built for every command
    from lab.app.plan import PlanRequest

    selection = Selection(db=args.db, study=args.study, workload=args.workload,
                          metric=args.metric)  # fmt: skip
    return PlanRequest(
        selection, args.run_key, args.from_store, args.sd, args.effect, args.threshold,
        args.goal, args.mean, args.confidence, args.power, args.direction,
        args.autocorrelation, args.iteration_time, args.reboot_cost, args.iteration_cost,
    )  # fmt: skip


def run(args: argparse.Namespace, ctx: Context) -> int:
    from rich.table import Table

    # deferred: heavy (scipy, through the planning)
    from lab.app.plan import CURVE, FORMULA, make_plans

    check_numbers(args)
    args.json = args.json or args.format == "json"
    if args.factors is not None or _is_study_file(args.study):
        return _run_factorial(args, ctx)
    if args.cv is not None or args.interaction:
        from lab.core.errors import UsageError

        raise UsageError(
            "--cv and --interaction plan a factorial",
            hint="Give its design: --study FILE with [factors], or --factors",
        )
    if args.sweep_key is not None:
        return _run_sweep(args, ctx)
    result = make_plans(ctx, request(args))
    rows, boot_plans = result.rows, result.boot_plans
    if args.json:
        ctx.out.out(plans_json(rows, FORMULA, boot_plans), highlight=False)
        return 0
    table = Table(title=f"formula: {FORMULA}", title_justify="left")
    table.add_column("", no_wrap=True)
    for name, _, _ in rows:
        table.add_column(cell(name or "plan"), justify="right")  # a name from the store: text
    lines: list[tuple[str, Callable[[int | None, Plan], str]]] = [
        ("standard deviation σ", lambda have, p: f"{p.sd:.4g}"),
        ("effect Δ (B better by)", lambda have, p: f"{p.delta:.4g}"),
        ("effect size d = Δ/σ", lambda have, p: f"{p.delta / p.sd:.3g}"),
        ("threshold ±θ", lambda have, p: f"{p.bound:.4g}" + (
            f" ({p.threshold * 100:g} %)" if math.isfinite(p.threshold) else " (in units)")),
        ("verdict planned for", lambda have, p: f"{p.verdict} ({p.goal})"),
        ("lag-1 autocorrelation r", lambda have, p: f"{p.autocorrelation:.2f}"),
        ("n (normal approximation)", lambda have, p: f"{p.n_normal:,.1f}"),
        ("n independent (compare's rule)", lambda have, p: f"{p.n_independent:,}"),
        ("× for lag-1 r (batch means)", lambda have, p: f"{p.inflation:.2f}"),
        ("samples per variant", lambda have, p: f"{p.n:,}"),
        *((f"P(verdict) at {_FRACTIONS.get(f, f'{f:g}')}n", _curve_cell(f)) for f in CURVE),
        ("n to tell Δ from 0 only", lambda have, p: "–" if p.n_from_zero is None
         else f"{p.n_from_zero:,}"),
        ("already stored (fewest)", lambda have, p: "–" if have is None else f"{have:,}"),
        ("margin of error at n", lambda have, p: f"{p.margin:.3g}"),
        ("seconds per iteration", lambda have, p: "–" if p.iteration_time is None
         else f"{p.iteration_time:.4g}"),
        ("time, variants at once", lambda have, p: format_duration(p.duration_concurrent)),
        ("time, one after the other", lambda have, p: format_duration(p.duration_sequential)),
    ]  # fmt: skip
    for label, value_of in lines:
        table.add_row(label, *(value_of(have, plan) for _, have, plan in rows))
    ctx.out.print(table)
    first = rows[0][2]
    remark = f"at {first.confidence * 100:g}% confidence and power {first.power:g}"
    for why in dict.fromkeys(_why(plan) for _, _, plan in rows):
        remark += f"; {why}"
    if any(plan.iteration_time is None for _, _, plan in rows):
        remark += "; durations need --iteration-time (or iteration times in the store)"
    ctx.out.print(cell(remark), highlight=False)
    _print_boot_plans(ctx, boot_plans)
    return 0


def _print_boot_plans(ctx: Context, found: list[MetricBootPlan]) -> None:
    """A table of boots × iterations per boot, a column per workload · metric, when the pilot
    has several boots per arm; else one line saying why there is none."""
    from rich.table import Table

    from lab.app.plan import BOOT_FORMULA

    planned = [p for p in found if p.plan is not None]
    for p in found:
        if p.plan is None:
            ctx.out.print(cell(f"boots plan of {p.workload} · {p.metric}: none, {p.why}"),
                          highlight=False)  # fmt: skip
    if not planned:
        return
    table = Table(title=cell(f"boots × iterations per boot: {BOOT_FORMULA}"),
                  title_justify="left")  # fmt: skip
    table.add_column("", no_wrap=True)
    for p in planned:
        table.add_column(cell(f"{p.workload} · {p.metric}"), justify="right")
    lines: list[tuple[str, Callable[[MetricBootPlan, BootPlan], str]]] = [
        ("boots in the pilot", lambda m, b: ", ".join(f"{a} {k}" for a, k in m.boots)),
        ("  iterations per boot", lambda m, b: f"{m.per_boot:.4g}"),
        ("between-boot sd", lambda m, b: f"{math.sqrt(b.between):.4g}"),
        ("within-boot sd", lambda m, b: f"{math.sqrt(b.within):.4g}"),
        ("intraclass correlation", lambda m, b: f"{b.icc:.3f}"),
        ("lag-1 r within boots", lambda m, b: f"{b.autocorrelation:.3f}"),
        ("reboot cost", lambda m, b: f"{b.reboot.seconds:.4g} s"),
        ("iteration cost", lambda m, b: f"{b.iteration.seconds:.4g} s"),
        ("n* (Kalibera and Jones)", lambda m, b: "∞" if math.isinf(b.optimal)
         else f"{b.optimal:,.1f}"),
        ("iterations per boot", lambda m, b: f"{b.per_boot:,}" + (" (capped)" if b.capped
                                                                  else "")),
        ("boots per variant", lambda m, b: f"{b.boots:,}"),
        ("verdict planned for", lambda m, b: f"{b.plan.verdict} ({b.plan.goal})"),
        ("time per variant (twins at once)", lambda m, b: format_duration(b.seconds)),
    ]  # fmt: skip
    for label, value_of in lines:
        table.add_row(label, *(value_of(p, p.plan) for p in planned if p.plan is not None))
    ctx.out.print(table)
    sources = dict.fromkeys(
        f"{what} cost: {c.source}"
        for p in planned if p.plan is not None
        for what, c in (("reboot", p.plan.reboot), ("iteration", p.plan.iteration))
    )  # fmt: skip
    first = planned[0].plan
    assert first is not None
    ctx.out.print(cell(
        f"the verdict read from boot means at {first.plan.confidence * 100:g}% confidence and"
        f" power {first.plan.power:g}; {'; '.join(sources)}"
    ), highlight=False)  # fmt: skip


_FRACTIONS = {0.25: "¼ ", 0.5: "½ ", 1.0: "", 2.0: "2 "}


def _curve_cell(fraction: float) -> Callable[[int | None, Plan], str]:
    """The power curve's cell at ``fraction`` of the planned n: "samples → P(verdict)"."""

    def cell(have: int | None, plan: Plan) -> str:
        k = max(2, round(plan.n * fraction))
        return f"{k:,} → {dict(plan.curve)[k] * 100:.1f} %"

    return cell


def _why(plan: Plan) -> str:
    """Which verdict the plan is for, and why that one."""
    t = f"{plan.threshold * 100:g} %" if math.isfinite(plan.threshold) else f"{plan.bound:.4g}"
    if plan.verdict == "equivalent":
        needs = f"the whole interval within ±{t}"
        reason = "the effect lies within the threshold" if plan.derived else "--goal equivalence"
    else:
        needs = f"the whole interval beyond {'+' if plan.delta > 0 else '−'}{t}"
        reason = "the effect lies beyond the threshold" if plan.derived else "--goal superiority"
    return f'planned for "{plan.verdict}" ({reason}): {needs}'


def plans_json(rows: list[PlanRow], formula: str, boot_plans: Sequence[Any] = ()) -> str:
    """The plans as ``lab plan --json`` prints them: the formula, then one object a plan,
    and with a pilot of several boots, its boots plans."""
    plans = [
        {
            "name": name or None,
            "stored_fewest": have,
            **dataclasses.asdict(plan),
            "verdict": plan.verdict,
            "duration_concurrent_s": plan.duration_concurrent,
            "duration_sequential_s": plan.duration_sequential,
        }
        for name, have, plan in rows
    ]
    data: dict[str, Any] = {"formula": formula, "plans": plans}
    if boot_plans:
        from lab.app.plan import BOOT_FORMULA  # deferred: heavy (scipy)

        data["boot_formula"] = BOOT_FORMULA
        data["boot_plans"] = [_boot_plan_data(p) for p in boot_plans]
    return json.dumps(data, indent=2, ensure_ascii=False)


def _boot_plan_data(p: MetricBootPlan) -> dict[str, Any]:
    entry: dict[str, Any] = {"workload": p.workload, "metric": p.metric,
                             "pilot_boots": dict(p.boots), "pilot_per_boot": p.per_boot,
                             "why": p.why or None, "plan": None}  # fmt: skip
    if p.plan is not None:
        b = p.plan
        entry["plan"] = {
            "between_variance": b.between, "within_variance": b.within, "icc": b.icc,
            "autocorrelation": b.autocorrelation, "boot_mean_sd": b.boot_sd,
            "direction": b.direction,
            "reboot_cost_s": b.reboot.seconds, "reboot_cost_from": b.reboot.source,
            "iteration_cost_s": b.iteration.seconds, "iteration_cost_from": b.iteration.source,
            "optimal_per_boot": None if math.isinf(b.optimal) else b.optimal,
            "per_boot": b.per_boot, "capped": b.capped, "boots": b.boots,
            "seconds_per_variant": b.seconds, "verdict": b.plan.verdict,
            "goal": b.plan.goal.value,
        }  # fmt: skip
    return entry


def _run_sweep(args: argparse.Namespace, ctx: Context) -> int:
    """``lab plan --sweep``: a table per sweep and metric, a row per value."""
    # deferred: heavy (scipy, through the planning), as in the other actions here
    from rich.table import Table

    from lab.app.analyse import Selection
    from lab.app.plan import FORMULA, SweepPlanRequest, plan_sweep_values, question

    goal, threshold, _ = question(args.goal, args.threshold, args.effect)
    selection = Selection(db=args.db, study=args.study, workload=args.workload,
                          metric=args.metric, sweep=args.sweep_key or None)  # fmt: skip
    request = SweepPlanRequest(selection, threshold, args.confidence, args.power, args.effect,
                               goal.value if goal else None, args.iteration_time)  # fmt: skip
    found = plan_sweep_values(ctx, request)
    if args.json:
        entries = [{**{k: v for k, v in dataclasses.asdict(p).items() if k != "plan"},
                    "plan": None if p.plan is None else {**dataclasses.asdict(p.plan),
                                                         "verdict": p.plan.verdict}}
                   for p in found]  # fmt: skip
        ctx.out.out(json.dumps({"formula": FORMULA, "values": entries}, indent=2,
                               ensure_ascii=False), highlight=False)  # fmt: skip
        return 0
    groups: dict[tuple[str, str], list[Any]] = {}
    for p in found:
        groups.setdefault((p.sweep, p.metric), []).append(p)
    for (sweep, metric), values in groups.items():
        first = values[0]
        table = Table(
            "value", "σ", "effect Δ", "verdict planned for", "samples per value", "stored",
            "time, variants at once",
            title=cell(f"sweep {sweep} · {metric}: each verdict at {first.level * 100:.6g} %"
                       f" (1 − α/{first.family} for {first.family} values)"),
            title_justify="left",
        )  # fmt: skip
        for p in values:
            if p.plan is None:
                table.add_row(*map(cell, (p.value, "–", "–", f"none: {p.why}", "–",
                                          f"{p.stored:,}", "–")))  # fmt: skip
                continue
            plan = p.plan
            effect = f"{plan.delta:+.4g} ({'pilot' if p.effect_from == 'pilot' else 'given'})"
            table.add_row(*map(cell, (p.value, f"{plan.sd:.4g}", effect, plan.verdict,
                          f"{plan.n:,}", f"{p.stored:,}",
                          format_duration(plan.duration_concurrent))))  # fmt: skip
        ctx.out.print(table)
    planned = [p.plan for p in found if p.plan is not None]
    remark = (
        f"power {args.power:g} at each value; the effect is each value's pilot difference"
        " (B better by Δ), unless --effect gives one for every value; threshold"
        f" ±{threshold}; formula: {FORMULA}"
    )
    if planned and any(plan.iteration_time is None for plan in planned):
        remark += "; durations need --iteration-time (or iteration times in the store)"
    ctx.out.print(cell(remark), highlight=False)
    return 0


def _is_study_file(study: str | None) -> bool:
    """``--study`` names a study file, not a study of the store: a study's name is a plain
    name (letters, digits, '.', '_', '-'), never a path or a .toml file's."""
    return study is not None and (study.endswith(".toml") or "/" in study)


def _run_factorial(args: argparse.Namespace, ctx: Context) -> int:
    """``lab plan --study FILE`` (with [factors]) or ``--factors``: a table a plan, a row a
    term, and the n every ``[[workload]]`` needs."""
    from rich.table import Table

    from lab.app.analyse import Selection  # deferred: heavy (scipy, statsmodels)
    from lab.app.factorialplan import FactorialPlanRequest, plan_factorial_study

    study_file = args.study if _is_study_file(args.study) else None
    selection = Selection(db=args.db, study=None if study_file else args.study,
                          workload=args.workload, metric=args.metric)  # fmt: skip
    request = FactorialPlanRequest(
        selection, study_file, args.factors, args.effect, args.sd, args.cv, args.mean,
        args.from_store, args.confidence, args.power,
        None if args.from_store else args.autocorrelation, args.iteration_time,
        tuple(args.interaction), args.effects_correction,
    )  # fmt: skip
    result = plan_factorial_study(ctx, request)
    if args.json:
        ctx.out.out(factorial_json(result), highlight=False)
        return 0
    design = result.design
    crossed = " × ".join(f"{f} ({', '.join(levels)})" for f, levels in design.factors)
    for row in result.rows:
        plan = row.plan
        title = (f"{row.name + ': ' if row.name else ''}{crossed}, {len(plan.cells)} cells in"
                 f" {plan.blocks} blocks of 2; σ (log scale) {plan.sd_log:.4g} from"
                 f" {row.sd_source}; effect ×{plan.effect:.4g}")  # fmt: skip
        table = Table("term", "reported at", "n per cell per block", "samples per cell",
                      "samples in all", "P at n", "P at ½n · 2n", "time",
                      title=cell(title), title_justify="left")  # fmt: skip
        for t in plan.terms:
            curve = dict(t.curve)
            others = " · ".join(f"{curve[k] * 100:.3g} %" for k in sorted(curve) if k != t.n)
            table.add_row(*map(cell, (
                t.term, ", ".join(t.levels), f"{t.n:,}",
                " / ".join(sorted({f"{plan.samples_per_cell(t.n, c):,}" for c in plan.cells})),
                f"{plan.total(t.n):,}", f"{t.power * 100:.1f} %", others or "–",
                format_duration(result.seconds(t.n)),
            )))  # fmt: skip
        ctx.out.print(table)
        ctx.out.print(cell(
            f"the study needs n = {plan.n:,} per cell per block (n of each [[workload]]):"
            f" {plan.total(plan.n):,} samples, {format_duration(result.seconds(plan.n))}"
            f" of iterations, and {plan.blocks} bring-ups of a block's pair"
        ), highlight=False)  # fmt: skip
    first = result.rows[0].plan
    remark = (
        f"at {first.confidence * 100:g}% confidence for the m = {first.family} effects lab"
        f" compare reports ({', '.join(first.reported)}), {first.correction}, and power"
        f" {first.power:g} each; lag-1 r {first.autocorrelation:.2f}"
    )
    if first.not_estimable:
        remark += f"; not estimable in these cells: {', '.join(first.not_estimable)}"
    if design.left_out:
        remark += (f"; left out (libvirt cannot express them, lab study check says why):"
                   f" {', '.join(left for left, _ in design.left_out)}")  # fmt: skip
    for timing in result.timings:
        each = "–" if timing.seconds is None else f"{timing.seconds:.4g} s"
        remark += (f"; {timing.workload or 'an iteration'}: {each} ({timing.source},"
                   f" {timing.schedule})")  # fmt: skip
    if result.seconds(first.n) is None:
        remark += "; durations need --iteration-time (or the study's iterations in the store)"
    ctx.out.print(cell(remark), highlight=False)
    from lab.app.factorialplan import FORMULA

    ctx.out.print(cell(f"formula: {FORMULA}"), highlight=False)
    return 0


def factorial_json(result: FactorialPlanResult) -> str:
    """A factorial's plans as ``lab plan --json`` prints them."""
    from lab.app.factorialplan import FORMULA

    d = result.design
    return json.dumps({
        "formula": FORMULA, "source": result.source,
        "design": {"factors": {f: list(levels) for f, levels in d.factors},
                   "cells": list(d.cells), "left_out": dict(d.left_out),
                   "blocks": [list(b) for b in d.blocks]},
        "timings": [dataclasses.asdict(t) for t in result.timings],
        "plans": [{"name": row.name or None, "sd_source": row.sd_source,
                   **dataclasses.asdict(row.plan), "n": row.plan.n,
                   "total_samples": row.plan.total(row.plan.n),
                   "duration_s": result.seconds(row.plan.n),
                   "terms": [{**dataclasses.asdict(t), "total_samples": row.plan.total(t.n),
                              "duration_s": result.seconds(t.n)} for t in row.plan.terms]}
                  for row in result.rows],
    }, indent=2, ensure_ascii=False)  # fmt: skip
