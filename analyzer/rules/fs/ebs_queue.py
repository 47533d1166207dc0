"""EBS VolumeQueueLength above 1 for a sustained stretch.

Why it matters: a queue that stays above one outstanding I/O means the volume is the bottleneck
(PD-DET); gp3 IOPS and throughput are fixed at creation and never scale on their own.  The finding
says how long the queue stayed above the line and the longest run; Average is used when exported.
False positives: a short burst at boot or at a checkpoint stays below ``warning_minutes``.
Reference: rules-facts § 1.7 EBS-QUEUE, § 4 EBS.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity
from analyzer.signals.fs import ebs_queue_series, run_evidence, run_over

RULE = RuleInfo(
    id="fs.ebs.queue_sustained",
    title="EBS volume queue length above 1 sustained",
    severity=Severity.WARNING,
    requires=("cw_metric",),
    passed="EBS queue length never held above 1",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B; hyperpod-node-debugger § I",
        "raise the volume's provisioned IOPS/throughput (gp3) or move to io2; keep hot data on NVMe",
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    line = ctx.threshold(RULE, "queue_length")
    warn_min = ctx.threshold(RULE, "warning_minutes")
    for s in ebs_queue_series(ctx):
        run = run_over(s, line, strict=True)
        if run.longest_minutes < warn_min:
            continue
        p = run.as_params()
        yield RULE.finding(
            node=None,
            message=(
                f"{s.label} was above {line:g} for {p['minutes_over']:g} of {p['window_minutes']:g} minutes; "
                f"longest run {p['longest_minutes']:g} minutes, peak {p['peak']:g}"
            ),
            params={
                "volume": s.dimension_value,
                "statistic": s.statistic,
                "period_s": s.period_s,
                "line": line,
                **p,
            },
            evidence=run_evidence(ctx, run),
            bundle_id=s.bundle_id,
            key=(s.dimension_value,),
        )
