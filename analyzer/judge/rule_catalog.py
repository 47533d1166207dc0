"""The rule catalog as plain data: what ``hptriage rules`` prints and the assistants' ``rules`` tool returns."""

from __future__ import annotations

from typing import Any

from analyzer.judge.rules import load_rules
from analyzer.judge.settings import Settings
from parsers._kernel_catalog import FAMILIES, SIGNATURES


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
            "signatures": kernel_signatures(m.RULE.id),
        }
        for m in load_rules()
    ]


def kernel_signatures(rule: str) -> list[dict[str, Any]]:
    """The kernel-log signatures (parsers/kernel_signatures.toml) whose family the rule judges."""
    return [
        {
            "signature": s.id,
            "family": s.family,
            "event_type": s.event_type,
            "severity": s.severity,
            "reason": s.reason,
            "route": {"owner": FAMILIES[s.family].owner, "target": FAMILIES[s.family].target},
            "sources": list(s.sources),
        }
        for s in SIGNATURES
        if FAMILIES[s.family].rule == rule and not s.claims_only
    ]
