"""``lab report``: one HTML page with the tables, the figures and the study's metadata.

The page has no external links (no CDN, no fonts, no scripts from elsewhere): figures are
embedded as base64 (``embed``, the default: moved alone, a page whose figures were files
beside it lost them), or PNG files beside it referenced by relative paths. A
few lines of inline script mark ``<html data-images="loaded">`` once every image has
decoded, which is what the headless-browser test reads back.
"""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from lab import __version__
from lab.core.outputs import replacing, writing
from lab.report import sweeps as sweep_table
from lab.report.ageplot import age_plot
from lab.report.backingplot import backing_plot
from lab.report.drawing import Drawn, Later, figure_pool, later
from lab.report.effects import headline, ratio_text, share_text
from lab.report.markup import escape as _e
from lab.report.markup import section, slug, table_html
from lab.report.metadata import ReportMeta, metadata_html, when
from lab.report.plots import figure_pngs, forest, png
from lab.report.summary import HEADER, family_note, summary_rows
from lab.report.sweepplot import sweep_plot
from lab.report.tables import block_tables, blocks, notes
from lab.stats.agelead import age_leads
from lab.stats.analysis import ALL, MetricComparison, with_paired
from lab.stats.paired import synced_workloads
from lab.stats.sweep import SweepComparison

if TYPE_CHECKING:
    from lab.stats.factorialdata import FactorialAnswer

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1100px;
       color: #222; overflow-wrap: break-word; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; display: block;
        max-width: 100%; overflow-x: auto; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } td.sub { padding-left: 1.8em; }
tr.verdict td { font-weight: bold; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; max-width: 100%; }
figure img { max-width: 100%; } figcaption { font-size: 0.85em; max-width: 680px; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.8em; }
.faster { color: #1a7f37; } .slower { color: #b42318; } .inconclusive { color: #9a6700; }
.note { font-size: 0.9em; }
@media (max-width: 600px) {
  body { margin: 1em auto; padding: 0 0.5em; } h1 { font-size: 1.3em; } h2 { font-size: 1.15em; }
  figure { margin: 0.5em 0; } table { font-size: 0.8em; }
  /* the summary's rows as cards, each cell named: six columns do not fit a phone */
  table.summary thead { display: none; }
  table.summary tr { display: block; border: 1px solid #ddd; margin-bottom: 0.6em; }
  table.summary td { display: block; border: none; }
  table.summary td::before { content: attr(data-label) ": "; font-weight: bold; color: #222; }
}
"""

# Marks the page once every image has a decoded bitmap; the browser test reads it back.
CHECK_SCRIPT = """
function labCheckImages() {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  document.documentElement.setAttribute('data-images', broken.length ? 'broken' : 'loaded');
  document.documentElement.setAttribute('data-image-count', String(imgs.length));
}
window.addEventListener('load', labCheckImages);
"""


def _evidence_html(
    meta: ReportMeta, out_dir: Path, embed: bool, backing: Mapping[str, Later[Drawn]]
) -> str:
    """What the runs' recorded environment says: warnings first, what backed each twin's
    memory (in words, then over the iterations of each run that recorded it), then each
    run's facts (``lab runs show``)."""
    parts = [f'<p class="slower">warning: {_e(w)}</p>' for w in meta.warnings]
    if meta.evidence:
        parts += ["<ul>" + "".join(f"<li>{_e(n)}</li>" for n in meta.evidence) + "</ul>"]
    parts += _backing_figures(meta, out_dir, embed, backing)
    parts.append(_coverage_figure(meta, out_dir, embed))
    for key, where in meta.environment.items():
        for name, facts in where.items():
            if not facts:  # an imported run's guests: nothing recorded, nothing to show
                continue
            rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
                           for k, v in sorted(facts.items()))  # fmt: skip
            parts.append(f"<details><summary>run {_e(key)}: environment of {_e(name)}</summary>"
                         f"<table>{rows}</table></details>")  # fmt: skip
    return section('<h2 id="evidence">Evidence</h2>', parts)


def _backing_pngs(meta: ReportMeta, pool: ProcessPoolExecutor | None) -> dict[str, Later[Drawn]]:
    """The backing figure of each run that recorded ``backing.*`` sizes, drawn by ``pool``."""
    return {
        run.key: later(
            pool, _backing_png, run.key, series, dict(meta.guest_memory_kib.get(run.key, {}))
        )
        for run in meta.runs
        if (series := meta.backing_series.get(run.key))
    }


def _backing_png(
    run: str, series: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]],
    memory_kib: Mapping[str, int],
) -> Drawn:  # fmt: skip
    fig, caption = backing_plot(run, series, memory_kib)
    return [("backing", png(fig), caption)]


