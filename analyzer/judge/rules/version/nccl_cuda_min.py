"""NCCL on a node is older than the lowest release recommended for its CUDA major version.

Why it matters: the HyperPod version-checker skill recommends NCCL 2.18+ with CUDA 12.x and 2.12+ with CUDA
11.x; older NCCL builds miss the fixes and transports the CUDA generation needs (NVLS, EFA plugin API) and are
a common cause of init failures and slow collectives after an image upgrade.  CUDA comes from the toolkit the
node reports (software_version ``cuda``: nvcc, /usr/local/cuda); when there is none, from the highest CUDA the
driver supports (nvidia-smi "CUDA Version") — the finding says which (``cuda_from``).  One finding per node
and NCCL version below the line.  CUDA majors the table does not list (10.x, 13.x) are not judged.
False positives: the host NCCL may not be the one the training container uses; with only the
driver's maximum CUDA, the NCCL may have been built for an older CUDA major on purpose.
Reference: docs/sources.md#versions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.version._versions import VERSIONS_SQL, compare, parse_version

RULE = RuleInfo(
    id="version.nccl.cuda_min",
    cause_kind="setting",
    setting_keys=("nccl", "cuda"),
    title="NCCL older than recommended for the CUDA version",
    severity=Severity.WARNING,
    requires=("software_version",),
    passed="host NCCL, where installed, new enough for its CUDA",
    route=Route(
        "version-drift",
        "hyperpod-version-checker; hyperpod-node-debugger § E",
        "upgrade NCCL (or use a training image whose NCCL matches its CUDA major)",
    ),
    severity_reason=(
        "An NCCL older than recommended for its CUDA major misses fixes and transports and often causes init "
        "failures or slow collectives, but may still work. Source: HyperPod version-checker skill "
        "(awslabs/agent-plugins: NCCL 2.18+ for CUDA 12, 2.12+ for CUDA 11)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    table = {int(major): str(nccl) for major, nccl in ctx.threshold(RULE, "min_nccl_by_cuda_major")}
    rows = ctx.rows(
        f"""
        WITH v AS ({VERSIONS_SQL})
        SELECT DISTINCT bundle_id, node, component, version, source, source_file, line FROM v
        WHERE component IN ('nccl', 'cuda', 'cuda_driver_max') AND version IS NOT NULL
        ORDER BY bundle_id, node, component, source, line
        """
    )
    per_node: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        if parse_version(r["version"]) is not None:
            per_node.setdefault((r["bundle_id"], r["node"]), {}).setdefault(r["component"], []).append(r)
    for (bundle_id, node), comps in sorted(per_node.items(), key=lambda kv: kv[0][1]):
        found = comps.get("cuda") or comps.get("cuda_driver_max")
        if not found or "nccl" not in comps:
            continue
        cuda = found[0]
        basis = "CUDA toolkit" if cuda["component"] == "cuda" else "driver's maximum CUDA"
        cuda_key = parse_version(cuda["version"]) or ()
        minimum = table.get(cuda_key[0])
        min_key = parse_version(minimum)
        if min_key is None:
            continue
        seen: set[str] = set()
        for r in comps["nccl"]:
            version = str(r["version"])
            if version in seen or compare(parse_version(version) or (), min_key) != -1:
                continue
            seen.add(version)
            evidence = [ctx.evidence(x["source_file"], x["line"]) for x in (r, cuda) if x["source_file"]]
            yield RULE.finding(
                node=node,
                message=(
                    f"{node} has NCCL {version} with {basis} {cuda['version']} ({cuda['source']}); "
                    f"CUDA {cuda_key[0]}.x wants NCCL {minimum} or newer"
                ),
                params={
                    "nccl": version,
                    "cuda": cuda["version"],
                    "cuda_from": basis,
                    "cuda_source": cuda["source"],
                    "min_nccl": minimum,
                },
                evidence=evidence,
                bundle_id=bundle_id,
                key=(version,),
            )
