"""Nodes spread over several network blocks: EC2 network-node layers, UltraServers, Slurm switches.

Why it matters: EC2 reports, per instance, the network nodes above it (layer 1 = top, the last layer =
the node the instance plugs into).  Nodes under different last-layer network nodes are normal for a
large job (info); nodes that already differ at a higher layer are far apart and their pairwise
bandwidth turns uneven (warning; HyperPod performance-debugger skill: "systemic topology issues").  Nodes in
several UltraServers leave the NVLink domain (info).  From Slurm topology.conf, nodes under several leaf
switches are listed (info).  Layers come from meta.env ``network_node_layers``, the node's own placement probe
(``topology.k8s.aws/network-node-layer-N`` labels, describe-instance-topology), or a cluster-level export
naming several nodes (``kubectl get nodes -o json``, ``aws ec2 describe-instance-topology`` in the cluster's
extra/), each entry mapped to its node by instance id, node name, hostname or private address; entries naming
no analyzed node are counted in the finding (``export_entries_ignored``), and nodes that no source places are
named as not examined.  With fewer than ``min_nodes`` nodes nothing can be spread: the rule is not examined
("too few peers"), never passed.
False positives: none known; the finding is a fact for the pairwise-bandwidth reading.
Reference: docs/sources.md#placement, docs/sources.md#nccl-bandwidth (localising slow pairs).
Scope: shared: placement is a property of the node set, not a fault of one node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import partial

from analyzer.judge.engine import Context, RuleInfo, TooFewPeers, too_few_peers
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.rules.placement._placement import NodePlacement, describe, group_by, read, spread_finding

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
    peers="min_nodes",
    scope="shared",
    route=Route(
        "placement-capacity",
        "hyperpod-cluster-debugger references/capacity-planning.md; hyperpod-performance-debugger § A",
        "place the job's nodes in one network block (placement group, topology-aware scheduling)",
    ),
    severity_reason=(
        "Warning when nodes already differ at a higher network layer (far apart, uneven pairwise bandwidth); "
        "info when they only sit under different last-layer nodes, UltraServers or Slurm leaf switches, "
        "which is normal for a large job. Source: AWS EC2 instance topology documentation (network node "
        "layers) and HyperPod performance-debugger skill (awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    found = read(ctx)
    nodes = found.nodes
    ctx.saw(p.node for p in nodes if p.layers or p.leaf or p.get("ultraserver_id"))
    if len(nodes) < (least := ctx.threshold(RULE, "min_nodes")):
        raise TooFewPeers(too_few_peers(len(nodes), least, "nodes"))
    placed = [p for p in nodes if p.layers]
    unplaced = [p.node for p in nodes if not p.layers]
    yield from _layers(placed, unplaced, found.exports.params())
    ultra = group_by(nodes, "ultraserver_id")
    if len(ultra) > 1:
        message = f"nodes span {len(ultra)} UltraServers: {describe(ultra)}"
        missing = [p.node for p in nodes if not p.get("ultraserver_id")]
        yield spread_finding(
            RULE, message, ultra, "ultraserver_id", severity=Severity.INFO, not_examined=missing
        )
    leaves: dict[str, list[NodePlacement]] = defaultdict(list)
    for p in nodes:
        if p.leaf:
            leaves[p.leaf[0]].append(p)
    if len(leaves) > 1:
        groups = dict(sorted(leaves.items()))
        message = f"nodes sit under {len(groups)} Slurm leaf switches (topology.conf): {describe(groups)}"
        yield spread_finding(
            RULE,
            message,
            groups,
            "slurm_leaf_switch",
            severity=Severity.INFO,
            evidence_of=lambda p: p.leaf[1] if p.leaf else None,
            not_examined=[p.node for p in nodes if not p.leaf],
            **found.exports.params(slurm=True),
        )


def _layers(nodes: list[NodePlacement], unplaced: list[str], exports: dict[str, object]) -> Iterable[Finding]:
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
        ordered = dict(sorted(groups.items()))
        yield spread_finding(
            RULE,
            f"nodes span {len(groups)} {where}: {describe(ordered)}",
            ordered,
            f"network_node_layer_{layer}",
            severity=severity,
            evidence_of=partial(_layer_evidence, layer),
            not_examined=unplaced,
            layer=layer,
            depth=depth,
            **exports,
        )
        return  # the highest layer that differs says it; lower layers differ as a consequence


def _layer_evidence(layer: int, p: NodePlacement) -> Evidence:
    return p.layers[layer][1]
