"""Placement rules on cluster-level exports that name several nodes, mapped to the analyzed nodes.

Clusters are 4 nodes of sample_bundles/nccl-slow-node with their meta.env edited (hostname, a private
address, an instance id; the sample's zone and type taken out where the export is to say them) and a
real export in the cluster's extra/ folder: a kops node list over two zones
(kops-apiv1-nodelist-eu-west-1-two-zones-spot.txt), the aws-cli example of describe-instance-topology
(4 instances), a real describe-instance-topology of two p4de nodes, the HyperPod topology.conf.

Most tests call the rules' check() on the loaded store: they judge the mapping itself; the last runs the
engine on a cluster whose only placement input is an export in extra/ (its rows name no node: the rule
runs and reports the nodes it mapped as checked, Context.saw).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import Context, NotExamined, line_texts
from analyzer.judge.findings import Finding
from analyzer.judge.rules.placement import mixed_types, multi_az, multi_pg, no_pg, spread
from analyzer.store.tables import connect
from tests.conftest import ROOT
from tests.rules.helpers import analyze, fixture

SAMPLE = ROOT / "sample_bundles" / "nccl-slow-node" / "bundle"
NODES = [f"p5-node-0{i}" for i in range(1, 5)]
RULES = (multi_az, multi_pg, no_pg, spread, mixed_types)
NODELIST = "kops-apiv1-nodelist-eu-west-1-two-zones-spot.txt"
EC2 = "awscli-example-describe-instance-topology-4-instances.txt"
EC2_IDS = ["i-1111111111example", "i-2222222222example", "i-3333333333example", "i-444444444example"]
NO_PLACE = {"availability_zone": None, "instance_type": None}  # the sample's meta.env values, taken out


def cluster(root: Path, metas: list[dict[str, str | None]], extra: dict[str, str]) -> Path:
    """Nodes p5-node-01.. of the sample with meta.env keys set (None: removed), files in extra/."""
    for node, edits in zip(NODES, metas, strict=False):
        dest = root / node
        shutil.copytree(SAMPLE / node, dest)
        keep = [
            ln for ln in (dest / "meta.env").read_text().splitlines() if ln.partition("=")[0] not in edits
        ]
        keep += [f"{k}={v}" for k, v in edits.items() if v is not None]
        (dest / "meta.env").write_text("\n".join(keep) + "\n")
    if extra:
        (root / "extra").mkdir()
        for name, text in extra.items():
            (root / "extra" / name).write_text(text)
    return root


def judge(root: Path) -> tuple[dict[str, list[Finding]], Any]:
    """Load the cluster and run the placement rules' check() on it."""
    con = connect(None)
    work = root.parent / f"work-{root.name}"
    work.mkdir()
    load(con, [root], work, Limits(), jobs=1)
    ctx = Context(con)
    found: dict[str, list[Finding]] = {}
    for m in RULES:
        try:
            found[m.RULE.id] = list(m.check(ctx))
        except NotExamined:  # as the engine takes it: the rule is not examined (too few placed nodes)
            found[m.RULE.id] = []
    return found, con


def line_text(con: Any, file: str, line: int | None) -> str:
    assert line is not None
    return line_texts(con, {(file, line)})[(file, line)]


def test_node_list_in_extra_maps_by_hostname_and_address_and_names_the_other_zone(tmp_path: Path) -> None:
    root = cluster(
        tmp_path / "c",
        [
            {**NO_PLACE, "hostname": "ip-172-20-116-86"},  # short name of the list's node name
            {**NO_PLACE, "hostname": "gpu-2", "ip": "172.20.44.207"},  # its InternalIP
            NO_PLACE,
            NO_PLACE,
        ],
        {"nodes.json": fixture("placement", NODELIST)},
    )
    found, con = judge(root)
    (f,) = found["placement.multi_az"]
    assert f.params["groups"] == {"eu-west-1a": ["p5-node-02"], "eu-west-1c": ["p5-node-01"]}
    assert f.params["not_examined"] == ["p5-node-03", "p5-node-04"]  # named by no entry: not passing
    assert "not examined" in f.message and "p5-node-03" in f.message
    assert (f.params["export_entries"], f.params["export_entries_ignored"]) == (2, 0)
    assert [(e.file, e.line) for e in f.evidence] == [("extra/nodes.json", 223), ("extra/nodes.json", 36)]
    assert "eu-west-1a" in line_text(con, "extra/nodes.json", 223)
    (types,) = found["placement.mixed_types"]  # m4.xlarge and m3.medium, from the list's labels
    assert types.params["groups"] == {"m3.medium": ["p5-node-02"], "m4.xlarge": ["p5-node-01"]}


