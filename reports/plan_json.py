"""The remediation plan as JSON (schema in docs/plan.schema.json): what ``analyze --plan FILE`` writes."""

from __future__ import annotations

import json
from typing import Any

from analyzer import __version__
from analyzer.model.plan import Plan

SCHEMA_ID = "hptriage/plan/v1"


def document(plan: Plan) -> dict[str, Any]:
    return {"schema": SCHEMA_ID, "tool_version": __version__, **plan.as_dict()}


def dumps(plan: Plan) -> str:
    return json.dumps(document(plan), indent=2, default=str) + "\n"
