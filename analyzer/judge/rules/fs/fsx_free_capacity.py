"""FSx for Lustre free data storage capacity low.

Why it matters: low FreeDataStorageCapacity throttles writes and fails checkpoints (performance-debugger
details guide).  The
sources give no number; the line is ours (``free_warning_gib``), and the Minimum statistic is used.
The throughput metrics (DataReadBytes/DataWriteBytes) are not judged here: the provisioned ceiling
(capacity x per-unit throughput) is not in a bundle.
A ``get-metric-data`` export that names no statistic is judged when a value reaches 1 MiB (see
:func:`usable`): a SampleCount (how many disks reported) never does, and of the other statistics a
low Sum (the whole file system) means the Minimum is lower still, while Average and Maximum are
read as the rule already reads them when Minimum is missing.  The finding says the statistic was
unknown.
False positives: a file system sized close to its data on purpose (a read-only dataset).
Reference: docs/sources.md#fsx-ebs-metrics.
Scope: shared: the cause is the file system, whichever nodes feel it; no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import (
    Series,
    examined_nothing,
    fsx_free_capacity_series,
    unknown_statistic_note,
)

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
    severity_reason=(
        "Low free capacity throttles writes and will fail checkpoints, so grow or clean the file system "
        "soon. Source: HyperPod performance-debugger skill (awslabs/agent-plugins); ours: the 100 GiB line, "
        "since no source gives a number."
    ),
)

#: Why a series of no named statistic can be judged (the finding's statistic_note).
UNKNOWN_STATISTIC = "a value reaches 1 MiB, which no SampleCount does"


def usable(s: Series) -> bool:
    """The series can be judged: a named statistic, or none and a value of at least 1 MiB (bytes)."""
    return s.statistic is not None or s.peak >= 2**20


def check(ctx: Context) -> Iterable[Finding]:
    line_gib = ctx.threshold(RULE, "free_warning_gib")
    found = fsx_free_capacity_series(ctx)
    judged = [s for s in found if usable(s)]
    if not judged:
        examined_nothing(
            f"no FreeDataStorageCapacity series that can be judged ({', '.join(s.label for s in found)}: no"
            " statistic named and every value under 1 MiB, as a SampleCount)"
            if found
            else "no FSx FreeDataStorageCapacity series in the CloudWatch exports"
        )
    for s in judged:
        low = min(s.points, key=lambda p: p[1])
        free_gib = round(low[1] / 2**30, 1)
        if free_gib >= line_gib:
            continue
        note = unknown_statistic_note(s, UNKNOWN_STATISTIC)
        yield RULE.finding(
            node=None,
            message=(
                f"{s.dimension_value} free data storage fell to {free_gib:g} GiB at {low[0].isoformat()} "
                f"(line {line_gib:g} GiB)" + (f" ({note['statistic_note']})" if note else "")
            ),
            params={
                "file_system": s.dimension_value,
                "free_gib": free_gib,
                "line_gib": line_gib,
                "statistic": s.statistic,
                **note,
            },
            evidence=[ctx.evidence(low[2], low[3])],
            bundle_id=s.bundle_id,
            key=(s.dimension_value,),
        )
