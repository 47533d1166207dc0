"""GPU memory almost full: memory used / total above the threshold (95 %).

What it detects: a GPU whose framebuffer use is above ``used_pct`` of its total, from ``nvidia-smi -q``
(FB Memory Usage) where the node has it, else the latest sample of the ``--query-gpu`` CSV
(``memory.used``/``memory.total``), else the plain ``nvidia-smi`` table.  One finding per GPU.
Why it matters: a job this close to the limit is one allocation (a longer sequence, fragmentation,
NCCL buffers) away from CUDA out-of-memory; the mfu-debugger node diagnostics § 3 list it among the node
checks (info; docs/sources.md#gpu-thermal).  It is a fact about the workload, not a defect of the node:
frameworks that pre-allocate (JAX, TensorFlow, PyTorch's caching allocator after warm-up) sit at 90-100 % by
design.  Routed to the workload side (the closed owner list has no application owner; ``io-pattern`` owns the
hyperpod-mfu-debugger guides).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.memory.high",
    node_local=True,
    title="GPU memory almost full",
    severity=Severity.INFO,
    requires=("node",),
    requires_any=("gpu.memory_used_mib", "gpu_query.memory_used_mib", "smi_gpu.memory_used_mib"),
    passed="every GPU's memory use below the near-full line",
    route=Route(
        "io-pattern",
        "hyperpod-mfu-debugger references/node-diagnostics.md § 3",
        "no action on the node; if the job hits CUDA OOM, reduce batch/sequence size or enable checkpointing",
    ),
    severity_reason=(
        "A GPU near full memory is a fact about the workload (frameworks that pre-allocate sit at 90-100 % "
        "by design), not a defect of the node; act only if the job hits CUDA out-of-memory. Source: HyperPod "
        "mfu-debugger node diagnostics (awslabs/agent-plugins: more than 95 % used)."
    ),
)

#: One row per GPU and node, from the best source the node has (-q, then the CSV's last sample, then
#: the plain table).
_SQL = """
WITH q AS (
    SELECT bundle_id, node, "index" AS gpu, pci, memory_used_mib AS used, memory_total_mib AS total,
           source_file, line, 'nvidia-smi -q' AS src
    FROM gpu WHERE memory_total_mib > 0 AND memory_used_mib IS NOT NULL
), c AS (
    SELECT bundle_id, node, arg_max("index", line) AS gpu, arg_max(pci, line) AS pci,
           arg_max(memory_used_mib, line) AS used, arg_max(memory_total_mib, line) AS total,
           arg_max(source_file, line) AS source_file, max(line) AS line, '--query-gpu' AS src
    FROM gpu_query WHERE memory_total_mib > 0 AND memory_used_mib IS NOT NULL
    GROUP BY bundle_id, node, source_file, coalesce(pci, uuid, CAST("index" AS VARCHAR))
), s AS (
    SELECT bundle_id, node, "index" AS gpu, pci, memory_used_mib AS used, memory_total_mib AS total,
           source_file, line, 'nvidia-smi' AS src
    FROM smi_gpu WHERE memory_total_mib > 0 AND memory_used_mib IS NOT NULL
)
SELECT * FROM q
UNION ALL SELECT * FROM c
    WHERE NOT EXISTS (SELECT 1 FROM q WHERE q.bundle_id = c.bundle_id AND q.node = c.node)
UNION ALL SELECT * FROM s
    WHERE NOT EXISTS (SELECT 1 FROM q WHERE q.bundle_id = s.bundle_id AND q.node = s.node)
    AND NOT EXISTS (SELECT 1 FROM c WHERE c.bundle_id = s.bundle_id AND c.node = s.node)
ORDER BY node, gpu
"""


def check(ctx: Context) -> Iterable[Finding]:
    limit = ctx.threshold(RULE, "used_pct")
    seen: set[tuple[str, str, object]] = set()
    for r in ctx.rows(_SQL):
        pct = round(100.0 * float(r["used"]) / float(r["total"]), 1)
        ident = (r["bundle_id"], r["node"], r["pci"] or r["gpu"])
        if pct <= limit or ident in seen:
            continue
        seen.add(ident)
        label = f"GPU {r['gpu']}" if r["gpu"] is not None else "a GPU"
        yield RULE.finding(
            node=r["node"],
            gpu=r["gpu"],
            message=f"{r['node']} {label}: memory {int(r['used'])} of {int(r['total'])} MiB used "
            f"({pct} % > {limit} %, {r['src']}); near CUDA out-of-memory",
            params={"used_mib": int(r["used"]), "total_mib": int(r["total"]), "used_pct": pct,
                    "limit_pct": limit, "source": r["src"], "pci": r["pci"]},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["pci"],),
        )  # fmt: skip
