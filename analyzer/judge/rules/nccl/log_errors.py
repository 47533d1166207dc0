"""NCCL WARN lines and error patterns in NCCL / nccl-tests logs, one finding per node (or host) and code.

Why it matters: NCCL logs name the failing layer — ``unhandled system error`` (GPU/EFA hardware),
``Cuda failure``, ``Watchdog timeout`` (a collective hung: straggler or dead peer), ``fi_getinfo
failed`` (EFA unusable), rendezvous and connect failures (security groups, DNS).  SYSTEM_ERROR,
CUDA_ERROR and WATCHDOG_TIMEOUT are critical; other codes are warnings.  TCP fallback has its own rule
(nccl.transport.tcp_fallback).  False positives: a WARN in a job that later recovered still shows —
the count and first line say how much there was.  Reference: docs/sources.md#nccl-log-patterns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals.nccl import node_rows

RULE = RuleInfo(
    id="nccl.log.errors",
    title="NCCL warnings and errors in logs",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("nccl_log_event", "nccl_run.nccl_log_lines"),
    passed="no NCCL warning or error in the logs",
    route=Route("nccl-network", "hyperpod-nccl error-patterns-quick-ref", "look up the code's fix"),
    severity_reason=(
        "Critical for unhandled system errors, CUDA failures and watchdog timeouts, which mean a GPU or EFA "
        "fault or a hung collective that stopped the job; other NCCL warnings (rendezvous, connect, DNS) are "
        "warnings. Source: HyperPod NCCL error-patterns quick reference (awslabs/agent-plugins)."
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
    rows = ctx.rows(
        f"""
        SELECT bundle_id, node, source_file, line, host, level, code, message FROM nccl_log_event
        WHERE level IN ('WARN', 'ERROR') AND code NOT IN {SKIPPED_CODES}
        ORDER BY bundle_id, source_file, line
        """
    )
    index = HostIndex(node_rows(ctx))
    groups: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for r in rows:
        who = index.match(r["host"]) or r["host"] or r["node"]
        groups.setdefault((who, r["code"]), []).append(r)
    for (who, code), hits in groups.items():
        first = hits[0]
        severity = Severity.CRITICAL if code in CRITICAL_CODES else Severity.WARNING
        files = sorted({h["source_file"] for h in hits})
        message = (
            f"NCCL logged {code} {len(hits)}x on {who or 'an unnamed host'}; first: {first['message'][:200]}"
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
