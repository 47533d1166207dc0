"""A node whose GPU power draw sits outside the band of the other nodes of its instance type.

Why it matters: under the same job every node's GPUs draw about the same power.  A node drawing far
less is doing less work (power brake, throttled clocks, a rank waiting on others); one drawing far
more than its peers runs hotter and is next to throttle (mfu-debugger straggler step: compare power draw after
SM clocks).  Both sides are reported; ``direction`` says which.  The node's GPU furthest from the peers is not
known in advance, so the node value is its lowest GPU for 'low' and highest for 'high'.
False positives: idle nodes, or a snapshot taken between steps; confirm with a second capture.
Reference: docs/sources.md#peer-comparisons, docs/sources.md#gpu-thermal.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context
from analyzer.judge.findings import Finding
from analyzer.judge.rules.straggler._common import find, gpu_findings, gpu_rule, gpu_values_sql

RULE = gpu_rule(
    "straggler.gpu.power",
    "GPU power draw outside same-type peers",
    "compare power limit and throttle reasons with peers; drain if it persists",
    column="power_draw_w",
    passed="every node's GPU power draw within its peers' band",
    severity_reason=(
        "A node drawing far less power than its same-type peers does less work, one drawing far more is next "
        "to throttle: degraded, not broken. Source: HyperPod mfu-debugger straggler guide "
        "(awslabs/agent-plugins: compare power draw); ours: the peer band and its 75 W floor."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    low = find(ctx, RULE, gpu_values_sql("power_draw_w", "line", "min"), "low")
    yield from gpu_findings(ctx, RULE, low, "power draw", "W", "lowest")
    flagged = {o.row["node"] for o in low}
    high = find(ctx, RULE, gpu_values_sql("power_draw_w", "line", "max"), "high")
    high = [o for o in high if o.row["node"] not in flagged]
    yield from gpu_findings(ctx, RULE, high, "power draw", "W", "highest")
