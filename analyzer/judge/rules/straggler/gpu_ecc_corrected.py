"""A node whose corrected-ECC rate (errors per day of uptime) is far above its same-type peers.

Why it matters: a rising rate of corrected (single-bit) errors is the early sign of a failing HBM
stack (performance-debugger details guide: > 1,000/day pre-failure; node-debugger issue catalog: > 100/day
drain) and the corrections themselves cost time.  The rate is the node's worst GPU volatile corrected count
divided by host uptime in days; nodes up for less than ``min_uptime_s`` are left out (the performance-debugger
snapshot script skips them too).  The absolute lines belong to the GPU rules; this one only says the node is
out of line with its peers.
False positives: the volatile counter resets at driver reload, not only at boot, so a reloaded driver
under-counts (never over-counts) the rate.
Reference: docs/sources.md#peer-comparisons, docs/sources.md#gpu-memory-errors.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL
from analyzer.judge.rules.straggler._common import find, gpu_findings

RULE = RuleInfo(
    id="straggler.gpu.ecc_corrected_rate",
    title="Corrected-ECC rate above same-type peers",
    severity=Severity.WARNING,
    requires=("gpu.ecc_corrected_volatile", "host_uptime.uptime_s"),
    peers="min_nodes",
    passed="no node's corrected-ECC rate above its peers",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § G", "watch the rate; plan replacement if it climbs"
    ),
    severity_reason=(
        "A corrected-ECC rate far above same-type peers is an early sign of a failing memory stack, not yet "
        "a fault; the absolute lines belong to gpu.ecc.corrected_rate. Source: HyperPod performance-debugger "
        "and node-debugger skills (awslabs/agent-plugins: 100 to 1,000 a day is the watch band)."
    ),
)

_SQL = f"""
    WITH up AS (SELECT bundle_id, max(uptime_s) AS uptime_s FROM host_uptime
                WHERE uptime_s IS NOT NULL GROUP BY bundle_id HAVING max(uptime_s) >= ?),
    per_gpu AS (
        SELECT g.bundle_id, g.node, g."index" AS gpu, g.source_file, coalesce(g.ecc_volatile_line, g.line) AS l,
               g.ecc_corrected_volatile / (up.uptime_s / 86400.0) AS value
        FROM gpu g JOIN up ON up.bundle_id = g.bundle_id WHERE g.ecc_corrected_volatile IS NOT NULL
    )
    SELECT t.instance_type AS peer_group, p.bundle_id, p.node, max(p.value) AS value,
           arg_max(struct_pack(gpu := p.gpu, f := p.source_file, l := p.l), [p.value, -p.gpu]) AS at, count(*) AS gpus
    FROM per_gpu p JOIN ({NODE_TYPE_SQL}) t ON t.bundle_id = p.bundle_id
    GROUP BY t.instance_type, p.bundle_id, p.node
"""


def check(ctx: Context) -> Iterable[Finding]:
    min_uptime = ctx.threshold(RULE, "min_uptime_s")
    young = ctx.rows(
        "SELECT DISTINCT g.node FROM gpu g JOIN host_uptime u ON u.bundle_id = g.bundle_id "
        "WHERE g.ecc_corrected_volatile IS NOT NULL GROUP BY g.bundle_id, g.node HAVING max(u.uptime_s) < ?",
        min_uptime,
    )
    # a node up for less than min_uptime_s has no daily rate: not examined, never within the band
    ctx.not_judged((r["node"] for r in young), f"up less than {min_uptime:g} s: no daily rate to compare")
    outs = find(ctx, RULE, _SQL, "high", (min_uptime,))
    return gpu_findings(ctx, RULE, outs, "corrected-ECC rate", "errors/day", "highest")
