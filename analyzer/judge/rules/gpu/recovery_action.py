"""The driver says a GPU needs a recovery action: ``nvidia-smi -q``'s "GPU Recovery Action" is not None.

Why it matters: the NVIDIA driver sets the recovery action after an uncorrectable fault, and a GPU whose
action is not None cannot be trusted with work until the action is done, even when every other reading of
the node looks healthy (ECC counters can read 0 after a GSP fault).  NVIDIA's GPU memory error management
guide, "Error Recovery and Response Flags" (docs/sources.md#gpu-presence): Reset — terminate the GPU's
processes and reset it (``nvidia-smi -r``; on HyperPod a reboot of the node); Reboot — the fault may have
left the OS inconsistent, reboot the node; Drain P2P — quiesce all peer-to-peer traffic (the processes that
use it), then query again; Drain and Reset — drain the peer-to-peer traffic, then reset.  The values are
matched by their words ("GPU Reset", "Node Reboot" and the NVML names too); one finding per node and action,
naming its GPUs.  A value NVIDIA's list does not hold is a warning that says so.  "N/A" (a driver without the
field) and a dump without the key are not judged.  The Xid 154 line the driver logs when the action changes
is judged by gpu.xid; this rule reads the state the GPU is in when the bundle was collected.
False positives: none known; the action clears only when it has been done.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.recovery_action.required",
    node_local=True,
    title="GPU recovery action required by the driver",
    severity=Severity.CRITICAL,
    requires=("gpu.recovery_action",),
    passed="every GPU's recovery action is None",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "do the action the driver names"),
    severity_reason=(
        "The driver itself says the GPU needs a reset, a node reboot or a drain of its peer-to-peer traffic "
        "before it can run work again: critical; a value outside NVIDIA's list is a warning. Source: NVIDIA "
        "GPU memory error management guide, Error Recovery and Response Flags (the recovery action flag)."
    ),
)

#: action -> (words that name it, what to do); checked in this order ("drain and reset" before "reset").
_ACTIONS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "drain and reset",
        ("drain", "reset"),
        "stop the jobs that use peer-to-peer traffic on the node, then reset the GPU (a reboot on HyperPod)",
    ),
    (
        "drain p2p",
        ("drain",),
        "stop the jobs that use peer-to-peer traffic on the node, then collect again: the driver then names the "
        "next action",
    ),
    ("node reboot", ("reboot",), "reboot the node"),
    ("gpu reset", ("reset",), "stop the GPU's processes and reset it (nvidia-smi -r; a reboot on HyperPod)"),
)


def classify(value: str) -> tuple[str | None, str]:
    """The action a printed value names (None: not in NVIDIA's list) and what to do.

    >>> classify("Reset")[0], classify("Node Reboot")[0], classify("Drain and Reset")[0], classify("Drain P2P")[0]
    ('gpu reset', 'node reboot', 'drain and reset', 'drain p2p')
    >>> classify("NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET")[0], classify("Recover IMEX Domain")[0]
    ('drain and reset', None)
    """
    words = value.lower().replace("_", " ")
    for name, needed, action in _ACTIONS:
        if all(w in words for w in needed):
            return name, action
    return None, "look the value up in the driver's documentation"


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """SELECT bundle_id, node, "index" AS gpu, pci, recovery_action, recovery_action_line, source_file
           FROM gpu WHERE recovery_action IS NOT NULL ORDER BY bundle_id, node, "index" """
    )
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["recovery_action"].strip().lower() in ("none", "n/a", "[n/a]"):
            continue
        groups.setdefault((r["bundle_id"], r["node"], r["recovery_action"]), []).append(r)
    for (bundle_id, node, value), gpus in groups.items():
        name, action = classify(value)
        names = ", ".join(f"GPU {g['gpu']} ({g['pci']})" for g in gpus)
        known = f"the driver asks for: {action}" if name else "a value NVIDIA's list does not hold"
        yield RULE.finding(
            severity=Severity.CRITICAL if name else Severity.WARNING,
            node=node,
            gpu=gpus[0]["gpu"] if len(gpus) == 1 else None,
            message=f"{node}: GPU Recovery Action '{value}' on {names}: {known}",
            params={
                "recovery_action": value,
                "action": name,
                "gpus": [g["gpu"] for g in gpus],
                "pci": [g["pci"] for g in gpus],
            },
            route=Route(RULE.route.owner, RULE.route.target, action),
            evidence=[ctx.evidence(g["source_file"], g["recovery_action_line"]) for g in gpus[:4]],
            bundle_id=bundle_id,
            key=(value,),
        )
