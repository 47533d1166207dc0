"""Placement and network topology: EC2 instance metadata, Kubernetes node labels, Slurm topology.

Commands whose output it reads (collector.sh reads IMDS with ``--imds``, by curl or bash's
``/dev/tcp``, runs ``scontrol show topology`` and copies topology.conf; the user adds kubectl output)::

    for k in instance-id instance-type placement/availability-zone placement/availability-zone-id \\
             placement/group-name placement/partition-number placement/region; do
        echo "$k=$(curl -s -H "X-aws-ec2-metadata-token: $T" http://169.254.169.254/latest/meta-data/$k)"
    done
    kubectl get node "$NODE" -o json          # or: kubectl describe node "$NODE"
    aws ec2 describe-instance-topology
    cat /opt/slurm/etc/topology.conf          # or: scontrol show topology

Sample (hand-written: two lines of the HyperPod topology.conf fixture and one Slurm block line)::

    SwitchName=nn-0b53107754517bf0e Switches=nn-424c855d4ad825aa4,nn-95acd7c656329fc30
    SwitchName=nn-424c855d4ad825aa4 Nodes=ip-10-1-111-198
    BlockName=b1 BlockIndex=0 Nodes=g3-129-[057,059] BlockSize=18

Inputs accepted: ``key=value`` or ``key: value`` lines whose key is an IMDS path (a leading
``http://169.254.169.254/latest/meta-data/`` is dropped; empty and 404 values are skipped); the
instance identity document; ``aws ec2 describe-instance-topology`` JSON (one row set per instance,
named by its InstanceId, at that instance's own lines); ``kubectl get node -o json`` (one Node, a
``kind: List`` of many, the API's ``kind: NodeList`` whose items carry no kind, or a bare labels
object; labels, annotations, taints, providerID, capacity, allocatable, addresses, nodeInfo,
conditions and the other scalar metadata/spec keys); JSON with a
``Nodes`` array of ``{"Name", "InstanceId", "Topology": {labels}}`` (aws-ofi-nccl's label dump);
``kubectl get nodes --show-labels``; ``kubectl describe node`` (one or several nodes: Name, Roles,
Labels, Annotations with values wrapped onto the next line, Taints, CreationTimestamp,
Unschedulable, Addresses, Capacity, Allocatable, System Info, ProviderID; its Conditions table into
``node_condition``; the Lease, Non-terminated Pods, Allocated resources and Events tables are not
placement and are skipped);
Slurm ``topology.conf`` and ``scontrol show topology`` (tree, block, AggregatedBlock and ring
entries; ``#`` comments, blank lines, ``\\`` line continuations, several entries on one line;
``BlockSizes=`` kept on every block row).  Slurm hostlists are expanded: ``ip-10-1-[2-4,7]`` gives
four names, ``g3-129-[057,059],g3-130-[001]`` keeps the zero padding.  Travel noise (launcher
prefixes, prompts, fences, CRLF) is taken off by ``parsers._text.clean_lines``.

Schema
------
``placement_fact`` (one row per fact):

- ``line`` int — line of the fact (JSON: of its key)
- ``key`` str — normalised for: instance_id, instance_type, availability_zone, az_id,
  placement_group, placement_partition, region, network_node_layer_1/2/3(/4) (1 = top of the
  EC2 network hierarchy, the last layer is the node the instance plugs into), ultraserver_id,
  node_name, hostname (IMDS paths, Kubernetes labels and providerID, EC2 topology keys); any other
  key, label, annotation or resource as printed (``nvidia.com/gpu``, ``Kernel Version``, ``taint``)
- ``value`` str — the value as printed
- ``source`` str — imds, ec2-topology, k8s-label, k8s-node (Name; an ``aws:///zone/i-...``
  providerID gives availability_zone and instance_id, any other is kept as ``providerID``; Roles; other node
  fields), k8s-annotation, k8s-taint, k8s-capacity, k8s-allocatable, k8s-address, k8s-node-info,
  k8s-condition
- ``node_name`` str — the node the fact belongs to: the Kubernetes node (``metadata.name``, the
  describe ``Name:``, the get-nodes NAME, a ``Nodes[].Name``), the InstanceId of an EC2 topology
  instance; so each node of a ``kind: List`` or a multi-node describe keeps its own facts and
  lines; null for IMDS
- ``host`` str — launcher tag of the line (pdsh host, srun rank, pod), else null

``node_condition`` (one row per Kubernetes node condition: the ``Conditions:`` table of ``kubectl
describe node``, or ``status.conditions`` of the node JSON; the kubelet's Ready, MemoryPressure,
DiskPressure, PIDPressure, NetworkUnavailable, and any a node-problem-detector or monitoring agent
adds, KernelDeadlock, ReadonlyFilesystem, AcceleratedHardwareReady):

- ``line`` int — line of the condition's row (JSON: of its type)
- ``node_name`` str — the Kubernetes node (``Name:``, ``metadata.name``)
- ``type`` str — the condition's type as printed
- ``status`` str — True, False or Unknown as printed
- ``last_heartbeat_time`` str — LastHeartbeatTime as printed, null when the row does not carry it
- ``last_transition_time`` str — LastTransitionTime as printed, null when not carried
- ``reason`` str — the condition's reason (one word), null when not carried
- ``message`` str — the condition's message, null when empty
- ``host`` str — launcher tag of the line, else null

``topology_member`` (one row per node a switch or block lists; one row with a null node for a
switch that lists only switches):

- ``line`` int — line of the SwitchName/BlockName entry (its first line when continued with ``\\``)
- ``source`` str — slurm-topology, slurm-block, slurm-block-aggregate (``AggregatedBlock=``, a
  higher-level block listing again the nodes of its base blocks) or slurm-ring
- ``switch`` str — SwitchName, or BlockName / AggregatedBlock / RingName
- ``level`` int — Level= when printed, else derived as Slurm does (0 = switch with nodes,
  1 + the highest child level above); null for blocks and rings
- ``parent`` str — the switch whose Switches= lists this switch (null at the top)
- ``node_name`` str — one expanded Slurm node name (``node`` is the loader's column);
  ``scontrol show topology`` also lists every node below an upper switch, so take the
  lowest level for a node's leaf switch
- ``block_index`` int, ``block_size`` int — block plugin only
- ``extra`` str — JSON object of the entry's other keys as printed (``LinkSpeed``, ``BlockSizes``
  of the file, any key Slurm adds later; a ``Level``/``BlockIndex``/``BlockSize`` that is not a number,
  with a ParseIssue), null when none
- ``host`` str — launcher tag of the entry's line, else null

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines

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
        "aws ec2 describe-instance-topology",
    ),
    tables=("placement_fact", "node_condition", "topology_member"),
    versions_seen=(
        "IMDSv2",
        "EKS 1.33/1.34 (Karpenter, NFD labels, trn1 Neuron capacity)",
        "Slurm 24.x topology.conf",
        "Slurm block, AggregatedBlock (topology.yaml)",
        "aws-cli describe-instance-topology",
    ),
)

SCHEMA = {
    "placement_fact": (
        Column("line", "int", "line of the fact"),
        Column("key", "str", "normalised key, or the key as printed"),
        Column("value", "str", "value as printed"),
        Column("source", "str", "imds, ec2-topology, k8s-label, k8s-node, k8s-annotation, k8s-capacity, ..."),
        Column(
            "node_name", "str", "node the fact belongs to (Kubernetes name, EC2 InstanceId; null for IMDS)"
        ),
        Column("host", "str", "launcher tag of the line"),
    ),
    "node_condition": (
        Column("line", "int", "line of the condition's row"),
        Column("node_name", "str", "the Kubernetes node"),
        Column("type", "str", "condition type as printed (Ready, MemoryPressure, KernelDeadlock, ...)"),
        Column("status", "str", "True, False or Unknown"),
        Column("last_heartbeat_time", "str", "LastHeartbeatTime as printed"),
        Column("last_transition_time", "str", "LastTransitionTime as printed"),
        Column("reason", "str", "the condition's reason"),
        Column("message", "str", "the condition's message"),
        Column("host", "str", "launcher tag of the line"),
    ),
    "topology_member": (
        Column("line", "int", "line of the switch/block entry"),
        Column("source", "str", "slurm-topology, slurm-block, slurm-block-aggregate or slurm-ring"),
        Column("switch", "str", "switch or block name"),
        Column("level", "int", "switch level, 0 = leaf"),
        Column("parent", "str", "switch listing this one under Switches="),
        Column("node_name", "str", "one expanded Slurm node name"),
        Column("block_index", "int", "BlockIndex"),
        Column("block_size", "int", "BlockSize"),
        Column("extra", "str", "JSON object of the entry's other keys as printed"),
        Column("host", "str", "launcher tag of the entry's line"),
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
#: sources whose keys are mapped to the normalised names (the others keep the key as printed)
_NORMALISED = frozenset({"imds", "ec2-topology", "k8s-label", "k8s-node"})
_LAYER = re.compile(r"network[-_]?node[-_]?layer[-_]?(\d)$")
_IMDS_URL = re.compile(r"^https?://[^/\s]+/latest/(?:meta-data|dynamic)/")
_KV = re.compile(r"^([A-Za-z0-9](?:[\w./-]|:(?=[^\s=]))*)\s*(?:=|:(?=\s|$))\s*(.*)$")
_MISSING = re.compile(r"404|not found|<\?xml|<html", re.IGNORECASE)
_SLURM = re.compile(r"(?:^|\s)(?:SwitchName|BlockName|AggregatedBlock|RingName)=\S+", re.M | re.I)
_GET_NODES = re.compile(r"^NAME\s+STATUS\s+.*\bLABELS\s*$", re.MULTILINE)
_DESCRIBE = re.compile(r"^\s*(Labels|Annotations|Taints|Capacity|Allocatable|System Info|ProviderID):", re.M)
_IMDS_KEY = re.compile(r"^(?:instance-id|instance-type|ami-id|local-ipv4|placement/[\w-]+)\s*[=:]", re.M)
_LOOKS_LIKE_DATA = re.compile(r"\d|=|:\s")


def detect(text: str) -> int:
    """Confidence that text is placement/topology data."""
    if _SLURM.search(text) and re.search(r"\b(?:Switches|Nodes)=", text, re.I):
        return 85
    if _GET_NODES.search(text) or re.search(r'"kind"\s*:\s*"Node(?:List)?"|"NetworkNodes"\s*:', text):
        return 85
    if len(set(_DESCRIBE.findall(text))) >= 2 or (
        _DESCRIBE.search(text) and re.search(r"^\s*Name:\s", text, re.M)
    ):
        return 80
    if re.search(r'"(?:topology\.k8s\.aws|topology\.kubernetes\.io)/[\w-]+"\s*:', text):
        return 70
    if re.search(r'"instanceId"\s*:', text) and re.search(r'"availabilityZone"\s*:', text):
        return 75
    imds = len(_IMDS_KEY.findall(text))
    return 75 if imds >= 2 else 50 if imds == 1 else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult()
    cleaned = clean_lines(text)
    lines = cleaned.lines
    hosts: list[str | None] = cleaned.hosts or [None] * len(lines)
    body = "\n".join(lines)
    state = _Facts(result)
    if body.lstrip().startswith(("{", "[")):
        _json(body, state)
    elif _SLURM.search(body):
        _slurm(lines, hosts, result)
    elif _GET_NODES.search(body):
        _get_nodes(lines, hosts, state)
    elif _DESCRIBE.search(body):
        _describe(lines, hosts, state)
    else:
        _imds(lines, hosts, state)
    if not result.tables:
        first = next((ln.strip() for ln in lines if ln.strip()), "")
        raise ParseError(
            "expected IMDS key=value lines, kubectl node JSON/describe/--show-labels, EC2 instance topology "
            f"JSON or Slurm SwitchName=/BlockName= lines; first line seen: {first[:120]!r}"
        )
    return result


class _Facts:
    """Adds placement_fact rows; the same normalised fact of the same node and host is kept once."""

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.seen: set[tuple[str, str, str | None, str | None]] = set()

    def add(
        self,
        line: int,
        key: str,
        value: Any,
        source: str,
        node: str | None = None,
        host: str | None = None,
    ) -> dict[str, Any] | None:
        value = "" if value is None else str(value).strip()
        if not value or (source in ("imds", "ec2-topology") and _MISSING.search(value)):
            return None
        k = _IMDS_URL.sub("", key.strip()).strip("/") if source == "imds" else key.strip()
        low = k.lower()
        norm = None
        if source in _NORMALISED:
            norm = _ALIASES.get(low)
            if m := _LAYER.search(low):
                norm = f"network_node_layer_{m.group(1)}"
            elif "ultraserver" in low and low.endswith("id"):
                norm = "ultraserver_id"
            elif low in ("networknodes", "network-nodes"):  # EC2 lists them top-down
                for n, nn in enumerate(re.findall(r"nn-\w+", value), start=1):
                    self.add(line, f"network_node_layer_{n}", nn, source, node, host)
        if norm:
            mark = (norm, value, node, host)
            if mark in self.seen:
                return None
            self.seen.add(mark)
        row = {
            "line": line,
            "key": norm or k,
            "value": value,
            "source": source,
            "node_name": node,
            "host": host,
        }
        self.result.add("placement_fact", row)
        return row

    def provider(self, no: int, provider_id: str, node: str | None, host: str | None = None) -> None:
        """aws:///us-west-2a/i-0123456789abcdef0 carries the zone and the instance id; any other
        providerID (another cloud, a HyperPod or on-premises scheme) is kept as printed."""
        if m := re.match(r"aws:///([\w-]+)/(i-[0-9a-f]+)$", provider_id.strip()):
            self.add(no, "availability_zone", m.group(1), "k8s-node", node, host)
            self.add(no, "instance_id", m.group(2), "k8s-node", node, host)
        else:
            self.add(no, "providerID", provider_id, "k8s-node", node, host)


# --- IMDS key=value lines --------------------------------------------------------------------------------


def _imds(lines: list[str], hosts: list[str | None], facts: _Facts) -> None:
    for no, line in enumerate(lines, start=1):
        s = _IMDS_URL.sub("", line.strip())
        if not s or s.startswith("#") or s.strip(".") == "":
            continue
        if m := _KV.match(s):
            facts.add(no, m.group(1), m.group(2), "imds", None, hosts[no - 1])
        else:
            facts.result.issue(no, line, "not a key=value line")


# --- kubectl describe node --------------------------------------------------------------------------------

_FIELD = re.compile(r"^([A-Z][A-Za-z -]*[A-Za-z]):(?:\s+(.*))?$")
_ITEM = re.compile(r"^([\w.\-/]+(?: [A-Za-z][\w-]*)*):(?:\s+(.*))?$")  # "cpu: 96", "Kernel Version: 6.1"
#: describe section -> source of its "key: value" items
_SECTIONS = {
    "Annotations": "k8s-annotation",
    "Capacity": "k8s-capacity",
    "Allocatable": "k8s-allocatable",
    "Addresses": "k8s-address",
    "System Info": "k8s-node-info",
}
_SKIPPED = frozenset({"Lease", "Non-terminated Pods", "Allocated resources", "Events"})
_KNOWN = frozenset(
    {"Name", "Roles", "Labels", "Taints", "CreationTimestamp", "Unschedulable", "ProviderID", "PodCIDR"}
    | {"PodCIDRs", "Conditions", *_SECTIONS, *_SKIPPED}
)
#: kubectl's time as describe prints it: "Thu, 18 Dec 2025 01:29:49 +0000"
_DESCRIBE_TIME = r"[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}"
_CONDITION = re.compile(
    rf"^(?P<type>[A-Za-z][\w.\-/]*)\s+(?P<status>True|False|Unknown)"
    rf"(?:\s+(?P<beat>{_DESCRIBE_TIME})\s+(?P<moved>{_DESCRIBE_TIME})(?:\s+(?P<reason>\S+)(?:\s+(?P<message>.*))?)?)?\s*$"
)
_OLD_ANNOTATION = re.compile(r"^([\w.\-/]+)=(.*)$")  # kubectl before 1.6 printed "key=value"
_CONDITION_HEAD = re.compile(r"^(?:Type\s+Status\b|-{4}\s+-{6})")


def _describe(lines: list[str], hosts: list[str | None], facts: _Facts) -> None:
    heads = [ln for ln in lines if re.match(r"\s*Name:\s", ln)] or [
        ln for ln in lines if (m := _FIELD.match(ln.strip())) and m.group(1) in _KNOWN
    ]
    base = min((len(ln) - len(ln.lstrip()) for ln in heads), default=0)
    nested = any(len(ln) - len(ln.lstrip()) > base for ln in lines if ln.strip())
    at = _DescribeAt()
    for no, line in enumerate(lines, start=1):
        s = line.strip()
        if not s:
            continue
        host = hosts[no - 1]
        indent = len(line) - len(line.lstrip())
        m = _FIELD.match(s)
        if m and indent <= base and (m.group(1) in _KNOWN or (nested and indent == base)):
            _describe_field(facts, at, m, no, line, host)
        else:
            _describe_under(facts, at, s, no, line, host)


@dataclass
class _DescribeAt:
    """Where a ``kubectl describe node`` is being read: its node, the field, the item a wrapped line joins."""

    node: str | None = None
    section: str = ""  # "" until the first field: a command echo before it is not read
    last: dict[str, Any] | None = None  # the annotation (or condition) a wrapped value line belongs to


def _describe_field(
    facts: _Facts, at: _DescribeAt, m: re.Match[str], no: int, line: str, host: str | None
) -> None:
    """A field of the describe (``Name:``, ``ProviderID:``, ``Labels:`` and its first item, ...)."""
    at.section, value, at.last = m.group(1), (m.group(2) or "").strip(), None
    section = at.section
    if section == "Name":
        at.node = value
        facts.add(no, "node_name", value, "k8s-node", value, host)
    elif section == "ProviderID":
        facts.provider(no, value, at.node, host)
    elif section in ("Labels", "Taints") or section in _SECTIONS:
        if value:
            at.last = _describe_item(facts, section, value, no, line, at.node, host)
    elif section not in _SKIPPED and value and value != "<none>":
        facts.add(no, section, value, "k8s-node", at.node, host)


def _describe_under(facts: _Facts, at: _DescribeAt, s: str, no: int, line: str, host: str | None) -> None:
    """A line under a field: a condition row, an item, a value kubectl wrapped, else a line not read."""
    section = at.section
    if section == "Conditions":
        at.last = _condition(facts.result, s, no, line, at.node, host, at.last)
    elif not section or section in _SKIPPED:
        return  # a command echo before the first field, or a table that is not placement
    elif section == "Annotations" and at.last is not None and not _ITEM.match(s):
        at.last["value"] = f"{at.last['value']} {s}".strip()  # a value kubectl wrapped onto its own line
    elif section in ("Labels", "Taints") or section in _SECTIONS:
        at.last = _describe_item(facts, section, s, no, line, at.node, host)
    elif _LOOKS_LIKE_DATA.search(s):
        facts.result.issue(no, line, f"line under {section or 'no field'} not read")


def _condition(
    result: ParseResult,
    s: str,
    no: int,
    line: str,
    node: str | None,
    host: str | None,
    last: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """One row of the describe's Conditions table; a line that is no row continues the message above it
    (a message holding a line break), or, with no row above, is named as not read."""
    if _CONDITION_HEAD.match(s):
        return None
    m = _CONDITION.match(s)
    if m is None:
        if last is not None:
            last["message"] = f"{last['message'] or ''} {s}".strip()
            return last
        result.issue(no, line, "line under Conditions is no condition row")
        return None
    if m.group("beat") is None:
        result.issue(no, line, "condition row without its times, reason and message: type and status kept")
    row = {
        "line": no,
        "node_name": node,
        "type": m.group("type"),
        "status": m.group("status"),
        "last_heartbeat_time": m.group("beat"),
        "last_transition_time": m.group("moved"),
        "reason": m.group("reason"),
        "message": (m.group("message") or "").strip() or None,
        "host": host,
    }
    result.add("node_condition", row)
    return row


def _describe_item(
    facts: _Facts, section: str, s: str, no: int, line: str, node: str | None, host: str | None
) -> dict[str, Any] | None:
    if s == "<none>":
        return None
    if section == "Labels":
        if "=" not in s:
            facts.result.issue(no, line, "label without '='")
            return None
        key, _, value = s.partition("=")
        return facts.add(no, key, value, "k8s-label", node, host)
    if section == "Taints":
        return facts.add(no, "taint", s, "k8s-taint", node, host)
    m = _ITEM.match(s)
    if m is None and section == "Annotations" and (eq := _OLD_ANNOTATION.match(s)):
        return facts.add(no, eq.group(1), eq.group(2), "k8s-annotation", node, host)  # kubectl <= 1.5
    if m is None:
        facts.result.issue(no, line, f"{section} line is not 'key: value'")
        return None
    row = facts.add(no, m.group(1), m.group(2) or "", _SECTIONS[section], node, host)
    if row is None and section == "Annotations":  # "key:" whose value kubectl wrapped onto the next line
        row = {"line": no, "key": m.group(1), "value": "", "source": "k8s-annotation", "node_name": node}
        row["host"] = host
        facts.result.add("placement_fact", row)
    return row


# --- kubectl get nodes --show-labels ----------------------------------------------------------------------


def _get_nodes(lines: list[str], hosts: list[str | None], facts: _Facts) -> None:
    header = None
    for no, line in enumerate(lines, start=1):
        if _GET_NODES.match(line):
            header = line
            continue
        cols = line.split()
        if header is None or not cols:
            continue
        if len(cols) < 2 or "=" not in cols[-1]:
            facts.result.issue(no, line, "node row without a LABELS column")
            continue
        host = hosts[no - 1]
        facts.add(no, "node_name", cols[0], "k8s-node", cols[0], host)
        for label in cols[-1].split(","):
            key, _, value = label.partition("=")
            facts.add(no, key, value, "k8s-label", cols[0], host)


# --- JSON: kubectl node / List, EC2 instance topology, identity document, label dumps ---------------------


def _json(body: str, facts: _Facts) -> None:
    start = min(i for i in (body.find("{"), body.find("[")) if i >= 0)
    try:
        doc, end = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as exc:
        raise ParseError(f"placement JSON does not parse: {exc}") from exc
    except RecursionError as exc:
        raise ParseError("placement JSON nested too deep to read") from exc
    if tail := body[end:].strip():
        no = body.count("\n", 0, end + body[end:].find(tail[0])) + 1
        facts.result.issue(no, tail.splitlines()[0], "text after the JSON document")

    def finder(at: int) -> Callable[..., int]:
        def line_at(*keys: str) -> int:
            """Line of the last of ``keys``, each looked up after the one before, from ``at``."""
            pos = at
            for key in keys:
                hit = body.find(json.dumps(key), pos)
                if hit < 0:
                    break
                pos = hit
            return body.count("\n", 0, pos) + 1

        return line_at

    array = None
    if isinstance(doc, list):
        array, items = None, doc
    elif isinstance(doc, dict):
        array = next((k for k in ("items", "Instances", "Nodes") if isinstance(doc.get(k), list)), None)
        items = doc[array] if array else [doc]
    else:
        raise ParseError(f"placement JSON: expected an object or a list, saw {type(doc).__name__}")
    offsets = _item_offsets(body, start, array, len(items)) if array or isinstance(doc, list) else [start]
    for item, at in zip(items, offsets, strict=True):
        if isinstance(item, dict):
            _json_item(item, finder(at), facts, instance=array == "Instances")
    if isinstance(doc, dict) and array:
        for key, value in doc.items():
            if key != array and isinstance(value, (str, int, float, bool)):
                facts.add(
                    finder(start)(key), key, value, "ec2-topology" if array == "Instances" else "k8s-node"
                )


def _json_item(item: dict[str, Any], line_at: Callable[..., int], facts: _Facts, instance: bool) -> None:
    meta = item.get("metadata")
    if isinstance(meta, dict):
        _k8s_node(item, meta, line_at, facts)
        return
    ident = item.get("InstanceId") or item.get("instanceId")
    if instance or ("availabilityZone" in item and ident):
        source, node = ("ec2-topology", str(ident) if ident else None) if instance else ("imds", None)
        for key, value in item.items():
            if isinstance(value, list):
                if key.lower() == "networknodes":  # each layer at its own line, top layer first
                    for n, nn in enumerate(value, start=1):
                        facts.add(line_at(key, str(nn)), f"network_node_layer_{n}", nn, source, node)
                value = " ".join(map(str, value))
            if isinstance(value, (str, int, float, bool)):
                facts.add(line_at(key), key, value, source, node)
        return
    name = item.get("Name") or item.get("name") or item.get("NodeName")
    if name is not None and isinstance(name, str):  # {"Name": ..., "InstanceId": ..., "Topology": {labels}}
        for key, value in item.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    if isinstance(v, (str, int, float, bool)):
                        src = "k8s-label" if "/" in sub else "k8s-node"
                        facts.add(line_at(key, sub), sub, v, src, name)
            elif isinstance(value, (str, int, float, bool)):
                fact = "node_name" if key in ("Name", "name", "NodeName") else key
                facts.add(line_at(key), fact, value, "k8s-node", name)
        return
    for key, value in item.items():  # a bare labels object
        if isinstance(value, (str, int, float, bool)):
            facts.add(line_at(key), key, value, "k8s-label", None)


def _k8s_node(item: dict[str, Any], meta: dict[str, Any], line_at: Callable[..., int], facts: _Facts) -> None:
    node = str(meta["name"]) if meta.get("name") else None
    facts.add(line_at("metadata", "name"), "node_name", node, "k8s-node", node)
    spec: dict[str, Any] = item["spec"] if isinstance(item.get("spec"), dict) else {}
    status: dict[str, Any] = item["status"] if isinstance(item.get("status"), dict) else {}
    provider = str(spec.get("providerID", ""))
    if provider:
        facts.provider(line_at("spec", "providerID"), provider, node)
    for part, section, source in (
        (meta, "labels", "k8s-label"),
        (meta, "annotations", "k8s-annotation"),
        (status, "capacity", "k8s-capacity"),
        (status, "allocatable", "k8s-allocatable"),
        (status, "nodeInfo", "k8s-node-info"),
    ):
        values = part.get(section)
        if isinstance(values, dict):
            where = ("metadata" if part is meta else "status", section)
            for key, value in values.items():
                if isinstance(value, (str, int, float, bool)):
                    facts.add(line_at(*where, key), key, value, source, node)
    for taint in spec.get("taints") or []:
        if isinstance(taint, dict):
            text = f"{taint.get('key', '')}={taint.get('value', '')}:{taint.get('effect', '')}"
            facts.add(line_at("spec", "taints", str(taint.get("key", ""))), "taint", text, "k8s-taint", node)
    for addr in status.get("addresses") or []:
        if isinstance(addr, dict) and addr.get("type"):
            facts.add(line_at("status", "addresses", str(addr.get("address", ""))), addr["type"],
                      addr.get("address"), "k8s-address", node)  # fmt: skip
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type"):
            at = line_at("status", "conditions", str(cond["type"]))
            facts.add(at, cond["type"], cond.get("status"), "k8s-condition", node)
            facts.result.add("node_condition", {
                "line": at, "node_name": node, "type": str(cond["type"]),
                "status": None if cond.get("status") is None else str(cond["status"]),
                **{col: (str(cond[key]) if cond.get(key) not in (None, "") else None) for col, key in (
                    ("last_heartbeat_time", "lastHeartbeatTime"), ("last_transition_time", "lastTransitionTime"),
                    ("reason", "reason"), ("message", "message"))},
                "host": None,
            })  # fmt: skip
    for section, part in (
        ("metadata", meta),
        ("spec", spec),
    ):  # uid, creationTimestamp, podCIDR, unschedulable
        for key, value in part.items():
            if key not in ("name", "providerID") and isinstance(value, (str, int, float, bool)):
                facts.add(line_at(section, key), key, value, "k8s-node", node)


def _item_offsets(body: str, start: int, array: str | None, count: int) -> list[int]:
    """Character offset where each element of the top-level ``array`` (or top-level list) starts.

    Walks the array with ``raw_decode`` so an item's keys are looked up inside that item only; falls
    back to the document's start when the layout is not what it expects."""
    decoder = json.JSONDecoder()
    m = re.compile(rf'"{re.escape(array)}"\s*:\s*\[').search(body, start) if array else None
    pos = m.end() if m else (start + 1 if array is None else -1)
    offsets: list[int] = []
    while pos >= 0 and len(offsets) < count:
        while pos < len(body) and body[pos] in " \t\r\n,":
            pos += 1
        try:
            _, end = decoder.raw_decode(body, pos)
        except (json.JSONDecodeError, RecursionError):
            break
        offsets.append(pos)
        pos = end
    return offsets if len(offsets) == count else [start] * count


