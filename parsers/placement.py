"""Placement and network topology: EC2 instance metadata, Kubernetes node labels, Slurm topology.

Commands whose output it reads (collector.sh reads IMDS with ``--imds``, by curl or bash's
``/dev/tcp``, runs ``scontrol show topology`` and copies topology.conf; the user adds kubectl output)::

    for k in instance-id instance-type placement/availability-zone placement/availability-zone-id \\
             placement/group-name placement/partition-number placement/region; do
        echo "$k=$(curl -s -H "X-aws-ec2-metadata-token: $T" http://169.254.169.254/latest/meta-data/$k)"
    done
    kubectl get node "$NODE" -o json          # or: kubectl describe node "$NODE"
    cat /opt/slurm/etc/topology.conf          # or: scontrol show topology

Sample (hand-written: two lines of the HyperPod topology.conf fixture and one Slurm block line)::

    SwitchName=nn-0b53107754517bf0e Switches=nn-424c855d4ad825aa4,nn-95acd7c656329fc30
    SwitchName=nn-424c855d4ad825aa4 Nodes=ip-10-1-111-198
    BlockName=b1 BlockIndex=0 Nodes=g3-129-[057,059] BlockSize=18

Inputs accepted: ``key=value`` or ``key: value`` lines whose key is an IMDS path (a leading
``http://169.254.169.254/latest/meta-data/`` is dropped; empty and 404 values are skipped); the
instance identity document and ``aws ec2 describe-instance-topology`` JSON; ``kubectl get node -o
json`` (one Node, a List, or a bare labels object); ``kubectl get nodes --show-labels``; the
``kubectl describe node`` Name/Labels/ProviderID lines; Slurm ``topology.conf`` and ``scontrol show
topology`` (switch and block plugins).  Slurm hostlists are expanded: ``ip-10-1-[2-4,7]`` gives four
names, ``g3-129-[057,059],g3-130-[001]`` keeps the zero padding.

Schema
------
``placement_fact`` (one row per fact):

- ``line`` int — line of the fact (JSON: of its key)
- ``key`` str — normalised for: instance_id, instance_type, availability_zone, az_id,
  placement_group, placement_partition, region, network_node_layer_1/2/3(/4) (1 = top of the
  EC2 network hierarchy, the last layer is the node the instance plugs into), ultraserver_id,
  node_name, hostname; any other key or label as printed
- ``value`` str — the value as printed
- ``source`` str — imds, k8s-label, k8s-node (Name, providerID), ec2-topology
- ``node_name`` str — the Kubernetes node the fact belongs to (``metadata.name``, the describe
  ``Name:``, the get-nodes NAME), so each node of a ``kind: List`` keeps its own facts and lines;
  null for IMDS and EC2 topology facts

``topology_member`` (one row per node a switch or block lists; one row with a null node for a
switch that lists only switches):

- ``line`` int — line of the SwitchName/BlockName entry
- ``source`` str — slurm-topology or slurm-block
- ``switch`` str — SwitchName, or BlockName for blocks
- ``level`` int — Level= when printed, else derived as Slurm does (0 = switch with nodes,
  1 + the highest child level above); null for blocks
- ``parent`` str — the switch whose Switches= lists this switch (null at the top)
- ``node_name`` str — one expanded Slurm node name (``node`` is the loader's column);
  ``scontrol show topology`` also lists every node below an upper switch, so take the
  lowest level for a node's leaf switch
- ``block_index`` int, ``block_size`` int — block plugin only

Examples
--------
>>> r = parse(SAMPLE)
>>> [(m["switch"][:7], m["level"], m["parent"], m["node_name"]) for m in r.rows("topology_member")][:2]
[('nn-0b53', 1, None, None), ('nn-424c', 0, 'nn-0b53107754517bf0e', 'ip-10-1-111-198')]
>>> [m["node_name"] for m in r.rows("topology_member") if m["source"] == "slurm-block"]
['g3-129-057', 'g3-129-059']
"""

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import strip_prefix

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="placement",
    title="Placement: instance metadata, Kubernetes node labels, Slurm topology",
    commands=(
        "curl IMDS meta-data/*",
        "scontrol show topology",
        "cat topology.conf",
        "kubectl get node -o json",
        "kubectl describe node",
    ),
    tables=("placement_fact", "topology_member"),
    versions_seen=("IMDSv2", "EKS 1.34 (Karpenter, NFD labels)", "Slurm 24.x topology.conf", "Slurm block"),
)

