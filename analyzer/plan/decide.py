"""The action one finding calls for: its rule's catalogued action, refined by what the finding says.

The catalog (``analyzer/plan/actions.toml``) gives each rule's action at each severity; a few rules say
more in their params than their severity does, and :data:`REFINE` reads it: the Xid catalog's bucket of
the code (``gpu.xid``), the action the driver names (``gpu.recovery_action.required``), HyperPod's own
label (``host.deep_health.failed``), nvidia-smi's answer, the kernel-log family, the DCGM test category,
a GPU gone from the PCI bus, Fabric Manager never installed.  A refinement never makes a finding below
critical disruptive: :func:`decide` holds every disruptive action to a critical finding.

>>> from analyzer.judge.findings import Finding, Route, Severity
>>> route = Route("node-hardware", "runbook", "act")
>>> xid = lambda code, bucket, sev=Severity.CRITICAL, **p: Finding(
...     "gpu.xid", 3, sev, "n1", 0, "m", {"xid": code, "immediate": bucket, **p}, route)
>>> decide(xid(79, "RESTART_BM")).action, decide(xid(48, "WORKFLOW_XID_48")).action
('reboot', 'reset-gpu')
>>> decide(xid(13, "RESTART_APP", Severity.WARNING)).action
'investigate'
>>> decide(xid(48, "WORKFLOW_XID_48", Severity.WARNING, boot=-1, boots=[-1])).action
'monitor'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analyzer.judge.findings import Finding, Severity
from analyzer.model.plan import DISRUPTIVE
from analyzer.plan.catalog import RuleAction, entry_for


@dataclass(frozen=True)
class Decision:
    """What one finding asks for."""

    action: str
    why: str
    #: the action when the same fault is back after a reboot
    then: str | None
    #: the finding says the hardware is gone: replace needs no reboot first
    hardware: bool
    #: what tells this fault from the rule's others (for the history)
    fault: tuple[Any, ...]
    #: the earlier boots (-1, -2 ...) a finding logged only before the last reboot is of; () otherwise
    earlier_boots: tuple[int, ...] = ()
    #: the fault recurred in this boot where NVIDIA's investigatory action is the hardware's (an Xid the
    #: catalog escalates on recurrence): "back" when it came back in between (a GPU off the bus answers
    #: again only after a reset), "repeated" when no reset is seen between; "" otherwise
    recurred: str = ""


Refinement = tuple[str, str] | None  # (action, why) or None: the catalog's own
Refiner = Callable[[Finding, RuleAction], Refinement]


def fault_of(f: Finding, entry: RuleAction) -> tuple[Any, ...]:
    """What tells this finding's fault from the rule's others: the rule and its ``same_fault`` params."""
    return (f.rule, *(str(f.params.get(k)) for k in entry.same_fault))


def decide(f: Finding, entry: RuleAction | None = None) -> Decision:
    """The action one finding calls for, with why, at its severity."""
    entry = entry or entry_for(f.rule)
    worst = _worst(f, entry)
    action = entry.at(f.severity.value, worst)
    why = entry.why
    if f.severity.value != worst and Severity(worst).rank < f.severity.rank:
        why = f"a {f.severity.value} of a rule whose worst is {worst}: {f.route.action}"
    refine = REFINE.get(f.rule)
    refined = refine(f, entry) if refine is not None else None
    if refined is not None:
        action, why = refined
    boots = _earlier_boots(f)
    if boots and action not in ("none",):
        action, why = (
            "monitor",
            (
                f"logged only before the node's last reboot ({_boots(boots)}): the reboot since did what the "
                "immediate action asks; it is the history of the same fault in this boot"
            ),
        )
    if action in DISRUPTIVE and f.severity != Severity.CRITICAL:
        action, why = (
            "investigate",
            f"{why} (the finding is a {f.severity.value}: no disruptive action on it)",
        )
    return Decision(
        action=action,
        why=why,
        then=entry.then,
        hardware=entry.hardware and action == "replace",
        fault=fault_of(f, entry),
        earlier_boots=boots,
        recurred=_recurred(f, action, boots),
    )


#: Xid investigatory buckets that name the hardware when the Xid recurs (analyzer/judge/xid_catalog.py)
_HARDWARE_INVESTIGATION = ("CONTACT_SUPPORT", "WORKFLOW_XID_48")


def _recurred(f: Finding, action: str, boots: tuple[int, ...]) -> str:
    """Whether the finding says its fault recurred in this boot (the Xid catalog's recurrence)."""
    if boots or action not in DISRUPTIVE or f.params.get("recurring") is not True:
        return ""
    if f.params.get("investigatory") not in _HARDWARE_INVESTIGATION:
        return ""
    return "back" if f.rule == "gpu.xid.fallen_off_bus" else "repeated"


def _worst(f: Finding, entry: RuleAction) -> str:  # noqa: ARG001 - one signature for every lookup
    """The worst severity of the finding's rule (the engine's RuleInfo; critical for a rule not loaded)."""
    from analyzer.plan.rules import worst_severity

    return worst_severity(f.rule)


def _earlier_boots(f: Finding) -> tuple[int, ...]:
    boots = f.params.get("boots")
    if isinstance(boots, list) and boots:
        return tuple(sorted({int(b) for b in boots if isinstance(b, int) and b < 0}))
    boot = f.params.get("boot")
    return (int(boot),) if isinstance(boot, int) and boot < 0 else ()


def _boots(boots: tuple[int, ...]) -> str:
    return ("boot " if len(boots) == 1 else "boots ") + ", ".join(str(b) for b in boots)


# --- refinements -------------------------------------------------------------------------------------

#: the Xid catalog's immediate bucket -> the plan's action (NVIDIA Xid catalog; analyzer/judge/xid_catalog.py)
XID_BUCKETS: dict[str, tuple[str, str]] = {
    "RESET_GPU": ("reset-gpu", "NVIDIA's immediate action for this Xid is a GPU reset (RESET_GPU)"),
    "WORKFLOW_XID_48": (
        "reset-gpu",
        "NVIDIA's Xid 48 workflow: reset the GPU (the reset also activates a pending row remap), then field "
        "diagnostics",
    ),
    "WORKFLOW_NVLINK_ERR": (
        "reset-gpu",
        "NVIDIA's NVLink error workflow: a GPU reset or node reboot is needed",
    ),
    "RESTART_BM": ("reboot", "NVIDIA's immediate action for this Xid is to restart the machine (RESTART_BM)"),
    "RESTART_VM": ("reboot", "NVIDIA's immediate action is to restart the VM that owns the GPU (RESTART_VM)"),
    "CHECK_MECHANICALS": (
        "replace",
        "NVIDIA's immediate action is to check the GPU's seating and power connections (CHECK_MECHANICALS): "
        "on HyperPod the hardware is AWS's, so the instance is replaced",
    ),
    "RESTART_APP": (
        "investigate",
        "NVIDIA's action is to restart the application (RESTART_APP): no GPU reset or reboot is needed",
    ),
    "UPDATE_SWFW": ("fix-config", "NVIDIA's action is to update the driver and firmware (UPDATE_SWFW)"),
    "CHECK_UVM": ("investigate", "NVIDIA's action applies only where UVM or vGPU is in use (CHECK_UVM)"),
    "CONTACT_SUPPORT": (
        "investigate",
        "NVIDIA's action is to contact support (CONTACT_SUPPORT): open a case with the bundle",
    ),
    "XID_154_EVAL": ("investigate", "NVIDIA's action depends on the Xid 154 on this GPU (XID_154_EVAL)"),
    "WORKFLOW_NVLINK5_ERR": (
        "investigate",
        "the NVLink5 payload does not decode with NVIDIA's table: decode it before acting",
    ),
    "WORKFLOW_XID_45": ("none", "Xid 45 is cleanup after another error: follow that one"),
    "IGNORE": ("none", "NVIDIA's action for this Xid is none (IGNORE)"),
    "UNUSED": ("investigate", "an Xid NVIDIA marks unused on Ampere and later: contact support if seen"),
}


def _xid(f: Finding, entry: RuleAction) -> Refinement:
    code = f.params.get("xid")
    if code == 154:  # it names the action in its own words (the route the rule wrote from them)
        words = f.route.action.lower()
        if "reboot the node" in words:
            return "reboot", "the driver's Xid 154 names a node reboot"
        if "reset the gpu" in words:
            return "reset-gpu", "the driver's Xid 154 names a GPU reset"
        return "investigate", "the driver's Xid 154 names no reset or reboot"
    bucket = f.params.get("immediate")
    if isinstance(bucket, str) and bucket in XID_BUCKETS:
        return XID_BUCKETS[bucket]
    return None


_RECOVERY: dict[str, tuple[str, str]] = {
    "gpu reset": ("reset-gpu", "the driver's GPU Recovery Action is GPU Reset"),
    "drain and reset": (
        "reset-gpu",
        "the driver's GPU Recovery Action is Drain and Reset: drain, then reset",
    ),
    "node reboot": ("reboot", "the driver's GPU Recovery Action is Node Reboot"),
    "drain p2p": (
        "investigate",
        "the driver's GPU Recovery Action is Drain P2P: stop peer-to-peer traffic, then collect again (the "
        "driver then names the next action)",
    ),
}


def _recovery(f: Finding, entry: RuleAction) -> Refinement:
    name = f.params.get("action")
    return _RECOVERY.get(name) if isinstance(name, str) else None


def _smi(f: Finding, entry: RuleAction) -> Refinement:
    answers = f.params.get("answers") or []
    if f.severity == Severity.CRITICAL and answers == ["reset-required"]:
        return "reset-gpu", "nvidia-smi reports a GPU that needs a reset"
    return None


def _deep_health(f: Finding, entry: RuleAction) -> Refinement:
    value = str(f.params.get("value") or "").strip().lower()
    if value == "unschedulablependingreplacement":
        return (
            "replace",
            "HyperPod's health checks marked the node for replacement (UnschedulablePendingReplacement)",
        )
    if value == "unschedulablependingreboot":
        return (
            "investigate",
            "HyperPod marked the node for a reboot (UnschedulablePendingReboot): with automatic node recovery "
            "it does it itself; check it did",
        )
    return None


#: kernel-log families whose fault is not the node's own hardware
_KERNEL_FAMILIES: dict[str, tuple[str, str]] = {
    "lustre": ("investigate", "a Lustre client fault: the file system or the path to it, not the node"),
    "nfs": ("investigate", "an NFS fault: the server or the path to it, not the node"),
    "gpu_stack": (
        "investigate",
        "the GPU communication stack (nvidia-peermem, NCCL): look up the error's fix",
    ),
    "cpu": ("investigate", "CPU throttling: check cooling before acting on the node"),
    "os": ("fix-config", "an operating-system limit: raise it or find what leaks"),
}


def _kernel(f: Finding, entry: RuleAction) -> Refinement:
    family = f.params.get("family")
    return _KERNEL_FAMILIES.get(family) if isinstance(family, str) else None


def _count(f: Finding, entry: RuleAction) -> Refinement:
    counts = f.params.get("counts") or {}
    expected = f.params.get("expected")
    on_bus = counts.get("lspci") if isinstance(counts, dict) else None
    if isinstance(on_bus, dict):
        on_bus = on_bus.get("count")
    if (
        f.severity == Severity.CRITICAL
        and isinstance(expected, int)
        and isinstance(on_bus, int)
        and on_bus < expected
    ):
        return "replace", (
            f"the PCI bus itself lists {on_bus} of the instance type's {expected} GPUs: the GPU is gone from "
            "the bus, which no reboot brings back"
        )
    return None


def _dcgm(f: Finding, entry: RuleAction) -> Refinement:
    category = str(f.params.get("category") or "").lower()
    if category.startswith("deploy"):
        return (
            "fix-config",
            "a DCGM Deployment test failed: a configuration (persistence mode, a busy GPU), not the hardware",
        )
    return None


def _fabric(f: Finding, entry: RuleAction) -> Refinement:
    if f.params.get("load_state") == "not-found" or f.params.get("active_state") == "inactive":
        return (
            "fix-config",
            "Fabric Manager is not installed or not started: install and enable nvidia-fabricmanager",
        )
    return None


REFINE: dict[str, Refiner] = {
    "gpu.xid": _xid,
    "gpu.recovery_action.required": _recovery,
    "gpu.smi.unreachable": _smi,
    "host.deep_health.failed": _deep_health,
    "host.kernel.fault": _kernel,
    "gpu.count.low": _count,
    "gpu.dcgm.failed": _dcgm,
    "gpu.fabric.state": _fabric,
}


def hardware_gone(f: Finding, d: Decision) -> bool:
    """The finding itself says the hardware is gone: a replace needs no reboot first."""
    if d.action != "replace":
        return False
    if d.hardware:
        return True
    refined = REFINE.get(f.rule)
    return refined is not None and refined(f, entry_for(f.rule)) is not None and f.rule in _HARDWARE_REFINED


#: rules whose refinement to replace is itself the hardware's verdict
_HARDWARE_REFINED = frozenset({"gpu.xid", "host.deep_health.failed", "gpu.count.low"})
