"""EFA devices are present on a node but the efa kernel module was not found.

Why it matters: without the efa module libfabric has no EFA provider and NCCL falls back to TCP
sockets (10-100x slower) or fails at init (NCCL diagnose script).  Devices are "present" when the node lists
an EFA RDMA port (efa_port, devices named as in ``efa_device_prefixes``) or libfabric reports provider efa
(fi_provider); the module is "not found" when the versions capture says so
(``modinfo: ERROR: Module efa not found``, or ``/sys/module/efa/version``: No such file).
False positives: the captures may come from different moments (module unloaded during a driver
update).  A version of the module read from sysfs, modinfo or the collector in the same bundle
means the module is there, and no finding is made.
Reference: docs/sources.md#efa-devices.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="net.efa.module_missing",
    node_local=True,
    title="EFA devices present but the efa kernel module not found",
    severity=Severity.CRITICAL,
    requires=("software_version",),
    requires_any=("efa_port", "fi_provider"),
    passed="efa kernel module found wherever EFA devices are",
    route=Route(
        "nccl-network",
        "hyperpod-node-debugger § A; hyperpod-nccl debugging-guide § 6",
        "load the efa module (modprobe efa) or reinstall the EFA installer for the running kernel",
    ),
    severity_reason=(
        "Without the efa kernel module libfabric has no EFA provider and NCCL falls back to TCP sockets or "
        "fails at init, so no multi-node job runs at speed. Source: AWS EFA documentation (the EFA installer "
        "provides the kernel module) and HyperPod NCCL diagnose script (awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    prefixes = [str(p) for p in ctx.threshold(RULE, "efa_device_prefixes")]
    like = " OR ".join("lower(device) LIKE ?" for _ in prefixes) or "FALSE"
    rows = ctx.rows(
        f"""
        WITH missing AS (
            SELECT bundle_id, node, arg_min(source_file, line) AS f, min(line) AS l FROM software_version
            WHERE component = 'efa_module' AND version IS NULL AND detail = 'not found'
            GROUP BY ALL
        ), present AS (
            SELECT DISTINCT bundle_id FROM software_version
            WHERE component = 'efa_module' AND version IS NOT NULL
              AND source IN ('sysfs', 'modinfo', 'collector')
        ), devices AS (
            SELECT bundle_id, 'efa_port' AS src, device, source_file, line FROM efa_port WHERE {like}
            UNION ALL
            SELECT bundle_id, 'fi_provider', coalesce(device, domain), source_file, line FROM fi_provider
            WHERE lower(provider) = 'efa'
        )
        SELECT m.bundle_id, m.node, m.f, m.l,
               list(DISTINCT d.device ORDER BY d.device) AS devices,
               list(DISTINCT d.src ORDER BY d.src) AS seen_in,
               arg_min(d.source_file, d.line) AS df, min(d.line) AS dl
        FROM missing m JOIN devices d USING (bundle_id)
        WHERE m.bundle_id NOT IN (SELECT bundle_id FROM present)
        GROUP BY ALL ORDER BY m.node
        """,
        *[f"{p.lower()}%" for p in prefixes],
    )
    for r in rows:
        devices = [d for d in r["devices"] if d]
        shown = ", ".join(devices[:8]) + (f" and {len(devices) - 8} more" if len(devices) > 8 else "")
        yield RULE.finding(
            node=r["node"],
            message=(
                f"{r['node']} has EFA devices ({shown or 'unnamed'}; from {', '.join(r['seen_in'])}) "
                f"but the efa kernel module was not found"
            ),
            params={"devices": devices, "device_count": len(devices), "seen_in": list(r["seen_in"])},
            evidence=[ctx.evidence(r["f"], r["l"]), ctx.evidence(r["df"], r["dl"])],
            bundle_id=r["bundle_id"],
        )
