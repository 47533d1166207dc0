"""Training nodes without a placement group.

Why it matters: without a cluster placement group EC2 gives no proximity guarantee; on-demand nodes
may land far apart in the network (mfu-debugger network guide § 5, cluster-debugger capacity-planning guide).
Only nodes whose instance metadata was read are judged (an instance id in meta.env, IMDS placement facts, or
the node's entry in an ``aws ec2 describe-instance-topology`` export, which prints GroupName only for an
instance in a group): without them an absent group is unknown, not absent, and the node is named as not
examined.  A single node needs no placement group: with fewer than ``min_nodes`` nodes the rule is not
examined ("too few peers"), never passed.
False positives: HyperPod training-plan or UltraServer capacity may be placed close together without a
named group; placement.spread then tells whether the nodes really are spread.
Reference: docs/sources.md#placement.
Scope: shared: placement is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo, TooFewPeers, too_few_peers
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.rules.placement._placement import read, shown

RULE = RuleInfo(
    id="placement.no_pg",
    title="Nodes without a placement group",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("node.instance_id", "node.placement_group", "placement_fact.value"),
    passed="every node with instance metadata is in a placement group",
    peers="min_nodes",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-cluster-debugger references/capacity-planning.md",
        "launch training nodes in a cluster placement group (or reserved capacity placed together)",
    ),
    severity_reason=(
        "Without a cluster placement group EC2 gives no proximity guarantee: a risk, not a fault "
        "(placement.spread says whether the nodes really are spread). Source: AWS EC2 placement groups "
        "documentation and HyperPod cluster-debugger capacity-planning guide (awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    found = read(ctx)
    nodes = found.nodes
    ctx.saw(p.node for p in nodes if p.imds or p.get("placement_group"))
    if len(nodes) < (least := ctx.threshold(RULE, "min_nodes")):
        raise TooFewPeers(too_few_peers(len(nodes), least, "nodes"))
    without = [p for p in nodes if p.imds and not p.get("placement_group")]
    if not without:
        return
    with_pg = sorted({p.get("placement_group") or "" for p in nodes if p.get("placement_group")})
    names = [p.node for p in without]
    listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    if with_pg:
        message = f"{len(names)} of {len(nodes)} nodes have no placement group while the others use {', '.join(with_pg)}: {listed}"
    else:
        message = f"none of the {len(nodes)} nodes is in a placement group (instance metadata read on {len(names)}): {listed}"
    params: dict[str, Any] = {"nodes_without": names, "node_count": len(nodes), "groups_in_use": with_pg}
    if unknown := [p.node for p in nodes if not p.imds and not p.get("placement_group")]:
        params["not_examined"] = unknown
        message = f"{message} (not examined, no instance metadata: {shown(unknown)})"
    evidence = [
        p.facts["instance_id"][1] if "instance_id" in p.facts else Evidence("", None, None)
        for p in without[:5]
    ]
    yield RULE.finding(
        node=None,
        message=message,
        params={**params, **found.exports.params()},
        evidence=[e for e in evidence if e.file],
    )