SCHEMA = {
    "placement_fact": (
        Column("line", "int", "line of the fact"),
        Column("key", "str", "normalised key, or the key as printed"),
        Column("value", "str", "value as printed"),
        Column("source", "str", "imds, k8s-label, k8s-node, ec2-topology"),
        Column("node_name", "str", "Kubernetes node the fact belongs to (null when not known)"),
    ),
    "topology_member": (
        Column("line", "int", "line of the switch/block entry"),
        Column("source", "str", "slurm-topology or slurm-block"),
        Column("switch", "str", "switch or block name"),
        Column("level", "int", "switch level, 0 = leaf"),
        Column("parent", "str", "switch listing this one under Switches="),
        Column("node_name", "str", "one expanded Slurm node name"),
        Column("block_index", "int", "BlockIndex"),
        Column("block_size", "int", "BlockSize"),
    ),
}

#: normalised key -> the IMDS paths, JSON keys and Kubernetes labels that carry it (lower case)
_KEYS = {
    "instance_id": "instance-id instanceid",
    "instance_type": "instance-type instancetype node.kubernetes.io/instance-type "
    "beta.kubernetes.io/instance-type",
    "availability_zone": "placement/availability-zone availability-zone availabilityzone "
    "topology.kubernetes.io/zone failure-domain.beta.kubernetes.io/zone topology.ebs.csi.aws.com/zone",
    "az_id": "placement/availability-zone-id availability-zone-id zoneid topology.k8s.aws/zone-id",
    "placement_group": "placement/group-name groupname placement-group",
    "placement_partition": "placement/partition-number partition-number partitionnumber",
    "region": "placement/region region topology.kubernetes.io/region "
    "failure-domain.beta.kubernetes.io/region",
    "hostname": "hostname local-hostname kubernetes.io/hostname",
    "node_name": "node-name nodename",
}
_ALIASES = {alias: key for key, aliases in _KEYS.items() for alias in (key, *aliases.split())}
_LAYER = re.compile(r"network[-_]?node[-_]?layer[-_]?(\d)$")
_IMDS_URL = re.compile(r"^https?://[^/\s]+/latest/(?:meta-data|dynamic)/")
_KV = re.compile(r"^([A-Za-z0-9](?:[\w./-]|:(?=[^\s=]))*)\s*(?:=|:(?=\s|$))\s*(.*)$")
_MISSING = re.compile(r"404|not found|<\?xml|<html", re.IGNORECASE)
_SLURM = re.compile(r"^\s*(?:SwitchName|BlockName)=\S+", re.MULTILINE | re.IGNORECASE)
_GET_NODES = re.compile(r"^NAME\s+STATUS\s+.*\bLABELS\s*$", re.MULTILINE)
_DESCRIBE = re.compile(r"^Labels:\s", re.MULTILINE)
_IMDS_KEY = re.compile(r"^(?:instance-id|instance-type|ami-id|local-ipv4|placement/[\w-]+)\s*[=:]", re.M)


def detect(text: str) -> int:
    """Confidence that text is placement/topology data."""
    if _SLURM.search(text) and re.search(r"\b(?:Switches|Nodes)=", text):
        return 85
    if _GET_NODES.search(text) or re.search(r'"kind"\s*:\s*"Node"|"NetworkNodes"\s*:', text):
        return 85
    if _DESCRIBE.search(text) and re.search(r"^Name:\s", text, re.M):
        return 80
    if re.search(r'"(?:topology\.k8s\.aws|topology\.kubernetes\.io)/[\w-]+"\s*:', text):
        return 70
    if re.search(r'"instanceId"\s*:', text) and re.search(r'"availabilityZone"\s*:', text):
        return 75
    imds = len(_IMDS_KEY.findall(text))
    return 75 if imds >= 2 else 50 if imds == 1 else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    lines = [strip_prefix(line) for line in text.splitlines()]
    if text.lstrip().startswith(("{", "[")):
        _json(text, result)
    elif _SLURM.search(text):
        _slurm(lines, result)
    elif _GET_NODES.search("\n".join(lines)):
        _get_nodes(lines, result)
    elif _DESCRIBE.search("\n".join(line.lstrip() for line in lines)):
        _describe(lines, result)
    else:
        _imds(lines, result)
    if not result.tables:
        raise ParseError("no placement facts or topology entries found")
    return result


