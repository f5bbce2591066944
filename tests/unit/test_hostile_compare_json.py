"""``lab compare --format json`` is JSON: a value that is no number (Cochran's Q has no p for
one host) is null, never the NaN that Python's json writes and strict parsers refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli import main
from tests.unit.helpers import twins_store

pytestmark = pytest.mark.usefixtures("no_config")


def _strict(text: str) -> object:
    """JSON as jq or a browser reads it: NaN and Infinity are errors."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return twins_store(tmp_path / "lab.db", 30)


def test_by_host_json_of_one_host_is_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--db", str(db), "--by", "host", "--format", "json"]) == 0
    data = _strict(capsys.readouterr().out)
    assert isinstance(data, list) and len(data) == 1
    combined = data[0]["combined"]
    assert combined["cochran_q"] == 0.0 and combined["cochran_q_p"] is None
    assert [h["host"] for h in data[0]["hosts"]] == ["local"]
