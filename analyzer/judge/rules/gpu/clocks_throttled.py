"""GPU clocks held down by a thermal, power-brake or hardware slowdown.

Why it matters: a GPU whose clocks are cut runs slower than its peers and every collective waits for it
(mfu-debugger node diagnostics and straggler step: docs/sources.md#gpu-thermal).  Reasons judged: HW Slowdown,
HW Thermal Slowdown, HW Power Brake Slowdown, SW Thermal Slowdown (warning).  Ignored: Idle, Applications
Clocks Setting, Sync Boost, Display Clock Setting (normal), and SW Power Cap (a GPU at its power limit under
load is working as designed; it is not reported).  Read from ``-q`` "Clocks Event/Throttle Reasons", else the
CSV ``clocks_event_reasons.active`` bitmask.  False positives: HW Power Brake can be asserted by the platform
on purpose (power capping of the rack); the route says to check that first.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import gpu_states

RULE = RuleInfo(
    id="gpu.clocks.throttled",
    node_local=True,
    title="GPU clocks throttled",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("gpu.throttle_reasons_active", "gpu_query.throttle_reasons_active"),
    passed="no GPU clock cut by a thermal or hardware slowdown",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § G", "check cooling and power; drain if it persists"
    ),
    severity_reason=(
        "A GPU slowed by a thermal, power-brake or hardware slowdown still computes correctly but paces "
        "every collective, so check cooling and power soon; a GPU at its software power cap is working as "
        "designed and not reported. Source: NVIDIA nvidia-smi documentation (clock event reasons) and "
        "HyperPod mfu-debugger straggler guide (awslabs/agent-plugins)."
    ),
)

#: Clock event reasons that mean the GPU is slowed by heat or power trouble.
JUDGED = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def check(ctx: Context) -> Iterable[Finding]:
    for s in gpu_states(ctx):
        active = sorted(r for r in (s.get("throttle") or ()) if r in JUDGED)
        if not active:
            continue
        yield RULE.finding(
            node=s.node,
            gpu=s.index,
            message=f"{s.label} clocks are throttled: {', '.join(active)}",
            params={"pci": s.pci, "reasons": active, "source": s.source},
            evidence=s.evidence(ctx, "throttle"),
            bundle_id=s.bundle_id,
            key=(s.pci,),
        )
