"""A GPU's PCIe link trained narrower than its maximum width (x8 where x16 is the max).

Why it matters: half the lanes is half the host<->GPU bandwidth: data loading, checkpointing and
GPUDirect RDMA to the EFA cards all slow down (mfu-debugger node diagnostics, failure patterns § 2:
docs/sources.md#pcie).  Unlike the link generation, the width does not drop at idle, so one snapshot is
enough.  Read from ``-q`` "GPU Link Info / Link Width", else the CSV ``pcie.link.width.*``; for a GPU
no nvidia-smi output reads (the driver is not loaded, nvidia-smi failed, an nvidia-bug-report's
``lspci -nnDvvvxxxx``), from ``lspci -vv``'s ``LnkSta`` width against the GPU's own ``LnkCap`` width
(``pci_device.link_width``, ``link_width_max``).  The link speed is not judged so: a GPU lowers it at
idle by design (gpu.pcie.gen_below_peers judges it against peers).
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
    requires_any=("gpu.pcie_width_current", "gpu_query.pcie_width_current", "pci_device.link_width"),
    passed="every GPU PCIe link at its full width",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "reseat or replace (reboot first)"),
    severity_reason=(
        "An x8 link where x16 is the maximum halves host-to-GPU bandwidth (data loading, checkpoints, "
        "GPUDirect RDMA) while the GPU still works: reboot, then reseat or replace. Source: HyperPod "
        "mfu-debugger node diagnostics and failure patterns (awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    read: set[tuple[str, str]] = set()  # (bundle, pci) of the GPUs nvidia-smi gave a width for
    for s in gpu_states(ctx):
        cur, top = s.get("pcie_width_current"), s.get("pcie_width_max")
        if cur is not None and top is not None and s.pci:
            read.add((s.bundle_id, s.pci))
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
    yield from _from_lspci(ctx, read)


def _from_lspci(ctx: Context, read: set[tuple[str, str]]) -> Iterable[Finding]:
    """The GPUs whose width only lspci read: ``LnkSta`` below the GPU's own ``LnkCap`` (a width of x0,
    no link trained or no reading, is left to the rules that see a GPU lost)."""
    rows = ctx.rows(
        """SELECT bundle_id, node, address, description, link_width, link_width_max, source_file, link_line
           FROM pci_device
           WHERE gpu AND link_width > 0 AND link_width_max IS NOT NULL AND link_width < link_width_max
           ORDER BY node, address"""
    )
    for r in rows:
        if (r["bundle_id"], r["address"]) in read:
            continue
        cur, top = r["link_width"], r["link_width_max"]
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']} GPU {r['address']} PCIe link is x{cur}, its maximum is x{top} (lspci)",
            params={"pci": r["address"], "width_current": cur, "width_max": top, "source": "lspci"},
            evidence=[ctx.evidence(r["source_file"], r["link_line"])],
            bundle_id=r["bundle_id"],
            key=(r["address"],),
        )
