"""Tests for parsers.placement on the real fixtures in tests/fixtures/placement/."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import placement

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "placement"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def facts(text: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in placement.parse(text).rows("placement_fact")}


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "placement"


@pytest.mark.parametrize("name", ALL)
def test_rows_have_schema_columns(name: str) -> None:
    result = placement.parse(load(name))
    for table, rows in result.table_rows().items():
        names = [c.name for c in placement.SCHEMA[table]]
        assert all(list(row) == names for row in rows)


def test_eks_describe_node_labels() -> None:
    result = placement.parse(load("eks-p4d-describe-node-labels-karpenter-nfd.txt"))
    assert result.issues == []
    rows = result.rows("placement_fact")
    got = {r["key"]: r for r in rows}
    assert len(rows) == 84  # 87 labels + Name, less 4 duplicates (1 instance-type, 1 region, 2 zone labels)
    assert got["node_name"]["value"] == "ip-10-0-5-152.ap-northeast-2.compute.internal"
    assert got["node_name"]["source"] == "k8s-node"
    assert (got["instance_type"]["value"], got["instance_type"]["line"]) == ("p4d.24xlarge", 4)
    assert (
        got["availability_zone"]["value"] == "ap-northeast-2b" and got["region"]["value"] == "ap-northeast-2"
    )
    assert (got["az_id"]["value"], got["az_id"]["line"]) == ("apne2-az2", 87)
    assert [got[f"network_node_layer_{n}"]["value"] for n in (1, 2, 3)] == [
        "nn-c79422f4e61deb9ca",
        "nn-6ff5053c3a4d86db7",
        "nn-dcbcca51aebf4c95b",
    ]
    assert got["hostname"]["value"] == "ip-10-0-5-152.ap-northeast-2.compute.internal"
    assert got["feature.node.kubernetes.io/pci-1d0f.present"]["value"] == "true"  # EFA present
    assert got["karpenter.sh/capacity-type"]["value"] == "spot"
    assert {r["source"] for r in rows} == {"k8s-node", "k8s-label"}
    assert result.rows("topology_member") == []


def test_hyperpod_topology_conf_with_blank_lines() -> None:
    result = placement.parse(load("hyperpod-docs-topology-conf-slurm24-blank-lines.txt"))
    assert result.issues == []
    got = [
        (m["line"], m["switch"], m["level"], m["parent"], m["node_name"])
        for m in result.rows("topology_member")
    ]
    assert got == [
        (1, "nn-6fe9d8a965d34d181", 2, None, None),
        (3, "nn-0b53107754517bf0e", 1, "nn-6fe9d8a965d34d181", None),
        (5, "nn-424c855d4ad825aa4", 0, "nn-0b53107754517bf0e", "ip-10-1-111-198"),
        (6, "nn-95acd7c656329fc30", 0, "nn-0b53107754517bf0e", "ip-10-1-53-231"),
    ]
    assert {m["source"] for m in result.rows("topology_member")} == {"slurm-topology"}


def test_scontrol_block_hostlists() -> None:
    result = placement.parse(load("gcm-scontrol-show-topo-block-hostlist-testfixture.txt"))
    assert result.issues == []
    rows = result.rows("topology_member")
    assert len(rows) == 10
    by_block: dict[str, list[str]] = {}
    for r in rows:
        by_block.setdefault(r["switch"], []).append(r["node_name"])
    assert by_block["block_DH1-062-US-EAST-04B"] == ["g3-129-057", "g3-129-059", "g3-129-063"]
    assert by_block["block_DH1-067-US-EAST-04B"] == ["g3-129-235", "g3-129-237", "g3-130-001", "g3-130-003"]
    assert sorted({r["block_index"] for r in rows}) == [0, 1, 3]  # the gap is kept
    assert {(r["source"], r["block_size"], r["level"], r["parent"]) for r in rows} == {
        ("slurm-block", 18, None, None)
    }


# --- synthetic inputs (formats the collector writes; no real sample was found) ---

IMDS = """\
instance-id=i-0123456789abcdef0
instance-type=p5.48xlarge
placement/availability-zone=us-east-2b
placement/availability-zone-id=use2-az2
placement/group-name=
placement/partition-number: 3
placement/region=us-east-2
http://169.254.169.254/latest/meta-data/local-hostname=ip-10-1-2-3.us-east-2.compute.internal
network/interfaces/macs/0a:1b:2c:3d:4e:5f/device-number=0
placement/host-id=<?xml version="1.0"?><Error><Code>404 - Not Found</Code></Error>
this line is mangled
"""


def test_synthetic_imds_key_value_lines() -> None:
    result = placement.parse(IMDS)
    got = {r["key"]: r["value"] for r in result.rows("placement_fact")}
    assert got == {
        "instance_id": "i-0123456789abcdef0",
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-2b",
        "az_id": "use2-az2",
        "placement_partition": "3",
        "region": "us-east-2",
        "hostname": "ip-10-1-2-3.us-east-2.compute.internal",
        "network/interfaces/macs/0a:1b:2c:3d:4e:5f/device-number": "0",
    }
    assert {r["source"] for r in result.rows("placement_fact")} == {"imds"}
    assert [(i.line_no, i.line) for i in result.issues] == [(11, "this line is mangled")]
    assert parsers.detect_kind(IMDS) == "placement"


NODE_JSON = """\
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "hyperpod-i-0abc1234567890def",
   "labels": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge",
              "topology.k8s.aws/network-node-layer-1": "nn-1111111111example",
              "topology.k8s.aws/network-node-layer-2": "nn-2222222222example",
              "topology.k8s.aws/network-node-layer-3": "nn-3333333333example",
              "topology.k8s.aws/ultraserver-id": "us-0123456789abcdef0",
              "sagemaker.amazonaws.com/node-health-status": "Schedulable"}},
 "spec": {"providerID": "aws:///us-west-2a/i-0abc1234567890def"}}
