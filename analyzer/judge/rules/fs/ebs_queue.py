"""EBS VolumeQueueLength above 1 for a sustained stretch.

Why it matters: a queue that stays above one outstanding I/O means the volume is the bottleneck
(performance-debugger details guide); gp3 IOPS and throughput are fixed at creation and never scale on their
own.  The finding says how long the queue stayed above the line and the longest run; Average is used when
exported.  A ``get-metric-data`` export that names no statistic is judged only at a period of 60 s or less
(see :func:`usable`): EBS publishes one VolumeQueueLength datapoint a minute, so there Sum, Average, Minimum
and Maximum are that datapoint and SampleCount is 1, never above a line of 1 or more.  At a longer period a
Sum or a SampleCount would pass the line by itself, and the series is not judged.
False positives: a short burst at boot or at a checkpoint stays below ``warning_minutes``.
Reference: docs/sources.md#fsx-ebs-metrics.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import (
    Series,
    ebs_queue_series,
    examined_nothing,
    run_evidence,
    run_over,
    unknown_statistic_note,
)

RULE = RuleInfo(
    id="fs.ebs.queue_sustained",
    title="EBS volume queue length above {queue_length} sustained",
    severity=Severity.WARNING,
    requires=("cw_metric",),
    passed="EBS queue length never held above {queue_length}",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B; hyperpod-node-debugger § I",
        "raise the volume's provisioned IOPS/throughput (gp3) or move to io2; keep hot data on NVMe",
    ),
    severity_reason=(
        "A queue above one outstanding I/O for minutes means the volume is the bottleneck: jobs slow down "
        "but do not fail. Source: HyperPod performance-debugger skill (awslabs/agent-plugins: "
        "VolumeQueueLength sustained above 1) and Amazon EBS CloudWatch metrics documentation."
    ),
)

#: Why a series of no named statistic can be judged (the finding's statistic_note).
UNKNOWN_STATISTIC = (
    "its period is at most 60 s: one datapoint a period, every statistic is that datapoint, SampleCount 1"
)


def usable(s: Series, line: float) -> bool:
    """The series can be judged: a named statistic, or none at a known period of 60 s or less against a
    line of 1 or more."""
    return s.statistic is not None or (s.period_known and s.period_s <= 60 and line >= 1)


def check(ctx: Context) -> Iterable[Finding]:
    line = ctx.threshold(RULE, "queue_length")
    warn_min = ctx.threshold(RULE, "warning_minutes")
    found = ebs_queue_series(ctx)
    judged = [s for s in found if usable(s, line)]
    if not judged:
        examined_nothing(
            f"no VolumeQueueLength series that can be judged ({', '.join(s.label for s in found)}: no"
            " statistic named, at a period over 60 s or unknown)"
            if found
            else "no EBS VolumeQueueLength series in the CloudWatch exports"
        )
    for s in judged:
        run = run_over(s, line, strict=True)
        if run.longest_minutes < warn_min:
            continue
        p = run.as_params()
        note = unknown_statistic_note(s, UNKNOWN_STATISTIC)
        yield RULE.finding(
            node=None,
            message=(
                f"{s.label} was above {line:g} for {p['minutes_over']:g} of {p['window_minutes']:g} minutes; "
                f"longest run {p['longest_minutes']:g} minutes, peak {p['peak']:g}"
                + (f" ({note['statistic_note']})" if note else "")
            ),
            params={
                "volume": s.dimension_value,
                "statistic": s.statistic,
                "period_s": s.period_s,
                "line": line,
                **p,
                **note,
            },
            evidence=run_evidence(ctx, run),
            bundle_id=s.bundle_id,
            key=(s.dimension_value,),
        )
