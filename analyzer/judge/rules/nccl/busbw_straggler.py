"""A node whose nccl-tests busbw is a robust low outlier against its peers of the same instance type.

Why it matters: a straggler node slows every collective it joins.  Per node, two figures are judged
separately (they measure different paths): the best large-message busbw of its single-node runs
(NVLink-bound) and the median over the pairwise runs it is in (network-bound).  A node is flagged when
its figure is below the peer median by more than mad_z scaled MADs AND by at least min_drop_fraction
(so that a tight band does not turn noise into findings), and only with >= min_peers peers of the
same instance type and collective.  False positives: peers tested with other message sizes or
settings; a bad partner drags a node's pair median only when it is in most of the node's pairs.
Runs are never pooled: each sweep (one folder's logs, one log holding several tests, each re-run;
analyzer.judge.signals.nccl.sweeps) is judged on its own, a node's figure is the one of that sweep (its
single-node run there, the median of its pairs there), and the finding says the node's figure in the
other sweeps; a re-run of too few single-node tests is judged against the peers of the sweep it re-runs.
Reference: docs/sources.md#nccl-bandwidth (NCCL performance-testing guide: single-node runs; the
mfu-debugger straggler step uses mean + 2 sigma on step times; median/MAD is our robust form).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from analyzer.judge.engine import Context, NotExamined, RuleInfo, TooFewPeers, too_few_peers
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import median_mad
from analyzer.judge.signals.nccl import Run, busbw_evidence, load_runs, sweeps

RULE = RuleInfo(
    id="nccl.busbw.straggler",
    title="Node busbw a robust outlier below its peers",
    severity=Severity.WARNING,
    requires=("nccl_result", "nccl_run"),
    peers="min_peers",
    passed="no node's busbw an outlier below its peers",
    route=Route(
        "node-hardware",
        "hyperpod-performance-debugger § A",
        "confirm on the node (single-node test, EFA/NVLink counters)",
    ),
    severity_reason=(
        "A node whose busbw is a robust low outlier against same-type peers slows every collective it joins, "
        "but one run does not justify a drain: confirm on the node first. Source: HyperPod mfu-debugger "
        "straggler guide and NCCL performance-testing guide (awslabs/agent-plugins); ours: the median/MAD "
        "cut."
    ),
)


@dataclass
class _Figure:
    """One node's figure in one sweep of one family, judged against its peers."""

    family: str
    itype: str | None
    collective: str
    sweep: str
    node: str
    value: float
    runs: list[Run]
    peers: list[float]
    low: bool = False
    mid: float = 0.0
    mad: float = 0.0


def check(ctx: Context) -> Iterable[Finding]:
    min_bytes = ctx.threshold(RULE, "large_message_bytes")
    min_peers = ctx.threshold(RULE, "min_peers")
    runs = load_runs(ctx, min_bytes)
    figures: list[_Figure] = []
    for (itype, coll), group in sweeps(runs, 1, min_peers + 1).items():
        for sweep in group:
            pool = {k[0]: v for k, v in sweep.pool.items()}
            for (node,), run in sweep.runs.items():
                peers = [v for n, v in pool.items() if n != node]
                figures.append(
                    _Figure("single-node", itype, coll, sweep.label, node, run.busbw or 0.0, [run], peers)
                )
    for (itype, coll), group in sweeps(runs, 2, 1).items():
        for sweep in group:
            per_node: dict[str, list[float]] = defaultdict(list)
            node_runs: dict[str, list[Run]] = defaultdict(list)
            for key, run in sweep.runs.items():
                for m in key:
                    per_node[m].append(run.busbw or 0.0)
                    node_runs[m].append(run)
            medians = {m: round(median(v), 2) for m, v in per_node.items()}
            for m, value in medians.items():
                peers = [v for n, v in medians.items() if n != m]
                figures.append(_Figure("pairwise", itype, coll, sweep.label, m, value, node_runs[m], peers))
    yield from _judge(ctx, figures)


def _judge(ctx: Context, figures: list[_Figure]) -> Iterable[Finding]:
    min_peers = ctx.threshold(RULE, "min_peers")
    z_max = ctx.threshold(RULE, "mad_z")
    min_drop = ctx.threshold(RULE, "min_drop_fraction")
    judged = [f for f in figures if f.itype is not None and len(f.peers) >= min_peers]
    # a node with no figure among enough peers is not examined, never passed
    if not figures:
        raise NotExamined("no nccl-tests run with a large-message busbw")
    reasons = []
    for node in sorted({f.node for f in figures} - {f.node for f in judged}):
        why = sorted(
            {
                too_few_peers(len(f.peers), min_peers, "nodes", f"{f.itype or 'unknown type'} {f.collective}")
                for f in figures
                if f.node == node
            }
        )
        ctx.not_judged([node], "; ".join(why))
        reasons += why
    if not judged:
        raise TooFewPeers("; ".join(sorted(set(reasons))))
    for f in judged:
        mid, mad = median_mad(f.peers)
        f.mid, f.mad = round(mid, 2), round(mad, 2)
        f.low = f.value <= f.mid * (1 - min_drop) and f.value < f.mid - z_max * f.mad
    sweeps_of = Counter((f.family, f.itype, f.collective, f.node) for f in judged)
    for f in sorted(judged, key=lambda f: (f.family, str(f.itype), f.collective, f.sweep, f.node)):
        if not f.low:
            continue
        drop = round(100 * (f.mid - f.value) / f.mid, 1)
        what = "its single-node run" if f.family == "single-node" else "the median of its pairs"
        others = [
            o
            for o in judged
            if o is not f
            and (o.family, o.itype, o.collective, o.node) == (f.family, f.itype, f.collective, f.node)
        ]
        said = "; ".join(
            f"{'low' if o.low else 'fine'} in {o.sweep} ({o.value} GB/s, peer median {o.mid} GB/s)"
            for o in others
        )
        worst = min(f.runs, key=lambda r: r.busbw or 0)
        message = (
            f"{f.node}: {f.family} {f.collective} busbw {f.value} GB/s ({what} in {f.sweep}; slowest run "
            f"{worst.name}) is {drop} % below the median {f.mid} GB/s of {len(f.peers)} {f.itype} peers (MAD "
            f"{f.mad} GB/s; band median - {z_max} x MAD)"
            + (f"; the same node in other runs: {said}" if said else "")
        )
        yield RULE.finding(
            node=f.node,
            message=message,
            params={
                "metric": f"{f.family} {f.collective} busbw",
                "busbw_gbps": f.value,
                "peer_median_gbps": f.mid,
                "peer_mad_gbps": f.mad,
                "below_pct": drop,
                "peers": len(f.peers),
                "instance_type": f.itype,
                "sweep": f.sweep,
                "runs": sorted(r.name for r in f.runs),
                "other_sweeps": [
                    {
                        "sweep": o.sweep,
                        "busbw_gbps": o.value,
                        "peer_median_gbps": o.mid,
                        "verdict": "low" if o.low else "fine",
                    }
                    for o in others
                ],  # fmt: skip
            },
            evidence=[busbw_evidence(ctx, worst)],
            bundle_id=worst.bundle_id,
            key=(
                f.family,
                f.collective,
                *((f.sweep,) if sweeps_of[(f.family, f.itype, f.collective, f.node)] > 1 else ()),
            ),
        )
