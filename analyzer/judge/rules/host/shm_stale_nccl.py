"""NCCL shared-memory segments (``/dev/shm/nccl-*``) present on the node.

What it detects: the ``ls -la /dev/shm`` part of the shm probe lists more than ``max_files`` entries
named ``nccl-*`` (parsers/shm.py ``nccl_files``).  One finding per node with their count and size.
Why it matters: NCCL creates these segments for intra-node transport and removes them on a clean
exit; segments left by a killed job hold shared memory until someone deletes them, can fill /dev/shm
and make the next job fail with "Bus error" / shm allocation errors (NCCL diagnose script;
NCCL debugging guide § 15, where systemd's RemoveIPC and crashed ranks are the usual causes;
docs/sources.md#host-kernel).
False positives: a running NCCL job owns segments with the same names; the bundle does not tell us
whether a training process was running when it was collected, so this is only info: check for a
running job before deleting them.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="host.shm.stale_nccl",
    node_local=True,
    title="NCCL segments in /dev/shm (stale if no job is running)",
    severity=Severity.INFO,
    requires=("shm.nccl_files",),
    passed="NCCL segments in /dev/shm within the limit",
    route=Route(
        "nccl-network",
        "hyperpod-nccl debugging-guide § 15",
        "if no training job runs on the node, delete /dev/shm/nccl-* and check RemoveIPC",
    ),
    severity_reason=(
        "Left-over /dev/shm/nccl-* segments can fill /dev/shm and fail the next job, but a running job owns "
        "segments of the same names and the bundle cannot tell which, so check before deleting. Source: "
        "HyperPod NCCL debugging guide (awslabs/agent-plugins: RemoveIPC); ours: info rather than its "
        "warning, since the bundle does not show whether a job was running."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    limit = ctx.threshold(RULE, "max_files")
    rows = ctx.rows(
        "SELECT bundle_id, node, nccl_files, nccl_bytes, source_file, line FROM shm "
        "WHERE nccl_files > ? ORDER BY node, line",
        limit,
    )
    seen: set[tuple[str, str]] = set()
    for r in rows:
        if (r["bundle_id"], r["node"]) in seen:
            continue
        seen.add((r["bundle_id"], r["node"]))
        size = r["nccl_bytes"] or 0
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']}: {r['nccl_files']} NCCL segment(s) in /dev/shm ({size} bytes); stale if no "
            "training process was running, which the bundle cannot tell",
            params={"nccl_files": r["nccl_files"], "nccl_bytes": size, "max_files": limit},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
