"""The report's metadata: what the study ran on and from, as its store recorded it."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lab.core.units import format_timestamp
from lab.report.images import ImageSummary
from lab.report.markup import escape as _e
from lab.report.markup import json_block, section, slug
from lab.store import GuestRecord, MetricInfo, RunRecord, StudyRecord
from lab.store.records import EvidenceSeries

if TYPE_CHECKING:
    from lab.report.ageplot import Coverage


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
    thp_coverage: Coverage | None = None
    """the THP-backed twins' huge-page coverage against their host's age (``ageplot``)"""


def metadata_html(meta: ReportMeta) -> str:
    parts = ['<h2 id="metadata">The study\'s metadata</h2>']
    parts.append(
        "<table><caption>Studies</caption><tr><th>study</th><th>description</th>"
        "<th>study file</th><th>hash</th><th>created</th></tr>"
        + "".join(
            f"<tr><td>{_e(s.name)}</td><td>{_e(s.description)}</td><td>{_study_file_link(s)}"
            f"</td><td>{_e((s.study_hash or '–')[:16])}</td><td>{_e(when(s.created))}</td></tr>"
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
            f"<td>{_e(', '.join(metric_text(m) for m in r.metrics))}</td>"
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
        found = [f"<details><summary>{title}</summary>{json_block(facts)}</details>"
                 for title, facts in (("Host facts", g.host_facts), ("Guest facts", g.guest_facts))
                 if facts]  # fmt: skip
        if g.domain_xml:
            found.append(
                f"<details><summary>Domain XML</summary><pre>{_e(g.domain_xml)}</pre></details>"
            )
        who = f"Guest {_e(g.name)} ({_e(g.variant)} on {_e(g.host)}, study {_e(g.study)})"
        if not found:  # an imported guest: who it is, and no empty heading
            parts.append(f"<p>{who}: no facts or domain XML recorded.</p>")
        parts.append(section(f"<h3>{who}</h3>", found))
    parts.extend(_xml_diffs(meta.guests))
    return "\n".join(parts)


def _study_file_link(study: StudyRecord) -> str:
    if not study.study_file:
        return "–"
    return f'<a href="#study-file-{_e(slug(study.name))}">stored (below)</a>'


def _study_file_html(study: StudyRecord) -> str:
    """The study file the study was run from, exactly as it was, with its sha256."""
    return (
        f'<h3 id="study-file-{_e(slug(study.name))}">Study file of {_e(study.name)}</h3>'
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


def when(stamp: float | None) -> str:
    return "–" if stamp is None else format_timestamp(stamp)


def metric_text(m: MetricInfo) -> str:
    return f"{m.name} ({m.unit}, {m.direction or 'neither: evidence'})"
