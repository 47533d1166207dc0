"""Slurm has taken a node out of service: down, drained or draining, failed, or invalid, with its reason.

What it reads: ``sinfo`` (each node's state) and ``sinfo -R`` (the nodes out of service, with the
reason, who set it and when) as the node itself printed them: the HyperPod issue report runs both on
every Slurm node, so each node's own copy says the whole cluster's view, and the node is judged by the
lines that name it (matched by host name, analyzer.judge.hosts: Slurm names HyperPod nodes
``ip-a-b-c-d``, their host name).  One finding per node, quoting the reason and the lines that say it.

Why it matters: Slurm starts no job on such a node, so a job that needs it waits or runs short of
nodes; the reason says who took it out and why: ``Not responding`` (slurmd lost), ``Kill task failed``,
a health check's or an administrator's words (sinfo(1), NODE STATE CODES; HyperPod's health-monitoring
agent drains a faulty node with the action it asks for: docs/sources.md#health-checks).
Severity: warning (the node is out of service; whether it is broken is what its reason and the other
findings of the node say).  ``maint``, ``resv``, powered-down cloud nodes (``idle~``) and ``mix`` or
``alloc`` nodes are in service: nothing.
A node its own ``sinfo -R`` does not name is in service (the listing names every node out of
service).  Not examined: a node without sinfo, and one whose ``sinfo`` (without ``-R``) does not name it
(a login node, a cluster whose Slurm names are not host names).
False positives: a node drained on purpose for maintenance (its reason says so).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex

RULE = RuleInfo(
    id="host.slurm.unavailable",
    node_local=True,
    title="Slurm took the node out of service (down, drained, failed)",
    severity=Severity.WARNING,
    requires=("slurm_node_state",),
    passed="every node sinfo names is in service",
    route=Route(
        "scheduler", "hyperpod-node-debugger § F", "read the reason; fix or replace the node, then resume it"
    ),
    severity_reason=(
        "Slurm starts no job on a node that is down, drained, failing or invalid, so jobs wait or run short "
        "of nodes; the reason sinfo -R prints says why (a lost slurmd, a failed health check, an "
        "administrator). Source: Slurm sinfo(1) NODE STATE CODES; SageMaker HyperPod health-monitoring "
        "agent documentation (it drains faulty nodes)."
    ),
)
#: evidence lines quoted per finding
SHOWN = 3


def check(ctx: Context) -> Iterable[Finding]:
    nodes = {(n["bundle_id"], n["node"]): n for n in ctx.rows("SELECT bundle_id, node, hostname FROM node")}
    rows = ctx.rows(
        """SELECT bundle_id, node, slurm_node, state, base_state, unavailable, reason, "user", set_at,
                  partition, source, source_file, line
           FROM slurm_node_state ORDER BY bundle_id, node, source_file, line"""
    )
    carriers: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        carriers.setdefault((r["bundle_id"], r["node"]), [])
        if HostIndex([nodes.get((r["bundle_id"], r["node"]), {"node": r["node"]})]).match(r["slurm_node"]):
            carriers[(r["bundle_id"], r["node"])].append(r)
    reasons_listed = {(r["bundle_id"], r["node"]) for r in rows if r["source"] == "sinfo -R"}
    for (bundle_id, node), own in sorted(carriers.items()):
        if not own and (bundle_id, node) not in reasons_listed:
            ctx.not_judged(
                [node], "its sinfo does not name it (no sinfo -R, which would list it if it were out)"
            )
            continue
        ctx.saw([node])  # slurm_node_state is filled by no probe of ours: the rule says whom it judged
        found = [r for r in own if r["unavailable"]]
        if not found:
            continue
        states = sorted({r["base_state"] for r in found if r["base_state"]})
        reasons = list(dict.fromkeys(r["reason"] for r in found if r["reason"]))
        by = next((r for r in found if r["reason"]), None)
        lines = list(dict.fromkeys((r["source_file"], r["line"]) for r in found))
        said = "/".join(states) or "out of service"
        if reasons:
            said += ", reason " + "; ".join(repr(x) for x in reasons)
        if by is not None and (by["user"] or by["set_at"]):
            said += f" (set by {by['user'] or 'unknown'} at {by['set_at'] or 'unknown time'})"
        yield RULE.finding(
            node=node,
            message=f"{node}: Slurm has it {said}",
            params={
                "states": states,
                "reasons": reasons,
                "user": by["user"] if by else None,
                "set_at": by["set_at"] if by else None,
                "partitions": sorted({r["partition"] for r in found if r["partition"]}),
            },
            evidence=[ctx.evidence(f, ln) for f, ln in lines[:SHOWN]],
            bundle_id=bundle_id,
        )
