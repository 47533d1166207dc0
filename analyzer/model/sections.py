"""The report sections a rule belongs to, for every renderer (and the rules doc), and an analysis's
findings and outcomes grouped by section once, for every renderer.  An area is declared once, with its
section, in :data:`analyzer.judge.rules.AREAS`; this module only hands that on.

>>> from analyzer.judge.findings import Finding, Outcome, Route, Severity
>>> route = Route("node-hardware", "runbook § G", "reset the GPU")
>>> def f(rule, node):
...     return Finding(rule, 1, Severity.WARNING, node, None, f"{node} {rule}", {}, route)
>>> found = [f("gpu.xid", "a"), f("fs.iowait.high", "a"), f("gpu.xid", "b")]
>>> parts = by_section(found, [Outcome("fs.iowait.high", "fail", 1, "")])
>>> [(s.key, [x.node for x in s.findings], [o.rule for o in s.outcomes]) for s in parts]
[('A', [], []), ('B', ['a'], ['fs.iowait.high']), ('C', ['a', 'b'], [])]
>>> {rule: [x.node for x in group] for rule, group in parts[2].by_rule().items()}
{'gpu.xid': ['a', 'b']}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analyzer.judge.findings import Finding, Outcome
from analyzer.judge.rules import AREAS, SECTIONS, section_of

#: Rule area (first part of the rule id) -> report section.
AREA_SECTION: dict[str, str] = AREAS


@dataclass(frozen=True)
class Section:
    """One report section's share of an analysis: its findings in the order the judge gave them (worst
    first) and the outcomes of its rules, in the order they came."""

    key: str
    title: str
    findings: list[Finding]
    outcomes: list[Outcome]

    def by_rule(self, findings: Iterable[Finding] | None = None) -> dict[str, list[Finding]]:
        """This section's findings (or those given, taken from them) by rule, each rule where its first
        finding stands, each rule's findings in their order."""
        return by_rule(self.findings if findings is None else findings)


def by_rule(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """Findings by rule, each rule where its first finding stands, each rule's findings in their order."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.rule, []).append(f)
    return groups


def by_section(findings: Sequence[Finding], outcomes: Sequence[Outcome]) -> list[Section]:
    """Every section in report order (:data:`SECTIONS`), each with its findings and outcomes; a section
    with none is there too (the renderers say "no rule in this section")."""
    found: dict[str, list[Finding]] = {key: [] for key in SECTIONS}
    judged: dict[str, list[Outcome]] = {key: [] for key in SECTIONS}
    for f in findings:
        found[section_of(f.rule)].append(f)
    for o in outcomes:
        judged[section_of(o.rule)].append(o)
    return [Section(key, title, found[key], judged[key]) for key, title in SECTIONS.items()]


__all__ = ["AREA_SECTION", "SECTIONS", "Section", "by_rule", "by_section", "section_of"]
