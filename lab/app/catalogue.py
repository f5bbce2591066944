"""What a lab.toml makes known: the variant and the workload plug-ins (``lab variants``,
``lab workloads``, completion, a study file's names). A plug-in file that failed to load is
among each one's ``broken``, with its error."""

from __future__ import annotations

from lab.core.context import Context
from lab.core.plugins import Plugins
from lab.guests.factors import FACTORS, Factor
from lab.guests.variant import Variant
from lab.guests.variants import variants_for
from lab.run.workload import Workload, workloads_for


def variants(ctx: Context) -> Plugins[Variant]:
    """The shipped variants and those of the folders lab.toml's ``variant_dirs`` names."""
    return variants_for(ctx.config)


def factors() -> dict[str, Factor]:
    """The factors whose levels compose into cells (``page-1g.prealloc-on``), by name."""
    return FACTORS


def workloads(ctx: Context) -> Plugins[Workload]:
    """The shipped workloads and those of the folders lab.toml's ``workload_dirs`` names."""
    return workloads_for(ctx.config)
