"""A node whose GPUs logged far more Xid events than its same-type peers in the window their bundles share.

Why it matters: a GPU that is degrading logs Xids its healthy peers do not, while the Xids a job provokes
(application-class codes, a job's own preemptive clean-up) show up on every node that runs the job: a lone
node far above its peers is the node's, churn on every node is the job's.  NVIDIA/NVSentinel#1748: 11,760
Xid 45 on the node under suspicion, fourth of 18 nodes running the same job, "unremarkable for its rack"
(docs/sources.md#peer-comparisons).  Each node's Xid events (counted once across the logs of its bundle, the
current boot only) are counted in the window every bundle of its instance type covers: from the latest boot
among them (``collected_at`` less the uptime) to the earliest collection.  A node is far above when its
count is at least ``min_events`` and at least ``ratio`` times the median of its peers' counts (the other
nodes of its type); the peers' median, their count and the window are in the finding.  When the type's
median itself reaches ``min_events`` (churn on most nodes), one information finding for the type says so and
no node is blamed for it.  A type with fewer than ``min_nodes`` nodes whose window is known is not examined
(too few peers); a node without an uptime (its boot, so the window, unknown) or with Xids whose time cannot
be placed is not examined.  The per-code judgement of each Xid stays gpu.xid's; ECC counters are compared by
straggler.gpu.ecc_corrected_rate (corrected errors per day of uptime) and judged by gpu.ecc.uncorrectable.
False positives: a node that ran a different job than its peers in the window; a kernel log cut (the
collector keeps its last 16 MiB) counts fewer events, never more.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from statistics import median
from typing import Any

from analyzer.judge.engine import (
    TOO_FEW_PEERS,
    CannotJudge,
    Context,
    NotExamined,
    RuleInfo,
    TooFewPeers,
    too_few_peers,
)
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL
from analyzer.judge.signals.kernel_events import columns_sql, distinct
from analyzer.judge.signals.kernel_time import KernelClock, stamp_sql

RULE = RuleInfo(
    id="straggler.gpu.xid_count",
    title="Xid events far above same-type peers",
    severity=Severity.WARNING,
    requires=("kernel_event", "host_uptime.uptime_s"),
    peers="min_nodes",
    passed="no node's Xid count far above its same-type peers",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        "look at this node's Xids (gpu.xid); drain if they recur",
    ),
    severity_reason=(
        "A node logging ten times its peers' Xids in the same window is degrading on its own, which no single "
        "Xid's catalog entry says; churn on every node is the job's and blames no node (info). Source: "
        "NVIDIA/NVSentinel#1748 (a node's Xid volume judged against its rack); ours: the ratio and the count."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    need, ratio, least = (ctx.threshold(RULE, k) for k in ("min_nodes", "ratio", "min_events"))
    nodes = _nodes(ctx)
    if not nodes:
        raise NotExamined("no kernel log was read")
    events = _events(ctx)
    groups: dict[str, list[dict[str, Any]]] = {}
    why: list[str] = []
    for n in nodes.values():
        if n["boot"] is None:
            ctx.not_judged([n["node"]], "no uptime: the kernel log's window is not known")
            continue
        groups.setdefault(n["type"], []).append(n)
    judged = 0
    for group, members in sorted(groups.items()):
        if len(members) < need:
            why.append(too_few_peers(len(members), need, "nodes", group))
            ctx.not_judged([m["node"] for m in members], why[-1])
            continue
        start, end = max(m["boot"] for m in members), min(m["collected"] for m in members)
        if end <= start:
            why.append(f"the {group} bundles share no window (one was collected before another booted)")
            ctx.not_judged([m["node"] for m in members], why[-1])
            continue
        counts: dict[str, list[dict[str, Any]]] = {}
        for m in members:
            mine = events.get(m["bundle_id"], [])
            if any(e["at"] is None for e in mine):
                ctx.not_judged([m["node"]], "an Xid of its kernel log has no time to place in the window")
                continue
            counts[m["bundle_id"]] = [e for e in mine if start <= e["at"] <= end]
        if len(counts) < need:
            why.append(too_few_peers(len(counts), need, "nodes", group))
            ctx.not_judged([m["node"] for m in members if m["bundle_id"] in counts], why[-1])
            continue
        judged += 1
        window = f"{_iso(start)} .. {_iso(end)}"
        everyone = median(len(v) for v in counts.values())
        if everyone >= least:
            yield _churn(group, counts, nodes, everyone, window)
        for bundle_id, mine in counts.items():
            peers = [len(v) for b, v in counts.items() if b != bundle_id]
            peer_median = median(peers)
            if len(mine) >= least and len(mine) >= ratio * peer_median:
                yield _outlier(ctx, nodes[bundle_id], mine, peer_median, len(peers), group, window, ratio)
    if not judged:
        reason = "; ".join(why) or "no node's kernel log window is known (no uptime)"
        if why and all(w.startswith(TOO_FEW_PEERS) for w in why):
            raise TooFewPeers(reason)
        raise CannotJudge(reason)


def _outlier(
    ctx: Context,
    n: dict[str, Any],
    mine: list[dict[str, Any]],
    peer_median: float,
    peers: int,
    group: str,
    window: str,
    ratio: float,
) -> Finding:
    codes: dict[int, int] = {}
    gpus: dict[str, int] = {}
    for e in mine:
        codes[e["xid"]] = codes.get(e["xid"], 0) + 1
        gpus[e["pci"] or "unknown GPU"] = gpus.get(e["pci"] or "unknown GPU", 0) + 1
    top_gpu, top_count = max(gpus.items(), key=lambda kv: (kv[1], kv[0]))
    times = f"{len(mine) / peer_median:.0f}x" if peer_median else "none among"
    said = ", ".join(f"Xid {c} x{k}" for c, k in sorted(codes.items()))
    first, last = mine[0], mine[-1]
    evidence = [ctx.evidence(first["source_file"], first["line"])]
    if (last["source_file"], last["line"]) != (first["source_file"], first["line"]):
        evidence.append(ctx.evidence(last["source_file"], last["line"]))
    return RULE.finding(
        node=n["node"],
        message=(
            f"{n['node']}: {len(mine)} Xid events in the window its {peers + 1} {group} nodes share ({window}), "
            f"{times} its {peers} peers' median {peer_median:g} ({said}; {top_count} on {top_gpu})"
        ),
        params={
            "xid_events": len(mine),
            "peer_median": peer_median,
            "peer_nodes": peers,
            "peer_group": group,
            "ratio": ratio,
            "codes": {str(c): k for c, k in sorted(codes.items())},
            "busiest_gpu": top_gpu,
            "window": window,
        },
        evidence=evidence,
        bundle_id=n["bundle_id"],
    )


def _churn(
    group: str,
    counts: dict[str, list[dict[str, Any]]],
    nodes: dict[str, dict[str, Any]],
    everyone: float,
    window: str,
) -> Finding:
    busy = sorted(nodes[b]["node"] for b, v in counts.items() if v)
    return RULE.finding(
        severity=Severity.INFO,
        node=None,
        message=(
            f"Xid churn on most {group} nodes: median {everyone:g} Xid events per node in the window they share "
            f"({window}), on {len(busy)} of {len(counts)} nodes: the job's, not one node's"
        ),
        params={"peer_group": group, "median": everyone, "nodes": len(counts), "nodes_with_xids": busy},
        route=Route(
            "node-hardware", "hyperpod-node-debugger § G", "look at the job's Xids (gpu.xid), not a node"
        ),
        key=("churn", group),
    )


def _nodes(ctx: Context) -> dict[str, dict[str, Any]]:
    """Per bundle whose kernel log was read: its node, type, collection time and boot time (None: no uptime)."""
    rows = ctx.rows(
        f"""
        WITH logs AS (SELECT DISTINCT bundle_id FROM kernel_event
                      UNION SELECT DISTINCT f.bundle_id FROM file f
                      WHERE f.kind = 'dmesg' AND f.status = 'parsed'),
        up AS (SELECT bundle_id, max(uptime_s) AS uptime_s FROM host_uptime
               WHERE uptime_s IS NOT NULL GROUP BY bundle_id)
        SELECT t.bundle_id, t.node, t.instance_type, n.collected_at, up.uptime_s
        FROM ({NODE_TYPE_SQL}) t JOIN node n USING (bundle_id) JOIN logs USING (bundle_id)
        LEFT JOIN up USING (bundle_id)
        ORDER BY t.node
        """
    )
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        collected = r["collected_at"].replace(tzinfo=None) if r["collected_at"] else None
        boot = None
        if collected is not None and r["uptime_s"] is not None:
            boot = collected - timedelta(seconds=float(r["uptime_s"]))
        out[r["bundle_id"]] = {
            "bundle_id": r["bundle_id"],
            "node": r["node"],
            "type": r["instance_type"],
            "collected": collected,
            "boot": boot,
        }
    return out


def _events(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    """Per bundle, its Xid events of the current boot, counted once, with their UTC time (None: unknown)."""
    rows = distinct(
        ctx.rows(
            f"""SELECT {columns_sql("e")}, {stamp_sql("e")} AS stamp FROM kernel_event e
                WHERE e.event_type = 'xid' AND coalesce(e.boot, 0) = 0
                ORDER BY e.bundle_id, e.source_file, e.line"""
        )
    )
    clock = KernelClock.load(ctx)
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        r["at"] = clock.at(r["bundle_id"], r["stamp"]).utc
        out.setdefault(r["bundle_id"], []).append(r)
    for events in out.values():
        events.sort(key=lambda e: (e["at"] or datetime.min, e["source_file"], e["line"]))
    return out


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")
