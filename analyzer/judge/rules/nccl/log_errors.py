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
PyTorch's heartbeat monitor (the watchdog itself stuck) is WATCHDOG_HANG, a warning.  PyTorch's watchdog
timeouts (a hung job) are nccl.collective.hung's: one finding per hang, with the flight-recorder dumps and
NCCL RAS reports of the same job.  Reference: docs/sources.md#nccl-log-patterns, #job-logs.
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
    version=3,  # 2: training job logs' NCCL lines and PyTorch's NCCL errors; 3: watchdog timeouts -> nccl.collective.hung
    title="NCCL warnings and errors in logs, PyTorch NCCL errors",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("nccl_log_event", "nccl_run.nccl_log_lines", "job_log_event"),
    passed="no NCCL warning or error in the logs",
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
    ctx.saw(job.job_nodes(ctx, index))  # the nodes whose ranks the job logs cover
