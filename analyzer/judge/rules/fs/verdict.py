"""Which way the storage evidence points: a saturated file system, or I/O-bound with headroom.

Why it matters: high iowait and slow loaders have two different fixes with two different owners
(hyperpod-performance-debugger § B).  If the file system is at its provisioned limit (FSx utilisation
>= 80 % sustained, FreeDataStorageCapacity low, a data mount or OST nearly full, an EBS queue above 1
sustained) the fix is capacity: scale the file system or raise per-unit throughput
(filesystem-capacity).  If nodes wait on I/O while FSx utilisation stays below 80 %, the file system
has headroom and the access pattern is at fault: more DataLoader workers, asynchronous sharded
checkpoints, small files packed into shards (io-pattern).  When nodes wait on I/O but the bundle has
no FSx metrics, the branch cannot be chosen: the finding asks for the CloudWatch export.  A CloudWatch
series whose export names no statistic (``get-metric-data``) counts where the rule that owns the
signal can judge it (``usable`` of fs.fsx.utilization_sustained, fs.fsx.free_capacity_low,
fs.ebs.queue_sustained); FSx utilisation of no named statistic below the line does not show headroom
(it may be a Minimum): the branch stays undecided and the finding says why.  With no iowait report and
no CloudWatch series it can judge, the verdict examined nothing and does not pass.
One cluster-level finding; params list every signal used.  The FSx utilisation line and the iowait line
are those of fs.fsx.utilization_sustained (``utilization_pct``) and fs.iowait.high (``iowait_pct``), so
a site override of either moves the verdict with the rule.
False positives: the signals are only as good as the exported window; a CloudWatch window that does
not cover the slow period says "headroom" wrongly.
Reference: docs/sources.md#fsx-ebs-metrics; HyperPod performance-debugger skill § B.
Scope: shared: a verdict on the storage of the whole bundle set; no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.rules.fs import (
    data_full,
    ebs_queue,
    fsx_free_capacity,
    fsx_utilization,
    iowait_high,
    lustre_ost_imbalance,
)
from analyzer.judge.signals.fs import (
    data_mounts_over,
    ebs_queue_series,
    examined_nothing,
    fsx_free_capacity_series,
    fsx_utilization_series,
    iowait_by_node,
    run_evidence,
    run_over,
)

RULE = RuleInfo(
    id="fs.verdict",
    title="Storage verdict: capacity saturated or I/O pattern",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("iostat_cpu.iowait_pct", "cw_metric"),
    passed="no storage saturation and no node held up on I/O",
    scope="shared",
    route=Route("filesystem-capacity", "hyperpod-performance-debugger § B", "scale the file system"),
    severity_reason=(
        "The verdict names the fix for a slowdown (scale the file system, or change the I/O pattern), not a "
        "failure; info when nodes wait on I/O but the bundle lacks the FSx metrics to choose. Source: "
        "HyperPod performance-debugger skill (awslabs/agent-plugins, file-system section)."
    ),
)

_CAPACITY = Route(
    "filesystem-capacity",
    "hyperpod-performance-debugger § B",
    "scale the file system: grow capacity or raise per-unit throughput / provisioned IOPS",
)
_PATTERN = Route(
    "io-pattern",
    "hyperpod-mfu-debugger optimization-guide.md (data pipeline); steps/2e-periodic.md",
    "fix the access pattern: more DataLoader workers, asynchronous sharded checkpoints, small files into shards",
)
_UNKNOWN = Route(
    "support-bundle",
    "hyperpod-issue-report",
    "add the FSx CloudWatch metrics (utilisation, 1 h, 60 s, Maximum) to the bundle to decide",
)


def check(ctx: Context) -> Iterable[Finding]:
    # Every line is owned by the rule that judges that signal alone (one source per threshold).
    util_line = ctx.threshold(fsx_utilization.RULE, "utilization_pct")
    sustained = ctx.threshold(fsx_utilization.RULE, "warning_minutes")
    iowait_line = ctx.threshold(iowait_high.RULE, "iowait_pct")
    full_line = ctx.threshold(data_full.RULE, "warning_pct")
    ost_full_line = ctx.threshold(lustre_ost_imbalance.RULE, "full_pct")
    queue_line = ctx.threshold(ebs_queue.RULE, "queue_length")
    saturated: list[dict[str, Any]] = []
    evidence: list[Evidence] = []
    fsx = [s for s in fsx_utilization_series(ctx) if fsx_utilization.usable(s)]
    queues = [s for s in ebs_queue_series(ctx) if ebs_queue.usable(s, queue_line)]
    free = [s for s in fsx_free_capacity_series(ctx) if fsx_free_capacity.usable(s)]
    fsx_peak = 0.0
    for s in fsx:
        run = run_over(s, util_line)
        fsx_peak = max(fsx_peak, run.peak)
        if run.longest_minutes >= sustained:
            saturated.append(
                {
                    "signal": "fsx_utilization",
                    "series": s.label,
                    "statistic": s.statistic,
                    "longest_minutes": run.longest_minutes,
                }
            )
            evidence.extend(run_evidence(ctx, run))
    for s in queues:
        run = run_over(s, queue_line, strict=True)
        if run.longest_minutes >= sustained:
            saturated.append(
                {
                    "signal": "ebs_queue",
                    "series": s.label,
                    "statistic": s.statistic,
                    "longest_minutes": run.longest_minutes,
                }
            )
            evidence.extend(run_evidence(ctx, run))
    free_line = ctx.threshold(fsx_free_capacity.RULE, "free_warning_gib") * 2**30
    for s in free:
        low = min(s.points, key=lambda p: p[1])
        if low[1] < free_line:
            saturated.append(
                {
                    "signal": "fsx_free_low",
                    "series": s.label,
                    "statistic": s.statistic,
                    "free_gib": round(low[1] / 2**30, 1),
                }
            )
            evidence.append(ctx.evidence(low[2], low[3]))
    for r in data_mounts_over(ctx, full_line):
        saturated.append(
            {
                "signal": "mount_full",
                "node": r["node"],
                "mountpoint": r["mountpoint"],
                "use_pct": r["use_pct"],
            }
        )
        evidence.append(ctx.evidence(r["source_file"], r["line"]))
    for r in ctx.rows(
        "SELECT fsname, target_index, use_pct, source_file, line FROM lustre_target "
        "WHERE target_type = 'OST' AND use_pct > ? ORDER BY fsname, target_index",
        ost_full_line,
    ):
        saturated.append(
            {"signal": "ost_full", "fsname": r["fsname"], "ost": r["target_index"], "use_pct": r["use_pct"]}
        )
        evidence.append(ctx.evidence(r["source_file"], r["line"]))
    iowait = iowait_by_node(ctx)
    waiting = [r for r in iowait if r["mean"] > iowait_line]
    io_signals = [{"signal": "iowait", "node": r["node"], "iowait_pct": round(r["mean"], 2)} for r in waiting]
    named = [s for s in fsx if s.statistic is not None]
    if saturated:
        branch, route, severity = "capacity saturated", _CAPACITY, Severity.WARNING
        why = f"{len(saturated)} capacity signal(s): " + ", ".join(sorted({s["signal"] for s in saturated}))
    elif waiting and named:
        branch, route, severity = "headroom but I/O-bound", _PATTERN, Severity.WARNING
        why = (
            f"{len(waiting)} node(s) with iowait above {iowait_line:g} % while FSx utilisation peaked at "
            f"{max(s.peak for s in named):g} % (below {util_line:g} %)"
        )
        evidence = [ctx.evidence(r["source_file"], r["line"]) for r in waiting[:5]]
    elif waiting and fsx:
        branch, route, severity = "I/O-bound, file-system headroom unknown", _UNKNOWN, Severity.INFO
        why = (
            f"{len(waiting)} node(s) with iowait above {iowait_line:g} %; FSx utilisation peaked at {fsx_peak:g} % "
            f"(below {util_line:g} %) in an export that names no statistic: a Minimum or an Average below the "
            "line does not show headroom"
        )
        evidence = [ctx.evidence(r["source_file"], r["line"]) for r in waiting[:5]]
    elif waiting:
        branch, route, severity = "I/O-bound, file-system headroom unknown", _UNKNOWN, Severity.INFO
        why = f"{len(waiting)} node(s) with iowait above {iowait_line:g} % and no FSx utilisation metrics in the bundle"
        evidence = [ctx.evidence(r["source_file"], r["line"]) for r in waiting[:5]]
    else:
        if not (iowait or fsx or queues or free):
            examined_nothing("no iowait report and no FSx or EBS CloudWatch series it can judge")
        return
    yield RULE.finding(
        severity=severity,
        node=None,
        message=f"storage verdict: {branch}; {why}",
        params={
            "branch": branch,
            "capacity_signals": saturated,
            "io_signals": io_signals,
            "fsx_series": len(fsx),
            "fsx_series_statistic_unknown": len(fsx) - len(named),
            "fsx_peak_pct": round(fsx_peak, 3),
            "utilization_pct": util_line,
            "iowait_pct": iowait_line,
        },
        route=route,
        evidence=evidence[:10],
    )
