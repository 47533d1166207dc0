"""Nodes spread over several network blocks: EC2 network-node layers, UltraServers, Slurm switches.

Why it matters: EC2 reports, per instance, the network nodes above it (layer 1 = top, the last layer =
the node the instance plugs into).  Nodes under different last-layer network nodes are normal for a
large job (info); nodes that already differ at a higher layer are far apart and their pairwise
bandwidth turns uneven (warning; PD-SKILL "systemic topology issues").  Nodes in several UltraServers
leave the NVLink domain (info).  From Slurm topology.conf, nodes under several leaf switches are listed
(info).  Layers come from meta.env ``network_node_layers`` or the placement probe
(``topology.k8s.aws/network-node-layer-N`` labels, describe-instance-topology).
False positives: none known; the finding is a fact for the pairwise-bandwidth reading.
Reference: rules-facts § 1.5, § 3.2 step 4.
Scope: shared: placement is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity
from analyzer.rules.placement._placement import NodePlacement, describe, group_by, placements, spread_finding

RULE = RuleInfo(
    id="placement.spread",
    title="Nodes spread over several network blocks",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=(
        "node.network_node_layers",
        "node.ultraserver_id",
        "placement_fact.value",
        "topology_member.node_name",
    ),
    passed="nodes not spread over network blocks",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-cluster-debugger references/capacity-planning.md; hyperpod-performance-debugger § A",
        "place the job's nodes in one network block (placement group, topology-aware scheduling)",
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    nodes = placements(ctx)
    if len(nodes) < ctx.threshold(RULE, "min_nodes"):
        return
    yield from _layers([p for p in nodes if p.layers])
    ultra = group_by(nodes, "ultraserver_id")
    if len(ultra) > 1:
        message = f"nodes span {len(ultra)} UltraServers: {describe(ultra)}"
        yield spread_finding(RULE, message, ultra, "ultraserver_id", severity=Severity.INFO)
    leaves = _slurm_leaves(ctx, nodes)
    if len(leaves) > 1:
        message = f"nodes sit under {len(leaves)} Slurm leaf switches (topology.conf): {describe(leaves)}"
        yield spread_finding(RULE, message, leaves, "slurm_leaf_switch", severity=Severity.INFO)


def _layers(nodes: list[NodePlacement]) -> Iterable[Finding]:
    if len(nodes) < 2:
        return
    depth = min(max(p.layers) for p in nodes)
    for layer in range(1, depth + 1):
        groups: dict[str, list[NodePlacement]] = defaultdict(list)
        for p in nodes:
            if layer in p.layers:
                groups[p.layers[layer][0]].append(p)
        if len(groups) < 2:
            continue
        last = layer == depth
        severity = Severity.INFO if last else Severity.WARNING
        where = "last-layer network nodes (blocks)" if last else f"layer-{layer} network nodes (of {depth})"
        message = f"nodes span {len(groups)} {where}: {describe(dict(sorted(groups.items())))}"
        for ps in groups.values():
            for p in ps:
                p.facts[f"network_node_layer_{layer}"] = p.layers[layer]
        yield spread_finding(
            RULE,
            message,
            dict(sorted(groups.items())),
            f"network_node_layer_{layer}",
            severity=severity,
            layer=layer,
            depth=depth,
        )
        return  # the highest layer that differs says it; lower layers differ as a consequence


def _slurm_leaves(ctx: Context, nodes: list[NodePlacement]) -> dict[str, list[NodePlacement]]:
    names: dict[str, NodePlacement] = {}
    for p in nodes:
        names[p.node] = p
        if p.hostname:
            names[p.hostname.split(".")[0]] = p
    rows = ctx.rows(
        "SELECT node_name, switch, source_file, line FROM topology_member "
        "WHERE node_name IS NOT NULL AND source = 'slurm-topology' ORDER BY coalesce(level, 0), line"
    )
    leaf: dict[str, list[NodePlacement]] = defaultdict(list)
    seen: set[str] = set()
    for r in rows:
        hit = names.get(r["node_name"])
        if hit is None or hit.node in seen:
            continue
        p = hit
        seen.add(p.node)
        p.facts["slurm_leaf_switch"] = (r["switch"], ctx.evidence(r["source_file"], r["line"]))
        leaf[r["switch"]].append(p)
    return dict(sorted(leaf.items()))
