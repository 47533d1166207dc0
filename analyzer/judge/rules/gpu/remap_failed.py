"""Row remapping failed on a GPU: the memory has no spare rows left to repair a bad one.

Why it matters: an Ampere/Hopper GPU repairs memory rows that fail by remapping them to spares; once
a remap fails the bad row stays in use and uncorrectable errors follow.  P0: drain and replace
(node-debugger diagnostics guide § G.1.a and triage script, NCCL diagnose script, mfu-debugger node
diagnostics: docs/sources.md#gpu-memory-errors).  Read from ``nvidia-smi -q``
"Remapping Failure Occurred", else ``--query-remapped-rows`` ``remapped_rows.failure``.
False positives: none known.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import flagged

RULE = RuleInfo(
    id="gpu.remap.failed",
    node_local=True,
    title="GPU row remapping failed",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("gpu.remap_failure", "gpu_query.remapped_rows_failure"),
    passed="no GPU reports a row-remapping failure",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    severity_reason=(
        "With no spare row left the bad memory row stays in use and uncorrectable errors follow, so the node "
        "must be drained and the GPU replaced. Source: NVIDIA GPU memory error management guide "
        "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt), NVIDIA DCGM diagnostics documentation (a "
        "row-remap failure fails the software check) and the HyperPod node-debugger skill "
        "(awslabs/agent-plugins, P0)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    return flagged(ctx, RULE, "remap_failure", "{label} reports a row-remapping failure", "remap")