def _fact(result: ParseResult, line: int, key: str, value: Any, source: str, node: str | None = None) -> None:
    value = "" if value is None else str(value).strip()
    if not value or _MISSING.search(value):
        return
    k = _IMDS_URL.sub("", key.strip()).strip("/")
    norm = _ALIASES.get(k.lower())
    if m := _LAYER.search(k.lower()):
        norm = f"network_node_layer_{m.group(1)}"
    elif "ultraserver" in k.lower() and k.lower().endswith("id"):
        norm = "ultraserver_id"
    elif k.lower() in ("networknodes", "network-nodes"):  # EC2 lists them top-down
        for n, nn in enumerate(re.findall(r"nn-\w+", value), start=1):
            _fact(result, line, f"network_node_layer_{n}", nn, source, node)
        return
    row = {"line": line, "key": norm or k, "value": value, "source": source, "node_name": node}
    if norm and any(
        r["key"] == norm and r["value"] == value and r["node_name"] == node
        for r in result.rows("placement_fact")
    ):
        return
    result.add("placement_fact", row)


def _imds(lines: list[str], result: ParseResult) -> None:
    for no, line in enumerate(lines, start=1):
        s = _IMDS_URL.sub("", line.strip())
        if not s or s.startswith("#") or s.strip(".") == "":
            continue
        if m := _KV.match(s):
            _fact(result, no, m.group(1), m.group(2), "imds")
        else:
            result.issue(no, line, "not a key=value line")


def _describe(lines: list[str], result: ParseResult) -> None:
    in_labels = False
    node: str | None = None
    for no, line in enumerate(lines, start=1):
        if re.match(r"^\s*[A-Z][A-Za-z ]*:(?:\s|$)", line):  # the next "Annotations:", "Taints:" ... field
            in_labels = False
        s = line.strip()
        if m := re.match(r"^(Name|ProviderID):\s+(\S+)", s):
            if m.group(1) == "Name":
                node = m.group(2)
                _fact(result, no, "node_name", node, "k8s-node", node)
            else:
                _provider(result, no, m.group(2), node)
        elif m := re.match(r"^Labels:\s+(.*)$", s):
            in_labels = True
            s = m.group(1)
        if in_labels and "=" in s:
            key, _, value = s.partition("=")
            _fact(result, no, key, value, "k8s-label", node)


def _provider(result: ParseResult, no: int, provider_id: str, node: str | None = None) -> None:
    """aws:///us-west-2a/i-0123456789abcdef0 carries the zone and the instance id."""
    if m := re.match(r"aws:///([\w-]+)/(i-[0-9a-f]+)", provider_id):
        _fact(result, no, "availability_zone", m.group(1), "k8s-node", node)
        _fact(result, no, "instance_id", m.group(2), "k8s-node", node)


def _get_nodes(lines: list[str], result: ParseResult) -> None:
    header = None
    for no, line in enumerate(lines, start=1):
        if _GET_NODES.match(line):
            header = line
            continue
        cols = line.split()
        if header is None or not cols:
            continue
        if len(cols) < 2 or "=" not in cols[-1]:
            result.issue(no, line, "node row without a LABELS column")
            continue
        _fact(result, no, "node_name", cols[0], "k8s-node", cols[0])
        for label in cols[-1].split(","):
            key, _, value = label.partition("=")
            _fact(result, no, key, value, "k8s-label", cols[0])


