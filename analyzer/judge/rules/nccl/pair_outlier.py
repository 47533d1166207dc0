"""Pairwise nccl-tests: a pair whose large-message busbw is more than 5 % below the mean of all pairs.

Why it matters: the tight production validation line — every 2-host pair of a cluster should deliver
about the same busbw; a pair a few percent low is worth a re-run before a long training job.  Pairs
are 2-host runs (the two hosts matched back to nodes), compared only within one instance type and
collective and only with >= min_pairs pairs.  Pairs that break the drain-grade line (>= 20 % below
the median) are left to nccl.pair.slow, which localises them.  False positives: run-to-run noise of a
few percent; one re-run settles it.  Reference: docs/sources.md#nccl-bandwidth (performance-debugger
details guide, citing validate_performance.sh).
Scope: shared: a slow pair blames its link, not one node (nccl.pair.slow names a node).
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import mean, median

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.nccl import busbw_evidence, load_runs, pairs

RULE = RuleInfo(
    id="nccl.pair.outlier",
    title="Pairwise busbw more than {below_mean_fraction:pct} % below the run mean",
    severity=Severity.WARNING,
    requires=("nccl_result", "nccl_rank"),
    passed="no pairwise run far below its run's mean",
    scope="shared",
    route=Route(
        "nccl-network", "hyperpod-performance-debugger § A", "re-run the pair; check both nodes' EFA counters"
    ),
    severity_reason=(
        "A pair a few percent below the run mean fails the tight production-validation line: re-run it "
        "before a long job, but it is no fault to drain for (pairs 20 % low go to nccl.pair.slow). Source: "
        "HyperPod performance-debugger skill (awslabs/agent-plugins: 5 % from the run mean)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_bytes = ctx.threshold(RULE, "large_message_bytes")
    min_pairs = ctx.threshold(RULE, "min_pairs")
    below = ctx.threshold(RULE, "below_mean_fraction")
    slow = ctx.settings.value("nccl.pair.slow", "below_median_fraction")
    for (itype, collective), group in pairs(load_runs(ctx, min_bytes)).items():
        if len(group) < min_pairs:
            continue
        values = [p.busbw for p in group.values()]
        avg, mid = round(mean(values), 2), median(values)
        for (a, b), pair in sorted(group.items()):
            if pair.busbw >= avg * (1 - below) or pair.busbw <= mid * (1 - slow):
                continue
            pct = round(100 * (avg - pair.busbw) / avg, 1)
            run = pair.run
            message = (
                f"pair {a} + {b}: {collective} busbw {pair.busbw} GB/s is {pct} % below the mean "
                f"{avg} GB/s of {len(group)} pairs (line {round(100 * below)} %)"
            )
            yield RULE.finding(
                node=None,
                message=message,
                params={
                    "pair": [a, b],
                    "nodes": [a, b],
                    "busbw_gbps": pair.busbw,
                    "mean_gbps": avg,
                    "below_mean_pct": pct,
                    "pairs": len(group),
                    "instance_type": itype,
                    "collective": collective,
                },
                evidence=[busbw_evidence(ctx, run)],
                bundle_id=run.bundle_id,
                key=(a, b, collective),
            )
