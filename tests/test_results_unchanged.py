"""Every finding, outcome and verdict of the sample scenarios and of a generated 64-node cluster stays what
it was when tests/fixtures/generated/results-samples-and-mixed-64.json was written: a change of layout or
speed changes no result.  A change meant to change results regenerates the file with
``python scripts/regenerate_fixtures.py`` and says why in its commit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "regenerate_fixtures", ROOT / "scripts" / "regenerate_fixtures.py"
)
regenerate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(regenerate)  # type: ignore[union-attr]


def test_results_are_byte_identical(tmp_path: Path) -> None:
    kept = regenerate.RESULTS.read_text(encoding="utf-8")
    now = json.dumps(regenerate.results(tmp_path), indent=1, sort_keys=True) + "\n"
    assert now == kept, "results changed: run scripts/regenerate_fixtures.py if the change is meant"
