"""/dev/shm too small for NCCL, or not a tmpfs.

Why it matters: NCCL's shared-memory transport and DataLoader workers live in /dev/shm; the
Kubernetes default of 64 MiB gives 'Bus error' and 'failed to extend /dev/shm' (the NCCL diagnose
script: < 1 GB fail, < 4 GB warn; the mfu-debugger network guide wants >= 16 GB).  A /dev/shm that is not
tmpfs is memory-backed by nothing (warning).  Read from the shm probe, else from df for nodes without it.
False positives: none for training nodes; a controller node does not need a large /dev/shm.
Reference: docs/sources.md#local-storage.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="fs.shm.small",
    cause_kind="setting",
    setting_keys=("size_gib", "fstype"),
    node_local=True,
    title="/dev/shm too small or not tmpfs",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("shm.size_bytes", "filesystem_usage.size_bytes"),
    passed="/dev/shm is tmpfs and large enough",
    route=Route(
        "nccl-network",
        "hyperpod-nccl debugging-guide § 17; hyperpod-node-debugger § I",
        "mount /dev/shm as tmpfs of >= 16 GiB (pods: emptyDir medium Memory, sizeLimit 10Gi or more)",
    ),
    severity_reason=(
        "Critical below 1 GiB, where NCCL's shared-memory transport and DataLoader workers fail with 'Bus "
        "error'; warning below 4 GiB or when /dev/shm is not tmpfs. Source: HyperPod NCCL diagnose script "
        "(awslabs/agent-plugins: below 1 GB fails, below 4 GB warns); its mfu-debugger network guide asks "
        "for 16 GB or more."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    crit = ctx.threshold(RULE, "critical_gib")
    warn = ctx.threshold(RULE, "warning_gib")
    rows = ctx.rows(
        """
        SELECT bundle_id, node, device, fstype, size_bytes, source_file, line FROM shm WHERE size_bytes IS NOT NULL
        UNION ALL
        SELECT bundle_id, node, device, fstype, size_bytes, source_file, line FROM filesystem_usage f
        WHERE mountpoint = '/dev/shm' AND size_bytes IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM shm s WHERE s.bundle_id = f.bundle_id AND s.size_bytes IS NOT NULL)
        ORDER BY node
        """
    )
    seen: set[str] = set()
    for r in rows:
        if r["bundle_id"] in seen:
            continue
        seen.add(r["bundle_id"])
        size_gib = round(r["size_bytes"] / 2**30, 3)
        not_tmpfs = r["fstype"] is not None and r["fstype"] != "tmpfs"
        if size_gib < crit:
            severity, why = Severity.CRITICAL, f"below {crit:g} GiB (NCCL needs at least that)"
        elif size_gib < warn:
            severity, why = Severity.WARNING, f"below {warn:g} GiB"
        elif not_tmpfs:
            severity, why = Severity.WARNING, "large enough"
        else:
            continue
        kind = f"; it is {r['fstype']}, not tmpfs" if not_tmpfs else ""
        yield RULE.finding(
            severity=severity,
            node=r["node"],
            message=f"{r['node']} /dev/shm is {size_gib:g} GiB, {why}{kind}",
            params={"size_gib": size_gib, "fstype": r["fstype"], "critical_gib": crit, "warning_gib": warn},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
