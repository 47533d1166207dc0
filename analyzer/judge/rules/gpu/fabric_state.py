"""NVSwitch fabric not ready: Fabric Manager failed, or a GPU's fabric state is not Completed/Success.

Why it matters: on NVSwitch systems (HGX H100/H200, p4d/p5 family) GPUs cannot talk over NVLink until
Fabric Manager has programmed the switches; until then CUDA init fails or jobs hang (NVML API
reference, NVIDIA/NVSentinel#883: states Not Started -> In Progress -> Completed, status Success;
docs/sources.md#nvlink-fabric).
A node counts as an NVSwitch system when ``nvidia-smi -q`` prints a Fabric state (not N/A) or a
``systemctl status nvidia-fabricmanager`` unit is loaded.  Critical: a GPU fabric state not Completed
or status not Success; the service's own fabric log not Completed/Success; the service failed or
inactive on a node whose GPUs report a fabric.  The service failed/inactive on a node without
``nvidia-smi -q`` output is a warning (the fabric cannot be checked); on a node whose GPUs print no
fabric (not an NVSwitch system), nothing is reported.  Where the unit is not found ("Unit
nvidia-fabricmanager.service could not be found", read by the fabricmanager parser or from the probe's
failure answer) on an instance type that is an NVSwitch system (``sku.toml`` ``nvswitch``), that is
critical: without the service CUDA cannot start on those GPUs; elsewhere it is no finding.
Fabric Manager failed or inactive on an NVSwitch instance type (``sku.toml`` ``nvswitch``: p4d, p4de, p5,
p5e, p5en, p6-b200) is critical whether or not the GPUs print a fabric (older drivers, a CSV or the plain
table only); where the node's GPUs otherwise read healthy (every fabric Completed/Success, no uncorrectable
ECC, no error value in place of a reading) the finding says so: those readings cannot be trusted for
multi-GPU work, since new CUDA jobs fail to start ("system not yet initialized", cudaErrorSystemNotReady) and
NVLink peer-to-peer does not work until Fabric Manager runs (NVIDIA Fabric Manager user guide;
NVIDIA/nccl-tests#264: eight H100s that nvidia-smi showed healthy, CUDA failing until Fabric Manager was
enabled).  On an instance type without NVSwitches Fabric Manager is not needed: its state is no finding.
Settling: a fabric "In Progress" or "Not Started" on a node collected within ``settle_minutes`` of its
boot (analyzer.judge.signals.boot) is Fabric Manager still programming the switches: info, with the boot
time, not a fault (NVSentinel's health monitors learned the same: docs/sources.md#boot-settling).
False positives: none known.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.boot import settling_nodes
from analyzer.judge.signals.gpus import gpu_states

RULE = RuleInfo(
    id="gpu.fabric.state",
    node_local=True,
    title="NVSwitch fabric not ready",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("gpu.fabric_state", "service_state.unit", "probe_answer.family=fabricmanager"),
    passed="NVSwitch fabric completed; Fabric Manager not failed",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "restart nvidia-fabricmanager; reboot, then replace"
    ),
    severity_reason=(
        "On an NVSwitch system CUDA cannot use the GPUs until Fabric Manager has programmed the switches, so "
        "a fabric not Completed/Success or a failed or missing Fabric Manager stops every job, even where "
        "the GPUs read healthy; warning when the service failed, the fabric cannot be read and the instance "
        "type is not known to have NVSwitches, info within the settle window after a boot. "
        "Source: NVIDIA Fabric Manager user guide, NVML API reference (fabric state) and "
        "NVIDIA/NVSentinel#883, NVIDIA/nccl-tests#264."
    ),
)

_OK_STATE, _OK_STATUS = "completed", "success"


def _bad(state: str | None, status: str | None) -> bool:
    return (state or "").lower() != _OK_STATE or (status is not None and status.lower() != _OK_STATUS)


def _coming_up(states: Iterable[str | None]) -> bool:
    """Every state is one a fabric passes through after a boot (not a failure)."""
    return all((s or "").lower() in ("in progress", "not started") for s in states)


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
    settling = settling_nodes(ctx)
    for (bundle_id, node), rows in bad_gpus.items():
        states = sorted({f"{r['fabric_state']}/{r['fabric_status']}" for r in rows})
        boot = settling.get(bundle_id) if _coming_up(r["fabric_state"] for r in rows) else None
        yield RULE.finding(
            severity=Severity.INFO if boot else None,
            node=node,
            message=f"{node}: fabric not ready on {len(rows)} GPU(s) "
            f"({', '.join(str(r['gpu']) for r in rows)}): state/status {', '.join(states)}"
            + (f" — settling: {boot.describe()}; collect again once it has been up longer" if boot else ""),
            params={
                "gpus": [r["gpu"] for r in rows],
                "states": states,
                "settling": boot is not None,
                "boot_utc": boot.boot_utc if boot else None,
            },
            evidence=[ctx.evidence(r["source_file"], r["fabric_line"]) for r in rows[:3]],
            bundle_id=bundle_id,
            key=("gpu",),
        )
    services = ctx.rows(
        """SELECT s.*, n.instance_type FROM service_state s JOIN node n USING (bundle_id)
           WHERE s.unit LIKE 'nvidia-fabricmanager%'
           AND coalesce(s.load_state, '') NOT IN ('not-found', 'masked') ORDER BY s.node"""
    )
    for r in services:
        where = (r["bundle_id"], r["node"])
        evidence = [ctx.evidence(r["source_file"], r["line"])]
        active = (r["active_state"] or "").lower()
        nvswitch = bool((ctx.settings.instance(r["instance_type"]) or {}).get("nvswitch"))
        if active in ("failed", "inactive") and (where in fabric_nodes or where not in gpu_nodes or nvswitch):
            sev = Severity.CRITICAL if where in fabric_nodes or nvswitch else Severity.WARNING
            healthy = _healthy_readings(ctx, where, bad_gpus)
            message = (
                f"{r['node']}: nvidia-fabricmanager is {active} ({r['sub_state']}, result {r['result']})"
            )
            if where not in fabric_nodes:
                message += (
                    f" on {r['instance_type']}, an NVSwitch system; its GPUs print no fabric state"
                    if nvswitch
                    else "; no GPU fabric state in the bundle to confirm the impact"
                )
            if healthy:
                message += (
                    f"; its {healthy} GPU(s) read healthy, but those readings cannot be trusted for multi-GPU "
                    "work: new CUDA jobs fail to start (system not yet initialized) and NVLink peer-to-peer "
                    "does not work until Fabric Manager runs"
                )
            yield RULE.finding(
                severity=sev,
                node=r["node"],
                message=message,
                params={
                    "active_state": active,
                    "sub_state": r["sub_state"],
                    "result": r["result"],
                    "gpus_report_fabric": where in fabric_nodes,
                    "nvswitch_type": nvswitch,
                    "gpus_read_healthy": healthy,
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
    yield from _not_installed(ctx)


def _healthy_readings(
    ctx: Context, where: tuple[str, str], bad_gpus: dict[tuple[str, str], list[dict[str, Any]]]
) -> int:
    """How many GPUs the node lists when every one of them reads healthy (fabric Completed/Success where
    printed, no uncorrectable ECC, no error value in place of a reading); 0 otherwise."""
    if where in bad_gpus:
        return 0
    states = [s for s in gpu_states(ctx) if (s.bundle_id, s.node) == where]
    if any(s.get("ecc_uncorrected_volatile") or s.get("ecc_uncorrected_aggregate") for s in states):
        return 0
    errors = ctx.rows(
        "SELECT 1 FROM gpu WHERE bundle_id = ? AND node = ? AND error_values IS NOT NULL LIMIT 1", *where
    )
    return 0 if errors else len(states)


def _not_installed(ctx: Context) -> Iterable[Finding]:
    """The Fabric Manager unit is not found on an NVSwitch instance type."""
    rows = ctx.rows(
        """SELECT s.bundle_id, s.node, n.instance_type, s.source_file, s.line
           FROM service_state s JOIN node n USING (bundle_id)
           WHERE s.unit LIKE 'nvidia-fabricmanager%' AND s.load_state = 'not-found'
           UNION ALL
           SELECT a.bundle_id, a.node, n.instance_type, a.source_file, a.line
           FROM probe_answer a JOIN node n USING (bundle_id)
           WHERE a.family = 'fabricmanager' AND a.answer = 'unit-not-found'
           ORDER BY 2"""
    )
    done: set[str] = set()
    for r in rows:
        sku = ctx.settings.instance(r["instance_type"]) or {}
        if not sku.get("nvswitch") or r["bundle_id"] in done:
            continue
        done.add(r["bundle_id"])
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']} ({r['instance_type']}, an NVSwitch system): the nvidia-fabricmanager "
            "service is not installed (unit not found); CUDA cannot use the GPUs over NVLink without it",
            params={"instance_type": r["instance_type"], "load_state": "not-found"},
            route=Route(
                "node-hardware",
                "hyperpod-node-debugger § F",
                "install nvidia-fabricmanager matching the driver version, start it, then re-check the fabric",
            ),
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=("not-installed",),
        )