# --- Slurm topology.conf and scontrol show topology -------------------------------------------------------

#: entry key (lower case) -> topology_member.source
_ENTRIES = {
    "switchname": "slurm-topology",
    "blockname": "slurm-block",
    "aggregatedblock": "slurm-block-aggregate",
    "ringname": "slurm-ring",
}
_GLOBALS = ("blocksizes",)
_COLUMNS = {"nodes", "switches", "level", "blockindex", "blocksize"}
_NUMBERS = ("level", "blockindex", "blocksize")


def _slurm(lines: list[str], hosts: list[str | None], result: ParseResult) -> None:
    entries: list[dict[str, Any]] = []
    settings: dict[str, str] = {}
    for at, s in _joined(lines):
        _slurm_line(at, s, lines, hosts, result, entries, settings)
    kept: list[dict[str, Any]] = []
    for e in entries:
        f = {k.lower(): v for k, v in e["f"].items()}
        try:
            e["nodes"] = _expand(f["nodes"]) if f.get("nodes") else []
            e["children"] = _expand(f["switches"]) if f.get("switches") else []
        except ValueError as exc:
            result.issue(e["line"], e["raw"], str(exc))
            continue
        e["lf"] = f
        kept.append(e)
    switches = {e["name"]: e for e in kept if e["source"] == "slurm-topology"}
    parent: dict[str, str] = {}
    for e in switches.values():
        for child in e["children"]:
            parent.setdefault(child, e["name"])
    for e in kept:
        _slurm_members(e, switches, parent, settings, result)