def _labels_list(names: list[str], layer3: dict[str, str]) -> str:
    """A ``kind: List`` of EKS nodes carrying the labels of the real p4d node (its describe output),
    one per name, with the node name and hostname label set and layer 3 replaced where ``layer3`` says.

    SYNTHETIC list around real label values: no real multi-node node list with network-node-layer labels
    was found (the real ones here are single nodes, or older than the labels)."""
    text = fixture("placement", "eks-p4d-describe-node-labels-karpenter-nfd.txt")
    block = text.split("Labels:", 1)[1].splitlines()
    labels = dict(ln.strip().split("=", 1) for ln in block if "=" in ln)
    items = []
    for name in names:
        mine = {**labels, "kubernetes.io/hostname": name}
        if name in layer3:
            mine["topology.k8s.aws/network-node-layer-3"] = layer3[name]
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"labels": mine, "name": name}})
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}, indent=4) + "\n"


def test_eks_node_list_one_node_on_another_layer_3(tmp_path: Path) -> None:
    names = [f"ip-10-1-0-{i}.ec2.internal" for i in (1, 2, 3, 4, 9)]  # ip-10-1-0-9: no such node here
    text = _labels_list(names, {"ip-10-1-0-4.ec2.internal": "nn-0000000000000000a"})
    root = cluster(tmp_path / "c", [{}] * 4, {"eks-nodes.json": text})  # sample hostnames ip-10-1-0-N
    found, con = judge(root)
    (f,) = found["placement.spread"]
    assert f.severity.value == "info" and (f.params["layer"], f.params["depth"]) == (3, 3)
    assert f.params["groups"] == {
        "nn-0000000000000000a": ["p5-node-04"],
        "nn-dcbcca51aebf4c95b": ["p5-node-01", "p5-node-02", "p5-node-03"],
    }
    assert "p5-node-04" in f.message and "not_examined" not in f.params
    assert f.params["export_entries_ignored"] == 1 and f.params["export_ignored_names"] == [names[-1]]
    odd = f.evidence[0]
    assert odd.file == "extra/eks-nodes.json" and "nn-0000000000000000a" in line_text(con, odd.file, odd.line)
    assert found["placement.multi_az"] == []  # every label set says ap-northeast-2b / apne2-az2 ...
    # ... and meta.env (the sample's us-east-1a, p5.48xlarge) wins over an export where both say it
    assert found["placement.mixed_types"] == []


def test_describe_instance_topology_mapped_by_instance_id(tmp_path: Path) -> None:
    metas = [{**NO_PLACE, "instance_id": i} for i in EC2_IDS]
    root = cluster(tmp_path / "c", metas, {"topology.json": fixture("placement", EC2)})
    found, con = judge(root)
    (layers,) = found["placement.spread"]
    assert layers.severity.value == "warning" and layers.params["layer"] == 1
    assert layers.params["groups"] == {
        "nn-1111111111example": ["p5-node-01", "p5-node-02", "p5-node-04"],
        "nn-1212121212example": ["p5-node-03"],
    }
    assert [(e.file, e.line) for e in layers.evidence] == [
        ("extra/topology.json", 8),
        ("extra/topology.json", 30),
    ]
    (zones,) = found["placement.multi_az"]
    assert zones.params["key"] == "az_id" and zones.params["groups"]["usw2-az4"] == ["p5-node-03"]
    assert "usw2-az4" in line_text(con, "extra/topology.json", zones.evidence[1].line)
    (no_group,) = found["placement.no_pg"]  # EC2 prints GroupName only for an instance in a group
    assert no_group.params["nodes_without"] == ["p5-node-02", "p5-node-03", "p5-node-04"]
    assert no_group.params["groups_in_use"] == ["my-ml-cpg"]
    assert len(found["placement.mixed_types"][0].params["groups"]) == 3  # p4d, trn1.32xlarge, trn1.2xlarge


