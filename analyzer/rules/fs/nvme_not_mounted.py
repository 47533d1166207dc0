"""The instance-store NVMe is not mounted at /opt/dlami/nvme on an instance type that has it.

Why it matters: p4d/p4de/p5/p5e/p5en/p6 nodes carry 8 NVMe drives (8-30 TB) meant for datasets,
caches and checkpoints; unmounted, that I/O lands on the 100 GB root volume or the shared file system
(rules-facts NVME-NOT-MOUNTED: ND-TRIAGE, P1; § 6 storage limits).  Judged only on nodes whose mount
table or df output was collected, so an absent probe is never read as "not mounted".
False positives: a site that mounts the NVMe RAID elsewhere; set ``mountpoints`` in a site config.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="fs.nvme.not_mounted",
    title="Instance-store NVMe not mounted",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("mount", "filesystem_usage"),
    route=Route(
        "filesystem-capacity",
        "hyperpod-node-debugger § I",
        "mount the instance-store NVMe (lifecycle script) and point caches and checkpoints at it",
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    prefixes = tuple(ctx.threshold(RULE, "instance_prefixes"))
    mountpoints = list(ctx.threshold(RULE, "mountpoints"))
    rows = ctx.rows(
        """
        WITH seen AS (
            SELECT bundle_id, mountpoint, source_file, line FROM mount
            UNION ALL SELECT bundle_id, mountpoint, source_file, line FROM filesystem_usage
        )
        SELECT n.bundle_id, n.node, n.instance_type,
               bool_or(list_contains(?, s.mountpoint)) AS mounted,
               min(s.source_file) AS source_file
        FROM node n JOIN seen s ON s.bundle_id = n.bundle_id
        GROUP BY ALL ORDER BY n.node
        """,
        mountpoints,
    )
    for r in rows:
        itype = r["instance_type"] or ""
        if r["mounted"] or not itype.startswith(prefixes):
            continue
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']} ({itype}) has no file system mounted at {' or '.join(mountpoints)}",
            params={"instance_type": itype, "mountpoints": mountpoints},
            evidence=[ctx.evidence(r["source_file"], None)],
            bundle_id=r["bundle_id"],
        )
