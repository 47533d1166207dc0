"""Placement rules on bundles built from real placement captures (kubectl describe node labels of a
p4d node, HyperPod's Slurm topology.conf) and meta.env values as the collector writes them from IMDS."""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, fixture, write_node

LABELS = "eks-p4d-describe-node-labels-karpenter-nfd.txt"
TOPO = "hyperpod-docs-topology-conf-slurm24-blank-lines.txt"


def _labels(edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/placement.txt": ("placement", fixture("placement", LABELS, edit))}


def _imds(i: int, **extra: str) -> dict[str, str]:
    return {
        "instance_id": f"i-0{i:016x}",
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-1a",
        **extra,
    }


def test_placement_multi_az_fires_on_zone_ids(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write_node(root, "n1", _labels())
    write_node(root, "n2", _labels())
    write_node(
        root, "n3", _labels({"topology.k8s.aws/zone-id=apne2-az2": "topology.k8s.aws/zone-id=apne2-az1"})
    )
    res = analyze(root)
    (f,) = res.of("placement.multi_az")
    assert f.severity.value == "critical" and f.node is None
    assert f.params["key"] == "az_id" and f.params["groups"] == {
        "apne2-az1": ["n3"],
        "apne2-az2": ["n1", "n2"],
    }
    assert {e.line for e in f.evidence} == {87} and "zone-id" in (f.evidence[0].text or "")
    assert res.outcome("placement.mixed_types") == "pass"  # all p4d.24xlarge from the labels


def test_placement_multi_pg_and_healthy(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i, pg in enumerate(["train-pg", "train-pg", "other-pg"], start=1):
        write_node(root, f"n{i}", {}, meta=_imds(i, placement_group=pg))
    res = analyze(root)
    (f,) = res.of("placement.multi_pg")
    assert f.params["groups"] == {"other-pg": ["n3"], "train-pg": ["n1", "n2"]}
    assert f.evidence[0].text == "placement_group=other-pg"
    assert res.outcome("placement.no_pg") == "pass"
    assert res.outcome("placement.multi_az") == "pass"

    root2 = tmp_path / "healthy"
    for i in range(1, 4):
        # one network block: the same EC2 network-node layers (without them spreading is not judged)
        layers = "nn-top,nn-mid,nn-leaf"
        write_node(root2, f"n{i}", {}, meta=_imds(i, placement_group="train-pg", network_node_layers=layers))
    ok = analyze(root2)
    for rule in (
        "placement.multi_az",
        "placement.multi_pg",
        "placement.no_pg",
        "placement.spread",
        "placement.mixed_types",
    ):
        assert ok.outcome(rule) == "pass", rule


def test_placement_no_pg_needs_imds_and_two_nodes(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write_node(root, "n1", {}, meta=_imds(1))
    write_node(root, "n2", {}, meta=_imds(2))
    (f,) = analyze(root).of("placement.no_pg")
    assert f.severity.value == "warning" and f.params["nodes_without"] == ["n1", "n2"]
    # without instance metadata an absent group is unknown, not absent
    root2 = tmp_path / "no-imds"
    write_node(root2, "n1", {}, meta={"instance_type": "p5.48xlarge"})
    write_node(root2, "n2", {}, meta={"instance_type": "p5.48xlarge"})
    assert analyze(root2).outcome("placement.no_pg") == "skipped"  # not examined: no [OK] either
    root3 = tmp_path / "single"
    write_node(root3, "n1", {}, meta=_imds(1))
    single = analyze(root3)
    # one node needs no placement group, so the rule has nothing to judge: not examined, never [OK]
    assert single.outcome("placement.no_pg") == "skipped"
    assert single.outcomes["placement.no_pg"].reason == "too few peers: 1 of 2 nodes"
    assert single.outcomes["placement.no_pg"].nodes_without_data == ["n1"]


def test_placement_spread_layers(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write_node(root, "n1", _labels())
    write_node(
        root,
        "n2",
        _labels({"network-node-layer-3=nn-dcbcca51aebf4c95b": "network-node-layer-3=nn-0000000000000000a"}),
    )
    (f,) = analyze(root).of("placement.spread")
    assert f.severity.value == "info" and f.params["layer"] == 3 and f.params["distinct"] == 2

    root2 = tmp_path / "far"
    write_node(root2, "n1", _labels())
    far = {
        "network-node-layer-2=nn-6ff5053c3a4d86db7": "network-node-layer-2=nn-0000000000000000b",
        "network-node-layer-3=nn-dcbcca51aebf4c95b": "network-node-layer-3=nn-0000000000000000a",
    }
    write_node(root2, "n2", _labels(far))
    (g,) = analyze(root2).of("placement.spread")
    assert g.severity.value == "warning" and g.params["layer"] == 2
    assert g.evidence[0].line == 85


def test_placement_spread_slurm_leaf_switches(tmp_path: Path) -> None:
    root = tmp_path / "c"
    topo = {"cmd/topology.txt": ("placement", fixture("placement", TOPO))}
    write_node(root, "ip-10-1-111-198", topo)
    write_node(root, "ip-10-1-53-231", {})
    (f,) = analyze(root).of("placement.spread")
    assert f.severity.value == "info" and f.params["key"] == "slurm_leaf_switch"
    assert f.params["groups"] == {
        "nn-424c855d4ad825aa4": ["ip-10-1-111-198"],
        "nn-95acd7c656329fc30": ["ip-10-1-53-231"],
    }


def test_placement_mixed_types(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write_node(root, "n1", _labels())  # p4d.24xlarge from the node labels
    write_node(root, "n2", {}, meta={"instance_type": "p5.48xlarge"})
    (f,) = analyze(root).of("placement.mixed_types")
    assert f.severity.value == "warning" and f.params["groups"] == {
        "p4d.24xlarge": ["n1"],
        "p5.48xlarge": ["n2"],
    }
    assert f.evidence[0].line == 4  # beta.kubernetes.io/instance-type label


def test_one_placed_node_is_compared_with_nothing(tmp_path: Path) -> None:
    """A bundle holding only meta.env (the collector's IMDS facts): its zone and type are read, but one
    node is no node set: multi_az, mixed_types and multi_pg are not examined (too few peers), never a
    pass; with a second node placed they judge again."""
    root = tmp_path / "one"
    write_node(root, "n1", {}, meta=_imds(1, placement_group="train-pg"))
    res = analyze(root)
    for rule in ("placement.multi_az", "placement.mixed_types", "placement.multi_pg"):
        assert res.outcome(rule) == "skipped", rule
        assert res.outcomes[rule].reason.startswith("too few peers: 1 of 2 nodes"), res.outcomes[rule].reason
    write_node(root, "n2", {}, meta=_imds(2, placement_group="train-pg"))
    again = analyze(root)
    assert [again.outcome(r) for r in ("placement.multi_az", "placement.mixed_types")] == ["pass", "pass"]
