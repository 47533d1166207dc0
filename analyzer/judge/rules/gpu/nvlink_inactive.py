"""NVLink links inactive or down on a GPU (or NVSwitch).

Why it matters: GPU-to-GPU traffic inside the node runs over NVLink; a link that is down cuts that
GPU's bandwidth (and NCCL may fall back to slower paths or hang).  Zero inactive links are allowed
(NVIDIA health-validation NVLink checks: ``max_inactive_nvlinks`` = 0); the action is to replace the node
(NCCL diagnose script, node-debugger issue catalog § 2.4; docs/sources.md#nvlink-fabric).  Critical whether
some links are down next to active ones or all are.  Read from ``nvidia-smi nvlink -s`` or
``dcgmi nvlink --link-status``.  Links that dcgmi marks Disabled (X) or Not Supported (_) are not counted.
Settling: links down on a node collected within the settle window after its boot (analyzer.judge.signals.boot,
``settle_minutes``) are links still training: info, with the boot time, not a fault (NVIDIA/NVSentinel#1701:
links are down after every boot while they train).
False positives: none known on HGX systems.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu._nvlink import DOWN, link_sets
from analyzer.judge.signals.boot import settling_nodes

RULE = RuleInfo(
    id="gpu.nvlink.inactive",
    node_local=True,
    title="NVLink links inactive or down",
    severity=Severity.CRITICAL,
    requires=("nvlink.state",),
    passed="every NVLink listed is active",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    severity_reason=(
        "A down link cuts the GPU's bandwidth or hangs NCCL, and no inactive link is allowed, so drain and "
        "replace; info within the settle window after a boot, while links still train. Source: NVIDIA "
        "health-validation NVLink check reference (max_inactive_nvlinks is 0) and NVIDIA/NVSentinel#1701."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    settling = settling_nodes(ctx)
    for s in link_sets(ctx):
        down = [link for link in s.links if link["state"] in DOWN]
        if not down:
            continue
        active = [link for link in s.links if link["state"] == "active"]
        numbers = [link["link"] for link in down if link["link"] is not None]
        total = len(active) + len(down)
        if active:
            what = f"{len(down)} of {total} NVLinks are down (links {', '.join(map(str, numbers))})"
        else:
            what = f"all NVLinks are down ({len(numbers) or 'every'} link(s) listed)"
        boot = settling.get(s.bundle_id)
        yield RULE.finding(
            severity=Severity.INFO if boot else None,
            node=s.node,
            gpu=s.gpu,
            message=f"{s.label}: {what}"
            + (f" — settling: {boot.describe()}, links may still be training" if boot else ""),
            params={
                "down": len(down),
                "active": len(active),
                "links_down": numbers,
                "nvswitch": s.nvswitch,
                "settling": boot is not None,
                "boot_utc": boot.boot_utc if boot else None,
            },
            evidence=[ctx.evidence(s.source_file, line) for line in s.lines(down)],
            bundle_id=s.bundle_id,
            key=(s.nvswitch,),
        )
