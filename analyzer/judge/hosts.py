"""Match a host name printed by a tool (nccl-tests rank lines, NCCL log prefixes) back to a node bundle.

Tools print whatever the host calls itself: ``ip-10-1-2-3``, ``ip-10-1-2-3.ec2.internal``,
``ip-10-1-2-3.us-west-2.compute.internal``, ``10.1.2.3``, a Slurm name, a pod name.  A node bundle knows
its ``node`` (meta.env node) and ``hostname``.  Names are compared case-insensitively under these keys:
the full name, the short name (before the first dot; not for IP addresses), and both spellings of an
EC2 private address (``ip-a-b-c-d`` <-> ``a.b.c.d``).  An exact match on the full name wins; otherwise
a key must point at exactly one node, else the host is ambiguous and stays unmatched.

>>> nodes = [{"node": "p5-node-01", "hostname": "ip-10-1-2-3"}, {"node": "p5-node-02", "hostname": None}]
>>> match("ip-10-1-2-3.ec2.internal", nodes), match("10.1.2.3", nodes), match("P5-NODE-02", nodes)
('p5-node-01', 'p5-node-01', 'p5-node-02')
>>> match("ip-10-9-9-9", nodes) is None
True

A node may also be known by other names (``aliases``: the private address meta.env carries, the names its
own Kubernetes node record gives), and an EC2 instance id is read out of names that carry one
(HyperPod's EKS node names ``hyperpod-i-0abc...``):

>>> match("10.1.9.9", [{"node": "p5-node-03", "hostname": None, "aliases": ["10.1.9.9"]}])
'p5-node-03'
>>> instance_id("hyperpod-i-0123456789abcdef0"), instance_id("i-09af54f2"), instance_id("ip-10-1-2-3")
('i-0123456789abcdef0', 'i-09af54f2', None)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_DOTTED = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")
_EC2 = re.compile(r"^ip-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})$")
_INSTANCE = re.compile(r"(?<![0-9a-z])i-(?:[0-9a-f]{17}|[0-9a-f]{8})(?![0-9a-z])")


def keys(name: str | None) -> set[str]:
    """Every spelling under which a name may be printed (lower case)."""
    full = (name or "").strip().lower().rstrip(".")
    if not full:
        return set()
    out = {full}
    if m := _DOTTED.match(full):
        out.add("ip-" + "-".join(m.groups()))
        return out
    short = full.split(".", 1)[0]
    out.add(short)
    if m := _EC2.match(short):
        out.add(".".join(m.groups()))
    return out


def instance_id(name: str | None) -> str | None:
    """The EC2 instance id a name is or carries (``i-0abc...``, ``hyperpod-i-0abc...``), lower case."""
    m = _INSTANCE.search((name or "").strip().lower())
    return m.group(0) if m else None


class HostIndex:
    """Nodes indexed by every spelling of their node name, hostname and ``aliases``; build once, match many."""

    def __init__(self, nodes: Iterable[Mapping[str, Any] | str]) -> None:
        self.exact: dict[str, set[str]] = {}
        self.by_key: dict[str, set[str]] = {}
        for item in nodes:
            names: list[str | None] = (
                [item]
                if isinstance(item, str)
                else [item.get("node"), item.get("hostname"), *(item.get("aliases") or ())]
            )
            node = names[0] if isinstance(item, str) else item.get("node") or item.get("hostname")
            if not node:
                continue
            for name in names:
                if not name:
                    continue
                self.exact.setdefault(name.strip().lower().rstrip("."), set()).add(node)
                for key in keys(name):
                    self.by_key.setdefault(key, set()).add(node)

    def match(self, host: str | None) -> str | None:
        """The node the host name belongs to, or None when unknown or ambiguous."""
        if not host:
            return None
        hit = self.exact.get(host.strip().lower().rstrip("."), set())
        if len(hit) == 1:
            return next(iter(hit))
        found: set[str] = set()
        for key in keys(host):
            found |= self.by_key.get(key, set())
        return next(iter(found)) if len(found) == 1 else None


def match(host: str | None, nodes: Iterable[Mapping[str, Any] | str]) -> str | None:
    """The node (``node.node``) a printed host name belongs to, matched on node name and hostname."""
    return HostIndex(nodes).match(host)
