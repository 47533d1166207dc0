"""The findings JSON validates against docs/findings.schema.json."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.conftest import ROOT


def test_output_matches_schema(rendered: dict[str, Path]) -> None:
    schema = json.loads((ROOT / "docs" / "findings.schema.json").read_text())
    doc = json.loads(rendered["json"].read_text())
    jsonschema.validate(doc, schema)
    assert doc["findings"], "the sample has findings"


def test_schema_rejects_a_broken_finding(rendered: dict[str, Path]) -> None:
    schema = json.loads((ROOT / "docs" / "findings.schema.json").read_text())
    doc = json.loads(rendered["json"].read_text())
    doc["findings"][0]["route"]["owner"] = "somebody"
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        assert "somebody" in str(exc)
    else:
        raise AssertionError("an unknown route owner must not validate")
