"""Xid events in the kernel log, one finding per node, GPU and Xid code (a burst is one finding).

Why it matters: an Xid is the NVIDIA driver reporting a GPU error; hardware-class Xids (48, 62, 64, 74,
79, 95, ...) mean the node must be drained.  False positives: application-class Xids (13, 31, 43, 45)
usually come from the job's own code; they are reported as info unless they repeat.
Reference: NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity
from analyzer.rules.gpu._gpus import GPU_BY_PCI
from analyzer.xid_catalog import xid_entry

RULE = RuleInfo(
    id="gpu.xid",
    title="Xid errors in the kernel log",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    route=Route("node-hardware", "hyperpod-node-debugger § G", "drain and replace"),
    docs="docs/rules.md#gpuxid",
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        WITH g AS ({GPU_BY_PCI})
        SELECT e.bundle_id, e.node, e.pci, e.xid, g.gpu,
               count(*) AS n, min(e.line) AS first_line, max(e.line) AS last_line,
               min(coalesce(strftime(e.ts, '%Y-%m-%dT%H:%M:%S'), e.ts_raw)) AS first_seen,
               max(coalesce(strftime(e.ts, '%Y-%m-%dT%H:%M:%S'), e.ts_raw)) AS last_seen,
               any_value(e.source_file) AS source_file,
               list(DISTINCT e.caused_by_xid) FILTER (WHERE e.caused_by_xid IS NOT NULL) AS causes
        FROM kernel_event e LEFT JOIN g ON g.bundle_id = e.bundle_id AND g.pci = e.pci
        WHERE e.event_type IN ('xid', 'fallen_off_bus')
        GROUP BY ALL ORDER BY e.node, e.pci, e.xid
        """
    )
    repeat = ctx.threshold(RULE, "repeat_escalation")
    for r in rows:
        entry = xid_entry(r["xid"])
        severity = entry.severity
        if severity == Severity.INFO and r["n"] >= repeat:
            severity = Severity.WARNING  # an app-class Xid that keeps recurring on one node
        gpu_label = f"GPU {r['gpu']}" if r["gpu"] is not None else "a GPU"
        times = (
            r["first_seen"] if r["first_seen"] == r["last_seen"] else f"{r['first_seen']} .. {r['last_seen']}"
        )
        message = (
            f"{r['node']} {gpu_label} ({r['pci'] or 'PCI unknown'}) logged Xid {r['xid']} "
            f"({entry.meaning}) {r['n']}x" + (f" at {times}" if times else "")
        )
        evidence = [ctx.evidence(r["source_file"], r["first_line"])]
        if r["last_line"] != r["first_line"]:
            evidence.append(ctx.evidence(r["source_file"], r["last_line"]))
        yield Finding(
            rule=RULE.id,
            rule_version=RULE.version,
            severity=severity,
            node=r["node"],
            gpu=r["gpu"],
            message=message,
            params={
                "xid": r["xid"],
                "pci": r["pci"],
                "count": r["n"],
                "first_seen": r["first_seen"],
                "last_seen": r["last_seen"],
                "class": entry.cause_class,
                "caused_by_xid": sorted(r["causes"] or []),
            },
            route=Route(RULE.route.owner, RULE.route.target, entry.action),
            evidence=evidence,
            bundle_id=r["bundle_id"],
            key=(r["xid"], r["pci"]),
        )
