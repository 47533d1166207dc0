"""Each node's placement facts: meta.env (table node), its own placement files, and the cluster-level
exports that name several nodes, each entry mapped to the node it names.

Precedence, per fact: meta.env, then the node's own placement files (IMDS, its own Kubernetes node),
then an export.  Every fact keeps its evidence: the placement file and line, or the meta.env
``key=value`` it came from.

An export is a placement file that names several nodes: ``kubectl get nodes -o json`` (or describe)
of the cluster, ``aws ec2 describe-instance-topology``, aws-ofi-nccl's label dump, in a cluster's
``extra/`` folder (rows without a node) or dropped into one node's bundle (a file with entries for
several node names).  Each entry (a Kubernetes node, an EC2 instance) is mapped to a node of the analysis
by instance id (meta.env ``instance_id``, the node's own IMDS facts, the id inside ``hyperpod-i-...``),
else by name through analyzer.judge.hosts (node name, meta.env ``hostname``, meta.env ``ip`` / ``local_ipv4``
/ ``local_hostname``, the names its own Kubernetes record gives; ``ip-a-b-c-d`` <-> ``a.b.c.d``, short
names).  An entry that names no analyzed node, or several, is ignored and counted.  Slurm topology
(``topology_member``) lists node names for the whole cluster wherever it was found; each name is
matched the same way and a node's leaf switch is the lowest-level switch listing it.

A node that no source places has no value for the key a rule judges: that rule did not examine it
(``not_examined`` in the finding), and the node never counts as passing.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from analyzer.judge.engine import Context, RuleInfo, TooFewPeers, too_few_peers
from analyzer.judge.findings import Evidence, Finding, Severity
from analyzer.judge.hosts import HostIndex, instance_id

KEYS = ("instance_id", "instance_type", "availability_zone", "az_id", "placement_group", "ultraserver_id")
_LAYER = re.compile(r"^network_node_layer_(\d)$")
#: placement_fact keys that name an entry's host (besides its node_name)
_NAME_KEYS = ("hostname", "node_name", "InternalIP", "Hostname", "InternalDNS", "local_hostname")
_ADDRESS_KEYS = ("local_ipv4", "local-ipv4")
#: meta.env keys (kept in node.meta_json) that name the host besides node and hostname
META_ALIASES = ("ip", "local_ipv4", "local_hostname")
#: sources that state the placement group outright: no GroupName there means no group
_GROUP_SOURCES = ("imds", "ec2-topology")
IGNORED_SHOWN = 10
#: placed nodes a comparison of their placement needs (zones, types, groups across the node set)
MIN_PLACED = 2


@dataclass
class NodePlacement:
    bundle_id: str
    node: str
    hostname: str | None
    facts: dict[str, tuple[str, Evidence]] = field(default_factory=dict)
    layers: dict[int, tuple[str, Evidence]] = field(default_factory=dict)  # 1 = top of the hierarchy
    imds: bool = False  # instance metadata (or EC2's own topology) was read: an absent group means none
    leaf: tuple[str, Evidence] | None = None  # Slurm leaf switch (topology.conf / scontrol show topology)

    def get(self, key: str) -> str | None:
        hit = self.facts.get(key)
        return hit[0] if hit else None


@dataclass
class Exports:
    """What the files naming several nodes held: entries read, and those naming no analyzed node."""

    entries: int = 0
    ignored: list[str] = field(default_factory=list)  # names of the entries that named no analyzed node
    slurm_names: int = 0
    slurm_ignored: list[str] = field(default_factory=list)

    def params(self, slurm: bool = False) -> dict[str, Any]:
        """Finding params saying how many export entries were read and ignored (none when none read)."""
        read, ignored = (self.slurm_names, self.slurm_ignored) if slurm else (self.entries, self.ignored)
        if not read:
            return {}
        return {
            "export_entries": read,
            "export_entries_ignored": len(ignored),
            "export_ignored_names": ignored[:IGNORED_SHOWN],
        }


@dataclass
class Placement:
    nodes: list[NodePlacement]
    exports: Exports


def placements(ctx: Context) -> list[NodePlacement]:
    """Every analyzed node with its placement facts (read once, shared by the placement rules)."""
    return read(ctx).nodes


def read(ctx: Context) -> Placement:
    found: Placement = ctx.memo("placement.placements", lambda: _read(ctx))
    return found


def _read(ctx: Context) -> Placement:
    nodes: dict[str, NodePlacement] = {}  # by node name (unique: a second bundle of a node is <node>#2)
    aliases: dict[str, set[str]] = defaultdict(set)  # node -> its other names
    ids: dict[str, set[str]] = defaultdict(set)  # instance id (lower case) -> nodes
    cols = ", ".join(KEYS)
    for r in ctx.rows(
        f"SELECT bundle_id, node, hostname, network_node_layers, meta_json, {cols} FROM node ORDER BY node"
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
        if r["instance_id"]:
            ids[r["instance_id"].strip().lower()].add(p.node)
        meta = _meta(r["meta_json"])
        aliases[p.node].update(v for k in META_ALIASES if (v := str(meta.get(k) or "").strip()))
        nodes[p.node] = p
    by_bundle = {p.bundle_id: p for p in nodes.values()}

    rows = ctx.rows(
        "SELECT bundle_id, node IS NOT NULL AS own, node_name, key, value, source, source_file, line "
        "FROM placement_fact WHERE value IS NOT NULL AND trim(value) <> '' AND ("
        f"key IN ({', '.join('?' * len(KEYS))}) OR key LIKE 'network_node_layer_%' "
        f"OR key IN ({', '.join('?' * len(_NAME_KEYS + _ADDRESS_KEYS))}) OR source IN ('imds', 'ec2-topology')) "
        "ORDER BY node IS NULL, bundle_id, source_file, line",
        *KEYS,
        *_NAME_KEYS,
        *_ADDRESS_KEYS,
    )
    # a node's own placement file names one node at most and belongs to it; a file naming several
    # nodes (in a node's bundle or in a cluster's extra/, where its rows carry no node) is an export
    names_in: dict[tuple[str, str], set[str]] = defaultdict(set)
    for f in rows:
        if f["node_name"] is not None:
            names_in[(f["bundle_id"], f["source_file"])].add(f["node_name"])
    own: list[dict[str, Any]] = []
    exported: list[dict[str, Any]] = []
    for f in rows:
        mine = f["own"] and len(names_in[(f["bundle_id"], f["source_file"])]) <= 1
        (own if mine and f["bundle_id"] in by_bundle else exported).append(f)
    for f in own:
        node = by_bundle[f["bundle_id"]].node
        if f["key"] == "instance_id":
            ids[f["value"].strip().lower()].add(node)
        elif f["key"] in _NAME_KEYS + _ADDRESS_KEYS:
            aliases[node].add(f["value"].strip())
        _add(ctx, nodes[node], f)
    index = HostIndex({"node": n, "hostname": p.hostname, "aliases": aliases[n]} for n, p in nodes.items())

    def find(names: list[str], instance_ids: list[str]) -> str | None:
        by_id = {n for i in instance_ids for n in ids.get(i.strip().lower(), ())}
        if by_id:
            return next(iter(by_id)) if len(by_id) == 1 else None
        by_name = {index.match(n) for n in names} - {None}
        return next(iter(by_name)) if len(by_name) == 1 else None

    exports = Exports()
    entries: dict[tuple[str, str, str | None], list[dict[str, Any]]] = defaultdict(list)
    for f in exported:
        entries[(f["bundle_id"], f["source_file"], f["node_name"])].append(f)
    for (_, source_file, name), facts in entries.items():
        if name is None:  # a list's own keys (kind, NextToken), or facts that name no node at all
            if any(f["key"] in KEYS or _LAYER.match(f["key"]) for f in facts):
                exports.entries += 1
                exports.ignored.append(f"{source_file} (no node name)")
            continue
        exports.entries += 1
        names = [name, *(f["value"] for f in facts if f["key"] in _NAME_KEYS + _ADDRESS_KEYS)]
        # an EC2 topology entry is named by its InstanceId, printed as is (docs use i-1111111111example)
        instance_ids = [name, *(f["value"] for f in facts if f["key"] == "instance_id")]
        instance_ids += [iid for n in names if (iid := instance_id(n))]
        match = find(names, instance_ids)
        if match is None:
            exports.ignored.append(name)
            continue
        for f in facts:
            _add(ctx, nodes[match], f)
    _slurm(ctx, index, nodes, exports)
    return Placement(list(nodes.values()), exports)


def _add(ctx: Context, p: NodePlacement, f: dict[str, Any]) -> None:
    """One placement_fact row onto its node, unless a source read earlier already gave that fact."""
    p.imds |= f["source"] in _GROUP_SOURCES
    ev = ctx.evidence(f["source_file"], f["line"])
    if f["key"] in KEYS:
        p.facts.setdefault(f["key"], (f["value"].strip(), ev))
    elif m := _LAYER.match(f["key"]):
        p.layers.setdefault(int(m.group(1)), (f["value"].strip(), ev))


def _slurm(ctx: Context, index: HostIndex, nodes: dict[str, NodePlacement], exports: Exports) -> None:
    rows = ctx.rows(
        "SELECT node_name, switch, source_file, line FROM topology_member "
        "WHERE node_name IS NOT NULL AND source = 'slurm-topology' ORDER BY coalesce(level, 0), line"
    )
    seen: set[str] = set()
    for r in rows:
        if r["node_name"] in seen:
            continue  # scontrol lists a node again under every upper switch: the lowest level came first
        seen.add(r["node_name"])
        exports.slurm_names += 1
        node = index.match(r["node_name"])
        if node is None:
            exports.slurm_ignored.append(r["node_name"])
        elif nodes[node].leaf is None:
            nodes[node].leaf = (r["switch"], ctx.evidence(r["source_file"], r["line"]))


def _meta(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


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
    evidence_of: Callable[[NodePlacement], Evidence | None] | None = None,
    not_examined: list[str] | None = None,
    **extra: object,
) -> Finding:
    """A cluster-level finding listing which nodes sit in which group, with one evidence per group.

    ``severity`` defaults to the rule's; ``evidence_of`` gives a node's evidence for ``key`` (default: its
    fact); ``not_examined`` names the nodes no source placed (added to the message and params);
    ``extra`` goes into the params."""
    members = {value: [p.node for p in ps] for value, ps in groups.items()}
    get = evidence_of or (lambda p: p.facts[key][1] if key in p.facts else None)
    evidence = [get(ps[0]) for ps in groups.values()]
    params: dict[str, Any] = {"key": key, "groups": members, "distinct": len(groups)}
    if not_examined:
        params["not_examined"] = not_examined
        message = f"{message} (not examined, no {key} known: {shown(not_examined)})"
    return rule.finding(
        severity=severity,
        node=None,
        message=message,
        params={**params, **extra},
        evidence=[e for e in evidence if e is not None and e.file],
        key=(key,),
    )


def too_many_groups(
    ctx: Context,
    rule: RuleInfo,
    key: str,
    limit: str,
    what: str,
    examined: Callable[[NodePlacement], bool] | None = None,
) -> Iterator[Finding]:
    """One finding when the nodes fall into more than the rule's ``limit`` threshold of ``key`` groups.

    ``what`` opens the message, with ``{n}`` for the number of groups: "nodes span {n} placement groups".
    ``examined`` tells the nodes the rule could judge (default: those with a value for ``key``); the
    others are named as not examined.  A comparison of fewer than two placed nodes is not made: the rule
    is not examined (:class:`TooFewPeers`), as one node's zone or type is in no way "one of many".
    """
    found = read(ctx)
    groups = group_by(found.nodes, key)
    judged = examined or (lambda p: bool(p.get(key)))
    placed = [p.node for p in found.nodes if judged(p)]
    if len(placed) < MIN_PLACED:
        raise TooFewPeers(too_few_peers(len(placed), MIN_PLACED, f"nodes with {key}"))
    ctx.saw(placed)  # placed by an export, too
    if len(groups) > ctx.threshold(rule, limit):
        missing = [p.node for p in found.nodes if not judged(p)]
        message = f"{what.format(n=len(groups))}: {describe(groups)}"
        yield spread_finding(rule, message, groups, key, not_examined=missing, **found.exports.params())


def shown(names: list[str], limit: int = 6) -> str:
    """'n1, n2, n3 +4'."""
    return ", ".join(names[:limit]) + (f" +{len(names) - limit}" if len(names) > limit else "")


def describe(groups: dict[str, list[NodePlacement]], limit: int = 6) -> str:
    """'us-east-1a: n1, n2; us-east-1b: n3'."""
    return "; ".join(f"{value}: {shown([p.node for p in ps], limit)}" for value, ps in groups.items())