def _json(text: str, result: ParseResult) -> None:
    try:
        doc = json.loads(text[len(text) - len(text.lstrip()) :])
    except json.JSONDecodeError as exc:
        raise ParseError(f"placement JSON does not parse: {exc}") from exc

    def line_of(key: str, start: int = 0) -> int:
        """Line of the first ``"key"`` at or after ``start`` (the item's own offset in a List)."""
        pos = text.find(json.dumps(key), start)
        if pos < 0:
            pos = text.find(json.dumps(key))
        return text.count("\n", 0, pos) + 1 if pos >= 0 else 1

    items = doc.get("items") if isinstance(doc, dict) and isinstance(doc.get("items"), list) else [doc]
    starts = _item_offsets(text, len(items)) if items is not doc and isinstance(doc, dict) else [0]
    if isinstance(doc, dict) and isinstance(doc.get("Instances"), list):
        for inst in (i for i in doc["Instances"] if isinstance(i, dict)):
            for key, value in inst.items():
                joined = " ".join(map(str, value)) if isinstance(value, list) else value
                _fact(result, line_of(key), key, joined, "ec2-topology")
        return
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        at = starts[n] if n < len(starts) else 0
        meta = item.get("metadata")
        node: str | None = None
        if isinstance(meta, dict):
            node = str(meta["name"]) if meta.get("name") else None
            _fact(result, line_of("name", at), "node_name", node, "k8s-node", node)
            spec = item.get("spec") if isinstance(item.get("spec"), dict) else {}
            _provider(result, line_of("providerID", at), str(spec.get("providerID", "")), node)
            labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        elif "instanceId" in item or "availabilityZone" in item:
            for key, value in item.items():
                if isinstance(value, (str, int, float)):
                    _fact(result, line_of(key, at), key, value, "imds")
            continue
        else:
            labels = item
        for key, value in labels.items():
            if isinstance(value, (str, int, float, bool)):
                _fact(result, line_of(key, at), key, value, "k8s-label", node)


def _item_offsets(text: str, count: int) -> list[int]:
    """Character offset where each element of the top-level ``"items"`` array starts.

    Walks the array with ``raw_decode`` so an item's keys are looked up inside that item only; falls
    back to offset 0 (first occurrence in the file) when the layout is not what it expects."""
    decoder = json.JSONDecoder()
    m = re.search(r'"items"\s*:\s*\[', text)
    offsets: list[int] = []
    pos = m.end() if m else -1
    while m and len(offsets) < count:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            _, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        offsets.append(pos)
        pos = end
    return offsets if len(offsets) == count else [0] * count


def _slurm(lines: list[str], result: ParseResult) -> None:
    entries: list[dict[str, Any]] = []
    for no, line in enumerate(lines, start=1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        fields = {k.lower(): v for k, _, v in (tok.partition("=") for tok in s.split()) if v}
        name = fields.get("switchname") or fields.get("blockname")
        if not name:
            if "blocksizes" not in fields:
                result.issue(no, line, "topology line without SwitchName= or BlockName=")
            continue
        try:
            nodes = _expand(fields["nodes"]) if "nodes" in fields else []
            children = _expand(fields["switches"]) if "switches" in fields else []
        except ValueError as exc:
            result.issue(no, line, str(exc))
            continue
        block = "blockname" in fields
        entries.append(
            {"line": no, "name": name, "block": block, "f": fields, "nodes": nodes, "children": children}
        )
    switches = {e["name"]: e for e in entries if not e["block"]}
    parent = {child: e["name"] for e in switches.values() for child in e["children"]}
    for e in entries:
        f, block = e["f"], e["block"]
        level = None if block else _int(f.get("level")) if "level" in f else _level(e, switches)
        for node in e["nodes"] or [None]:
            result.add(
                "topology_member",
                {
                    "line": e["line"],
                    "source": "slurm-block" if block else "slurm-topology",
                    "switch": e["name"],
                    "level": level,
                    "parent": None if block else parent.get(e["name"]),
                    "node_name": node,
                    "block_index": _int(f.get("blockindex")),
                    "block_size": _int(f.get("blocksize")),
                },
            )


def _level(
    entry: dict[str, Any], switches: dict[str, dict[str, Any]], seen: frozenset[str] = frozenset()
) -> int:
    kids = [switches[c] for c in entry["children"] if c in switches and c not in seen]
    return 1 + max((_level(k, switches, seen | {entry["name"]}) for k in kids), default=-1) if kids else 0


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _expand(names: str) -> list[str]:
    """Expand a Slurm hostlist (python-hostlist, the library Slurm sites use).

    >>> _expand("ip-10-1-[2-4,7]")
    ['ip-10-1-2', 'ip-10-1-3', 'ip-10-1-4', 'ip-10-1-7']
    >>> _expand("g3-129-[057,059],g3-130-[001-002]")
    ['g3-129-057', 'g3-129-059', 'g3-130-001', 'g3-130-002']
    """
    import hostlist

    try:
        return list(hostlist.expand_hostlist(names))
    except hostlist.BadHostlist as exc:
        raise ValueError(f"hostlist {names!r}: {exc}") from exc
