"""``lab report``: one HTML page with the tables, the figures and the study's metadata.

The page has no external links (no CDN, no fonts, no scripts from elsewhere): figures are
PNG files beside it referenced by relative paths, or embedded as base64 with ``embed``. A
few lines of inline script mark ``<html data-images="loaded">`` once every image has
decoded, which is what the headless-browser test reads back.
"""

from __future__ import annotations

import base64
import difflib
import html
import io
import json
import multiprocessing
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from matplotlib.figure import Figure

from lab import __version__
from lab.core.outputs import replacing, writing
from lab.core.text import shown
from lab.core.units import format_timestamp
from lab.report import sweeps as sweep_table
from lab.report.backingplot import backing_plot
from lab.report.images import ImageSummary
from lab.report.plots import figure_pngs, forest, png
from lab.report.summary import HEADER, family_note, summary_rows
from lab.report.sweepplot import sweep_plot
from lab.report.tables import TableData, block_tables, blocks, notes
from lab.stats.analysis import ALL, MetricComparison, with_paired
from lab.stats.paired import synced_workloads
from lab.stats.sweep import SweepComparison
from lab.store import GuestRecord, MetricInfo, RunRecord, StudyRecord
from lab.store.records import EvidenceSeries

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


@dataclass(frozen=True)
class ReportMeta:
    store_path: str
    studies: Sequence[StudyRecord]
    guests: Sequence[GuestRecord]
    runs: Sequence[RunRecord]
    attempts: dict[tuple[str, str], tuple[int, int]]
    images: Sequence[ImageSummary] = ()  # the base images the guests were cloned from
    evidence: Sequence[str] = ()  # what backed each twin's memory (lab.app.environment)
    warnings: Sequence[str] = ()  # twins that differ beyond their variant, a variant not in effect
    environment: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    """run key -> "host NAME" / "guest NAME" -> facts at the run's last start"""
    sweep_backing: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """a sweep's run key -> guest -> what backed its memory (``lab.run.backing.describe``)"""
    backing_series: Mapping[str, EvidenceSeries] = field(default_factory=dict)
    """run key -> guest -> ``backing.*`` metric in KiB -> (iterations, values), for the runs
    that recorded any (``Store.evidence_series``)"""
    guest_memory_kib: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """run key -> guest -> its RAM in KiB at the run's last start, where recorded"""


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
    for key, where in meta.environment.items():
        for name, facts in where.items():
            if not facts:  # an imported run's guests: nothing recorded, nothing to show
                continue
            rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
                           for k, v in sorted(facts.items()))  # fmt: skip
            parts.append(f"<details><summary>run {_e(key)}: environment of {_e(name)}</summary>"
                         f"<table>{rows}</table></details>")  # fmt: skip
    return _section('<h2 id="evidence">Evidence</h2>', parts)


def _section(heading: str, parts: Sequence[str]) -> str:
    """``heading`` and its parts, or nothing when there are none: no empty headings."""
    parts = [part for part in parts if part]
    return heading + "".join(parts) if parts else ""


