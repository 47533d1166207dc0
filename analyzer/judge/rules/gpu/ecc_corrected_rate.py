"""Corrected (single-bit) ECC errors per day of uptime: a GPU whose memory is wearing out.

Why it matters: corrected errors cost nothing by themselves, but a high rate precedes uncorrectable
errors and row-remap exhaustion (docs/sources.md#gpu-memory-errors).  The rate is the volatile corrected
count divided by host uptime in days (as the performance-debugger snapshot script computes it; the
volatile counter resets with the driver, so the rate is a lower bound).  Performance-debugger details
guide and snapshot script: 100-1,000/day = watch (warning), > 1,000/day = pre-failure (critical).  The
node-debugger skill, issue catalog and diagnostics guide drain at > 100/day
(docs/sources.md#where-sources-disagree): set
``critical_per_day = 100`` in a site override to follow them.  Below one day of uptime the rate is
not judged; a node with corrected errors gets one info finding that says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import gpu_states

RULE = RuleInfo(
    id="gpu.ecc.corrected_rate",
    node_local=True,
    title="Corrected ECC error rate",
    severity=Severity.CRITICAL,
    requires=("host_uptime.uptime_s",),
    requires_any=("gpu.ecc_corrected_volatile", "gpu_query.ecc_corrected_volatile"),
    passed="corrected-ECC rate per day below the watch line",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § G", "watch the rate; drain and replace when it climbs"
    ),
    severity_reason=(
        "Corrected errors cost nothing yet, but above 1,000 a day of uptime they precede uncorrectable "
        "errors (critical: plan the replacement), from 100 a day they are worth watching (warning), and "
        "under a day of uptime the rate is not judged (info). Source: HyperPod performance-debugger skill "
        "(awslabs/agent-plugins); its node-debugger skill drains at 100 a day, which a site override can "
        "follow."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    warn, crit = ctx.threshold(RULE, "warning_per_day"), ctx.threshold(RULE, "critical_per_day")
    min_days = ctx.threshold(RULE, "min_uptime_days")
    uptime = {
        (r["bundle_id"], r["node"]): r
        for r in ctx.rows(
            """SELECT bundle_id, node, arg_max(uptime_s, line) AS uptime_s, arg_max(line, line) AS line,
                      any_value(source_file) AS source_file
               FROM host_uptime WHERE uptime_s IS NOT NULL GROUP BY bundle_id, node"""
        )
    }
    young: dict[tuple[str, str], list[str]] = {}
    for s in gpu_states(ctx):
        count = s.get("ecc_corrected_volatile")
        up = uptime.get((s.bundle_id, s.node))
        if not count or up is None:
            continue
        days = up["uptime_s"] / 86400.0
        if days < min_days:
            young.setdefault((s.bundle_id, s.node), []).append(f"GPU {s.index}: {count}")
            continue
        rate = round(count / days, 1)
        if rate <= warn:
            continue
        severity = Severity.CRITICAL if rate > crit else Severity.WARNING
        yield RULE.finding(
            severity=severity,
            node=s.node,
            gpu=s.index,
            message=(
                f"{s.label} has {count} corrected ECC errors in {days:.1f} days of uptime = {rate}/day "
                f"(warning above {warn}/day, critical above {crit}/day)"
            ),
            params={
                "pci": s.pci,
                "corrected": count,
                "uptime_days": round(days, 2),
                "per_day": rate,
                "warning_per_day": warn,
                "critical_per_day": crit,
            },
            evidence=s.evidence(ctx, "ecc_volatile") + [ctx.evidence(up["source_file"], up["line"])],
            bundle_id=s.bundle_id,
            key=(s.pci,),
        )
    for (bundle_id, node), counts in young.items():
        up = uptime[(bundle_id, node)]
        hours = round(up["uptime_s"] / 3600.0, 1)
        yield RULE.finding(
            severity=Severity.INFO,
            node=node,
            message=(
                f"{node}: corrected ECC rate not judged, uptime {hours} h is under {min_days} day(s) "
                f"(corrected counts {', '.join(counts)})"
            ),
            params={"uptime_hours": hours, "min_uptime_days": min_days, "counts": counts},
            evidence=[ctx.evidence(up["source_file"], up["line"])],
            bundle_id=bundle_id,
            key=("uptime-too-short",),
        )
