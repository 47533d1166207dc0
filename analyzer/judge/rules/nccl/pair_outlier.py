"""Pairwise nccl-tests: a pair whose large-message busbw is more than 5 % below the mean of all pairs.

Why it matters: the tight production validation line — every 2-host pair of a cluster should deliver
about the same busbw; a pair a few percent low is worth a re-run before a long training job.  Pairs
are 2-host runs (the two hosts matched back to nodes), compared only within one instance type and
collective and only with >= min_pairs pairs.  Pairs that break the drain-grade line (>= 20 % below
the median) are left to nccl.pair.slow, which localises them.  False positives: run-to-run noise of a
few percent; one re-run settles it.  Runs are never pooled: each sweep of pairwise runs (one folder's
pair logs, one log holding a sweep, each re-run; analyzer.judge.signals.nccl.sweeps) has its own mean
(a re-run of fewer than min_pairs pairs is judged against the mean of the sweep it re-runs), the
message names the run, and the same pair's runs in other sweeps are said with it.
Reference: docs/sources.md#nccl-bandwidth (performance-debugger details guide, citing
validate_performance.sh).
Scope: shared: a slow pair blames its link, not one node (nccl.pair.slow names a node).
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import mean, median

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.nccl import (
    Subject,
    busbw_evidence,
    contrast,
    load_runs,
    not_compared,
    other_runs,
    sweeps,
)

RULE = RuleInfo(
    id="nccl.pair.outlier",
    title="Pairwise busbw more than {below_mean_fraction:pct} % below the run mean",
    severity=Severity.WARNING,
    requires=("nccl_result", "nccl_rank"),
    peers="min_pairs",
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
    groups = sweeps(load_runs(ctx, min_bytes), 2, min_pairs)
    # a sweep of too few pairs (and no sweep to judge it against) is not examined, never passed
    own = [s for g in groups.values() for s in g if len(s.runs) >= min_pairs or s.reference is not None]
    not_compared(ctx, groups, own, min_pairs, "pairs")
    for (itype, collective), group in groups.items():
        judged = [s for s in group if len(s.runs) >= min_pairs or s.reference is not None]
        lines = {s.label: _lines(s.pool, below, slow) for s in judged}
        for sweep in judged:
            avg = lines[sweep.label][0]
            tag = (sweep.label,) if len(judged) > 1 else ()
            for (a, b), run in sorted(sweep.runs.items()):
                if run.busbw is None or not _low(lines[sweep.label], below, run.busbw):
                    continue
                pct = round(100 * (avg - run.busbw) / avg, 1)
                others = [(s.runs[(a, b)], _below(lines[s.label], below, s.runs[(a, b)].busbw)) for s in judged
                          if s is not sweep and (a, b) in s.runs]  # fmt: skip
                said = f"; {contrast(f'{a} + {b}', run, True, others, 'low')}" if others else ""
                message = (
                    f"pair {a} + {b}: {collective} busbw {run.busbw} GB/s in run {run.name} is {pct} % below "
                    f"the mean {avg} GB/s of {sweep.describe()} (line {round(100 * below)} %){said}"
                )
                yield RULE.finding(
                    node=None,
                    message=message,
                    params={
                        "pair": [a, b],
                        "nodes": [a, b],
                        "busbw_gbps": run.busbw,
                        "mean_gbps": avg,
                        "below_mean_pct": pct,
                        "pairs": len(sweep.pool),
                        "instance_type": itype,
                        "collective": collective,
                        "run": run.name,
                        "sweep": sweep.label,
                        "reference_sweep": sweep.reference.label if sweep.reference is not None else None,
                        "other_runs": other_runs(others, "low"),
                    },
                    evidence=[busbw_evidence(ctx, run)],
                    bundle_id=run.bundle_id,
                    key=(a, b, collective, *tag),
                )


def _low(line: tuple[float, float], below: float, value: float | None) -> bool:
    """Below the sweep's line but above the drain-grade floor (those are nccl.pair.slow's)."""
    avg, floor = line
    return value is not None and floor < value < avg * (1 - below)


def _below(line: tuple[float, float], below: float, value: float | None) -> bool:
    """Below the sweep's line (drain-grade slow included): how the same pair's run in another sweep is said."""
    return value is not None and value < line[0] * (1 - below)


def _lines(pool: dict[Subject, float], below: float, slow: float) -> tuple[float, float]:
    """A sweep's mean (the line is below_mean_fraction under it) and the drain-grade floor (the pair.slow
    line under its median), under which a pair is nccl.pair.slow's."""
    values = list(pool.values())
    return round(mean(values), 2), median(values) * (1 - slow)
