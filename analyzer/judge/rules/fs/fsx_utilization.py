"""FSx utilisation metrics at or above 80 % for a sustained stretch of the exported window.

Why it matters: the AWS/FSx percentage metrics (DiskIopsUtilization on Lustre; FileServerDisk*,
NetworkThroughputUtilization and CPUUtilization on OpenZFS) say how much of the provisioned limit is in
use; at >= 80 % the file system is the bottleneck (the performance-debugger snapshot script marks
FileServerDiskIopsUtilization >= 80 % "BAD"; the other metrics reuse the line).  The finding says how many
minutes of the window were at/above the line and the longest unbroken run; a run of ``warning_minutes`` is a
warning, ``critical_minutes`` critical.  Maximum is used when the export has it, else Average.  A
``get-metric-data`` export that names no statistic is judged too (see :func:`usable`): every statistic of a
percentage but Sum and SampleCount (Minimum, Average, percentiles) is at most the Maximum, so a run at/above
the line is one of the Maximum as well; a value above 100 % shows a Sum or a SampleCount, and such a series is
not judged.  The finding says the statistic was unknown.
False positives: a short burst (a checkpoint) crossing the line once stays below ``warning_minutes``.
Reference: docs/sources.md#fsx-ebs-metrics; hyperpod-performance-debugger § B.
Scope: shared: the cause is the file system, whichever nodes feel it; no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import (
    Series,
    examined_nothing,
    fsx_utilization_series,
    run_evidence,
    run_over,
    unknown_statistic_note,
)

RULE = RuleInfo(
    id="fs.fsx.utilization_sustained",
    title="FSx utilisation >= {utilization_pct} % sustained",
    severity=Severity.CRITICAL,
    requires=("cw_metric",),
    passed="FSx utilisation never held at or above the line",
    scope="shared",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B",
        "scale the file system: grow storage capacity or raise per-unit throughput / provisioned IOPS",
    ),
    severity_reason=(
        "Critical when FSx utilisation holds at or above 80 % for 15 minutes, the file system then being the "
        "bottleneck of every node that reads it; warning from 5 minutes. Source: HyperPod "
        "performance-debugger snapshot script (awslabs/agent-plugins: 80 % or more is BAD); ours: the 5 and "
        "15 minute durations."
    ),
)

#: Why a series of no named statistic can be judged (the finding's statistic_note).
UNKNOWN_STATISTIC = "every value lies within 0..100 %, so it is no Sum or SampleCount and at most the Maximum"


def usable(s: Series) -> bool:
    """The series can be judged: a named statistic, or none and every value a percentage (0..100)."""
    return s.statistic is not None or all(0.0 <= p[1] <= 100.0 for p in s.points)


def check(ctx: Context) -> Iterable[Finding]:
    line = ctx.threshold(RULE, "utilization_pct")
    warn_min = ctx.threshold(RULE, "warning_minutes")
    crit_min = ctx.threshold(RULE, "critical_minutes")
    found = fsx_utilization_series(ctx)
    judged = [s for s in found if usable(s)]
    if not judged:
        unread = ", ".join(s.label for s in found)
        examined_nothing(
            f"no FSx utilisation series that can be judged in the CloudWatch exports ({unread}: no statistic"
            " named and values above 100 %)"
            if found
            else "no FSx utilisation series in the CloudWatch exports"
        )
    for s in judged:
        run = run_over(s, line)
        if run.longest_minutes < warn_min:
            continue
        severity = Severity.CRITICAL if run.longest_minutes >= crit_min else Severity.WARNING
        p = run.as_params()
        note = unknown_statistic_note(s, UNKNOWN_STATISTIC)
        yield RULE.finding(
            severity=severity,
            node=None,
            message=(
                f"{s.label} was at/above {line:g} % for {p['minutes_over']:g} of {p['window_minutes']:g} minutes; "
                f"longest run {p['longest_minutes']:g} minutes ({p['longest_start']} .. {p['longest_end']}), "
                f"peak {p['peak']:g} %" + (f" ({note['statistic_note']})" if note else "")
            ),
            params={
                "file_system": s.dimension_value,
                "metric": s.metric,
                "statistic": s.statistic,
                "period_s": s.period_s,
                "line_pct": line,
                **p,
                **note,
            },
            evidence=run_evidence(ctx, run),
            bundle_id=s.bundle_id,
            key=(s.dimension_value, s.metric),
        )
