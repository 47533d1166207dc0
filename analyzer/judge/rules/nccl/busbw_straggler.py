"""A node whose nccl-tests busbw is a robust low outlier against its peers of the same instance type.

Why it matters: a straggler node slows every collective it joins.  Per node, two figures are judged
separately (they measure different paths): the best large-message busbw of its single-node runs
(NVLink-bound) and the median over the pairwise runs it is in (network-bound).  A node is flagged when
its figure is below the peer median by more than mad_z scaled MADs AND by at least min_drop_fraction
(so that a tight band does not turn noise into findings), and only with >= min_peers peers of the
same instance type and collective.  False positives: peers tested with other message sizes or
settings; a bad partner drags a node's pair median only when it is in most of the node's pairs.
Reference: docs/sources.md#nccl-bandwidth (NCCL performance-testing guide: single-node runs; the
mfu-debugger straggler step uses mean + 2 sigma on step times; median/MAD is our robust form).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from statistics import median

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import median_mad
from analyzer.judge.signals.nccl import Run, busbw_evidence, load_runs, pairs

RULE = RuleInfo(
    id="nccl.busbw.straggler",
    title="Node busbw a robust outlier below its peers",
    severity=Severity.WARNING,
    requires=("nccl_result", "nccl_run"),
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


def check(ctx: Context) -> Iterable[Finding]:
    min_bytes = ctx.threshold(RULE, "large_message_bytes")
    runs = load_runs(ctx, min_bytes)
    families: dict[tuple[str, str | None, str], dict[str, tuple[float, list[Run]]]] = defaultdict(dict)
    single: dict[tuple[str | None, str, str], list[Run]] = defaultdict(list)
    for run in runs:
        if run.scope == "single_node" and run.busbw is not None and run.members:
            single[(run.instance_type, run.collective or "all_reduce", run.members[0])].append(run)
    for (itype, coll, node), own in single.items():
        families[("single-node", itype, coll)][node] = (max(r.busbw or 0 for r in own), own)
    for (itype, coll), group in pairs(runs).items():
        per_node: dict[str, list[float]] = defaultdict(list)
        node_runs: dict[str, list[Run]] = defaultdict(list)
        for key, pair in group.items():
            for m in key:
                per_node[m].append(pair.busbw)
                node_runs[m].extend(pair.runs)
        for m, values in per_node.items():
            families[("pairwise", itype, coll)][m] = (round(median(values), 2), node_runs[m])
    yield from _judge(ctx, families)


def _judge(
    ctx: Context, families: dict[tuple[str, str | None, str], dict[str, tuple[float, list[Run]]]]
) -> Iterable[Finding]:
    min_peers = ctx.threshold(RULE, "min_peers")
    z_max = ctx.threshold(RULE, "mad_z")
    min_drop = ctx.threshold(RULE, "min_drop_fraction")
    for (family, itype, coll), values in sorted(families.items(), key=lambda kv: str(kv[0])):
        if itype is None or len(values) - 1 < min_peers:
            continue
        for node, (value, node_runs) in sorted(values.items()):
            peers = [v for n, (v, _) in values.items() if n != node]
            mid, mad = median_mad(peers)
            mid, mad = round(mid, 2), round(mad, 2)
            if value > mid * (1 - min_drop) or value >= mid - z_max * mad:
                continue
            drop = round(100 * (mid - value) / mid, 1)
            message = (
                f"{node}: {family} {coll} busbw {value} GB/s is {drop} % below the median {mid} GB/s of "
                f"{len(peers)} {itype} peers (MAD {mad} GB/s; band median - {z_max} x MAD)"
            )
            worst = min(node_runs, key=lambda r: r.busbw or 0)
            yield RULE.finding(
                node=node,
                message=message,
                params={
                    "metric": f"{family} {coll} busbw",
                    "busbw_gbps": value,
                    "peer_median_gbps": mid,
                    "peer_mad_gbps": mad,
                    "below_pct": drop,
                    "peers": len(peers),
                    "instance_type": itype,
                },
                evidence=[busbw_evidence(ctx, worst)],
                bundle_id=worst.bundle_id,
                key=(family, coll),
            )
