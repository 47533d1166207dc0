"""Uncorrectable ECC errors (volatile or aggregate) on a GPU.

Why it matters: an uncorrectable error means data in GPU memory was lost; the GPU must be drained and
replaced (performance-debugger snapshot script and details guide, node-debugger issue catalog § 2.2;
docs/sources.md#gpu-memory-errors).  Read from ``nvidia-smi -q``; for a node without it, from the
``--query-gpu`` CSV ECC columns, else the plain table's "Volatile Uncorr. ECC".
False positives: none known; the aggregate count survives reboots, so an old event still shows: the
finding says which counter fired.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import gpu_states

RULE = RuleInfo(
    id="gpu.ecc.uncorrectable",
    node_local=True,
    title="Uncorrectable ECC errors",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=(
        "gpu.ecc_uncorrected_volatile",
        "gpu.ecc_uncorrected_aggregate",
        "gpu_query.ecc_uncorrected_volatile",
        "gpu_query.ecc_uncorrected_aggregate",
        "smi_gpu.ecc_uncorrected",
    ),
    passed="no uncorrectable ECC error on any GPU",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    severity_reason=(
        "An uncorrectable ECC error means data in GPU memory was lost, so results on that GPU cannot be "
        "trusted and the node must be drained and the GPU replaced. Source: HyperPod performance-debugger "
        "and node-debugger skills (awslabs/agent-plugins); NVIDIA Xid catalog "
        "(docs.nvidia.com/deploy/xid-errors), Xid 48, 94 and 95."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    max_count = ctx.threshold(RULE, "max_count")
    for s in gpu_states(ctx):
        vol, agg = s.get("ecc_uncorrected_volatile"), s.get("ecc_uncorrected_aggregate")
        if (vol or 0) <= max_count and (agg or 0) <= max_count:
            continue
        keys = [k for k, v in (("ecc_volatile", vol), ("ecc_aggregate", agg)) if (v or 0) > max_count]
        yield RULE.finding(
            node=s.node,
            gpu=s.index,
            message=f"{s.label} has uncorrectable ECC errors: volatile {vol}, aggregate {agg}",
            params={"pci": s.pci, "volatile": vol, "aggregate": agg, "source": s.source},
            evidence=s.evidence(ctx, *keys),
            bundle_id=s.bundle_id,
        )