def _backing_figures(
    meta: ReportMeta, out_dir: Path, embed: bool, backing: Mapping[str, Later[Drawn]]
) -> list[str]:
    """One figure per run that recorded ``backing.*`` sizes: what backed each twin's memory
    over its iterations (``backingplot.backing_plot``), in the order of the runs' table."""
    figures: list[str] = []
    names: set[str] = set()  # two keys can slug alike ("a/b", "a-b"): neither overwrites
    for run in meta.runs:
        if run.key not in backing:
            continue
        ((_, data, caption),) = backing[run.key].result()
        name = f"backing-{slug(run.key)}.png"
        name = name if name not in names else f"backing-{slug(run.key)}-{len(names)}.png"
        names.add(name)
        src = _png_src(data, out_dir, name, embed)
        figures.append(
            f'<figure><img src="{_e(src)}" alt="what backed each twin\'s memory over run'
            f' {_e(run.key)}"><figcaption>{_e(caption)}</figcaption></figure>'
        )
    return figures


def _coverage_figure(meta: ReportMeta, out_dir: Path, embed: bool) -> str:
    """The THP-backed twins' huge-page coverage against their host's age, where the store
    holds both (``ageplot.age_plot``); nothing otherwise."""
    if meta.thp_coverage is None or not meta.thp_coverage.points:
        return ""
    fig, caption = age_plot(meta.thp_coverage)
    src = _png_src(png(fig), out_dir, "thp-coverage-age.png", embed)
    return (
        '<h3 id="thp-age">Huge-page coverage against the host\'s age</h3>'
        f'<figure><img src="{_e(src)}" alt="huge-page coverage against the host\'s unusable'
        f' free space index"><figcaption>{_e(caption)}</figcaption></figure>'
    )


def _image(fig: Figure, out_dir: Path, name: str, embed: bool) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return _png_src(buf.getvalue(), out_dir, name, embed)


def _png_src(data: bytes, out_dir: Path, name: str, embed: bool) -> str:
    """Where the page finds a PNG: inside it (``embed``), or a file beside it, written here."""
    if embed:
        return "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    with replacing(out_dir / "figures" / name) as path:  # whole, and never over a database
        path.write_bytes(data)
    return f"figures/{name}"


def _block_parts(block: Sequence[MetricComparison]) -> tuple[str, Drawn]:
    """A workload·metric's tables and notes (HTML) and figures: the statistics behind them
    and the drawing are a worker's, most of the report's time."""
    tables = [table_html(t) for t in block_tables(block)]
    tables.append(
        '<ul class="note">' + "".join(f"<li>{_e(n)}</li>" for n in notes(block)) + "</ul>"
    )
    return "\n".join(tables), figure_pngs(_shown(block))


def _summary_html(comparisons: Sequence[MetricComparison], out_dir: Path, embed: bool) -> str:
    """The answer first: the summary table `lab compare` prints, and the forest plot."""
    rows = summary_rows(comparisons)
    if not rows:
        return ""
    head = "".join(f"<th>{_e(h)}</th>" for h in HEADER)
    body = "".join(
        f'<tr class="{row.outcome.value}">'
        + "".join(
            f'<td data-label="{_e(h)}">{_e(c)}</td>' for h, c in zip(HEADER, row.cells, strict=True)
        )
        + "</tr>"
        for row in rows
    )  # fmt: skip
    fig, caption = forest(comparisons)
    src = _image(fig, out_dir, "forest.png", embed)
    return (
        '<h2 id="summary">Summary</h2><table class="summary"><thead><tr>' + head
        + "</tr></thead><tbody>" + body + "</tbody></table>"
        + (f'<p class="note">{_e(note)}</p>' if (note := family_note(comparisons)) else "")
        + f'<figure><img src="{src}" alt="forest plot of every change"><figcaption>'
        + _e(caption) + "</figcaption></figure>"
    )  # fmt: skip


