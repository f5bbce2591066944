"""Every test and benchmark the README names as a proof exists, and runs: tests under tests/
(CI runs them all through scripts/test), benchmarks under bench/ with a main."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the README and the documents beside it, where the reliability tables live
README = "\n".join(
    p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
)


def test_every_test_the_readme_names_exists() -> None:
    names = set(re.findall(r"`(test_[a-z0-9_]+)`", README))
    paths = re.findall(r"`((?:tests|bench)/[\w/]+\.py)(?:::(\w+))?", README)
    assert len(names) >= 20 and len(paths) >= 20  # the reliability and bad-input tables
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    assert sorted(n for n in names if f"def {n}(" not in sources) == []
    for path, function in paths:
        text = (ROOT / path).read_text()
        if function:
            assert f"def {function}(" in text, (path, function)
        if path.startswith("bench/"):
            assert 'if __name__ == "__main__":' in text, path


def test_the_scripts_ci_runs_cover_every_test_folder() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    folders = {
        p.name
        for p in (ROOT / "tests").iterdir()
        if p.is_dir() and p.name != "fixtures" and not p.name.startswith((".", "_"))
    }
    assert folders == {"unit", "integration"}
    assert "tests/unit" in script and "tests/integration" in script
