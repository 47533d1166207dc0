"""A file system is running out of inodes.

Why it matters: with no free inodes no file can be created, however much space is left: checkpoints,
logs and container layers fail with "No space left on device" (node-debugger triage script: `df -i /` > 90 %
P1; node-debugger diagnostics guide § I.4; docs/sources.md#local-storage).  Read from the collector's
``df -P -i`` capture.  Pseudo and read-only image file systems (tmpfs, devtmpfs, overlay, squashfs, snap loop
devices) are not judged.
False positives: none known; small-file datasets on the root volume are the usual cause.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="fs.inode.exhausted",
    node_local=True,
    title="File system running out of inodes",
    severity=Severity.WARNING,
    requires=("filesystem_usage.inode_use_pct",),
    passed="free inodes left on every file system",
    route=Route(
        "filesystem-capacity",
        "hyperpod-node-debugger § I.4",
        "delete or pack small files (tar shards), or move them to a file system with free inodes",
    ),
    severity_reason=(
        "Above 90 % of inodes used, creating a file is about to fail with 'No space left on device' however "
        "much space is left. Source: HyperPod node-debugger skill and triage script (awslabs/agent-plugins: "
        "df -i above 90 %, P1)."
    ),
)

_PSEUDO = ("tmpfs", "devtmpfs", "overlay", "squashfs", "/dev/loop", "udev", "none")


def check(ctx: Context) -> Iterable[Finding]:
    limit = ctx.threshold(RULE, "warning_pct")
    rows = ctx.rows(
        """
        SELECT bundle_id, node, device, mountpoint, inode_use_pct, inodes_free, source_file, line
        FROM filesystem_usage WHERE inode_use_pct > ?
        ORDER BY node, mountpoint
        """,
        limit,
    )
    for r in rows:
        if (r["device"] or "").startswith(_PSEUDO):
            continue
        yield RULE.finding(
            node=r["node"],
            message=(
                f"{r['node']} {r['mountpoint']} ({r['device']}) has {r['inode_use_pct']:g} % of its inodes in use, "
                f"{r['inodes_free']} free"
            ),
            params={"mountpoint": r["mountpoint"], "inode_use_pct": r["inode_use_pct"], "warning_pct": limit},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["mountpoint"],),
        )
