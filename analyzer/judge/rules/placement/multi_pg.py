"""Nodes of one bundle set in more than one placement group.

Why it matters: a cluster placement group keeps instances close in the network; nodes split across
groups talk over longer paths and pairwise bandwidth turns uneven (performance-debugger snapshot
script and details guide).  Nodes without any
group are left to placement.no_pg.
False positives: deliberately separate jobs analysed together.
Reference: docs/sources.md#placement.
Scope: shared: placement is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.placement._placement import too_many_groups

RULE = RuleInfo(
    id="placement.multi_pg",
    title="Nodes in several placement groups",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("node.placement_group", "node.instance_id", "placement_fact.value"),
    passed="nodes with a placement group share one",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-cluster-debugger references/capacity-planning.md",
        "run the job's nodes in one cluster placement group",
    ),
    severity_reason=(
        "Nodes split over several placement groups talk over longer network paths and pairwise bandwidth "
        "turns uneven for every collective of the job. Source: HyperPod performance-debugger snapshot script "
        "(awslabs/agent-plugins: more than one group is flagged) and AWS EC2 placement groups documentation."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    # a node whose instance metadata (or EC2 topology entry) shows no group was examined: it has none
    return too_many_groups(
        ctx,
        RULE,
        "placement_group",
        "max_groups",
        "nodes span {n} placement groups",
        examined=lambda p: p.imds or bool(p.get("placement_group")),
    )
