"""lab.app.twins: the pair `lab xml`, `lab diff` and `lab up` plan, sized by the options
given and lab.toml otherwise, planned on libvirt's test driver."""

from __future__ import annotations

from lab.app.twins import TwinSizing, pair_difference, plan, twin_request
from lab.core.config import Config
from lab.core.context import Context

CONFIG = Config(libvirt_uri="test:///default", reserve_host_cpus=0, vcpus=2, memory="2G")


def test_a_sizing_left_out_is_lab_toml_s() -> None:
    ctx = Context(config=CONFIG)
    asked = twin_request(ctx, ["thp", "shp1g"], TwinSizing(vcpus=1))
    assert (asked.variants, asked.vcpus, asked.memory, asked.reserve_host_cpus) == (
        ["thp", "shp1g"], 1, "2G", 0,
    )  # fmt: skip
    kept = twin_request(ctx, ["thp"], TwinSizing(memory="1G", reserve_host_cpus=1))
    assert (kept.vcpus, kept.memory, kept.reserve_host_cpus) == (2, "1G", 1)


def test_the_planned_pair_differs_by_its_variants_and_identity_only() -> None:
    ctx = Context(config=CONFIG)
    (guest,) = plan(ctx, ["shp1g"], TwinSizing(vcpus=1, memory="1G")).guests
    assert '<page size="1048576" unit="KiB"/>' in guest.spec.to_string()
    found = pair_difference(ctx, "thp", "shp1g", TwinSizing(vcpus=1, memory="1G"))
    assert (found.a, found.b) == ("lab-thp", "lab-shp1g")
    kinds = {c.kind for c in found.changes}
    assert {"variant", "identity"} <= kinds and "unexplained" not in kinds
