"""DCGM diagnostics (``dcgmi diag``) reported a failed or warning test.

Why it matters: DCGM's diagnostics exercise the GPU (memory, PCIe, NVLink, stress); a failing test at
level 3 means the GPU should be replaced (HyperPod performance-debugger skill: "dcgmi diag -r 3 failing any
test -> replace"; node-debugger triage script and NCCL diagnose script: P0; docs/sources.md#dcgm).
Fail -> critical, Warn -> warning; one finding per node, test and GPU.  False positives: Deployment-category
tests fail on configuration (persistence mode off, a busy GPU) rather than hardware; the message text says
which, read it before replacing.  DCGM <= 3.3.9 passes from a combined ``-r medium,memtest`` run are not
authoritative (node-debugger diagnostics guide § G.1.b).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.dcgm.failed",
    node_local=True,
    title="DCGM diagnostic test failed",
    severity=Severity.CRITICAL,
    requires=("dcgm_test.result",),
    passed="no DCGM diagnostic test failed or warned",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § G", "drain and replace if the failure is hardware"
    ),
    severity_reason=(
        "A failed DCGM test means the GPU failed an active check of its memory, PCIe, NVLink or compute, and "
        "a failure at level 3 means replace it; a DCGM Warn is a warning. Source: NVIDIA DCGM diagnostics "
        "documentation and the HyperPod performance-debugger skill (awslabs/agent-plugins: dcgmi diag -r 3 "
        "failing any test means replace)."
    ),
)

_SEVERITY = {"fail": Severity.CRITICAL, "warn": Severity.WARNING}


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        SELECT bundle_id, node, category, test, gpu, result, any_value(source_file) AS source_file,
               min(line) AS line, string_agg(DISTINCT message, ' | ') AS message,
               any_value(dcgm_version) AS dcgm_version
        FROM dcgm_test WHERE result IN ('fail', 'warn')
        GROUP BY bundle_id, node, category, test, gpu, result ORDER BY node, test, gpu
        """
    )
    for r in rows:
        text = (r["message"] or "").strip()
        if len(text) > 300:
            text = text[:297] + "..."
        gpu = f"GPU {r['gpu']}" if r["gpu"] is not None else "all GPUs"
        yield RULE.finding(
            severity=_SEVERITY[r["result"]],
            node=r["node"],
            gpu=r["gpu"],
            message=f"{r['node']} {gpu}: DCGM {r['category'] or ''} test '{r['test']}' {r['result']}"
            + (f": {text}" if text else ""),
            params={
                "test": r["test"],
                "category": r["category"],
                "result": r["result"],
                "dcgm_version": r["dcgm_version"],
                "detail": text,
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["category"], r["test"], r["result"]),
        )
