"""NCCL warnings and errors in NCCL and job logs, one finding per node (or host) and code; PyTorch's NCCL
watchdog timeouts, one finding per hung job.

Why it matters: NCCL logs name the failing layer — ``unhandled system error`` (GPU/EFA hardware),
``Cuda failure``, ``Watchdog timeout`` (a collective hung: straggler or dead peer), ``fi_getinfo
failed`` (EFA unusable), rendezvous and connect failures (security groups, DNS).  SYSTEM_ERROR,
CUDA_ERROR and WATCHDOG_TIMEOUT are critical; other codes are warnings.  TCP fallback has its own rule
(nccl.transport.tcp_fallback).  False positives: a WARN in a job that later recovered still shows —
the count and first line say how much there was.

A training job's log (parsers/job_log.py) feeds the same rule: its NCCL lines are read as any NCCL log's,
PyTorch's own NCCL errors (``NCCL error in: ..., unhandled system error``) join the code they name, and
PyTorch's heartbeat monitor (the watchdog itself stuck) is WATCHDOG_HANG, a warning.  A watchdog timeout
(``Watchdog caught collective operation timeout``) means the job hung: one critical finding per job (the logs
of one folder) names the collective, its SeqNum, the timeout, when the hang began (the line's time minus
"ran for") and, first, the ranks whose last completed work lags the others' in the same process group
(analyzer.judge.signals.job), with their hosts and nodes; it lies on the lagging ranks' node when they all
ran on one, else it is cluster-wide.  Reference: docs/sources.md#nccl-log-patterns, #job-logs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals import job
from analyzer.judge.signals.nccl import node_rows

RULE = RuleInfo(
    id="nccl.log.errors",
    version=2,  # 2: training job logs (their NCCL lines, PyTorch's NCCL errors and watchdog timeouts)
    title="NCCL warnings and errors in logs, PyTorch NCCL watchdog timeouts",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("nccl_log_event", "nccl_run.nccl_log_lines", "job_log_event"),
    passed="no NCCL warning, error or watchdog timeout in the logs",
    route=Route("nccl-network", "hyperpod-nccl error-patterns-quick-ref", "look up the code's fix"),
    severity_reason=(
        "Critical for unhandled system errors, CUDA failures and watchdog timeouts, which mean a GPU or EFA "
        "fault or a hung collective that stopped the job; other NCCL warnings (rendezvous, connect, DNS) and "
        "PyTorch's stuck-watchdog monitor are warnings. Source: HyperPod NCCL error-patterns quick reference "
        "(awslabs/agent-plugins); PyTorch ProcessGroupNCCL's watchdog messages."
    ),
)

#: Codes that point at hardware or a hung collective (docs/sources.md#nccl-log-patterns: node hardware).
CRITICAL_CODES = ("SYSTEM_ERROR", "CUDA_ERROR", "WATCHDOG_TIMEOUT")
#: Informative codes and the TCP fallback (its own rule) are not errors here.
SKIPPED_CODES = ("TCP_FALLBACK", "OFI_EFA", "NCCL_VERSION", "NCCL_VERSION_MISMATCH")  # own rules report these
HARDWARE = Route(
    "node-hardware", "hyperpod-node-debugger § G", "check dmesg Xids on the node; reboot or replace"
)
HUNG = Route(
    "nccl-network",
    "hyperpod-nccl error-patterns-quick-ref",
    "the job hung in a collective: find the rank that never entered it or stalled (flight recorder, py-spy), "
    "then its node; raise the timeout only for a step known to be slow",
)


def check(ctx: Context) -> Iterable[Finding]:
    index = HostIndex(node_rows(ctx))
    hosts = job.rank_hosts(ctx)
    rows = ctx.rows(
        f"""
        SELECT bundle_id, node, source_file, line, host, NULL AS rank, code, message, 'NCCL' AS said_by
        FROM nccl_log_event WHERE level IN ('WARN', 'ERROR') AND code NOT IN {SKIPPED_CODES}
        UNION ALL
        SELECT bundle_id, node, source_file, line, host, rank,
               CASE WHEN kind = 'watchdog_hang' THEN 'WATCHDOG_HANG' ELSE code END, message, 'PyTorch'
        FROM job_log_event WHERE kind IN ('nccl_error', 'watchdog_hang')
        ORDER BY bundle_id, source_file, line
        """
    )
    groups: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for r in rows:
        host = job.host_of(r, hosts) if r["rank"] is not None else r["host"]
        r["host"] = host
        who = index.match(host) or host or r["node"]
        groups.setdefault((who, r["code"]), []).append(r)
    for (who, code), hits in groups.items():
        first = hits[0]
        severity = Severity.CRITICAL if code in CRITICAL_CODES else Severity.WARNING
        files = sorted({h["source_file"] for h in hits})
        message = (
            f"{first['said_by']} logged {code} {len(hits)}x on {who or 'an unnamed host'}; first: "
            f"{first['message'][:200]}"
        )
        yield RULE.finding(
            severity=severity,
            node=who,
            message=message,
            params={
                "code": code,
                "count": len(hits),
                "host": first["host"],
                "first_message": first["message"][:200],
                "files": files,
            },
            route=HARDWARE if code in ("SYSTEM_ERROR", "CUDA_ERROR") else RULE.route,
            evidence=[ctx.evidence(first["source_file"], first["line"])],
            bundle_id=first["bundle_id"],
            key=(code,),
        )
    for hang in job.hangs(ctx, index):
        yield _hang_finding(ctx, hang)
    ctx.saw(job.job_nodes(ctx, index))  # the nodes whose ranks the job logs cover


def _hang_finding(ctx: Context, hang: job.Hang) -> Finding:
    label, op, seq, ranks = hang.works[0]
    first = min(hang.timeouts, key=lambda t: t.line)
    timeout = next((t.timeout_ms for t in hang.timeouts if t.timeout_ms), None)
    starts = [b for t in hang.timeouts if (b := job.began(vars(t)))]
    suspects = hang.suspect_nodes
    node = suspects[0] if len(suspects) == 1 else None
    work = f"{op or 'a collective'} SeqNum {seq if seq is not None else '?'}" + (
        f" in {label}" if label else ""
    )
    ordered = hang.lagging + [t for t in hang.timeouts if t not in hang.lagging]  # the lagging first
    parts = [
        f"PyTorch's NCCL watchdog timed out {work}"
        + (f" after {timeout / 1000:g} s" if timeout else "")
        + f" on {len(ranks)} rank(s) in {hang.folder}"
    ]
    if hang.lagging:
        group = hang.lagging[0].group
        top = max(t.completed for t in hang.timeouts if t.completed is not None and t.group == group)
        lag = ", ".join(
            f"{t.where()} (timed out on SeqNum {t.seq}, last completed {t.completed})" for t in hang.lagging
        )
        parts.append(f"lagging: {lag}, the others completed {top}")
    if hang.not_entered:
        silent = ", ".join(f"{s.who} (last enqueued {s.last_enqueued})" for s in hang.not_entered)
        parts.append(f"never entered SeqNum {seq}: {silent}")
    named = list(dict.fromkeys(t.where() for t in ordered))
    shown = ", ".join(named[:16]) + (" ..." if len(named) > 16 else "")
    parts.append(f"ranks: {shown}")
    others = [w for w in hang.works[1:] if not all(t in hang.lagging for t in w[3])]  # lag said above
    if others:
        parts.append(
            "also timed out: "
            + "; ".join(f"{w_op or 'a collective'} SeqNum {w_seq} ({w_label or 'group not named'}, "
                        f"{len(w_ranks)} rank(s))" for w_label, w_op, w_seq, w_ranks in others[:4])
        )  # fmt: skip
    if hang.unnamed_groups:
        parts.append("the log names no process group for some of them: their ranks were not compared")
    if starts:
        parts.append(f"the hang began about {min(starts)}")
    evidence = []
    for t in ordered[:3]:
        evidence.append(ctx.evidence(t.source_file, t.line))
        if t.status_line is not None and len(evidence) < 4:
            evidence.append(ctx.evidence(t.source_file, t.status_line))
    for s in hang.not_entered[:2]:
        evidence.insert(0, ctx.evidence(s.source_file, s.line))
    return RULE.finding(
        node=node,
        message="; ".join(parts),
        params={
            "code": "WATCHDOG_TIMEOUT",
            "collective": op,
            "seq_num": seq,
            "process_group": label,
            "timeout_ms": timeout,
            "ran_for_ms": max((t.ran_for_ms for t in ranks if t.ran_for_ms is not None), default=None),
            "began": min(starts) if starts else None,
            "ranks": [_rank(t) for t in ordered],
            "lagging": [_rank(t) for t in hang.lagging],
            "never_entered": [
                {
                    "rank": s.rank,
                    "pg_rank": s.pg_rank,
                    "host": s.host,
                    "node": s.node,
                    "last_enqueued": s.last_enqueued,
                }
                for s in hang.not_entered
            ],  # fmt: skip
            "nodes": hang.nodes,
            "files": sorted({t.source_file for t in hang.timeouts}),
            "first_line": first.line,
        },
        route=_route(node, suspects, hang),
        evidence=evidence[:6],
        bundle_id=hang.bundle_id,
        key=("WATCHDOG_TIMEOUT", hang.folder, label, seq),
    )


def _rank(t: job.RankTimeout) -> dict[str, Any]:
    return {
        "rank": t.rank, "pg_rank": t.pg_rank, "host": t.host, "node": t.node, "collective": t.op,
        "seq_num": t.seq, "last_enqueued": t.last_enqueued, "last_completed": t.last_completed,
        "ran_for_ms": t.ran_for_ms,
    }  # fmt: skip


def _route(node: str | None, suspects: list[str], hang: job.Hang) -> Route:
    if not suspects and hang.lagging:  # behind, but the log does not say where they ran
        behind = ", ".join(dict.fromkeys(t.who for t in hang.lagging))
        return Route(
            HUNG.owner,
            HUNG.target,
            f"{behind} completed fewer collectives than the others: find the host it ran on (NCCL_DEBUG=INFO "
            "prints each rank's host) and check its GPUs and EFA there; then what it ran instead (py-spy, "
            "flight recorder)",
        )
    if not suspects:
        return HUNG
    where = node or ", ".join(suspects)
    return Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        f"the lagging ranks ran on {where}: check its GPUs (dmesg Xids, ECC), EFA and NCCL there and drain it if "
        "they fail; if they are clean, look at what those ranks ran instead of the collective (py-spy, flight recorder)",
    )