def _sweeps_html(
    sweeps: Sequence[SweepComparison], meta: ReportMeta, out_dir: Path, embed: bool
) -> str:
    """Each sweep: per metric its table, crossing and plot; then what backed each twin's
    memory at each value."""
    if not sweeps:
        return ""
    parts = ['<h2 id="sweeps">Sweeps: where does the variant start to matter?</h2>']
    by_key: dict[str, list[SweepComparison]] = {}
    for sweep in sweeps:
        by_key.setdefault(sweep.sweep, []).append(sweep)
    for number, (key, members) in enumerate(by_key.items()):
        parts.append(f"<h3>sweep {_e(key)}</h3>")
        for i, sweep in enumerate(members):
            head = "".join(f"<th>{_e(h)}</th>" for h in (sweep.axis, *sweep_table.HEADER))
            body = "".join(
                f'<tr class="{row.outcome.value}"><td>{_e(row.value)}</td>'
                + "".join(f"<td>{_e(c)}</td>" for c in row.cells) + "</tr>"
                for row in sweep_table.rows(sweep)
            )  # fmt: skip
            fig, caption = sweep_plot(sweep)
            name = f"sweep-{number:02d}-{i:02d}-{slug(sweep.metric)}.png"
            src = _image(fig, out_dir, name, embed)
            parts.append(
                f'<table class="sweep"><caption>{_e(sweep.title)}</caption><thead><tr>{head}'
                f"</tr></thead><tbody>{body}</tbody></table>"
                + '<ul class="note">'
                + "".join(f"<li>{_e(line)}</li>" for line in sweep_table.lines(sweep))
                + "</ul>"
                + f'<figure><img src="{_e(src)}" alt="sweep plot of {_e(sweep.title)}">'
                f"<figcaption>{_e(caption)}</figcaption></figure>"
            )  # fmt: skip
        parts.append(_sweep_backing_html(members[0], meta))
    return "\n".join(parts)


def _factorials_html(answers: Sequence[FactorialAnswer], out_dir: Path, embed: bool) -> str:
    """Each factorial workload · metric: its effects as a table, the effects plot and the
    interaction plot (the metrics the lab counts as evidence, perf.* and backing.*, only as
    tables)."""
    from lab.report.effectsplot import effects_plot, interaction_plot

    if not answers:
        return ""
    parts = ['<h2 id="factorials">Factorial effects: which factor moves the metric?</h2>']
    head = "".join(f"<th>{h}</th>" for h in ("term", "at level", "effect", "interval",
                                             "ratio high/low", "share"))  # fmt: skip
    for number, answer in enumerate(answers):
        d, e = answer.data, answer.effects
        title = f"{d.workload} · {d.metric}" + (f" ({d.unit})" if d.unit else "")
        if e is None:
            parts.append(f"<p>{_e(title)}: no effects ({_e(answer.why_not or '')})</p>")
            continue
        shares = {s.term: s.share for s in e.shares}
        rows = "".join(
            f"<tr><td>{_e(x.term)}</td><td>{_e(x.level)}</td><td>{x.estimate:+.4g}</td>"
            f"<td>[{x.ci[0]:.4g}, {x.ci[1]:.4g}]</td><td>{_e(ratio_text(x, d.direction))}</td>"
            f"<td>{share_text(shares, x.term)}</td></tr>"
            for x in e.effects
        )  # fmt: skip
        rest = ", ".join(f"{t} {shares[t] * 100:.1f} %" for t in ("block", "error") if t in shares)
        parts.append(
            f"<table><caption>{_e(title)}</caption><thead><tr>{head}</tr></thead>"
            f'<tbody>{rows}</tbody></table><p class="note">{_e(headline(answer))}; the rest'
            f" of the variation: {_e(rest)}</p>"
        )
        parts += [f'<p class="note">{_e(lead.sentence(e.confidence))}</p>'
                  for lead in age_leads(d.factors, d.orders, e)]  # fmt: skip
        if d.metric.startswith(("perf.", "backing.")):
            continue
        for kind, draw in (("effects", effects_plot), ("interaction", interaction_plot)):
            if kind == "effects" and not any(x.ratio_ci for x in e.effects):
                continue
            fig, caption = draw(answer)
            name = f"factorial-{number:02d}-{kind}-{slug(d.metric)}.png"
            src = _image(fig, out_dir, name, embed)
            parts.append(f'<figure><img src="{_e(src)}" alt="{kind} plot of {_e(title)}">'
                         f"<figcaption>{_e(caption)}</figcaption></figure>")  # fmt: skip
    return "\n".join(parts)


