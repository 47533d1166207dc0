"""Training nodes without a placement group.

Why it matters: without a cluster placement group EC2 gives no proximity guarantee; on-demand nodes
may land far apart in the network (MFU-NET § 5, CD-CAP).  Only nodes whose instance metadata was
read are judged (an instance id in meta.env or IMDS placement facts): without IMDS an absent group is
unknown, not absent.  A single node needs no placement group.
False positives: HyperPod training-plan or UltraServer capacity may be placed close together without a
named group; placement.spread then tells whether the nodes really are spread.
Reference: rules-facts § 1.5 PLACEMENT-NO-PG.
Scope: shared: placement is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Evidence, Finding, Route, Severity
from analyzer.rules.placement._placement import placements

RULE = RuleInfo(
    id="placement.no_pg",
    title="Nodes without a placement group",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("node.instance_id", "placement_fact.value"),
    passed="every node with instance metadata is in a placement group",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-cluster-debugger references/capacity-planning.md",
        "launch training nodes in a cluster placement group (or reserved capacity placed together)",
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    nodes = placements(ctx)
    if len(nodes) < ctx.threshold(RULE, "min_nodes"):
        return
    without = [p for p in nodes if p.imds and not p.get("placement_group")]
    if not without:
        return
    with_pg = sorted({p.get("placement_group") or "" for p in nodes if p.get("placement_group")})
    names = [p.node for p in without]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    if with_pg:
        message = f"{len(names)} of {len(nodes)} nodes have no placement group while the others use {', '.join(with_pg)}: {shown}"
    else:
        message = f"none of the {len(nodes)} nodes is in a placement group (instance metadata read on {len(names)}): {shown}"
    evidence = [
        p.facts["instance_id"][1] if "instance_id" in p.facts else Evidence("", None, None)
        for p in without[:5]
    ]
    yield RULE.finding(
        node=None,
        message=message,
        params={"nodes_without": names, "node_count": len(nodes), "groups_in_use": with_pg},
        evidence=[e for e in evidence if e.file],
    )
