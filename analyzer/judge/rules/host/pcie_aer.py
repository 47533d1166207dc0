"""PCIe Advanced Error Reporting (AER) errors in the kernel log.

Why it matters: an uncorrected PCIe error on a GPU, NIC or bridge means a transaction was lost; the
device may reset or fall off the bus (Linux kernel PCIe AER guide; PCIe quality in the mfu-debugger failure
patterns; docs/sources.md#pcie).  Uncorrected (fatal or non-fatal) -> critical.  Corrected errors are retried
by the link itself; only many of them on one device are reported, as info (a marginal link).  One finding per
node and device; a device that is a GPU is named by its index.
False positives: a few corrected errors after boot or a hot-plug are normal.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import GPU_BY_PCI
from analyzer.judge.signals.kernel_time import KernelClock, stamp_sql

RULE = RuleInfo(
    id="host.pcie.aer",
    node_local=True,
    title="PCIe AER errors",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    passed="no uncorrected PCIe AER error in the kernel log",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain; reseat or replace the device"),
    severity_reason=(
        "Critical for an uncorrected AER error: a transaction to a GPU, NIC or bridge was lost and the "
        "device may reset or fall off the bus, so drain; corrected errors were retried by the link and only "
        "many on one device are reported, as info. Source: Linux kernel PCIe AER driver guide (correctable, "
        "non-fatal and fatal errors); ours: the count of 10 corrected errors."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    many = ctx.threshold(RULE, "corrected_info_count")
    rows = ctx.rows(
        f"""
        WITH g AS ({GPU_BY_PCI})
        SELECT e.bundle_id, e.node, e.pci, any_value(g.gpu) AS gpu, any_value(e.source_file) AS source_file,
               count(*) FILTER (WHERE e.severity ILIKE '%uncorrect%') AS uncorrected,
               count(*) FILTER (WHERE e.severity ILIKE 'corrected%') AS corrected,
               min(e.line) FILTER (WHERE e.severity ILIKE '%uncorrect%') AS unc_line,
               arg_min({stamp_sql("e")}, e.line) FILTER (WHERE e.severity ILIKE '%uncorrect%') AS unc_stamp,
               min(e.line) AS first_line, arg_min({stamp_sql("e")}, e.line) AS first_stamp,
               list(DISTINCT e.severity) AS severities
        FROM kernel_event e LEFT JOIN g ON g.bundle_id = e.bundle_id AND g.pci = e.pci
        WHERE e.event_type = 'pcie_aer'
        GROUP BY e.bundle_id, e.node, e.pci ORDER BY e.node, e.pci
        """
    )
    clock = KernelClock.load(ctx)
    for r in rows:
        if r["uncorrected"]:
            severity, line, stamp = Severity.CRITICAL, r["unc_line"], r["unc_stamp"]
        elif r["corrected"] >= many:
            severity, line, stamp = Severity.INFO, r["first_line"], r["first_stamp"]
        else:
            continue
        at = clock.at(r["bundle_id"], stamp)  # the time of the cited line
        device = f"GPU {r['gpu']} ({r['pci']})" if r["gpu"] is not None else f"device {r['pci']}"
        route = (
            RULE.route
            if severity == Severity.CRITICAL
            else Route("node-hardware", "hyperpod-node-debugger § G", "watch the link; reseat if errors grow")
        )
        yield RULE.finding(
            severity=severity,
            node=r["node"],
            gpu=r["gpu"],
            message=(
                f"{r['node']} {device}: {r['uncorrected']} uncorrected and {r['corrected']} corrected PCIe AER "
                f"error(s)"
                + ("" if r["uncorrected"] else f" (info from {many} corrected)")
                + (f"; first {'uncorrected ' if r['uncorrected'] else ''}at {at.shown}" if at.shown else "")
            ),
            params={
                "pci": r["pci"],
                "uncorrected": r["uncorrected"],
                "corrected": r["corrected"],
                "severities": sorted(s for s in r["severities"] if s),
                "corrected_info_count": many,
                **at.params(),
            },
            route=route,
            evidence=[ctx.evidence(r["source_file"], line)],
            bundle_id=r["bundle_id"],
            key=(r["pci"],),
        )
