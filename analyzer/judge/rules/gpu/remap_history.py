"""A GPU has remapped rows for uncorrectable errors in its past, with no remap pending or failed.

Why it matters: each uncorrectable memory error the GPU repaired used one of a finite set of spare
rows; the repair is complete (nothing pending, no failure), so this is history, not a defect: info.
It is worth knowing when the same GPU later shows ECC errors or a pending remap (the node-debugger
triage script prints it as WARN).  Read from ``nvidia-smi -q`` "Remapped Rows / Uncorrectable Error", else the
``--query-remapped-rows`` CSV (``remapped_rows.uncorrectable``; the last row per GPU of an ``-l``
loop).  Both "Pending" and "Remapping Failure Occurred" must read No: a pending remap or a failure
has its own rule (gpu.remap.pending, gpu.remap.failed).
False positives: none; the counter is cumulative over the GPU's life.
Reference: docs/sources.md#gpu-memory-errors (node-debugger diagnostics guide § G.1.a, triage script).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import yes

RULE = RuleInfo(
    id="gpu.remap.history",
    node_local=True,
    title="GPU has remapped rows from past uncorrectable errors",
    severity=Severity.INFO,
    requires=("node",),
    requires_any=("gpu.remapped_rows_uncorrectable", "gpu_query.remapped_rows_uncorrectable"),
    passed="no GPU with a history of rows remapped",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        "no action now; watch this GPU for new ECC errors, pending remaps or a remap failure",
    ),
    severity_reason=(
        "The repair is complete (nothing pending, no failure), so the rows remapped are history to remember "
        "if the GPU later shows ECC errors, not a fault. Source: NVIDIA GPU memory error management guide "
        "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt); ours: info rather than the WARN of the HyperPod "
        "node-debugger triage script (awslabs/agent-plugins), since nothing is left to act on."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    above = ctx.threshold(RULE, "uncorrectable_rows_above")
    latest: dict[tuple[str, str, Any], dict[str, Any]] = {}
    for r in ctx.rows(
        """
        SELECT bundle_id, node, 'nvidia-smi -q' AS source, "index", pci, remapped_rows_uncorrectable AS rows,
               CAST(remap_pending AS VARCHAR) AS pending, CAST(remap_failure AS VARCHAR) AS failure,
               source_file, coalesce(remap_line, line) AS line
        FROM gpu
        UNION ALL
        SELECT bundle_id, node, 'nvidia-smi csv', "index", pci, remapped_rows_uncorrectable,
               remapped_rows_pending, remapped_rows_failure, source_file, line
        FROM gpu_query q
        WHERE NOT EXISTS (SELECT 1 FROM gpu g WHERE g.bundle_id = q.bundle_id AND g.node = q.node)
        ORDER BY bundle_id, node, source_file, line
        """
    ):
        gpu_id = r["pci"] or (f"index {r['index']}" if r["index"] is not None else None)
        if r["rows"] is None or gpu_id is None:
            continue
        latest[(r["bundle_id"], r["node"], gpu_id)] = r  # later rows of a loop win
    for (bundle_id, node, gpu_id), r in sorted(latest.items(), key=lambda kv: (kv[0][1], str(kv[0][2]))):
        if r["rows"] <= above or yes(r["pending"]) is not False or yes(r["failure"]) is not False:
            continue
        label = f"{node} GPU {r['index'] if r['index'] is not None else '?'} ({r['pci'] or 'PCI unknown'})"
        yield RULE.finding(
            node=node,
            gpu=r["index"],
            message=(
                f"{label} has {r['rows']} rows remapped for uncorrectable errors; "
                f"none pending, no remap failure (repaired history)"
            ),
            params={"uncorrectable_rows": r["rows"], "pci": r["pci"], "source": r["source"]},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=bundle_id,
            key=(gpu_id,),
        )
