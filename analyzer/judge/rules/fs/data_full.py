"""A data mount (/fsx, /opt/sagemaker, /opt/dlami/nvme, another volume) above 90 % used.

Why it matters: checkpoint and dataset writes fail on a full volume (mfu-debugger node diagnostics
§ 4: > 90 %; node-debugger triage script: /opt/sagemaker > 90 % P1).  System mounts (/, /boot, /run, /snap
loop images, tmpfs, overlay) are not data mounts and are left out; "/" has fs.rootvol.full.  A shared file
system (FSx) seen from many nodes gives one finding per mount point and device.  A Lustre mount that
the node's own ``lfs df`` shows full (every OST, or its total, above fs.lustre.ost_imbalance's
``full_pct``) is left to fs.lustre.full, which names its OSTs: one cause, one finding.
False positives: read-only snap images are excluded; a read-only dataset volume filled on purpose.
Reference: docs/sources.md#local-storage.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.fs import lustre_ost_imbalance
from analyzer.judge.signals.fs import data_mounts_over, lustre_use

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
    lustre_full = [
        fs for fs in lustre_use(ctx, ctx.threshold(lustre_ost_imbalance.RULE, "full_pct")) if fs.full
    ]
    rows = [
        r
        for r in data_mounts_over(ctx, line)
        if not (
            r["is_lustre"] and any(_same_lustre(r, fs.fsname, fs.nodes, fs.mountpoints) for fs in lustre_full)
        )
    ]
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


def _same_lustre(
    row: dict[str, Any], fsname: str, nodes: tuple[str, ...], mountpoints: tuple[str, ...]
) -> bool:
    """A df row of a Lustre mount is the file system the same node's lfs df names: the same mount point, or
    its fsname after ``:/`` in the df device (``10.1.71.197@tcp:/oyuutbev``).  Only the node's own lfs df
    counts, so the rule still judges each bundle from its own rows (``node_local``)."""
    name = str(row["device"]).rpartition(":/")[2].split("/")[0]
    return row["node"] in nodes and (row["mountpoint"] in mountpoints or name == fsname)
