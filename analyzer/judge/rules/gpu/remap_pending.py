"""A row remap is pending on a GPU: a bad memory row was found and is repaired only at the next reset.

Why it matters: until the GPU is reset (or the node rebooted) the bad row is still in use.  P1: reboot
to finalise; if the remap is still pending after a reboot, replace (node-debugger diagnostics guide § G.1.a,
triage script: docs/sources.md#gpu-memory-errors).  Read from ``nvidia-smi -q`` "Remapped Rows / Pending",
else ``--query-remapped-rows`` ``remapped_rows.pending``.  False positives: none; a single bundle cannot tell
a fresh remap from a stuck one.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import flagged

RULE = RuleInfo(
    id="gpu.remap.pending",
    node_local=True,
    title="GPU row remap pending",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("gpu.remap_pending", "gpu_query.remapped_rows_pending"),
    passed="no GPU has a row remap pending",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "reboot the node; replace if still pending"),
    severity_reason=(
        "The bad row stays in use until the GPU is reset, so the node needs a reboot soon but is not yet "
        "broken; a remap still pending after the reboot means replace. Source: HyperPod node-debugger skill "
        "(awslabs/agent-plugins, P1) and NVIDIA GPU memory error management guide "
        "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    return flagged(
        ctx, RULE, "remap_pending", "{label} has a row remap pending (reset the GPU to apply it)", "remap"
    )
