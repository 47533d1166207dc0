"""CPU iowait above 20 % on a node (iostat avg-cpu, interval reports only).

Why it matters: CPUs waiting on I/O mean data loading or checkpointing holds the GPUs back (the
performance-debugger snapshot script flags %iowait > 20).  The first iostat report holds averages since boot
and is excluded; the node value is the mean of the interval reports (the peak is in params).  Whether the file
system is full or the access pattern is at fault is decided by fs.verdict.
False positives: a bundle taken during a checkpoint write; compare with the node's peers
(straggler.host.iowait).
Reference: docs/sources.md#local-storage.
Explained by the FSx/EBS/Lustre saturation rules and fs.verdict: when one fires, iowait is its symptom.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import STORAGE_CAUSES, iowait_by_node

RULE = RuleInfo(
    id="fs.iowait.high",
    title="CPU iowait above {iowait_pct} %",
    severity=Severity.WARNING,
    requires=("iostat_cpu.iowait_pct",),
    passed="CPU iowait below the line on every node",
    explained_by=STORAGE_CAUSES,
    route=Route(
        "io-pattern",
        "hyperpod-mfu-debugger optimization-guide.md (data pipeline); hyperpod-performance-debugger § B",
        "see fs.verdict: scale the file system if it is saturated, else fix the data pipeline",
    ),
    severity_reason=(
        "CPUs waiting on I/O more than 20 % of the time hold the GPUs back, a slowdown whose cause "
        "fs.verdict decides. Source: HyperPod performance-debugger snapshot script (awslabs/agent-plugins: "
        "iowait above 20 %)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    line = ctx.threshold(RULE, "iowait_pct")
    for r in iowait_by_node(ctx):
        if r["mean"] <= line:
            continue
        mean, peak = round(r["mean"], 2), round(r["peak"], 2)
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']} CPU iowait {mean:g} % (mean of {r['reports']} interval reports, peak {peak:g} %) is above {line:g} %",
            params={"iowait_pct": mean, "peak_pct": peak, "reports": r["reports"], "line_pct": line},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
