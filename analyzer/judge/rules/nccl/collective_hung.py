"""A hung collective traced to the ranks that stopped first, their node, and that node's own evidence.

Why it matters: when a job hangs every rank times out and every log says so; the question is which rank
stopped first and why.  The rule merges what says so (analyzer.judge.signals.hang): flight-recorder
dumps (the first collective not every rank completed, the ranks that never enqueued or never started it,
a desync, the ranks with no dump), PyTorch's watchdog lines in the job's logs (the ranks whose last
completed work lags) and NCCL RAS reports (ranks missing, dead, or behind).  It names those ranks, maps
them to hosts and nodes, and cites the suspect node's own evidence that precedes the hang's start
(kernel faults, failed probes, EFA ports down, other ranks' lines naming it as the remote peer), or says
its bundle shows none.  One critical finding per incident, on the suspect node when the suspects ran on
one (or only one of their nodes shows evidence), else cluster-wide naming them.

False positives: a rank behind by one operation in a RAS report of a busy job is normal (RAS says so;
repeat the query); a job log alone cannot tell a hung rank from one busy elsewhere (py-spy, the flight
recorder).  The watchdog's timeout and the dumps' layout: docs/sources.md#job-logs,
#flight-recorder-dumps, #nccl-ras.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import RANKS_FIRST, Evidence, Finding, Route, Severity
from analyzer.judge.signals import hang as hangs
from analyzer.judge.signals import job

RULE = RuleInfo(
    id="nccl.collective.hung",
    version=1,
    title="A hung collective: the ranks that stopped first, their node and its evidence",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("job_log_event", "fr_dump", "ras_peer"),
    passed="no hung collective in job logs, dumps or RAS reports",
    route=Route(
        "nccl-network",
        "hyperpod-nccl error-patterns-quick-ref",
        "the job hung in a collective: find the rank that never entered it (flight recorder, py-spy), then its "
        "node; raise the timeout only for a step known to be slow",
    ),
    severity_reason=(
        "Critical: a collective that never completes stops the whole job until the watchdog kills it "
        "(TORCH_NCCL timeout, 10 min by default), and the rank that stopped first points at the node to drain. "
        "Source: PyTorch ProcessGroupNCCL's watchdog and flight recorder (fr_trace's 'not all ranks joining "
        "collective'); NVIDIA's NCCL RAS documentation (INCOMPLETE, DEAD)."
    ),
)

HARDWARE = Route(
    "node-hardware",
    "hyperpod-node-debugger § G",
    "drain and replace the node: its own logs show a fault before the job hung",
)


def check(ctx: Context) -> Iterable[Finding]:
    index = hangs.node_index(ctx)
    gap = float(ctx.threshold(RULE, "incident_gap_s"))
    lookback = float(ctx.threshold(RULE, "evidence_lookback_s"))
    for inc in hangs.incidents(ctx, index, gap):
        yield _finding(ctx, inc, index, lookback)
    ctx.saw(job.job_nodes(ctx, index))
    ctx.saw(
        n["node"] for n in ctx.rows("SELECT DISTINCT node FROM fr_dump WHERE node IS NOT NULL AND node <> ''")
    )


def _finding(ctx: Context, inc: hangs.Incident, index: Any, lookback_s: float) -> Finding:
    suspects = inc.suspects
    nodes = inc.suspect_nodes
    facts = hangs.node_evidence(ctx, nodes, inc.began, index)
    if inc.began is not None:  # before the hang began, within the look-back; later ones are said as later
        facts = [
            f
            for f in facts
            if f.relation != "before" or (inc.began - f.when).total_seconds() <= lookback_s  # type: ignore[operator]
        ]
    shows = {f.node for f in facts if f.relation in ("before", "at collection", "time unknown")}
    node = nodes[0] if len(nodes) == 1 else (next(iter(shows)) if len(shows) == 1 else None)
    work = f"{inc.op or 'a collective'} SeqNum {inc.seq if inc.seq is not None else '?'}" + (
        f" in {inc.group}" if inc.group else ""
    )
    timeout = inc.timeout
    limit = next((t.timeout_ms for t in timeout.timeouts if t.timeout_ms), None) if timeout else None
    parts = [
        f"The job hung in {work}"
        + (f" (timeout {limit / 1000:g} s)" if limit else "")
        + f" ({', '.join(dict.fromkeys(inc.sources))}, {inc.folder})"
    ]
    if inc.began_text:
        parts.append(f"the hang began about {inc.began_text}")
    if said := hangs.dumps_said(inc):
        parts.append(said)
    if inc.desync:
        parts.append("a desync, not a slow rank: " + "; ".join(inc.desync[:3]))
    first = [s for s in suspects if s.why not in ("behind",)] or suspects
    if first:
        listed = "; ".join(f"{_where(s)} {s.detail}" for s in first[:6]) + (" ..." if len(first) > 6 else "")
        parts.append(f"stopped first: {listed}")
    alive = [s for s in suspects if s.why == "behind"]
    if alive:
        parts.append(
            "alive but behind (NCCL RAS): " + "; ".join(f"{_where(s)} {s.detail}" for s in alive[:4])
        )
    if timeout:
        ordered = timeout.lagging + [t for t in timeout.timeouts if t not in timeout.lagging]
        named = list(dict.fromkeys(t.where() for t in ordered))
        parts.append("timed out: " + ", ".join(named[:16]) + (" ..." if len(named) > 16 else ""))
        others = [w for w in timeout.works[1:] if not all(t in timeout.lagging for t in w[3])]
        if others:
            parts.append(
                "also timed out: "
                + "; ".join(f"{o or 'a collective'} SeqNum {q} ({g or 'group not named'}, {len(r)} rank(s))"
                            for g, o, q, r in others[:4])
            )  # fmt: skip
        if timeout.unnamed_groups:
            parts.append("the log names no process group for some of them: their ranks were not compared")
    if inc.waiting:
        parts.append(f"{len(inc.waiting)} rank(s) started it and wait")
    for n in nodes:
        mine = [f for f in facts if f.node == n]
        before = [f for f in mine if f.relation == "before"]
        state = [f for f in mine if f.relation in ("at collection", "time unknown")]
        if before:
            parts.append(
                f"{n}'s bundle shows before the hang began: " + ", ".join(_fact(f, inc) for f in before[:4])
            )
        elif state:
            parts.append(f"{n}'s bundle shows: " + ", ".join(_fact(f, inc) for f in state[:4]))
        else:
            parts.append(f"{n}'s bundle shows no fault before the hang began")
        later = [f for f in mine if f.relation == "after"]
        if later:
            parts.append(f"after it began on {n}: " + ", ".join(_fact(f, inc) for f in later[:2]))
    unmapped = [s for s in first if s.node is None]
    if unmapped and not nodes:
        parts.append("the inputs name no node for " + ", ".join(s.who for s in unmapped[:6]))
    evidence: list[Evidence] = []
    for f in [f for f in facts if f.node == node or node is None][:3]:
        evidence.append(ctx.evidence(f.source_file, f.line))
    for s in first[:3]:
        for file, line, text in s.evidence[:2]:
            evidence.append(Evidence(file, line, text) if text else ctx.evidence(file, line))
    for file, line, text in inc.evidence[:2]:
        evidence.append(Evidence(file, line, text) if text else ctx.evidence(file, line))
    with_fault = [n for n in nodes if any(f.node == n and f.relation != "after" for f in facts)]
    route = HARDWARE if node and node in with_fault else _route(nodes, first)
    return RULE.finding(
        node=node,
        message="; ".join(parts),
        params={
            "code": "WATCHDOG_TIMEOUT" if timeout else "HANG",
            # the verdict ranks the suspect node first when its own evidence precedes the hang
            RANKS_FIRST: bool(node and node in with_fault),
            "collective": inc.op,
            "seq_num": inc.seq,
            "process_group": inc.group,
            "began": inc.began_text,
            "sources": list(dict.fromkeys(inc.sources)),
            "suspects": [
                {
                    "rank": s.rank,
                    "why": s.why,
                    "host": s.host,
                    "node": s.node,
                    "pid": s.pid,
                    "detail": s.detail,
                }
                for s in suspects
            ],
            "desync": inc.desync,
            "ranks_with_dumps": inc.ranks_with_dumps,
            "expected_ranks": inc.expected_ranks,
            "bad_dumps": inc.bad_dumps,
            "nodes": nodes or (timeout.nodes if timeout else []),  # the suspects', else the timed-out ranks
            "node_evidence": [
                {
                    "node": f.node,
                    "what": f.what,
                    "relation": f.relation,
                    "at": f.when.isoformat() if f.when else None,
                }
                for f in facts[:20]
            ],
            "timeout_ms": next((t.timeout_ms for t in timeout.timeouts if t.timeout_ms), None)
            if timeout
            else None,
            "lagging": [_rank(t) for t in timeout.lagging] if timeout else [],
            "ranks": [
                _rank(t) for t in timeout.lagging + [t for t in timeout.timeouts if t not in timeout.lagging]
            ]
            if timeout
            else [],
            "files": sorted({t.source_file for t in timeout.timeouts}) if timeout else [],
        },
        route=route,
        evidence=evidence[:8],
        bundle_id=inc.bundle_id or None,
        key=("HANG", inc.folder, inc.group, inc.seq, inc.began_text),
    )


def _where(s: hangs.Suspect) -> str:
    place = (
        s.node
        if s.node and (not s.host or s.node == s.host)
        else f"{s.host} ({s.node})"
        if s.node
        else s.host
    )
    return f"{s.who} on {place}" if place else s.who


def _fact(f: hangs.NodeEvidence, inc: hangs.Incident) -> str:
    if f.when is None:
        return f.what + ("" if f.relation == "time unknown" else f" ({f.relation})")
    text = f"{f.what} at {f.when.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    if inc.began is not None:
        delta = abs((inc.began - f.when).total_seconds())
        text += f" ({delta:.0f} s {'before' if f.relation == 'before' else 'after'})"
    return text


def _rank(t: job.RankTimeout) -> dict[str, Any]:
    return {
        "rank": t.rank, "pg_rank": t.pg_rank, "host": t.host, "node": t.node, "collective": t.op,
        "seq_num": t.seq, "last_enqueued": t.last_enqueued, "last_completed": t.last_completed,
        "ran_for_ms": t.ran_for_ms,
    }  # fmt: skip


def _route(nodes: list[str], first: list[hangs.Suspect]) -> Route:
    if nodes:
        return Route(
            "node-hardware",
            "hyperpod-node-debugger § G",
            f"the ranks that stopped first ran on {', '.join(nodes)}: check its GPUs (dmesg Xids, ECC), EFA and NCCL "
            "there and drain it if they fail; if they are clean, look at what those ranks ran instead (py-spy)",
        )
    if first:
        who = ", ".join(dict.fromkeys(s.who for s in first[:6]))
        return Route(
            RULE.route.owner,
            RULE.route.target,
            f"{who} stopped first: find the host it ran on (NCCL_DEBUG=INFO prints each rank's host, RAS its "
            "node) and check its GPUs and EFA there; then what it ran instead (py-spy, flight recorder)",
        )
    return RULE.route
