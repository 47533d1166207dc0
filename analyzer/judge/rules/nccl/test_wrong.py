"""nccl-tests reported wrong results: ``#wrong`` > 0 on a size row, or ``# Out of bounds values`` > 0.

Why it matters: nccl-tests checks the reduced data (``validation: 1``); a non-zero ``#wrong`` means a
collective returned corrupted data — a correctness failure, worse than low bandwidth and separate from
it (GPU memory, NVLink or NIC corrupting payloads).  False positives: none known; ``N/A`` cells (e.g.
alltoall) are not counted.  Reference: docs/sources.md#nccl-bandwidth (nccl-tests README; the
awsome-distributed-training nccl_to_csv.py tracks the error columns); severity is ours.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals.nccl import node_rows

RULE = RuleInfo(
    id="nccl.test.wrong",
    title="nccl-tests reported wrong results (data corruption)",
    severity=Severity.CRITICAL,
    requires=("nccl_run", "nccl_result"),
    passed="nccl-tests reported no wrong results",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § G", "find the corrupting node (single-node tests, DCGM)"
    ),
    severity_reason=(
        "A non-zero #wrong means a collective returned corrupted data, a correctness failure worse than any "
        "slowness, so find and drain the node that corrupts it. Source: nccl-tests README (result checking "
        "and the #wrong column); ours: critical, no outside source rates it."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    max_wrong = ctx.threshold(RULE, "max_wrong")
    max_oob = ctx.threshold(RULE, "max_oob_values")
    rows = ctx.rows(
        """
        WITH w AS (
            SELECT bundle_id, source_file, run, count(*) AS rows_wrong,
                   sum(coalesce(oop_wrong, 0) + coalesce(ip_wrong, 0)) AS wrong, min(line) AS first_line
            FROM nccl_result WHERE coalesce(oop_wrong, 0) + coalesce(ip_wrong, 0) > ?
            GROUP BY ALL
        ), h AS (
            SELECT bundle_id, source_file, run, string_agg(DISTINCT host, ',' ORDER BY host) AS hosts
            FROM nccl_rank GROUP BY ALL
        )
        SELECT r.bundle_id, r.node, r.source_file, r.run, r.line, coalesce(r.oob_values, 0) AS oob,
               coalesce(w.wrong, 0) AS wrong, coalesce(w.rows_wrong, 0) AS rows_wrong, w.first_line, h.hosts
        FROM nccl_run r
        LEFT JOIN w USING (bundle_id, source_file, run) LEFT JOIN h USING (bundle_id, source_file, run)
        WHERE coalesce(w.wrong, 0) > 0 OR coalesce(r.oob_values, 0) > ?
        ORDER BY r.bundle_id, r.source_file, r.run
        """,
        max_wrong,
        max_oob,
    )
    index = HostIndex(node_rows(ctx))
    for r in rows:
        hosts = r["hosts"].split(",") if r["hosts"] else []
        nodes = [index.match(h) or h for h in hosts]
        node = r["node"] or (nodes[0] if len(nodes) == 1 else None)
        where = node or ",".join(nodes) or r["source_file"]
        message = (
            f"nccl-tests on {where} returned wrong data: #wrong total {r['wrong']} over {r['rows_wrong']} "
            f"size rows, out-of-bounds values {r['oob']} ({r['source_file']})"
        )
        evidence = [ctx.evidence(r["source_file"], r["first_line"] or r["line"])]
        yield RULE.finding(
            node=node,
            message=message,
            params={
                "wrong": r["wrong"],
                "rows_wrong": r["rows_wrong"],
                "oob_values": r["oob"],
                "hosts": nodes,
                "nodes": [node] if node else sorted(set(nodes)),
                "file": r["source_file"],
            },
            evidence=evidence,
            bundle_id=r["bundle_id"],
            key=(r["source_file"],) if r["run"] == 1 else (r["source_file"], r["run"]),
        )
