"""An NCCL log shows mixed NCCL builds: 'NCCL function not found' or 'Incompatible NCCL version'.

Why it matters: ranks that load different NCCL builds cannot form a communicator; the job fails at
init or hangs.  This is the critical form of NCCL version drift (warning for differing
versions, critical once the log shows the mismatch; NCCL debugging guide § 10).  The parser tags these
lines NCCL_VERSION_MISMATCH (docs/sources.md#nccl-log-patterns).  One finding per node (hosts in the log are
matched to node bundles; an unmatched host keeps its printed name).
False positives: none known; the lines are printed only on a failed symbol or version check.
nccl.log.errors also lists the code among other NCCL warnings.
Reference: docs/sources.md#nccl-log-patterns, docs/sources.md#versions (NCCL error-patterns quick reference,
NCCL diagnose script, NCCL debugging guide § 10).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals.nccl import node_rows

RULE = RuleInfo(
    id="nccl.version.mismatch",
    title="NCCL log shows mixed NCCL builds",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("nccl_log_event", "nccl_run.nccl_log_lines"),
    passed="one NCCL build across the logged job",
    route=Route(
        "version-drift",
        "hyperpod-nccl debugging-guide § 10; hyperpod-version-checker",
        "run the same container image (same NCCL build) on every node of the job",
    ),
    severity_reason=(
        "Ranks that load different NCCL builds cannot form a communicator, so the job fails at init or hangs "
        "until every node runs one build. Source: HyperPod NCCL debugging guide (awslabs/agent-plugins, NCCL "
        "version mismatch)."
    ),
)

CODE = "NCCL_VERSION_MISMATCH"


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        SELECT bundle_id, node, source_file, line, host, message FROM nccl_log_event WHERE code = ?
        ORDER BY bundle_id, source_file, line
        """,
        CODE,
    )
    if not rows:
        return
    index = HostIndex(node_rows(ctx))
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(index.match(r["host"]) or r["host"] or r["node"], []).append(r)
    for who, hits in groups.items():
        first = hits[0]
        yield RULE.finding(
            node=who,
            message=(
                f"NCCL on {who or 'an unnamed host'} reports a version mismatch {len(hits)}x "
                f"(mixed NCCL builds); first: {first['message'][:200]}"
            ),
            params={
                "count": len(hits),
                "host": first["host"],
                "first_message": first["message"][:200],
                "files": sorted({h["source_file"] for h in hits}),
            },
            evidence=[ctx.evidence(first["source_file"], first["line"])],
            bundle_id=first["bundle_id"],
            key=(CODE,),
        )
