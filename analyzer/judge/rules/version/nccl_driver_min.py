"""The NVIDIA driver on a GPU node is older than the branch current NCCL needs (major < 525).

Why it matters: the HyperPod NCCL diagnose script flags drivers below the 525 branch for NCCL; 525 is also the
first branch that runs CUDA 12.x (HyperPod version-checker skill), which every NCCL 2.18+ build and current
training image targets.  An older driver fails at NCCL init or forces an old NCCL/CUDA stack.
Scope: judged on every GPU node (any node that reports a driver version), not only where NCCL was
found on the host: NCCL usually ships inside the training container, where a host probe cannot see
it.  The finding says whether NCCL was seen on the host (``nccl_on_host``).  When one node reports
several driver versions, the oldest is judged.
False positives: a node that never runs NCCL (single-GPU inference) does not need 525.
Reference: docs/sources.md#versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.version._versions import VERSIONS_SQL, parse_version

RULE = RuleInfo(
    id="version.nccl.driver_min",
    cause_kind="setting",
    setting_keys=("driver",),
    title="NVIDIA driver older than NCCL needs",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("gpu.driver_version", "gpu_query.driver_version", "smi_summary.driver_version"),
    passed="NVIDIA driver new enough for NCCL",
    route=Route(
        "version-drift",
        "hyperpod-version-checker; hyperpod-node-debugger § E",
        "upgrade the NVIDIA driver to the 525 branch or newer (update the AMI / cluster software)",
    ),
    severity_reason=(
        "A driver below the 525 branch cannot run CUDA 12 and holds the node to an old NCCL/CUDA stack; jobs "
        "may still run on that stack, so upgrade soon. Source: HyperPod NCCL diagnose script "
        "(awslabs/agent-plugins: driver below 525) and NVIDIA CUDA toolkit release notes (CUDA 12.0 needs "
        "525)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_major = int(ctx.threshold(RULE, "min_driver_major"))
    rows = ctx.rows(
        f"""
        WITH v AS ({VERSIONS_SQL})
        SELECT bundle_id, node, component, version, source, source_file, line FROM v
        WHERE component IN ('nvidia_driver', 'nccl') AND version IS NOT NULL
        ORDER BY bundle_id, node, source, line
        """
    )
    drivers: dict[tuple[str, str], list[tuple[tuple[int, ...], dict[str, Any]]]] = {}
    nccl: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        where = (r["bundle_id"], r["node"])
        if r["component"] == "nccl":
            if parse_version(r["version"]):
                nccl.setdefault(where, set()).add(r["version"])
        elif (key := parse_version(r["version"])) is not None:
            drivers.setdefault(where, []).append((key, r))
    for (bundle_id, node), found in sorted(drivers.items(), key=lambda kv: kv[0][1]):
        key, r = min(found, key=lambda kr: kr[0])
        if key[0] >= min_major:
            continue
        on_host = sorted(nccl.get((bundle_id, node), set()))
        where_nccl = f"NCCL {', '.join(on_host)} on the host" if on_host else "NCCL not seen on the host"
        yield RULE.finding(
            node=node,
            message=(
                f"{node} runs NVIDIA driver {r['version']} (branch {key[0]}, from {r['source']}), "
                f"older than the {min_major} branch NCCL needs ({where_nccl}; judged on every GPU node)"
            ),
            params={
                "driver": r["version"],
                "driver_major": key[0],
                "min_driver_major": min_major,
                "source": r["source"],
                "nccl_on_host": on_host,
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])] if r["source_file"] else [],
            bundle_id=bundle_id,
        )
