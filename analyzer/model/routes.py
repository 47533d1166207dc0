"""Who acts on what: findings grouped for reading without lending one finding another's route.

Every report groups findings (by rule, by node) so a reader is not given the same line a hundred times,
and every group says only what all its findings share.  A rule's findings may differ in severity and in
route (``gpu.xid``: Xid 48 is "drain, then reset the GPU", Xid 13 "restart the application; no reset is
needed"), so a group is cut by (severity, route): :func:`by_route`.  A header over findings that differ
says how they differ (:func:`shared`), never the first finding's severity or action.

>>> from analyzer.judge.findings import Finding, Route, Severity
>>> reset = Route("node-hardware", "runbook § G", "reset the GPU")
>>> restart = Route("node-hardware", "runbook § G", "restart the application; no reset is needed")
>>> def f(node, severity, route):
...     return Finding("gpu.xid", 1, severity, node, None, f"{node} Xid", {}, route)
>>> found = [f("a", Severity.CRITICAL, reset), f("b", Severity.WARNING, restart), f("c", Severity.CRITICAL, reset)]
>>> [(g.severity.value, g.route.action, [x.node for x in g.findings]) for g in by_route(found)]
[('critical', 'reset the GPU', ['a', 'c']), ('warning', 'restart the application; no reset is needed', ['b'])]
>>> s = shared(found)
>>> s.severity, s.route, s.owners
(None, None, ('node-hardware',))
>>> [(r.severity.value, r.route.action) for r in node_routes(found, "a")]
[('critical', 'reset the GPU')]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analyzer.judge.findings import Finding, Route, Severity
from analyzer.model.verdict import CONCERN


def route_text(route: Route) -> str:
    """A route as every report writes it: ``owner: action (target)``."""
    return f"{route.owner}: {route.action} ({route.target})"


@dataclass(frozen=True)
class RouteGroup:
    """Findings of one severity and one route (owner, action, target), in the order given."""

    severity: Severity
    route: Route
    findings: tuple[Finding, ...]


def by_route(findings: Iterable[Finding]) -> list[RouteGroup]:
    """The findings cut into groups of one severity and one route: worst severity first, then in the
    order the findings came (the judge sorts them), each group's findings in that order too."""
    groups: dict[tuple[Severity, Route], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.severity, f.route), []).append(f)
    keys = sorted(groups, key=lambda k: k[0].rank)  # stable: first seen first within a severity
    return [RouteGroup(sev, route, tuple(groups[(sev, route)])) for sev, route in keys]


@dataclass(frozen=True)
class Shared:
    """What a group of findings has in common: a severity and a route, or None where they differ."""

    severity: Severity | None
    route: Route | None
    #: the owners of the findings' routes, in order of first appearance
    owners: tuple[str, ...]
    #: (severity, count) worst first, only those present
    counts: tuple[tuple[str, int], ...]
    #: distinct routes among the findings
    routes: int

    def counts_text(self) -> str:
        """'2 critical, 5 warning'."""
        return ", ".join(f"{n} {sev}" for sev, n in self.counts)


def shared(findings: Sequence[Finding]) -> Shared:
    """The severity and route all ``findings`` share (None where they differ), their owners and counts."""
    severities = {f.severity for f in findings}
    routes = list(dict.fromkeys(f.route for f in findings))
    counts = Counter(f.severity for f in findings)
    return Shared(
        severity=next(iter(severities)) if len(severities) == 1 else None,
        route=routes[0] if len(routes) == 1 else None,
        owners=tuple(dict.fromkeys(r.owner for r in routes)),
        counts=tuple((s.value, counts[s]) for s in sorted(counts, key=lambda s: s.rank)),
        routes=len(routes),
    )


def concerns_of_rule(findings: Iterable[Finding], rule: str) -> Shared | None:
    """What a rule's concerns (critical and warning findings) share: the label of a cluster-wide cause;
    None when the rule has none."""
    concerns = [f for f in findings if f.rule == rule and f.severity in CONCERN]
    return shared(concerns) if concerns else None


@dataclass(frozen=True)
class NodeRoute:
    """One thing to do on a node: the route of one or more of its concerns, at their worst severity."""

    severity: Severity
    route: Route
    rules: tuple[str, ...]
    findings: int


def node_routes(
    findings: Iterable[Finding], node: str, rules: Iterable[str] | None = None
) -> list[NodeRoute]:
    """The routes of a node's concerns (critical and warning findings on ``node``; only those of
    ``rules`` when given: the rules its rank counts), each once at its worst severity, worst first."""
    wanted = set(rules) if rules is not None else None
    worst: dict[Route, Severity] = {}
    of_route: dict[Route, list[Finding]] = {}
    for f in findings:
        if f.node != node or f.severity not in CONCERN or (wanted is not None and f.rule not in wanted):
            continue
        if f.route not in worst or f.severity.rank < worst[f.route].rank:
            worst[f.route] = f.severity
        of_route.setdefault(f.route, []).append(f)
    order = sorted(worst, key=lambda r: worst[r].rank)  # stable: first seen first within a severity
    return [
        NodeRoute(worst[r], r, tuple(dict.fromkeys(f.rule for f in of_route[r])), len(of_route[r]))
        for r in order
    ]


def owners(routes: Iterable[NodeRoute]) -> list[str]:
    """The owners of ``routes``, each once, in order (the worst route's owner first)."""
    return list(dict.fromkeys(r.route.owner for r in routes))
