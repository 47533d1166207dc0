"""The rules' metadata the plan reads (worst severity, scope, what explains a finding), loaded once."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.judge.engine import RuleInfo


@functools.cache
def infos() -> dict[str, RuleInfo]:
    """Every installed rule's RuleInfo (built-ins and rule packs), by id."""
    from analyzer.judge.rules import load_rules

    return {m.RULE.id: m.RULE for m in load_rules()}


def worst_severity(rule: str) -> str:
    """A rule's worst severity; "critical" for a rule not installed here (its findings keep their own)."""
    info = infos().get(rule)
    return info.severity.value if info is not None else "critical"
