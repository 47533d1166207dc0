"""The findings JSON document (schema in docs/findings.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from analyzer import __version__
from analyzer.model.report_data import ReportData

SCHEMA_ID = "hptriage/findings/v1"


def document(data: ReportData) -> dict[str, Any]:
    assert data.verdict is not None  # ReportData computes it when it is not given
    return {
        "schema": SCHEMA_ID,
        "tool_version": __version__,
        "bundles": data.bundles,
        "nodes": data.nodes,
        "verdict": data.verdict.as_dict(),
        "inputs": data.inputs,
        "findings": [f.as_dict() for f in data.findings],
        "rules": [
            {
                "rule": o.rule,
                "title": data.rule_titles.get(o.rule, ""),
                "outcome": o.outcome,
                "findings": o.findings,
                "reason": o.reason,
                "nodes_without_data": o.nodes_without_data,
                "nodes_checked": o.nodes_checked,
            }
            for o in data.outcomes
        ],
        "parse_problems": data.problems,
    }


def dumps(data: ReportData) -> str:
    return json.dumps(document(data), indent=2, default=str) + "\n"
