"""The By-host table: the variant effect within each host, then combined (``lab.stats.blocked``).

Defined once for ``lab compare`` (its table, Markdown and ``--by host``) and ``lab report``.
"""

from __future__ import annotations

import math

from lab.stats.blocked import BlockedDifference

Table = tuple[str, tuple[str, ...], tuple[tuple[str, ...], ...]]  # title, header, rows


def host_table(r: BlockedDifference, title: str) -> Table:
    """One row per host (B − A with Welch's interval), then the hosts combined; as
    ``lab.report.warmup.warmup_table``, the parts of a ``TableData``."""
    header = ("host", f"n {r.a}", f"n {r.b}", f"mean {r.a}", f"mean {r.b}", "B − A",
              f"{r.confidence:g}% CI", "p")  # fmt: skip
    rows = [
        (b.block, str(b.n_a), str(b.n_b), f"{b.mean_a:,.4g}", f"{b.mean_b:,.4g}",
         f"{b.difference:+,.4g}", f"{b.ci[0]:+,.4g} … {b.ci[1]:+,.4g}", f"{b.p:.3g}")
        for b in r.blocks
    ]  # fmt: skip
    rows.append(
        ("combined", "", "", "", "",
         f"{r.difference:+,.4g}" + (f" ({r.percent:+.2f}%)" if math.isfinite(r.percent) else ""),
         f"{r.ci[0]:+,.4g} … {r.ci[1]:+,.4g}", f"{r.p:.3g}")
    )  # fmt: skip
    return f"{title}: {r.b} − {r.a} within each host, then combined", header, tuple(rows)


def host_note(r: BlockedDifference) -> str:
    """How the hosts were combined, and whether they disagree about the effect."""
    q_text = (
        "one host" if len(r.blocks) == 1
        else f"Cochran's Q {r.q:.3g}, p {r.q_p:.3g}" if math.isfinite(r.q)
        else "no Cochran's Q (it needs every host's variance)"
    )  # fmt: skip
    return (
        f"by host: {len(r.blocks)} host(s), {r.weighting}; {q_text}"
        + (" (the hosts disagree about the effect)" if r.q_p < 0.05 else "")
        + "".join(f"; left out {s}" for s in r.skipped)
    )
