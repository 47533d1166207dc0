"""The instance-store NVMe is not mounted at /opt/dlami/nvme on an instance type that has it.

Why it matters: p4d/p4de/p5/p5e/p5en/p6 nodes carry 8 NVMe drives (8-30 TB) meant for datasets,
caches and checkpoints; unmounted, that I/O lands on the 100 GB root volume or the shared file system
(node-debugger triage script, P1; docs/sources.md#local-storage).  Judged only on nodes whose mount
table or df output was collected, so an absent probe is never read as "not mounted".
False positives: a site that mounts the NVMe RAID elsewhere; set ``mountpoints`` in a site config.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="fs.nvme.not_mounted",
    cause_kind="setting",
    setting_keys=("instance_type", "lies_on"),
    node_local=True,
    title="Instance-store NVMe not mounted",
    severity=Severity.WARNING,
    requires=("node.instance_type",),
    requires_any=("mount.mountpoint", "filesystem_usage.mountpoint"),
    passed="instance-store NVMe mounted where the type has it",
    route=Route(
        "filesystem-capacity",
        "hyperpod-node-debugger § I",
        "mount the instance-store NVMe (lifecycle script) and point caches and checkpoints at it",
    ),
    severity_reason=(
        "Instance-store NVMe left unmounted pushes datasets, caches and checkpoints onto the 100 GB root "
        "volume or the shared file system; mount it before they fill. Source: HyperPod node-debugger triage "
        "script (awslabs/agent-plugins, P1)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    prefixes = tuple(ctx.threshold(RULE, "instance_prefixes"))
    mountpoints = list(ctx.threshold(RULE, "mountpoints"))
    rows = ctx.rows(
        """
        WITH seen AS (
            SELECT bundle_id, mountpoint, source_file, line, 0 AS pref FROM mount
            UNION ALL SELECT bundle_id, mountpoint, source_file, line, 1 FROM filesystem_usage
        )
        SELECT n.bundle_id, n.node, n.instance_type,
               bool_or(list_contains(?, s.mountpoint)) AS mounted,
               list({'mountpoint': s.mountpoint, 'file': s.source_file, 'line': s.line}
                    ORDER BY s.pref, s.source_file, s.line) AS seen
        FROM node n JOIN seen s ON s.bundle_id = n.bundle_id
        GROUP BY ALL ORDER BY n.node
        """,
        mountpoints,
    )
    for r in rows:
        itype = r["instance_type"] or ""
        if r["mounted"] or not itype.startswith(prefixes):
            continue
        holder = _holder(r["seen"], mountpoints[0]) if mountpoints else None
        where = f"; {mountpoints[0]} is on the {holder['mountpoint']} file system" if holder else ""
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']} ({itype}) has no file system mounted at {' or '.join(mountpoints)}{where}",
            params={
                "instance_type": itype,
                "mountpoints": mountpoints,
                "lies_on": holder["mountpoint"] if holder else None,
            },
            evidence=[
                ctx.evidence(holder["file"], holder["line"])
                if holder
                else ctx.evidence(r["seen"][0]["file"], None)
            ],
            bundle_id=r["bundle_id"],
        )


def _holder(seen: list[dict[str, Any]], path: str) -> dict[str, Any] | None:
    """The mount that holds ``path`` (the longest mount point above it, ``/`` at worst): the line that
    shows where the NVMe path's I/O goes instead; None when no mount point of the list is above it.

    >>> seen = [{"mountpoint": "/", "line": 2}, {"mountpoint": "/opt/sagemaker", "line": 9}]
    >>> _holder(seen, "/opt/dlami/nvme")["line"], _holder(seen, "/opt/sagemaker/x")["line"]
    (2, 9)
    """
    above = [
        s
        for s in seen
        if s["mountpoint"]
        and s["line"] is not None
        and (
            s["mountpoint"] == "/"
            or path == s["mountpoint"]
            or path.startswith(s["mountpoint"].rstrip("/") + "/")
        )
    ]
    return max(above, key=lambda s: len(s["mountpoint"])) if above else None
