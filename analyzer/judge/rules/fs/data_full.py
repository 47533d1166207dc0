"""A data mount (/fsx, /opt/sagemaker, /opt/dlami/nvme, another volume) above 90 % used.

Why it matters: checkpoint and dataset writes fail on a full volume (mfu-debugger node diagnostics
§ 4: > 90 %; node-debugger triage script: /opt/sagemaker > 90 % P1).  System mounts (/, /boot, /run, /snap
loop images, tmpfs, overlay) are not data mounts and are left out; "/" has fs.rootvol.full.  A shared file
system (FSx) seen from many nodes gives one finding per mount point and device.
False positives: read-only snap images are excluded; a read-only dataset volume filled on purpose.
Reference: docs/sources.md#local-storage.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import data_mounts_over

RULE = RuleInfo(
    id="fs.data.full",
    node_local=True,
    title="Data mount above {warning_pct} % used",
    severity=Severity.WARNING,
    requires=("filesystem_usage.use_pct",),
    passed="every data mount below the full line",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B; hyperpod-node-debugger § I",
        "free space or grow the volume / file system before checkpoints fail",
    ),
    severity_reason=(
        "A data mount above 90 % is about to fail checkpoint and dataset writes; free space or grow it "
        "before it does. Source: HyperPod mfu-debugger node diagnostics and node-debugger triage script "
        "(awslabs/agent-plugins: above 90 %, P1)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    line = ctx.threshold(RULE, "warning_pct")
    seen: dict[tuple[str, str], list[str]] = {}
    rows = data_mounts_over(ctx, line)
    for r in rows:
        shared = r["is_lustre"] or r["is_network"]
        key = (r["mountpoint"], r["device"]) if shared else (r["node"], r["mountpoint"])
        seen.setdefault(key, []).append(r["node"])
    done: set[tuple[str, str]] = set()
    for r in rows:
        shared = r["is_lustre"] or r["is_network"]
        key = (r["mountpoint"], r["device"]) if shared else (r["node"], r["mountpoint"])
        if key in done:
            continue
        done.add(key)
        nodes = seen[key]
        avail_gib = round((r["avail_bytes"] or 0) / 2**30, 1)
        where = f"shared {r['device']} seen from {len(nodes)} nodes" if shared else r["device"]
        yield RULE.finding(
            node=None if shared and len(nodes) > 1 else r["node"],
            message=f"{r['mountpoint']} ({where}) on {r['node']} is {r['use_pct']:g} % used, {avail_gib:g} GiB free",
            params={
                "mountpoint": r["mountpoint"],
                "device": r["device"],
                "use_pct": r["use_pct"],
                "avail_gib": avail_gib,
                "nodes": nodes,
                "line_pct": line,
            },  # fmt: skip
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=key,
        )
