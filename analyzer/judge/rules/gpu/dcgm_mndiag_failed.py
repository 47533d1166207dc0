"""DCGM multi-node diagnostics (``dcgmi mndiag``) failed or warned on a host, or did not run to its end.

Why it matters: mndiag (mnubergemm) drives every GPU of the listed hosts and the links between them at
once; a GPU result Fail means that GPU raised a CUDA, NCCL or IMEX error under coordinated load, which a
single-node ``dcgmi diag`` may not show (NVIDIA DCGM multi-node diagnostics documentation;
docs/sources.md#dcgm).  Fail -> critical, Warn -> warning, one finding per host, mapped to its node bundle
by host name (analyzer.judge.hosts: full or short name, ``ip-a-b-c-d`` <-> ``a.b.c.d``).  A failing host
that matches no node bundle is still reported (no node), named in ``params.host``; every host of the
JSON that matches no bundle is listed in ``params.hosts_not_analyzed``.  Errors not tied to a GPU
(``global_errors``, a test's MPI error, dcgmi's ``runtime_error``) mean the run did not complete: one
cluster-wide warning.  False positives: an MPI or SSH set-up fault fails the run without any GPU fault;
those come as the cluster-wide finding, not on a node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex

RULE = RuleInfo(
    id="gpu.dcgm.mndiag_failed",
    title="DCGM multi-node diagnostic failed on a host",
    severity=Severity.CRITICAL,
    requires=("node", "dcgm_mndiag_run"),
    passed="every host of the DCGM multi-node diagnostic passed",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § G", "drain the node and rerun dcgmi diag -r 3 on it"
    ),
    severity_reason=(
        "A GPU that fails DCGM's multi-node diagnostic raised a CUDA, NCCL or IMEX error under coordinated "
        "load and cannot be trusted in a multi-node job; a Warn is a warning, and a run that did not complete "
        "(MPI or runtime error) is a warning for the cluster. Source: NVIDIA DCGM multi-node diagnostics "
        "documentation (mnubergemm results and failure conditions)."
    ),
)

_SEVERITY = {"fail": Severity.CRITICAL, "warn": Severity.WARNING}
SHOWN = 10


def check(ctx: Context) -> Iterable[Finding]:
    nodes = ctx.rows("SELECT bundle_id, node, hostname FROM node")
    index = HostIndex(nodes)
    bundle = {n["node"]: n["bundle_id"] for n in nodes}
    hosts = ctx.rows(
        "SELECT DISTINCT source_file, hostname, line FROM dcgm_mndiag_host WHERE hostname IS NOT NULL "
        "ORDER BY source_file, line"
    )
    matched = {h["hostname"]: index.match(h["hostname"]) for h in hosts}
    ctx.saw(n for n in matched.values() if n)
    outside = sorted({h for h, n in matched.items() if n is None})
    results = ctx.rows(
        """
        SELECT bundle_id, source_file, line, hostname, host_id, test, gpu, entity_id, status, message,
               error_id FROM dcgm_mndiag_result WHERE status IN ('fail', 'warn')
        ORDER BY source_file, line
        """
    )
    by_host: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_host.setdefault(r["hostname"] or f"host {r['host_id']}", []).append(r)
    for host, rows in by_host.items():
        node = matched.get(host) if host in matched else index.match(host)
        worst = "fail" if any(r["status"] == "fail" for r in rows) else "warn"
        gpus = sorted({r["gpu"] for r in rows if r["gpu"] is not None})
        detail = "; ".join(
            f"GPU {r['gpu'] if r['gpu'] is not None else r['entity_id']} {r['status']}"
            + (f": {r['message'][:200]}" if r["message"] else "")
            for r in rows[:SHOWN]
        )
        where = node if node else f"{host} (no node bundle of that name)"
        yield RULE.finding(
            severity=_SEVERITY[worst],
            node=node,
            gpu=gpus[0] if len(gpus) == 1 else None,
            message=f"{where}: DCGM multi-node diagnostic {rows[0]['test'] or ''} {worst}: {detail}",
            params={
                "host": host,
                "matched_node": node,
                "result": worst,
                "gpus": gpus,
                "test": rows[0]["test"],
                "error_ids": sorted({e for r in rows for e in (r["error_id"] or "").split(",") if e}),
                "detail": detail,
                "hosts_not_analyzed": outside[:SHOWN],
            },
            evidence=[ctx.evidence(r["source_file"], r["line"]) for r in rows[:SHOWN]],
            bundle_id=bundle.get(node, rows[0]["bundle_id"]) if node else rows[0]["bundle_id"],
            key=(host,),
        )
    errors = ctx.rows(
        "SELECT bundle_id, source_file, line, scope, hostname, message FROM dcgm_mndiag_error "
        "ORDER BY source_file, line"
    )
    if errors:
        first = errors[0]
        messages = list(dict.fromkeys(e["message"] or "" for e in errors))
        yield RULE.finding(
            severity=Severity.WARNING,
            node=None,
            message=f"DCGM multi-node diagnostic did not complete ({first['scope']} error): "
            + " | ".join(m[:200] for m in messages[:3]),
            params={
                "scopes": sorted({e["scope"] for e in errors}),
                "errors": [m[:300] for m in messages[:SHOWN]],
                "hosts": sorted({e["hostname"] for e in errors if e["hostname"]}),
                "hosts_not_analyzed": outside[:SHOWN],
            },
            route=Route(
                "node-hardware",
                "hyperpod-node-debugger § G",
                "fix the error the run names (MPI, SSH, host engine) and rerun dcgmi mndiag",
            ),
            evidence=[ctx.evidence(e["source_file"], e["line"]) for e in errors[:SHOWN]],
            bundle_id=first["bundle_id"],
            key=("errors",),
        )
