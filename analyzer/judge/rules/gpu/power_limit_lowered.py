"""A GPU's power limit lowered below its default limit, or below its same-type peers' limits.

Why it matters: a GPU capped at half its power runs its clocks down under load and paces every
collective of the job, yet reads healthy to every other check (no Xid, no throttle flag while idle).
The limit judged is the one in effect: the *enforced* limit (``-q`` "Enforced Power Limit", from the 530
drivers "Current Power Limit"; CSV ``enforced.power.limit``), else the limit printed (CSV ``power.limit``,
the plain table's ``Pwr:Usage/Cap``).  It is held to the GPU's own "Default Power Limit" (CSV
``power.default_limit``); where none was read, to the median limit of the same instance type and GPU model
on the other nodes (docs/sources.md#gpu-power-limits; at least ``min_nodes`` nodes, else the node is not
examined).  More than ``below_fraction`` below is a warning, one per node and cause naming the GPUs and
both values: the *requested* limit lowered (``nvidia-smi -pl``: an admin, a lifecycle script, a prolog),
or the enforced limit below a normal requested limit (a power brake or an out-of-band system cap: the
platform holds the GPU down), or below the peers (no default to tell which).
False positives: a site that caps power on purpose (set ``below_fraction`` in a site config); a GPU model
whose default differs between boards of one instance type (peers only).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu._lowered import Low, Measure, evidence, fmt, judge, per_node, said
from analyzer.judge.signals.gpus import GpuState, gpu_states

TARGET = "hyperpod-node-debugger § G"
ROUTES = {
    "set": Route(
        "node-hardware",
        TARGET,
        "set the Default Power Limit again (nvidia-smi -pl) and remove what lowered it (a lifecycle "
        "script, a Slurm prolog, an admin's change)",
    ),
    "enforced": Route(
        "node-hardware",
        TARGET,
        "a power brake or an out-of-band system cap holds the GPU below the limit asked for: check the "
        "platform's power capping (BMC, PSUs) and the clock event reasons; replace the node if it persists",
    ),
    "peers": Route(
        "node-hardware",
        TARGET,
        "read the GPU's Default Power Limit (nvidia-smi -q -d POWER) and set it again (nvidia-smi -pl)",
    ),
}

RULE = RuleInfo(
    id="gpu.power.limit_lowered",
    title="GPU power limit more than {below_fraction:pct} % below its default or its peers'",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=(
        "gpu.power_limit_w",
        "gpu.power_enforced_limit_w",
        "gpu_query.power_limit_w",
        "gpu_query.power_enforced_limit_w",
        "smi_gpu.power_cap_w",
    ),
    cause_kind="setting",
    setting_keys=("values",),
    passed="every GPU's power limit at its default or its peers'",
    route=ROUTES["set"],
    severity_reason=(
        "A GPU held below its default power limit lowers its clocks under load and slows every collective "
        "it takes part in, but computes correctly: degraded, not broken. Source: the nvidia-smi "
        "documentation (the Power Readings fields: the power limit software sets with -pl / --power-limit, "
        "the default limit it returns to, the enforced limit, the least of all limiters) and the NVML API "
        "reference (nvmlDeviceGetEnforcedPowerLimit: other limits, the out-of-band interface included, can "
        "hold it below the limit software set); NVIDIA's DGX H100 user guide (power capping: nvidia-smi, "
        "the VBIOS and an out-of-band SMBPBI cap, the most conservative wins)."
    ),
)


def _effective(s: GpuState) -> float | None:
    enforced = s.get("power_enforced_limit_w")
    return enforced if enforced is not None else s.get("power_limit_w")


LIMIT = Measure(
    "power limit",
    "W",
    _effective,
    lambda s: s.get("power_default_limit_w"),
    ("power_enforced_limit_w", "power_default_limit_w"),
)


def check(ctx: Context) -> Iterable[Finding]:
    below = float(ctx.threshold(RULE, "below_fraction"))
    judged = judge(ctx, gpu_states(ctx), [LIMIT], below, int(ctx.threshold(RULE, "min_nodes")))
    yield from per_node(
        ctx,
        judged,
        lambda lo: _cause(lo, below),
        lambda bundle_id, node, cause, lows: _finding(ctx, bundle_id, node, cause, lows, below),
    )


def _cause(lo: Low, below: float) -> str:
    """set (the requested limit itself is low), enforced (the limit in effect below a normal requested
    limit), or peers (low against the peers, no default and no requested limit to tell which)."""
    requested = lo.state.get("power_requested_limit_w")
    if requested is not None and requested < lo.reference * (1 - below):
        return "set"
    if requested is not None and lo.value < requested * (1 - below):
        return "enforced"
    return "set" if lo.basis == "default" else "peers"


def _finding(ctx: Context, bundle_id: str, node: str, cause: str, lows: list[Low], below: float) -> Finding:
    first = lows[0]
    ref_name = "default" if first.basis == "default" else "peers' median"

    def values(lo: Low) -> str:
        requested = lo.state.get("power_requested_limit_w")
        asked = f", requested {fmt(requested)} W" if cause == "enforced" and requested is not None else ""
        return f"power limit {fmt(lo.value)} W{asked}, {ref_name} {fmt(lo.reference)} W"

    why = {
        "set": "set below the default, as nvidia-smi -pl does",
        "enforced": "the limit in effect is below the limit asked for: a power brake or a system power cap",
        "peers": f"below the other {first.group} nodes ({first.peer_nodes} nodes); no default limit was read",
    }[cause]
    fields = ("power_enforced_limit_w", "power_limit_w", "power_requested_limit_w", "power_default_limit_w")
    ev = [e for lo in lows[:3] for e in evidence(ctx, lo.state, fields)]
    return RULE.finding(
        node=node,
        message=f"{node}: power limit lowered on {len(lows)} GPU(s), {said(lows, values)} ({why})",
        params={
            "cause": cause,
            "gpus": [lo.state.index for lo in lows],
            "values": sorted({f"{fmt(lo.value)} W of {fmt(lo.reference)} W" for lo in lows}),
            "limit_w": min(lo.value for lo in lows),
            "reference_w": first.reference,
            "requested_w": first.state.get("power_requested_limit_w"),
            "basis": first.basis,
            "peer_group": first.group or None,
            "peer_nodes": first.peer_nodes or None,
            "below_fraction": below,
            "source": first.state.source,
        },
        route=ROUTES[cause],
        evidence=[e for i, e in enumerate(ev) if e not in ev[:i]],
        bundle_id=bundle_id,
        key=(cause,),
    )
