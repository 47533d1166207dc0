"""NVSwitch fabric not ready: Fabric Manager failed, or a GPU's fabric state is not Completed/Success.

Why it matters: on NVSwitch systems (HGX H100/H200, p4d/p5 family) GPUs cannot talk over NVLink until
Fabric Manager has programmed the switches; until then CUDA init fails or jobs hang (rules-facts
FM-STATE: NVML-FAB, NVS-883; states Not Started -> In Progress -> Completed, status Success).
A node counts as an NVSwitch system when ``nvidia-smi -q`` prints a Fabric state (not N/A) or a
``systemctl status nvidia-fabricmanager`` unit is loaded.  Critical: a GPU fabric state not Completed
or status not Success; the service's own fabric log not Completed/Success; the service failed or
inactive on a node whose GPUs report a fabric.  The service failed/inactive on a node without
``nvidia-smi -q`` output is a warning (the fabric cannot be checked); on a node whose GPUs print no
fabric (not an NVSwitch system), and where the unit is not found, nothing is reported.  False positives: none known.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.fabric.state",
    title="NVSwitch fabric not ready",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("gpu.fabric_state", "service_state.unit"),
    passed="NVSwitch fabric completed; Fabric Manager not failed",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "restart nvidia-fabricmanager; reboot, then replace"
    ),
)

_OK_STATE, _OK_STATUS = "completed", "success"


def _bad(state: str | None, status: str | None) -> bool:
    return (state or "").lower() != _OK_STATE or (status is not None and status.lower() != _OK_STATUS)


def check(ctx: Context) -> Iterable[Finding]:
    gpus = ctx.rows(
        """SELECT bundle_id, node, "index" AS gpu, pci, fabric_state, fabric_status, fabric_line, source_file
           FROM gpu WHERE fabric_state IS NOT NULL ORDER BY node, "index" """
    )
    fabric_nodes = {(r["bundle_id"], r["node"]) for r in gpus}
    gpu_nodes = {(r["bundle_id"], r["node"]) for r in ctx.rows("SELECT DISTINCT bundle_id, node FROM gpu")}
    bad_gpus: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in gpus:
        if _bad(r["fabric_state"], r["fabric_status"]):
            bad_gpus.setdefault((r["bundle_id"], r["node"]), []).append(r)
    for (bundle_id, node), rows in bad_gpus.items():
        states = sorted({f"{r['fabric_state']}/{r['fabric_status']}" for r in rows})
        yield RULE.finding(
            node=node,
            message=f"{node}: fabric not ready on {len(rows)} GPU(s) "
            f"({', '.join(str(r['gpu']) for r in rows)}): state/status {', '.join(states)}",
            params={"gpus": [r["gpu"] for r in rows], "states": states},
            evidence=[ctx.evidence(r["source_file"], r["fabric_line"]) for r in rows[:3]],
            bundle_id=bundle_id,
            key=("gpu",),
        )
    services = ctx.rows(
        """SELECT * FROM service_state WHERE unit LIKE 'nvidia-fabricmanager%'
           AND coalesce(load_state, '') NOT IN ('not-found', 'masked') ORDER BY node"""
    )
    for r in services:
        where = (r["bundle_id"], r["node"])
        evidence = [ctx.evidence(r["source_file"], r["line"])]
        active = (r["active_state"] or "").lower()
        if active in ("failed", "inactive") and (where in fabric_nodes or where not in gpu_nodes):
            sev = Severity.CRITICAL if where in fabric_nodes else Severity.WARNING
            yield RULE.finding(
                severity=sev,
                node=r["node"],
                message=f"{r['node']}: nvidia-fabricmanager is {active} ({r['sub_state']}, result {r['result']})"
                + (
                    ""
                    if where in fabric_nodes
                    else "; no GPU fabric state in the bundle to confirm the impact"
                ),
                params={
                    "active_state": active,
                    "sub_state": r["sub_state"],
                    "result": r["result"],
                    "gpus_report_fabric": where in fabric_nodes,
                },
                evidence=evidence,
                bundle_id=r["bundle_id"],
                key=("service",),
            )
        elif r["fabric_state"] is not None and _bad(r["fabric_state"], r["fabric_status"]):
            yield RULE.finding(
                node=r["node"],
                message=f"{r['node']}: Fabric Manager reports fabric state {r['fabric_state']}, "
                f"status {r['fabric_status']}",
                params={"fabric_state": r["fabric_state"], "fabric_status": r["fabric_status"]},
                evidence=evidence,
                bundle_id=r["bundle_id"],
                key=("service-fabric",),
            )
