"""Nodes of one bundle set in more than one Availability Zone.

Why it matters: traffic between AZs crosses the regional network: collectives slow down by an order
of magnitude and EFA does not span AZs at all (the performance-debugger snapshot script flags it "BAD";
its details guide and skill agree).  Zone ids
(use1-az1) are compared when every node has one, else zone names (names map to different ids per
account, but all nodes of one cluster share an account).
False positives: a bundle set that mixes nodes of two different clusters on purpose.
Reference: docs/sources.md#placement.
Scope: shared: placement is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.placement._placement import placements, too_many_groups

RULE = RuleInfo(
    id="placement.multi_az",
    title="Nodes in several Availability Zones",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("node.availability_zone", "node.az_id", "placement_fact.value"),
    passed="all nodes in one Availability Zone",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-cluster-debugger references/capacity-planning.md; hyperpod-node-debugger § C",
        "run the job on nodes of one AZ (one instance group / subnet)",
    ),
    severity_reason=(
        "EFA's OS-bypass traffic cannot leave its subnet, hence its Availability Zone, and traffic between "
        "AZs crosses the regional network, so a job over several AZs cannot run its collectives at speed. "
        "Source: AWS EFA documentation and HyperPod performance-debugger skill (awslabs/agent-plugins: more "
        "than one AZ is BAD)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    nodes = placements(ctx)
    key = "az_id" if all(p.get("az_id") for p in nodes if p.get("availability_zone")) else "availability_zone"
    what = f"nodes span {{n}} Availability Zones ({key})"
    return too_many_groups(ctx, RULE, key, "max_zones", what)
