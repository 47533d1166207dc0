"""A node whose slowest GPU runs its SM clock well below the other nodes of its instance type.

Why it matters: collectives run at the pace of the slowest rank; a GPU held at a low SM clock (thermal
or power brake, a stuck application clock) makes its whole node a straggler (mfu-debugger failure patterns
§ 2: 1,200 vs 1,800 MHz; the mfu-debugger straggler step compares SM clocks after CPU).  The node's lowest GPU
clock is compared with its peers' band (median +/- k x MAD, at least ``min_nodes`` nodes of the same instance
type).
False positives: a node that is idle while its peers train (not running the job, or waiting at a
barrier) shows idle clocks; a snapshot catches one moment, so confirm with a second capture.
Reference: docs/sources.md#peer-comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context
from analyzer.judge.findings import Finding
from analyzer.judge.rules.straggler._common import find, gpu_findings, gpu_rule, gpu_values_sql

RULE = gpu_rule(
    "straggler.gpu.sm_clock",
    "SM clock below same-type peers",
    "check throttle reasons and power; drain and run dcgmi diag -r 3 if it persists",
    column="sm_clock_mhz",
    passed="every node's SM clock within its peers' band",
    severity_reason=(
        "A node whose slowest GPU clocks well below its same-type peers runs jobs correctly but paces every "
        "collective; confirm with a second capture before draining. Source: HyperPod mfu-debugger failure "
        "patterns and straggler guide (awslabs/agent-plugins); ours: the peer band."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    outs = find(ctx, RULE, gpu_values_sql("sm_clock_mhz", "clock_line", "min"), "low")
    return gpu_findings(ctx, RULE, outs, "SM clock", "MHz", "lowest")