def _backing_pngs(meta: ReportMeta, pool: ProcessPoolExecutor | None) -> dict[str, Later[Drawn]]:
    """The backing figure of each run that recorded ``backing.*`` sizes, drawn by ``pool``."""
    return {
        run.key: _later(
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
        name = f"backing-{_slug(run.key)}.png"
        name = name if name not in names else f"backing-{_slug(run.key)}-{len(names)}.png"
        names.add(name)
        src = _png_src(data, out_dir, name, embed)
        figures.append(
            f'<figure><img src="{_e(src)}" alt="what backed each twin\'s memory over run'
            f' {_e(run.key)}"><figcaption>{_e(caption)}</figcaption></figure>'
        )
    return figures


def _e(text: object) -> str:
    """Text for the page: HTML escaped, its control characters shown (``\\x1b``)."""
    return html.escape(shown(text, lines=True))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def table_html(data: TableData) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in data.header)
    rows = []
    for row in data.rows:
        cls = ' class="verdict"' if row[0] == "Verdict" else ""
        indent = ' class="sub"' if row[0].startswith(" ") else ""  # a detail of the row above
        cells = [f"<td{indent}>{_e(row[0].strip())}</td>"]
        extra = " " if row[0] == "Verdict" else ""  # the outcome names are CSS classes
        cells += [f'<td class="n{extra}{_e(v) if extra else ""}">{_e(v)}</td>' for v in row[1:]]
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (
        f"<table><caption>{_e(data.title)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
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


# Each workload·metric's figures are drawn in worker processes while this one computes the
# tables and writes the rest of the page: a figure costs a few tenths of a second of
# matplotlib's layout and drawing whatever its samples, and the report has dozens. The
# workers draw PNG bytes only; this process writes every file, so an error writing one
# (a full disk) is raised here, as before. Forked: they start with matplotlib imported.
PARALLEL_TASKS = 2  # below this many, everything is drawn here
Drawn = list[tuple[str, bytes, str]]  # (name, PNG, caption) of each figure
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Later(Protocol[T_co]):
    def result(self) -> T_co: ...


class _Here(Generic[T]):
    """What a pool's future would give, computed here when it is asked for."""

    def __init__(self, call: Callable[..., T], *args: Any) -> None:
        self.call, self.args = call, args

    def result(self) -> T:
        return self.call(*self.args)


def _later(pool: ProcessPoolExecutor | None, call: Callable[..., T], *args: Any) -> Later[T]:
    return _Here(call, *args) if pool is None else pool.submit(call, *args)


def _block_parts(block: Sequence[MetricComparison]) -> tuple[str, Drawn]:
    """A workload·metric's tables and notes (HTML) and figures: the statistics behind them
    and the drawing are a worker's, most of the report's time."""
    tables = [table_html(t) for t in block_tables(block)]
    tables.append(
        '<ul class="note">' + "".join(f"<li>{_e(n)}</li>" for n in notes(block)) + "</ul>"
    )
    return "\n".join(tables), figure_pngs(_shown(block))


@contextmanager
def _figure_pool(count: int) -> Iterator[ProcessPoolExecutor | None]:
    workers = min(count, len(os.sched_getaffinity(0)))
    if (
        count < PARALLEL_TASKS
        or workers < 2
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        yield None
        return
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


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
            name = f"sweep-{number:02d}-{i:02d}-{_slug(sweep.metric)}.png"
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
        file = f"{index:02d}-{_slug(first.workload)}-{_slug(first.metric)}-{name}.png"
        src = _png_src(data, out_dir, file, embed)
        parts.append(
            f'<figure><img src="{_e(src)}" alt="{_e(name)} of {_e(first.title)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )
    return "\n".join(parts)


def _json_block(data: object) -> str:
    return f"<pre>{_e(json.dumps(data, indent=2, sort_keys=True))}</pre>"


def _metadata_html(meta: ReportMeta) -> str:
    parts = ['<h2 id="metadata">The study\'s metadata</h2>']
    parts.append(
        "<table><caption>Studies</caption><tr><th>study</th><th>description</th>"
        "<th>study file</th><th>hash</th><th>created</th></tr>"
        + "".join(
            f"<tr><td>{_e(s.name)}</td><td>{_e(s.description)}</td><td>{_study_file_link(s)}"
            f"</td><td>{_e((s.study_hash or '–')[:16])}</td><td>{_e(_when(s.created))}</td></tr>"
            for s in meta.studies
        )
        + "</table>"
    )
    parts.extend(_study_file_html(s) for s in meta.studies if s.study_file)
    parts.extend(_image_html(image) for image in meta.images)
    parts.append(
        "<table><caption>Runs</caption><tr><th>study</th><th>run</th><th>workload</th>"
        "<th>parameters</th><th>metrics</th><th>target n</th></tr>"
        + "".join(
            f"<tr><td>{_e(r.study)}</td><td>{_e(r.key)}</td><td>{_e(r.workload)}</td>"
            f"<td><code>{_e(json.dumps(r.params, sort_keys=True))}</code></td>"
            f"<td>{_e(', '.join(_metric_text(m) for m in r.metrics))}</td>"
            f"<td class=n>{_e(r.target_n if r.target_n is not None else '–')}</td></tr>"
            for r in meta.runs
        )
        + "</table>"
    )
    rows = []
    for (run, guest), (ok, failed) in sorted(meta.attempts.items()):
        rows.append(f"<tr><td>{_e(run)}</td><td>{_e(guest)}</td><td class=n>{ok:,}</td>"
                    f"<td class=n>{failed:,}</td></tr>")  # fmt: skip
    parts.append(
        "<table><caption>Attempts (failed ones are kept, never silently dropped)</caption>"
        "<tr><th>run</th><th>guest</th><th>succeeded</th><th>failed</th></tr>"
        + "".join(rows) + "</table>"
    )  # fmt: skip
    for g in meta.guests:
        found = [f"<details><summary>{title}</summary>{_json_block(facts)}</details>"
                 for title, facts in (("Host facts", g.host_facts), ("Guest facts", g.guest_facts))
                 if facts]  # fmt: skip
        if g.domain_xml:
            found.append(
                f"<details><summary>Domain XML</summary><pre>{_e(g.domain_xml)}</pre></details>"
            )
        who = f"Guest {_e(g.name)} ({_e(g.variant)} on {_e(g.host)}, study {_e(g.study)})"
        if not found:  # an imported guest: who it is, and no empty heading
            parts.append(f"<p>{who}: no facts or domain XML recorded.</p>")
        parts.append(_section(f"<h3>{who}</h3>", found))
    parts.extend(_xml_diffs(meta.guests))
    return "\n".join(parts)


def _study_file_link(study: StudyRecord) -> str:
    if not study.study_file:
        return "–"
    return f'<a href="#study-file-{_e(_slug(study.name))}">stored (below)</a>'


def _study_file_html(study: StudyRecord) -> str:
    """The study file the study was run from, exactly as it was, with its sha256."""
    return (
        f'<h3 id="study-file-{_e(_slug(study.name))}">Study file of {_e(study.name)}</h3>'
        f"<p>sha256 <code>{_e(study.study_hash or '–')}</code> (of the text below)</p>"
        f"<pre>{_e(study.study_file)}</pre>"
    )


def _image_html(image: ImageSummary) -> str:
    """A base image: its name and hash, and from its manifest the kernel, packages, trims."""
    name = _e(image.name or "(unnamed)")
    head = f"<h3>Base image {name}</h3><p>hash <code>{_e(image.hash)}</code>"
    if not image.manifest_found:
        return head + " (its manifest is not in this host's image cache)</p>"
    packages = image.packages if image.packages is not None else "–"
    parts = [
        head + (f": {_e(image.description)}" if image.description else "") + "</p>",
        "<table><caption>Image manifest</caption>"
        f"<tr><td>kernel</td><td>{_e(image.kernel or '–')}</td></tr>"
        f"<tr><td>packages</td><td class=n>{_e(packages)}</td></tr></table>",
    ]
    if image.trims:
        items = "".join(
            f"<li>{_e(why)}" + (f" <code>{_e(run)}</code>" if run else "") + "</li>"
            for why, run in image.trims
        )
        parts.append(
            f"<p>Trims (left out of or turned off in the image, and why):</p><ul>{items}</ul>"
        )
    return "".join(parts)


def _xml_diffs(guests: Sequence[GuestRecord]) -> list[str]:
    """The domain XML of each guest against the study's first guest: what the variant changed."""
    out = []
    by_study: dict[str, list[GuestRecord]] = {}
    for g in sorted(guests, key=lambda g: g.id):
        if g.domain_xml:
            by_study.setdefault(g.study, []).append(g)
    for members in by_study.values():
        base = members[0]
        for other in members[1:]:
            diff = difflib.unified_diff(
                (base.domain_xml or "").splitlines(), (other.domain_xml or "").splitlines(),
                fromfile=base.name, tofile=other.name, lineterm="",
            )  # fmt: skip
            out.append(
                f"<h3>Domain XML: {_e(base.name)} → {_e(other.name)}</h3>"
                f"<pre>{_e(chr(10).join(diff)) or '(identical)'}</pre>"
            )
    return out


def _when(stamp: float | None) -> str:
    return "–" if stamp is None else format_timestamp(stamp)


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
    embed: bool = False,
    sweeps: Sequence[SweepComparison] = (),
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
    with _figure_pool(len(grouped) + backing_runs) as pool:
        backing = _backing_pngs(meta, pool)  # the largest first
        drawn = [_later(pool, _block_parts, b) for b in grouped]
        body = [
            f"<h1>lab report: {_e(', '.join(s.name for s in meta.studies) or 'no study')}</h1>",
            f'<p class="note">Generated {_e(_when(time.time()))} by lab {_e(__version__)} from'
            f" <code>{_e(meta.store_path)}</code>.</p>",
            _summary_html(comparisons, out_dir, embed),
            _sweeps_html(sweeps, meta, out_dir, embed),
            _evidence_html(meta, out_dir, embed, backing),
            _section(
                "<h2>Verdicts</h2>", ["<ul>" + "".join(verdicts) + "</ul>" if verdicts else ""]
            ),
            *(_block_html(i, grouped[i], out_dir, embed, d) for i, d in enumerate(drawn)),
            _metadata_html(meta),
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


def _metric_text(m: MetricInfo) -> str:
    return f"{m.name} ({m.unit}, {m.direction or 'neither: evidence'})"
