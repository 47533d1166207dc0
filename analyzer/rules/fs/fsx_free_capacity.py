"""FSx for Lustre free data storage capacity low.

Why it matters: low FreeDataStorageCapacity throttles writes and fails checkpoints (PD-DET).  The
sources give no number; the line is ours (``free_warning_gib``), and the Minimum statistic is used.
The throughput metrics (DataReadBytes/DataWriteBytes) are not judged here: the provisioned ceiling
(capacity x per-unit throughput) is not in a bundle.
False positives: a file system sized close to its data on purpose (a read-only dataset).
Reference: rules-facts § 1.7 FSX-LUSTRE-FREE, § 4.
Scope: shared: the cause is the file system, whichever nodes feel it; no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity
from analyzer.signals.fs import fsx_free_capacity_series

RULE = RuleInfo(
    id="fs.fsx.free_capacity_low",
    title="FSx free storage capacity low",
    severity=Severity.WARNING,
    requires=("cw_metric",),
    passed="FSx free storage above the warning line",
    scope="shared",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B",
        "grow the file system's storage capacity or clean up old checkpoints",
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    line_gib = ctx.threshold(RULE, "free_warning_gib")
    for s in fsx_free_capacity_series(ctx):
        low = min(s.points, key=lambda p: p[1])
        free_gib = round(low[1] / 2**30, 1)
        if free_gib >= line_gib:
            continue
        yield RULE.finding(
            node=None,
            message=f"{s.dimension_value} free data storage fell to {free_gib:g} GiB at {low[0].isoformat()} (line {line_gib:g} GiB)",
            params={
                "file_system": s.dimension_value,
                "free_gib": free_gib,
                "line_gib": line_gib,
                "statistic": s.statistic,
            },
            evidence=[ctx.evidence(low[2], low[3])],
            bundle_id=s.bundle_id,
            key=(s.dimension_value,),
        )
