"""parsers.placement on cluster-level placement exports: real node lists and EC2 instance topology
that name several nodes (tests/fixtures/placement/, provenance in its PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import parsers
from parsers import placement

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "placement"
NODELIST = "kops-apiv1-nodelist-eu-west-1-two-zones-spot.txt"
TOPOLOGY = "awsankur-describe-instance-topology-p4de-2-instances-prompt.txt"


def _by_node(name: str) -> dict[str | None, dict[str, tuple[str, int]]]:
    result = placement.parse((FIXTURES / name).read_text(encoding="utf-8"))
    assert result.issues == []
    out: dict[str | None, dict[str, tuple[str, int]]] = {}
    for r in result.rows("placement_fact"):
        out.setdefault(r["node_name"], {}).setdefault(r["key"], (r["value"], r["line"]))
    return out


def test_api_nodelist_without_item_kinds_is_recognised_and_split_per_node() -> None:
    text = (FIXTURES / NODELIST).read_text(encoding="utf-8")
    assert parsers.detect_kind(text) == "placement"  # "kind": "NodeList", items carry no kind
    nodes = _by_node(NODELIST)
    assert nodes.pop(None) == {"kind": ("NodeList", 2), "apiVersion": ("v1", 3)}  # the list's own keys
    assert sorted(nodes) == [
        "ip-172-20-116-86.eu-west-1.compute.internal",
        "ip-172-20-44-207.eu-west-1.compute.internal",
    ]
    first, second = (nodes[n] for n in sorted(n for n in nodes if n))
    assert first["availability_zone"] == ("eu-west-1c", 36)  # from providerID aws:///eu-west-1c/i-...
    assert first["instance_id"] == ("i-09af54f292341f816", 36)
    assert first["InternalIP"] == ("172.20.116.86", 94)
    assert second["availability_zone"][0] == "eu-west-1a" and second["instance_type"] == ("m3.medium", 204)


def test_describe_instance_topology_after_a_prompt_keeps_each_instance_at_its_lines() -> None:
    nodes = _by_node(TOPOLOGY)
    assert sorted(nodes) == ["i-05a4ae1432177a3a5", "i-0d7a5c941dc912692"]
    one = nodes["i-05a4ae1432177a3a5"]
    assert one["instance_id"] == ("i-05a4ae1432177a3a5", 5)
    assert [one[f"network_node_layer_{n}"] for n in (1, 2, 3)] == [
        ("nn-b59b170155f6801f8", 8),
        ("nn-a42b0750f49b48c69", 9),
        ("nn-38464347ecf47e324", 10),
    ]
    assert nodes["i-0d7a5c941dc912692"]["az_id"] == ("usw2-az2", 24)
    assert "placement_group" not in one  # no GroupName: the instances are in no placement group
