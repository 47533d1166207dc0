"""A node whose CPU iowait is far above the other nodes of its instance type.

Why it matters: nodes of one job read the same data; a node that waits on I/O much longer than its
peers (a slow local disk, a bad FSx client mount, a hot OST) becomes the job's straggler even when
the file system as a whole has headroom (performance-debugger snapshot script: iowait; the mfu-debugger
straggler step compares nodes).  The node value is its mean %iowait over the interval reports of ``iostat -c``
(the first, since-boot report is excluded).
False positives: a node that was running a checkpoint write when its bundle was taken.
Reference: docs/sources.md#peer-comparisons, docs/sources.md#local-storage.
Explained by the FSx/EBS/Lustre saturation rules and fs.verdict: when one fires, iowait is its symptom.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL
from analyzer.judge.rules.straggler._common import find
from analyzer.judge.signals.fs import IOWAIT_BY_NODE_SQL, STORAGE_CAUSES

RULE = RuleInfo(
    id="straggler.host.iowait",
    title="CPU iowait above same-type peers",
    severity=Severity.WARNING,
    requires=("iostat_cpu.iowait_pct",),
    peers="min_nodes",
    passed="every node's iowait within its peers' band",
    explained_by=STORAGE_CAUSES,
    route=Route(
        "io-pattern",
        "hyperpod-mfu-debugger steps/2c-straggler.md",
        "compare the node's mounts and disks with its peers (iostat -x, lfs df)",
    ),
    severity_reason=(
        "A node waiting on I/O much longer than its peers becomes the job's straggler, a slowdown rather "
        "than a failure. Source: HyperPod mfu-debugger straggler guide and performance-debugger snapshot "
        "script (awslabs/agent-plugins); ours: the peer band."
    ),
)

_SQL = f"""
    SELECT t.instance_type AS peer_group, i.bundle_id, i.node, i.mean AS value, i.reports, i.source_file, i.line
    FROM ({IOWAIT_BY_NODE_SQL}) i JOIN ({NODE_TYPE_SQL}) t ON t.bundle_id = i.bundle_id
"""


def check(ctx: Context) -> Iterable[Finding]:
    k = ctx.threshold(RULE, "k_mad")
    for o in find(ctx, RULE, _SQL, "high"):
        value = round(float(o.row["value"]), 2)
        params = {"metric": "iowait", "value": value, "unit": "%", "reports": o.row["reports"], "k_mad": k}
        params.update(o.band.as_params())
        yield RULE.finding(
            node=o.row["node"],
            message=(
                f"{o.row['node']} iowait {value:g} % (mean of {o.row['reports']} reports) is above its peers' "
                f"band {params['band_low']:g}..{params['band_high']:g} % (median {params['peer_median']:g} "
                f"+/- max({k:g} x MAD {params['peer_mad']:g}, floor), {o.band.nodes} {o.band.group} nodes)"
            ),
            params=params,
            evidence=[ctx.evidence(o.row["source_file"], o.row["line"])],
            bundle_id=o.row["bundle_id"],
            key=("iowait",),
        )