def _sweep_backing_html(sweep: SweepComparison, meta: ReportMeta) -> str:
    """What backed each twin's memory at each value, as each run recorded it last (after
    the value's last iteration)."""
    rows = [(sweep_table.value_text(sweep, v), meta.sweep_backing.get(v.run, {}))
            for v in sweep.values]  # fmt: skip
    guests = list(dict.fromkeys(name for _, found in rows for name in found))
    if not guests:
        return '<p class="note">No memory backing was recorded for this sweep\'s runs.</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in (sweep.axis, *guests))
    body = "".join(
        f"<tr><td>{_e(value)}</td>" + "".join(
            f"<td>{_e(found.get(g, 'not recorded').removeprefix(g + ': '))}</td>"
            for g in guests) + "</tr>"
        for value, found in rows
    )  # fmt: skip
    return (
        "<table><caption>What backed each twin's memory at each value, as read on the host"
        " last: after the value's last iteration, or where the sweep stopped</caption>"
        f"<thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _shown(block: Sequence[MetricComparison]) -> MetricComparison:
    """The comparison of a block whose figures the page shows."""
    return next((c for c in block if c.subset == ALL), block[0])


def _block_html(
    index: int, block: Sequence[MetricComparison], out_dir: Path, embed: bool,
    parts_of: Later[tuple[str, Drawn]],
) -> str:  # fmt: skip
    """One workload·metric: its tables, notes and figures (from ``_block_parts``)."""
    first = block[0]
    tables, figures = parts_of.result()
    parts = [f'<h2 id="b{index}">{_e(first.study)}: {_e(first.title)}</h2>', tables]
    for name, data, caption in figures:
        file = f"{index:02d}-{slug(first.workload)}-{slug(first.metric)}-{name}.png"
        src = _png_src(data, out_dir, file, embed)
        parts.append(
            f'<figure><img src="{_e(src)}" alt="{_e(name)} of {_e(first.title)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )
    return "\n".join(parts)


def _synced(c: MetricComparison, meta: ReportMeta) -> bool:
    return c.workload in synced_workloads(r for r in meta.runs if r.study == c.study)


def _placement_summary(block: Sequence[MetricComparison]) -> str:
    """For runs that swapped the twins' CPU sets: what the CPU set did, beside the verdict."""
    q = next((c.placement for c in block if c.placement is not None), None)
    if q is None:
        return ""
    e = q.effects.placement
    return _e(
        f"; CPU set (Placement table): on {q.b}'s CPUs instead of {q.a}'s {e.estimate:+.4g}"
        f" ({q.effects.confidence * 100:g}% CI {e.ci[0]:+.4g} to {e.ci[1]:+.4g})"
    )


def render(
    comparisons: Sequence[MetricComparison],
    meta: ReportMeta,
    out_dir: Path,
    embed: bool = True,
    sweeps: Sequence[SweepComparison] = (),
    factorials: Sequence[FactorialAnswer] = (),
) -> Path:
    """Write ``out_dir/index.html`` (and its figures) and return its path. Sweeps get a
    section of their own after the summary: a table, the crossing and a plot per metric.

    Workloads whose runs were synchronised get the paired analysis too, if not already there.
    Comparisons with a placement analysis (``with_placement``: the twins swapped CPU sets)
    get a Placement table and the CPU set's effect beside their verdict.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    comparisons = [with_paired(c) if _synced(c, meta) and not c.paired else c for c in comparisons]
    grouped = blocks(comparisons)
    verdicts = [
        f"<li><a href=\"#b{i}\">{_e(b[0].study)}: {_e(b[0].title)}</a>: "
        + "; ".join(
            f'<span class="{p.verdict.outcome.value}">{_e(p.verdict.text)}</span>'
            for p in b[0].pairs
        )
        + _placement_summary(b)
        + "</li>"
        for i, b in enumerate(grouped)
    ]  # fmt: skip
    backing_runs = sum(1 for run in meta.runs if meta.backing_series.get(run.key))
    with figure_pool(len(grouped) + backing_runs) as pool:
        backing = _backing_pngs(meta, pool)  # the largest first
        drawn = [later(pool, _block_parts, b) for b in grouped]
        body = [
            f"<h1>lab report: {_e(', '.join(s.name for s in meta.studies) or 'no study')}</h1>",
            f'<p class="note">Generated {_e(when(time.time()))} by lab {_e(__version__)} from'
            f" <code>{_e(meta.store_path)}</code>.</p>",
            _summary_html(comparisons, out_dir, embed),
            _sweeps_html(sweeps, meta, out_dir, embed),
            _factorials_html(factorials, out_dir, embed),
            _evidence_html(meta, out_dir, embed, backing),
            section(
                "<h2>Verdicts</h2>", ["<ul>" + "".join(verdicts) + "</ul>" if verdicts else ""]
            ),
            *(_block_html(i, grouped[i], out_dir, embed, d) for i, d in enumerate(drawn)),
            metadata_html(meta),
        ]
    page = (
        '<!DOCTYPE html>\n<html lang="en" data-images="pending"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>lab report</title><style>{STYLE}</style><script>{CHECK_SCRIPT}</script>"
        "</head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
    index = out_dir / "index.html"
    with writing(index, store=Path(meta.store_path)) as handle:  # whole, never over the store
        handle.write(page)
    return index