def test_real_topology_of_two_nodes_under_one_block_and_names_that_match_nothing(tmp_path: Path) -> None:
    metas: list[dict[str, str | None]] = [
        {**NO_PLACE, "instance_id": "i-05a4ae1432177a3a5"},
        {**NO_PLACE, "instance_id": "i-0d7a5c941dc912692"},
        {**NO_PLACE, "instance_id": "i-0aaaaaaaaaaaaaaa3"},  # named by no entry
        NO_PLACE,
    ]
    extra = {
        "topology.txt": fixture(
            "placement", "awsankur-describe-instance-topology-p4de-2-instances-prompt.txt"
        ),
        "nodes.json": fixture("placement", NODELIST),  # another cluster's nodes: none of them here
        "topology.conf": fixture("placement", "hyperpod-docs-topology-conf-slurm24-blank-lines.txt"),
    }
    root = cluster(tmp_path / "c", metas, extra)
    found, _ = judge(root)
    assert found["placement.spread"] == []  # the two placed nodes share all three network nodes
    (no_group,) = found["placement.no_pg"]
    # an instance id in meta.env means instance metadata was read (collector --imds): no group is no group
    assert no_group.params["nodes_without"] == ["p5-node-01", "p5-node-02", "p5-node-03"]
    assert no_group.params["not_examined"] == ["p5-node-04"]
    assert (no_group.params["export_entries"], no_group.params["export_entries_ignored"]) == (4, 2)
    assert sorted(no_group.params["export_ignored_names"]) == [
        "ip-172-20-116-86.eu-west-1.compute.internal",
        "ip-172-20-44-207.eu-west-1.compute.internal",
    ]
    res = analyze(root)  # through the engine: nothing fails for names that match no node
    assert not [o for o in res.outcomes.values() if o.outcome == "error"]


def test_export_absent_the_rules_examine_no_node(tmp_path: Path) -> None:
    root = cluster(tmp_path / "c", [NO_PLACE] * 4, {})
    res = analyze(root)
    for rule in (m.RULE.id for m in RULES):
        assert res.outcome(rule) == "skipped", rule  # not examined: never [OK]
        assert res.outcomes[rule].nodes_without_data == NODES and res.outcomes[rule].nodes_checked == []


def test_a_node_list_in_one_nodes_bundle_is_mapped_too(tmp_path: Path) -> None:
    metas = [{**NO_PLACE, "instance_id": i} for i in EC2_IDS]
    root = cluster(tmp_path / "c", metas, {})
    topo = fixture("placement", EC2)
    (root / NODES[0] / "cmd" / "topology.json").write_text(topo)
    with (root / NODES[0] / "manifest.tsv").open("a") as manifest:
        manifest.write(f"cmd/topology.json\tplacement\t0\t0.1\t{len(topo)}\t-\t-\t-\n")
    res = analyze(root)  # the engine runs the rule: the file's rows carry p5-node-01
    (f,) = res.of("placement.spread")
    assert f.params["groups"]["nn-1212121212example"] == ["p5-node-03"]
    assert f.evidence[1].file == "p5-node-01/cmd/topology.json" and "nn-1212121212example" in (
        f.evidence[1].text or ""
    )


def test_engine_runs_a_rule_whose_only_input_is_an_export_in_extra(tmp_path: Path) -> None:
    root = cluster(
        tmp_path / "c",
        [
            {**NO_PLACE, "hostname": "ip-172-20-116-86"},
            {**NO_PLACE, "ip": "172.20.44.207"},
            NO_PLACE,
            NO_PLACE,
        ],
        {"nodes.json": fixture("placement", NODELIST)},
    )
    res = analyze(root)
    assert res.outcome("placement.multi_az") == "fail"
