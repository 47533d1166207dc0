"""Software and firmware versions that differ between nodes of one instance type.

Why it matters: nodes of one job must run the same driver, CUDA, NCCL, aws-ofi-nccl, EFA installer,
libfabric, kernel and VBIOS; EFA/OFI drift alone can cost 10-30 % of pairwise bandwidth (performance-debugger
details guide) and mixed NCCL builds fail with 'Incompatible NCCL version' (NCCL debugging guide § 10).  The
EFA path is compared at each layer a bundle shows: the installer, the efa kernel driver (``efa_module``:
``modinfo efa``, ``/sys/module/efa/version``, dkms), the libfabric library and the libfabric efa provider
itself (``efa_provider``: the ``version:`` fi_info prints per provider entry, 111.0 / 121.0 / 201.0; a node
whose entries disagree shows them joined, ``111.0,121.0``).  One finding per instance type and component names
the majority value and every deviating node.  Each component is compared within one source (the one most nodes
report), so 'modinfo 2.17.3g' is never set against 'dkms 2.17.3'.  A component found on some hosts but not on
others is reported as info and not counted as drift: NCCL, the OFI plugin and CUDA often live only inside the
training container, where a host probe cannot see them.  A node that is the only one of its type with
a version read (fewer than ``min_nodes``) has nothing to drift from: it is not examined by this rule
("too few peers"), never passed.
Reference: docs/sources.md#versions; hyperpod-version-checker.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo, too_few_peers
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL
from analyzer.judge.rules.version._versions import COMPONENTS, VERSIONS_SQL
from analyzer.judge.signals.versions import Majority, majority

RULE = RuleInfo(
    id="version.drift",
    cause_kind="setting",
    setting_keys=("component", "majority"),
    title="Version drift between nodes of one instance type",
    severity=Severity.WARNING,
    version=3,  # 2: a lone deviating node is named as the finding's node; 3: the efa provider compared
    requires=("node",),
    requires_any=(
        "software_version",
        "gpu.driver_version",
        "gpu.cuda_version",
        "gpu.vbios",
        "smi_summary.driver_version",
        "gpu_query.driver_version",
        "gpu_query.vbios_version",
        "efa_port.fw_ver",
        "fi_provider.version",
        "node.kernel",
    ),
    peers="min_nodes",
    passed="versions agree across the nodes of each instance type",
    route=Route(
        "version-drift",
        "hyperpod-version-checker; hyperpod-node-debugger § E",
        "align the deviating nodes to the majority version (same AMI and container image everywhere)",
    ),
    severity_reason=(
        "Nodes of one job on different driver, CUDA, NCCL, EFA or kernel versions still run, but drift can "
        "cost 10-30 % of pairwise bandwidth; a component seen on only some hosts is info (it may live in the "
        "container). Source: HyperPod performance-debugger and version-checker skills "
        "(awslabs/agent-plugins)."
    ),
)

_SOURCE_ORDER = ("collector", "nvidia-smi-q", "nvidia-smi", "nvidia-smi-csv", "sysfs", "modinfo", "meta.env")
#: Components a host probe always sees when they are there: one missing on a node is no container
#: effect (not reported as 'absent'); an fi_info without an efa provider is net.fi_info.no_efa's.
_HOST_ONLY = ("kernel", "vbios", "efa_fw", "efa_provider")


def check(ctx: Context) -> Iterable[Finding]:
    min_nodes = ctx.threshold(RULE, "min_nodes")
    rows = ctx.rows(
        f"""
        WITH v AS ({VERSIONS_SQL}), t AS ({NODE_TYPE_SQL})
        SELECT t.instance_type, v.bundle_id, v.node, v.component, v.source,
               string_agg(DISTINCT v.version, ',' ORDER BY v.version) AS value,
               min(v.source_file) AS source_file, min(v.line) AS line
        FROM v JOIN t ON t.bundle_id = v.bundle_id
        WHERE v.component IN ({",".join("?" * len(COMPONENTS))})
        GROUP BY ALL ORDER BY t.instance_type, v.component, v.node
        """,
        *COMPONENTS,
    )
    probed = {r["bundle_id"] for r in ctx.rows("SELECT DISTINCT bundle_id FROM software_version")}
    nodes = ctx.rows(f"SELECT bundle_id, node, instance_type FROM ({NODE_TYPE_SQL})")
    group_nodes: dict[str, dict[str, str]] = defaultdict(dict)  # type -> node -> bundle_id
    for n in nodes:
        group_nodes[n["instance_type"]][n["node"]] = n["bundle_id"]
    by_key: dict[tuple[str, str], dict[str, dict[str, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    versioned: dict[str, set[str]] = defaultdict(set)  # type -> nodes with a version read
    for r in rows:
        by_key[(r["instance_type"], r["component"])][r["source"]][r["node"]] = r
        if r["value"]:
            versioned[r["instance_type"]].add(r["node"])
    for itype, have in sorted(versioned.items()):
        if len(have) < min_nodes:
            ctx.not_judged(sorted(have), too_few_peers(len(have), min_nodes, "nodes", itype))
    for (itype, component), sources in sorted(by_key.items()):
        known = {node for per in sources.values() for node, r in per.items() if r["value"]}
        source, per_node = max(
            sources.items(),
            key=lambda kv: (sum(1 for r in kv[1].values() if r["value"]), -_rank(kv[0])),
        )
        valued = {node: r for node, r in per_node.items() if r["value"]}
        if len(valued) >= min_nodes:
            found = majority({node: r["value"] for node, r in valued.items()})
            if found.deviating:
                yield _drift(ctx, itype, component, source, valued, found)
        absent = sorted(
            node
            for node, bid in group_nodes[itype].items()
            if node not in known and bid in probed and component not in _HOST_ONLY
        )
        if known and absent:
            yield _absent(itype, component, absent, valued or {}, sorted(known))


#: Components that one install moves together: their drift on one node is one cause, counted once in
#: the ranking (analyzer.model.verdict.cause_of).  The driver package brings the CUDA driver API version
#: nvidia-smi prints (cuda_driver_max; the toolkit, ``cuda``, is an install of its own); the VBIOS is
#: read and judged with the driver by the same nvidia-smi dump.
CAUSES = {
    "nvidia_driver": "nvidia driver install",
    "cuda_driver_max": "nvidia driver install",
    "vbios": "nvidia driver install",
    "efa_installer": "EFA installer",
    "efa_module": "EFA installer",
    "efa_provider": "EFA installer",
    "libfabric": "EFA installer",
    "rdma_core": "EFA installer",
}


def _rank(source: str) -> int:
    return _SOURCE_ORDER.index(source) if source in _SOURCE_ORDER else len(_SOURCE_ORDER)


def _drift(
    ctx: Context,
    itype: str,
    component: str,
    source: str,
    valued: dict[str, dict[str, Any]],
    found: Majority,
) -> Finding:
    deviating = found.deviating
    shown = ", ".join(f"{n}={v}" for n, v in list(deviating.items())[:10])
    more = f" and {len(deviating) - 10} more" if len(deviating) > 10 else ""
    lead = "no majority, most common" if found.split else "majority"
    evidence: list[Evidence] = []
    for node in [*list(deviating)[:5], found.holders[0]]:
        r = valued[node]
        if r["source_file"]:
            evidence.append(ctx.evidence(r["source_file"], r["line"]))
        else:
            evidence.append(ctx.meta_evidence(node, component))
    # one node off the majority is that node's fault (ranked); several are a fleet inconsistency
    lone = next(iter(deviating)) if len(deviating) == 1 and not found.split else None
    return RULE.finding(
        severity=Severity.WARNING,
        node=lone,
        message=(
            f"{component} differs across {len(valued)} {itype} nodes ({source}): {lead} {found.value} "
            f"on {len(found.holders)} nodes; deviating: {shown}{more}"
        ),
        params={
            "component": component,
            "instance_type": itype,
            "source": source,
            "majority": found.value,
            "majority_nodes": len(found.holders),
            "split": found.split,
            "deviating": deviating,
            "nodes": sorted(deviating),
            "values": found.counts,
            "nodes_compared": len(valued),
            "cause": CAUSES.get(component, component),
        },
        evidence=evidence,
        key=(itype, component),
    )


def _absent(
    itype: str, component: str, absent: list[str], valued: dict[str, dict[str, Any]], known: list[str]
) -> Finding:
    values = sorted({r["value"] for r in valued.values()})
    return RULE.finding(
        severity=Severity.INFO,
        node=None,
        message=(
            f"{component} was not found on the host of {len(absent)} {itype} nodes ({', '.join(absent[:10])}) "
            f"but is on {len(known)} peers ({', '.join(values) or 'version unknown'}); a host probe cannot see "
            f"software inside the training container, so this is not counted as drift"
        ),
        params={
            "component": component,
            "instance_type": itype,
            "absent_nodes": absent,
            "peer_nodes": len(known),
            "peer_values": values,
        },
        key=(itype, component, "absent"),
    )
