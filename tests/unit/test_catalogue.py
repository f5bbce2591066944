"""lab.app.catalogue: the plug-ins lab.toml's folders add to the shipped ones, a file that
fails to load among the broken (what `lab variants`, `lab workloads` and completion list)."""

from __future__ import annotations

from pathlib import Path

from lab.app.catalogue import variants, workloads
from lab.core.config import Config
from lab.core.context import Context


def test_the_folders_lab_toml_names_add_to_the_shipped_plugins(tmp_path: Path) -> None:
    for kind in ("variants", "workloads"):
        (tmp_path / kind).mkdir()
        (tmp_path / kind / "half_done.py").write_text("raise RuntimeError('not yet')\n")
    config = Config(
        variant_dirs=[str(tmp_path / "variants")], workload_dirs=[str(tmp_path / "workloads")]
    )
    ctx = Context(config=config)
    found_variants, found_workloads = variants(ctx), workloads(ctx)
    assert "thp" in found_variants and "null" in found_workloads
    for kind, found in (("variants", found_variants), ("workloads", found_workloads)):
        (broken,) = found.broken.values()
        assert broken.path == str(tmp_path / kind / "half_done.py")
        assert "not yet" in broken.reason
