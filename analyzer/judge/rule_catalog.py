"""The rule catalog as plain data: what ``hptriage rules`` prints and the assistants' ``rules`` tool returns."""

from __future__ import annotations

from typing import Any

from analyzer.judge.rules import load_rules
from analyzer.judge.settings import Settings


def rule_catalog(settings: Settings) -> list[dict[str, Any]]:
    """Every rule (built-ins and installed rule packs) with its title, worst severity, inputs, the
    thresholds it judges by (a site's overrides included) and its route."""
    return [
        {
            "rule": m.RULE.id,
            "title": m.RULE.title_for(settings),
            "severity": m.RULE.severity.value,
            "requires": list(m.RULE.requires),
            "requires_any": list(m.RULE.requires_any),
            "severity_reason": m.RULE.severity_reason,
            "thresholds": settings.described(m.RULE.id),
            "route": m.RULE.route.as_dict(),
            "version": m.RULE.version,
        }
        for m in load_rules()
    ]