"""


def test_synthetic_kubectl_node_json() -> None:
    got = facts(NODE_JSON)
    assert got["node_name"] == "hyperpod-i-0abc1234567890def"
    assert got["instance_type"] == "ml.p5.48xlarge"
    assert got["network_node_layer_3"] == "nn-3333333333example"
    assert got["ultraserver_id"] == "us-0123456789abcdef0"
    assert got["availability_zone"] == "us-west-2a" and got["instance_id"] == "i-0abc1234567890def"
    assert got["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
    assert parsers.detect_kind(NODE_JSON) == "placement"
    bare = facts('{"topology.k8s.aws/zone-id": "usw2-az1", "kubernetes.io/hostname": "ip-10-0-0-1"}')
    assert bare == {"az_id": "usw2-az1", "hostname": "ip-10-0-0-1"}


TOPOLOGY_JSON = """\
{"Instances": [{"InstanceId": "i-1111111111example", "InstanceType": "p5.48xlarge",
  "GroupName": "ml-group", "NetworkNodes": ["nn-1111111111example", "nn-2222222222example",
  "nn-3333333333example"], "AvailabilityZone": "us-west-2a", "ZoneId": "usw2-az2"}]}
"""


def test_synthetic_describe_instance_topology() -> None:
    rows = placement.parse(TOPOLOGY_JSON).rows("placement_fact")
    got = {r["key"]: r["value"] for r in rows}
    assert got["network_node_layer_1"] == "nn-1111111111example"  # EC2 lists the nodes top-down
    assert got["network_node_layer_3"] == "nn-3333333333example"
    assert (got["placement_group"], got["az_id"], got["instance_id"]) == (
        "ml-group",
        "usw2-az2",
        "i-1111111111example",
    )
    assert {r["source"] for r in rows} == {"ec2-topology"}


GET_NODES = (
    "NAME                                     STATUS   ROLES    AGE   VERSION               LABELS\n"
    "ip-10-1-2-3.us-east-2.compute.internal   Ready    <none>   3d    v1.29.3-eks-ae9a62a   "
    "beta.kubernetes.io/arch=amd64,node.kubernetes.io/instance-type=p5.48xlarge,topology.k8s.aws/zone-id=use2-az2\n"
)


def test_synthetic_get_nodes_show_labels() -> None:
    got = facts(GET_NODES)
    assert got == {
        "node_name": "ip-10-1-2-3.us-east-2.compute.internal",
        "beta.kubernetes.io/arch": "amd64",
        "instance_type": "p5.48xlarge",
        "az_id": "use2-az2",
    }
    assert parsers.detect_kind(GET_NODES) == "placement"


SCONTROL_TREE = """\
SwitchName=s0 Level=0 LinkSpeed=1 Nodes=ip-10-1-[2-4,7]
SwitchName=s1 Level=0 LinkSpeed=1 Nodes=rack[1-2]-n[01-02]
SwitchName=s2 Level=1 LinkSpeed=1 Switches=s[0-1] Nodes=ip-10-1-[2-4,7],rack[1-2]-n[01-02]
SwitchName=bad Nodes=ip-[1-3
"""


def test_synthetic_scontrol_show_topology_tree() -> None:
    result = placement.parse(SCONTROL_TREE)
    rows = result.rows("topology_member")
    leaf = {r["node_name"]: r for r in rows if r["level"] == 0}
    assert sorted(leaf) == sorted(["ip-10-1-2", "ip-10-1-3", "ip-10-1-4", "ip-10-1-7"] + [
        "rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"])  # fmt: skip
    assert (leaf["ip-10-1-7"]["switch"], leaf["ip-10-1-7"]["parent"]) == ("s0", "s2")
    assert len([r for r in rows if r["switch"] == "s2"]) == 8 and rows[-1]["level"] == 1
    assert [(i.line_no, "unbalanced" in i.reason) for i in result.issues] == [(4, True)]


def test_hostlist_expansion() -> None:
    assert placement._expand("ip-10-1-[2-4,7]") == ["ip-10-1-2", "ip-10-1-3", "ip-10-1-4", "ip-10-1-7"]
    assert placement._expand("n[08-10]") == ["n08", "n09", "n10"]
    assert placement._expand("a[1-2]-b[1-2],c") == ["a1-b1", "a1-b2", "a2-b1", "a2-b2", "c"]
    with pytest.raises(ValueError):
        placement._expand("n[0-99999999]")


def test_describe_node_fields_after_labels_and_uniform_indent() -> None:
    text = load("eks-p4d-describe-node-labels-karpenter-nfd.txt") + (
        "Annotations:        alpha.kubernetes.io/provided-node-ip: 10.0.5.152\n"
        "Taints:             nvidia.com/gpu=true:NoSchedule\n"
        "ProviderID:         aws:///ap-northeast-2b/i-0123456789abcdef0\n"
    )
    indented = "\n".join("    " + line for line in text.splitlines())
    for variant in (text, indented):
        got = facts(variant)
        assert got["instance_id"] == "i-0123456789abcdef0"  # from ProviderID (synthetic lines)
        assert "nvidia.com/gpu" not in got  # a taint, not a label
        assert got["az_id"] == "apne2-az2"
