"""Uncorrectable ECC errors (volatile or aggregate) on a GPU.

Why it matters: an uncorrectable error means data in GPU memory was lost; the GPU must be drained and
replaced (rules-facts GPU-ECC-UNCORR: PD-SNAP, PD-DET, ND-CAT § 2.2).  False positives: none known; the
aggregate count survives reboots, so an old event still shows: the finding says which counter fired.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.ecc.uncorrectable",
    title="Uncorrectable ECC errors",
    severity=Severity.CRITICAL,
    requires=("gpu",),
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    docs="docs/rules.md#gpueccuncorrectable",
)


def check(ctx: Context) -> Iterable[Finding]:
    max_count = ctx.threshold(RULE, "max_count")
    rows = ctx.rows(
        """
        SELECT bundle_id, node, "index" AS gpu, pci, source_file,
               ecc_uncorrected_volatile AS vol, ecc_uncorrected_aggregate AS agg,
               ecc_volatile_line, ecc_aggregate_line
        FROM gpu
        WHERE coalesce(ecc_uncorrected_volatile, 0) > ? OR coalesce(ecc_uncorrected_aggregate, 0) > ?
        ORDER BY node, gpu
        """,
        max_count,
        max_count,
    )
    for r in rows:
        evidence = []
        if (r["vol"] or 0) > max_count:
            evidence.append(ctx.evidence(r["source_file"], r["ecc_volatile_line"]))
        if (r["agg"] or 0) > max_count:
            evidence.append(ctx.evidence(r["source_file"], r["ecc_aggregate_line"]))
        yield Finding(
            rule=RULE.id,
            rule_version=RULE.version,
            severity=RULE.severity,
            node=r["node"],
            gpu=r["gpu"],
            message=(
                f"{r['node']} GPU {r['gpu']} ({r['pci']}) has uncorrectable ECC errors: "
                f"volatile {r['vol']}, aggregate {r['agg']}"
            ),
            params={"pci": r["pci"], "volatile": r["vol"], "aggregate": r["agg"]},
            route=RULE.route,
            evidence=evidence,
            bundle_id=r["bundle_id"],
        )
