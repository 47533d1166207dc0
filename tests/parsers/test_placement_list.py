"""parsers.placement on a ``kubectl get node -o json`` ``kind: List`` of several nodes.

SYNTHETIC input: no real multi-node (or any) ``kubectl get node -o json`` sample was found in
/work/shared/real-samples/placement/; the layout follows kubectl's (2-space indent, items first).
"""

from __future__ import annotations

import json

from parsers import placement

_NODES = [
    ("ip-10-0-1-11.us-west-2.compute.internal", "p5.48xlarge", "us-west-2a", "i-0aaaaaaaaaaaaaaa1"),
    ("ip-10-0-2-22.us-west-2.compute.internal", "p4d.24xlarge", "us-west-2b", "i-0bbbbbbbbbbbbbbb2"),
    ("ip-10-0-3-33.us-west-2.compute.internal", "p5.48xlarge", "us-west-2c", "i-0ccccccccccccccc3"),
]


def _node(name: str, itype: str, zone: str, iid: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "labels": {
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": itype,
                "topology.kubernetes.io/region": "us-west-2",
                "topology.kubernetes.io/zone": zone,
            },
            "name": name,
        },
        "spec": {"providerID": f"aws:///{zone}/{iid}"},
    }


LIST = json.dumps({"apiVersion": "v1", "items": [_node(*n) for n in _NODES], "kind": "List"}, indent=2) + "\n"
LINES = LIST.splitlines()


def _own_line(node: int, needle: str) -> int:
    """1-based line of ``needle`` inside the node-th item (counted by its ``"kind": "Node"`` line)."""
    starts = [i for i, line in enumerate(LINES) if '"kind": "Node"' in line]
    start = starts[node] - 2  # the item's "apiVersion" line precedes "kind"
    return next(i + 1 for i in range(start, len(LINES)) if needle in LINES[i])


def test_list_keeps_every_node_with_its_name_and_own_lines() -> None:
    result = placement.parse(LIST)
    assert result.issues == []
    rows = result.rows("placement_fact")
    for n, (name, itype, zone, iid) in enumerate(_NODES):
        mine = {r["key"]: r for r in rows if r["node_name"] == name and r["key"] != "availability_zone"}
        zones = [r for r in rows if r["node_name"] == name and r["key"] == "availability_zone"]
        assert mine["instance_type"]["value"] == itype
        assert mine["instance_type"]["line"] == _own_line(n, '"node.kubernetes.io/instance-type"')
        assert mine["node_name"]["value"] == name
        assert mine["node_name"]["line"] == _own_line(n, '"name"')
        assert mine["instance_id"]["value"] == iid
        assert mine["region"]["value"] == "us-west-2"  # same value on every node: one row per node
        assert {z["value"] for z in zones} == {zone}
        # providerID comes first and carries the zone; the equal zone label of the same node is deduped
        assert [z["line"] for z in zones] == [_own_line(n, '"providerID"')]
    types = [r for r in rows if r["key"] == "instance_type"]
    assert [(r["node_name"], r["value"]) for r in types] == [(n[0], n[1]) for n in _NODES]
    assert len({r["line"] for r in types}) == 3


def test_single_node_json_unchanged_apart_from_node_name() -> None:
    text = json.dumps(_node(*_NODES[0]), indent=2) + "\n"
    rows = placement.parse(text).rows("placement_fact")
    got = {r["key"]: (r["value"], r["line"]) for r in rows}
    lines = text.splitlines()
    assert got["instance_type"] == ("p5.48xlarge", 1 + next(
        i for i, s in enumerate(lines) if "instance-type" in s))  # fmt: skip
    assert {r["node_name"] for r in rows} == {_NODES[0][0]}
    assert len(rows) == 6  # hostname, instance_type, region, zone, node_name, instance_id (zone deduped)
