"""Several instance types in one bundle set.

Why it matters: one communicator over mixed types (p5 with p4d, or p5 with p5e) runs at the pace of the
slowest network and can fail with 'unable to find a working algorithm' (NCCL debugging guide § 19); uneven
NCCL bandwidth lists it as cause 3 (HyperPod performance-debugger skill § A).  Peer comparisons in the other
rules stay within one type, so this finding is the only place the mix shows.
False positives: a controller/login node of another type collected with the workers, or separate
jobs analysed together.
Reference: docs/sources.md#placement.
Scope: shared: the mix is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.placement._placement import too_many_groups

RULE = RuleInfo(
    id="placement.mixed_types",
    title="Several instance types in one bundle set",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("node.instance_type", "placement_fact.value"),
    passed="one instance type across the bundle set",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-performance-debugger § A; hyperpod-nccl debugging-guide § 19",
        "run one job per instance family; keep controller nodes out of the communicator",
    ),
    severity_reason=(
        "One communicator over mixed instance types runs at the slowest type's pace and can fail with "
        "'unable to find a working algorithm', yet the mix is often a controller node collected with the "
        "workers. Source: HyperPod performance-debugger skill and NCCL debugging guide "
        "(awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    return too_many_groups(ctx, RULE, "instance_type", "max_types", "{n} instance types in one bundle set")
