"""A GPU's PCIe link trained narrower than its maximum width (x8 where x16 is the max).

Why it matters: half the lanes is half the host<->GPU bandwidth: data loading, checkpointing and
GPUDirect RDMA to the EFA cards all slow down (mfu-debugger node diagnostics, failure patterns § 2:
docs/sources.md#pcie).  Unlike the link generation, the width does not drop at idle, so one snapshot is
enough.  Read from ``-q`` "GPU Link Info / Link Width", else the CSV ``pcie.link.width.*``.
False positives: none known on SXM GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import gpu_states

RULE = RuleInfo(
    id="gpu.pcie.width_degraded",
    node_local=True,
    title="GPU PCIe link width degraded",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("gpu.pcie_width_current", "gpu_query.pcie_width_current"),
    passed="every GPU PCIe link at its full width",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "reseat or replace (reboot first)"),
    severity_reason=(
        "An x8 link where x16 is the maximum halves host-to-GPU bandwidth (data loading, checkpoints, "
        "GPUDirect RDMA) while the GPU still works: reboot, then reseat or replace. Source: HyperPod "
        "mfu-debugger node diagnostics and failure patterns (awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    for s in gpu_states(ctx):
        cur, top = s.get("pcie_width_current"), s.get("pcie_width_max")
        if cur is None or top is None or cur >= top:
            continue
        yield RULE.finding(
            node=s.node,
            gpu=s.index,
            message=f"{s.label} PCIe link is x{cur}, its maximum is x{top}",
            params={"pci": s.pci, "width_current": cur, "width_max": top, "source": s.source},
            evidence=s.evidence(ctx, "pcie"),
            bundle_id=s.bundle_id,
            key=(s.pci,),
        )
