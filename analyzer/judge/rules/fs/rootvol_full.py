"""The root file system ("/") is filling up.

Why it matters: the HyperPod root volume is a fixed 100 GB EBS volume; when it fills, container
images, logs and /tmp writes fail (node-debugger triage script: > 80 % P1, > 90 % P0; node-debugger
diagnostics guide § I.2).  Do not plan to grow it: move data to /opt/sagemaker or /opt/dlami/nvme.
False positives: inside a container "/" is the overlay of the node's container storage, which is
still worth freeing.
Reference: docs/sources.md#local-storage.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="fs.rootvol.full",
    node_local=True,
    title="Root volume above {warning_pct} % used",
    severity=Severity.CRITICAL,
    requires=("filesystem_usage.use_pct",),
    passed="root volume below the warning line",
    route=Route(
        "filesystem-capacity",
        "hyperpod-node-debugger § I.2",
        "free space on /: move data, checkpoints and caches to /opt/sagemaker or /opt/dlami/nvme",
    ),
    severity_reason=(
        "Critical above 90 % used, when the fixed 100 GB root volume is about to stop container images, logs "
        "and /tmp writes; warning above 80 %. Source: HyperPod node-debugger skill and triage script "
        "(awslabs/agent-plugins: above 90 % P0, above 80 % P1)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    warn = ctx.threshold(RULE, "warning_pct")
    crit = ctx.threshold(RULE, "critical_pct")
    rows = ctx.rows(
        """
        SELECT bundle_id, node, device, use_pct, size_bytes, avail_bytes, source_file, line
        FROM filesystem_usage WHERE mountpoint = '/' AND use_pct > ?
        QUALIFY row_number() OVER (PARTITION BY bundle_id ORDER BY use_pct DESC) = 1
        ORDER BY node
        """,
        warn,
    )
    for r in rows:
        severity = Severity.CRITICAL if r["use_pct"] > crit else Severity.WARNING
        avail_gib = round((r["avail_bytes"] or 0) / 2**30, 1)
        yield RULE.finding(
            severity=severity,
            node=r["node"],
            message=f"{r['node']} root volume / ({r['device']}) is {r['use_pct']:g} % used, {avail_gib:g} GiB free",
            params={
                "use_pct": r["use_pct"],
                "avail_gib": avail_gib,
                "device": r["device"],
                "warning_pct": warn,
                "critical_pct": crit,
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