def _joined(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(first line, text) of each line of topology.conf, comments cut, continued lines joined."""
    buf, first = "", 0
    for no, line in enumerate(lines, start=1):
        s = line.split("#", 1)[0].rstrip()
        if s.endswith("\\"):  # a line continued on the next one
            buf, first = buf + s[:-1] + " ", first or no
            continue
        s, at = (buf + s).strip(), first or no
        buf, first = "", 0
        if s:
            yield at, s


def _slurm_line(
    at: int,
    s: str,
    lines: list[str],
    hosts: list[str | None],
    result: ParseResult,
    entries: list[dict[str, Any]],
    settings: dict[str, str],
) -> None:
    """One line's key=value words: a switch or block entry and its fields, or a global setting."""
    current: dict[str, Any] | None = None
    stray: list[str] = []
    for tok in s.split():
        key, eq, value = tok.partition("=")
        low = key.lower()
        if not eq:
            stray.append(tok)
        elif low in _ENTRIES:
            current = {"line": at, "name": value, "source": _ENTRIES[low], "f": {}, "host": hosts[at - 1]}
            current["raw"] = lines[at - 1]
            entries.append(current)
        elif low in _GLOBALS:
            settings[key] = value
        elif current is None:
            stray.append(tok)
        else:
            current["f"][key] = value
    if stray and current is None:
        if not any(k in s.lower() for k in _GLOBALS):
            result.issue(at, lines[at - 1], "topology line without SwitchName=, BlockName= or BlockSizes=")
    elif stray:
        result.issue(at, lines[at - 1], f"words outside key=value read past: {' '.join(stray)[:80]}")


def _slurm_members(
    e: dict[str, Any],
    switches: dict[str, dict[str, Any]],
    parent: dict[str, str],
    settings: dict[str, str],
    result: ParseResult,
) -> None:
    """The topology_member rows of one switch or block: one per node, or one without a node."""
    f, tree = e["lf"], e["source"] == "slurm-topology"
    level = (_int(f.get("level")) if "level" in f else _level(e, switches)) if tree else None
    # a number that does not read stays in extra as printed, and is reported
    odd = {k: v for k, v in e["f"].items() if k.lower() in _NUMBERS and _int(v) is None}
    if odd:
        words = " ".join(f"{k}={v}" for k, v in odd.items())
        result.issue(e["line"], e["raw"], f"not a number: {words[:120]} (kept in extra)")
    extra = {k: v for k, v in e["f"].items() if k.lower() not in _COLUMNS or k in odd}
    if e["source"] != "slurm-topology":
        extra.update(settings)
    for node in e["nodes"] or [None]:
        result.add(
            "topology_member",
            {
                "line": e["line"],
                "source": e["source"],
                "switch": e["name"],
                "level": level,
                "parent": parent.get(e["name"]) if tree else None,
                "node_name": node,
                "block_index": _int(f.get("blockindex")),
                "block_size": _int(f.get("blocksize")),
                "extra": json.dumps(extra) if extra else None,
                "host": e["host"],
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
