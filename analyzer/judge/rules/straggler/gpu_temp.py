"""A node whose hottest GPU runs well above the other nodes of its instance type.

Why it matters: a GPU hotter than its peers under the same load has poorer cooling and throttles
first (H100: 88 C software, 92 C hardware slowdown: mfu-debugger node diagnostics); peers are a better
yardstick than one absolute line because inlet temperatures differ between halls (the sources give four
conflicting absolute lines: docs/sources.md#where-sources-disagree).  The node's hottest GPU is compared with
its peers' band.
False positives: a node that just started a job while its peers idle, or the reverse.
Reference: docs/sources.md#peer-comparisons, docs/sources.md#gpu-thermal.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context
from analyzer.judge.findings import Finding
from analyzer.judge.rules.straggler._common import find, gpu_findings, gpu_rule, gpu_values_sql

RULE = gpu_rule(
    "straggler.gpu.temp",
    "GPU temperature above same-type peers",
    "check cooling and throttle reasons; drain if it keeps running hotter than its peers",
    column="temp_c",
    passed="every node's GPU temperature within its peers' band",
    target="hyperpod-node-debugger § G",
    severity_reason=(
        "A GPU hotter than its peers under the same load has poorer cooling and throttles first; peers are "
        "the yardstick because absolute lines disagree. Source: HyperPod mfu-debugger node diagnostics "
        "(awslabs/agent-plugins: H100 slowdown at 88 and 92 °C); ours: the peer band."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    outs = find(ctx, RULE, gpu_values_sql("temp_c", "temp_line", "max"), "high")
    return gpu_findings(ctx, RULE, outs, "temperature", "C", "hottest")
