"""Each node's placement facts, from meta.env (table node) or the placement probe (placement_fact).

meta.env wins where both have a value; the placement probe adds what meta.env lacks (Kubernetes zone
labels, EC2 network-node layers, UltraServer id).  Every fact keeps its evidence: the placement file
and line, or the meta.env ``key=value`` it came from.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Evidence, Finding, Severity

KEYS = ("instance_id", "instance_type", "availability_zone", "az_id", "placement_group", "ultraserver_id")
_LAYER = re.compile(r"^network_node_layer_(\d)$")


@dataclass
class NodePlacement:
    bundle_id: str
    node: str
    hostname: str | None
    facts: dict[str, tuple[str, Evidence]] = field(default_factory=dict)
    layers: dict[int, tuple[str, Evidence]] = field(default_factory=dict)  # 1 = top of the hierarchy
    imds: bool = False  # instance metadata was read (so an absent placement group means none)

    def get(self, key: str) -> str | None:
        hit = self.facts.get(key)
        return hit[0] if hit else None


def placements(ctx: Context) -> list[NodePlacement]:
    nodes: dict[str, NodePlacement] = {}
    cols = ", ".join(KEYS)
    for r in ctx.rows(
        f"SELECT bundle_id, node, hostname, network_node_layers, {cols} FROM node ORDER BY node"
    ):
        p = NodePlacement(r["bundle_id"], r["node"], r["hostname"])
        for key in KEYS:
            if r[key]:
                p.facts[key] = (r[key], ctx.meta_evidence(r["node"], key))
        if r["network_node_layers"]:
            ev = ctx.meta_evidence(r["node"], "network_node_layers")
            for i, layer in enumerate(re.split(r"[\s,;]+", r["network_node_layers"].strip()), start=1):
                if layer:
                    p.layers[i] = (layer, ev)
        p.imds = bool(r["instance_id"])
        nodes[r["bundle_id"]] = p
    facts = ctx.rows(
        "SELECT bundle_id, key, value, source, source_file, line FROM placement_fact "
        f"WHERE value IS NOT NULL AND trim(value) <> '' AND (key IN ({', '.join('?' * len(KEYS))}) "
        "OR key LIKE 'network_node_layer_%' OR source = 'imds') ORDER BY bundle_id, line",
        *KEYS,
    )
    for f in facts:
        hit = nodes.get(f["bundle_id"])
        if hit is None:
            continue
        p = hit
        p.imds |= f["source"] == "imds"
        ev = ctx.evidence(f["source_file"], f["line"])
        if f["key"] in KEYS:
            p.facts.setdefault(f["key"], (f["value"].strip(), ev))
        elif m := _LAYER.match(f["key"]):
            p.layers.setdefault(int(m.group(1)), (f["value"].strip(), ev))
    return list(nodes.values())


def group_by(nodes: Iterable[NodePlacement], key: str) -> dict[str, list[NodePlacement]]:
    out: dict[str, list[NodePlacement]] = defaultdict(list)
    for p in nodes:
        value = p.get(key)
        if value:
            out[value].append(p)
    return dict(sorted(out.items()))


def spread_finding(
    rule: RuleInfo,
    message: str,
    groups: dict[str, list[NodePlacement]],
    key: str,
    *,
    severity: Severity | None = None,
    **extra: object,
) -> Finding:
    """A cluster-level finding listing which nodes sit in which group, with one evidence per group.

    ``severity`` defaults to the rule's; ``extra`` goes into the params."""
    members = {value: [p.node for p in ps] for value, ps in groups.items()}
    evidence = [
        ps[0].facts[key][1] if key in ps[0].facts else Evidence("", None, None) for ps in groups.values()
    ]
    return rule.finding(
        severity=severity,
        node=None,
        message=message,
        params={"key": key, "groups": members, "distinct": len(groups), **extra},
        evidence=[e for e in evidence if e.file],
        key=(key,),
    )


def too_many_groups(
    ctx: Context, rule: RuleInfo, key: str, limit: str, what: str, nodes: list[NodePlacement] | None = None
) -> Iterator[Finding]:
    """One finding when the nodes fall into more than the rule's ``limit`` threshold of ``key`` groups.

    ``what`` opens the message, with ``{n}`` for the number of groups: "nodes span {n} placement groups".
    """
    groups = group_by(placements(ctx) if nodes is None else nodes, key)
    if len(groups) > ctx.threshold(rule, limit):
        yield spread_finding(rule, f"{what.format(n=len(groups))}: {describe(groups)}", groups, key)


def describe(groups: dict[str, list[NodePlacement]], limit: int = 6) -> str:
    """'us-east-1a: n1, n2; us-east-1b: n3'."""
    parts = []
    for value, ps in groups.items():
        names = [p.node for p in ps]
        shown = ", ".join(names[:limit]) + (f" +{len(names) - limit}" if len(names) > limit else "")
        parts.append(f"{value}: {shown}")
    return "; ".join(parts)
