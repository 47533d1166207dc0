"""GPU<->NIC topology differs between nodes of the same instance type (``nvidia-smi topo -m``).

What it detects: each node's GPU<->NIC pattern (the link code of every GPU,NIC cell: PIX, PXB, NODE,
SYS ...) compared across nodes of the same instance type.  The most common pattern is the reference;
every node with another pattern gets one finding that names the majority pattern's nodes and the
cells that differ (a NIC column absent on one node shows as "absent").  When no pattern has a strict
majority (two nodes, two patterns) one finding without a node lists the patterns.
Why it matters: a GPU whose NIC sits across the socket (SYS instead of PIX) pushes its network
traffic over the CPU interconnect; the node turns into the slow rank of every collective.  The HyperPod
performance-debugger skill § A lists topology differences between nodes as a cause of uneven NCCL
bandwidth (docs/sources.md#gpu-topology).
Needs at least ``min_nodes`` nodes of one type: the nodes of a smaller group, and nodes of an unknown
instance type, are not examined by it ("too few peers"), never passed.  False positives: a BIOS or kernel upgrade on some nodes can renumber NICs without changing the
physical layout (the cells then move rather than change): read the differing cells.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo, too_few_peers
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL

RULE = RuleInfo(
    id="gpu.topo.nic_drift",
    title="GPU-NIC topology differs between nodes of one instance type",
    severity=Severity.WARNING,
    requires=("topo_link.link", "topo_device.device_type"),
    requires_any=("node.instance_type", "placement_fact.value"),
    peers="min_nodes",
    passed="GPU-NIC topology alike on the nodes of each type",
    route=Route(
        "nccl-network",
        "hyperpod-performance-debugger § A",
        "compare the node's topology with its peers; reboot, and replace the node if the layout stays different",
    ),
    severity_reason=(
        "A node whose GPU to NIC layout differs from its peers sends network traffic across the CPU "
        "interconnect and becomes the slow rank, a degradation rather than a failure. Source: HyperPod "
        "performance-debugger skill (awslabs/agent-plugins: topology differences cause uneven NCCL "
        "bandwidth)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_nodes = ctx.threshold(RULE, "min_nodes")
    cells: dict[tuple[str, str], dict[tuple[str, str], str]] = defaultdict(dict)
    lines: dict[tuple[str, str], dict[tuple[str, str], tuple[str, int]]] = defaultdict(dict)
    for r in ctx.rows(
        """
        SELECT l.bundle_id, l.node, l.device, l.peer, l.link, l.source_file, l.line
        FROM topo_link l
        JOIN topo_device g ON g.bundle_id = l.bundle_id AND g.source_file = l.source_file
             AND g.device = l.device AND g.device_type = 'gpu'
        JOIN topo_device n ON n.bundle_id = l.bundle_id AND n.source_file = l.source_file
             AND n.device = l.peer AND n.device_type = 'nic'
        ORDER BY l.bundle_id, l.line
        """
    ):
        cells[(r["bundle_id"], r["node"])][(r["device"], r["peer"])] = r["link"]
        lines[(r["bundle_id"], r["node"])][(r["device"], r["peer"])] = (r["source_file"], r["line"])
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for t in ctx.rows(NODE_TYPE_SQL):
        key = (t["bundle_id"], t["node"])
        if key in cells and t["instance_type"] != "unknown":
            groups[t["instance_type"]].append(key)
        elif key in cells:
            ctx.not_judged([t["node"]], "instance type unknown: no peers to compare with")
    for itype, members in sorted(groups.items()):
        if len(members) < min_nodes:
            ctx.not_judged((m[1] for m in members), too_few_peers(len(members), min_nodes, "nodes", itype))
            continue
        patterns = {m: tuple(sorted(cells[m].items())) for m in members}
        counts = Counter(patterns.values()).most_common()
        if len(counts) == 1:
            continue
        if counts[0][1] == counts[1][1]:
            yield _no_majority(ctx, itype, members, patterns, lines)
            continue
        ref = dict(counts[0][0])
        ref_nodes = sorted(m[1] for m in members if patterns[m] == counts[0][0])
        for m in sorted(members, key=lambda x: x[1]):
            if patterns[m] == counts[0][0]:
                continue
            mine = cells[m]
            changed = [c for c in sorted(set(ref) | set(mine)) if mine.get(c) != ref.get(c)]
            diff = [f"{g}-{n} {mine.get((g, n), 'absent')} (majority {ref.get((g, n), 'absent')})"
                    for g, n in changed]  # fmt: skip
            rows = [lines[m][c] for c in changed if c in lines[m]] or list(lines[m].values())[:1]
            yield RULE.finding(
                node=m[1],
                message=f"{m[1]} ({itype}): GPU-NIC topology differs from the majority pattern of "
                f"{len(ref_nodes)} of {len(members)} nodes in {len(diff)} cell(s): {'; '.join(diff[:8])}"
                + (" ..." if len(diff) > 8 else ""),
                params={"instance_type": itype, "differences": diff, "cells": len(diff),
                        "majority_nodes": ref_nodes, "node_count": len(members)},
                evidence=list(dict.fromkeys(ctx.evidence(*w) for w in rows))[:8],
                bundle_id=m[0],
            )  # fmt: skip


#: a node: (bundle id, node name); its GPU-NIC links: (GPU, NIC) -> link class, and -> (file, line)
Node = tuple[str, str]
Pattern = tuple[tuple[tuple[str, str], str], ...]


def _no_majority(
    ctx: Context,
    itype: str,
    members: list[Node],
    patterns: dict[Node, Pattern],
    lines: dict[Node, dict[tuple[str, str], tuple[str, int]]],
) -> Finding:
    distinct = list(dict.fromkeys(patterns[m] for m in sorted(members, key=lambda x: x[1])))
    by_pattern = [sorted(m[1] for m in members if patterns[m] == p) for p in distinct]
    return RULE.finding(
        node=None,
        message=f"{itype}: {len(distinct)} different GPU-NIC topology patterns among {len(members)} nodes "
        f"and none is a majority: {' | '.join(', '.join(g) for g in by_pattern)}",
        params={"instance_type": itype, "patterns": len(distinct), "node_count": len(members),
                "groups": by_pattern},
        evidence=[ctx.evidence(*next(iter(lines[m].values()))) for m in sorted(members, key=lambda x: x[1])][:8],
        key=(itype,),
    )  # fmt: skip
