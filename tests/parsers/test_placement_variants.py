"""placement variants: topology.conf (comments, hostlists, continuations, BlockSizes), scontrol show topology
(tree with Level/LinkSpeed, block, AggregatedBlock), kubectl describe node (full output, several nodes),
node-label JSON dumps, EC2 describe-instance-topology, and the travel noise (prompts, fences, prefixes, CRLF).

Real fixtures: tests/fixtures/placement/ (see PROVENANCE.md).  Texts built here from a real fixture (a prefix
added, CRLF, two outputs joined) are labelled "derived"; texts written here from scratch are "synthetic".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import parsers
from parsers import ParseError, placement
from tests.conftest import fixture_text

P4D_FULL = "training-on-eks-p4d-describe-node-full-prompt-fence-cut-tail.txt"
TRN1 = "eks-workshop-trn1-describe-nodes-selector-neuron-capacity.txt"
EC2_TOPO = "awscli-example-describe-instance-topology-4-instances.txt"
OFI_NODES = "aws-ofi-nccl-doc-node-label-topology-json-nodes.txt"
PUPPET_CONF = "maatthias-slurm-cluster-topology-conf-comment-banner-hostlists.txt"
SUPERPOD_CONF = "slurm-superpod-topology-conf-multi-range-hostlists.txt"
BLOCK_CONF = "schedmd-topology-conf5-block-example-blocksizes.txt"
TREE_SHOW = "gotest-scontrol-show-topology-tree-level-linkspeed-upper-nodes.txt"
BLOCK_SHOW = "crusoe-slurm-readme-scontrol-show-topology-block-prompt.txt"
AGG_SHOW = "oke-gb300-scontrol-show-topology-aggregatedblock-ip-names.txt"


def text(name: str) -> str:
    return fixture_text("placement", name)


def facts(raw: str, node: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """(source, key) -> row, of one node's facts (of every node when ``node`` is None)."""
    result = placement.parse(raw)
    assert result.issues == []
    rows = result.rows("placement_fact")
    return {(r["source"], r["key"]): r for r in rows if node is None or r["node_name"] == node}


def members(raw: str) -> list[dict[str, Any]]:
    result = placement.parse(raw)
    assert result.issues == []
    return result.rows("topology_member")


# --- kubectl describe node ----------------------------------------------------------------------------------


def test_describe_full_p4d_keeps_annotations_taints_capacity_and_skips_tables() -> None:
    raw = text(P4D_FULL)  # real: prompt line, ``` fence, Events after the closing fence, cut last line
    assert parsers.detect_kind(raw) == "placement"
    got = facts(raw)
    node = "ip-10-0-5-152.ap-northeast-2.compute.internal"
    assert {r["node_name"] for r in got.values()} == {node}
    assert (got["k8s-node", "node_name"]["line"], got["k8s-label", "instance_type"]["line"]) == (3, 6)
    assert got["k8s-label", "network_node_layer_3"]["value"] == "nn-dcbcca51aebf4c95b"
    ann = got["k8s-annotation", "csi.volume.kubernetes.io/nodeid"]
    assert (ann["value"], ann["line"]) == ('{"ebs.csi.aws.com":"i-0b9b9fb02def3eed3"}', 93)
    wrapped = got["k8s-annotation", "nfd.node.kubernetes.io/feature-labels"]  # value on the next line
    assert wrapped["line"] == 100 and wrapped["value"].startswith("cpu-cpuid.ADX,cpu-cpuid.AESNI,")
    assert wrapped["value"].endswith("cpu-c...")  # kubectl's own cut is kept as printed
    assert got["k8s-taint", "taint"]["value"] == "nvidia.com/gpu=present:NoSchedule"
    assert (
        got["k8s-capacity", "nvidia.com/gpu"]["value"],
        got["k8s-capacity", "nvidia.com/gpu"]["line"],
    ) == (
        "8",
        128,
    )
    assert got["k8s-allocatable", "cpu"]["value"] == "95690m"  # as printed, unit kept
    assert got["k8s-capacity", "memory"]["value"] == "1176300008Ki"
    assert got["k8s-address", "InternalIP"]["value"] == "10.0.5.152"
    assert got["k8s-node-info", "Kernel Version"]["value"] == "6.12.58-82.121.amzn2023.x86_64"
    assert got["k8s-node", "CreationTimestamp"]["value"] == "Thu, 18 Dec 2025 01:28:47 +0000"
    assert (got["k8s-node", "instance_id"]["value"], got["k8s-node", "instance_id"]["line"]) == (
        "i-0b9b9fb02def3eed3",
        149,
    )
    # the first zone seen wins: failure-domain label (line 7) and providerID say the same, one row
    assert got["k8s-label", "availability_zone"]["value"] == "ap-northeast-2b"
    assert ("k8s-node", "availability_zone") not in got
    # Lease, Conditions, pods, Allocated resources and Events are not placement facts
    assert not any("HolderIdentity" in k or "MemoryPressure" in k or k == "Ready" for _, k in got)
    assert len(got) == 125  # 84 labels and name, 11 annotations, 2+1 fields, 3+7+7+9 items, providerID


def test_describe_trn1_neuron_capacity_after_command_echo() -> None:
    raw = text(TRN1)  # real: a bare command echo and a stray "trn1-2x" line before Name:
    got = facts(raw)
    assert got["k8s-node", "node_name"]["line"] == 3
    assert got["k8s-label", "instance_type"]["value"] == "trn1.2xlarge"
    assert [got["k8s-label", f"network_node_layer_{n}"]["value"] for n in (1, 2, 3)] == [
        "nn-67ec43a6722b34afb", "nn-39eb76bb31ed2a526", "nn-d2e25ce93dad9593e"]  # fmt: skip
    assert got["k8s-capacity", "aws.amazon.com/neuroncore"]["value"] == "2"
    assert got["k8s-allocatable", "aws.amazon.com/neuron"]["line"] == 61
    assert got["k8s-label", "eks.amazonaws.com/capacityType"]["value"] == "ON_DEMAND"  # unknown label kept
    assert ("k8s-taint", "taint") not in got  # Taints: <none>
    assert got["k8s-node", "instance_id"]["value"] == "i-02c2f3c72473202ee"


def test_two_describe_outputs_keep_each_node_with_its_own_lines() -> None:
    first, second = text(TRN1), text(P4D_FULL)
    joined = first + "\n" + second  # derived: `kubectl describe nodes` prints one block per node
    result = placement.parse(joined)
    assert result.issues == []
    rows = result.rows("placement_fact")
    offset = first.count("\n") + 1
    types = [(r["node_name"], r["value"], r["line"]) for r in rows if r["key"] == "instance_type"]
    assert types == [
        ("ip-10-0-1-136.us-west-2.compute.internal", "trn1.2xlarge", 8),
        ("ip-10-0-5-152.ap-northeast-2.compute.internal", "p4d.24xlarge", 6 + offset),
    ]
    gpus = [(r["node_name"][:13], r["value"]) for r in rows if r["key"] == "nvidia.com/gpu"]
    assert gpus == [("ip-10-0-5-152", "8"), ("ip-10-0-5-152", "8")]  # capacity and allocatable of the p4d
    zones = {r["node_name"][:13]: r["value"] for r in rows if r["key"] == "az_id"}
    assert zones == {"ip-10-0-1-136": "usw2-az1", "ip-10-0-5-152": "apne2-az2"}


def test_describe_survives_crlf_pdsh_tags_and_lost_indentation() -> None:
    raw = text(TRN1)
    crlf = raw.replace("\n", "\r\n")  # derived
    assert facts(crlf) == facts(raw)
    tagged = "".join(f"ip-10-0-1-136: {line}\n" for line in raw.splitlines())  # derived: pdsh
    got = facts(tagged)
    assert (
        got["k8s-capacity", "cpu"]["host"] == "ip-10-0-1-136" and got["k8s-capacity", "cpu"]["value"] == "8"
    )
    flat = "\n".join(line.strip() for line in raw.splitlines())  # derived: every indentation lost
    got = facts(flat)
    assert got["k8s-label", "az_id"]["value"] == "usw2-az1"
    assert got["k8s-allocatable", "cpu"]["value"] == "7910m"
    assert got["k8s-node-info", "Kubelet Version"]["value"] == "v1.33.13-eks-cb19647"


def test_describe_label_without_equals_is_an_issue() -> None:
    raw = text(TRN1).replace(  # derived
        "\n                    kubernetes.io/os=linux\n", "\n                    kubernetes.io/os linux\n"
    )
    result = placement.parse(raw)
    assert [(i.line_no, i.reason) for i in result.issues] == [(20, "label without '='")]


# --- JSON: EC2 instance topology and node-label dumps ------------------------------------------------------


def test_describe_instance_topology_keeps_each_instance_apart() -> None:
    raw = text(EC2_TOPO)  # real: aws-cli example, 4-space indented as in the .rst, NextToken at the end
    assert parsers.detect_kind(raw) == "placement"
    result = placement.parse(raw)
    assert result.issues == []
    rows = result.rows("placement_fact")
    by = {(r["node_name"], r["key"]): (r["value"], r["line"]) for r in rows}
    # two instances share type and nodes: both keep their rows, at their own lines
    assert by["i-1111111111example", "instance_type"] == ("p4d.24xlarge", 5)
    assert by["i-2222222222example", "instance_type"] == ("p4d.24xlarge", 17)
    assert by["i-3333333333example", "network_node_layer_3"] == ("nn-1311133311example", 32)
    assert by["i-444444444example", "network_node_layer_2"] == ("nn-5434334334example", 42)
    assert by["i-1111111111example", "placement_group"] == ("my-ml-cpg", 6)
    assert ("i-2222222222example", "placement_group") not in by  # not printed for that instance
    assert by["i-3333333333example", "availability_zone"] == ("us-west-2d", 35)
    assert by[None, "NextToken"] == ("SomeEncryptedToken", 49)
    assert {r["source"] for r in rows} == {"ec2-topology"}
    assert len([r for r in rows if r["key"] == "instance_id"]) == 4


def test_node_label_dump_json_gives_each_node_its_labels() -> None:
    raw = text(OFI_NODES)  # real: aws-ofi-nccl doc, {"Nodes": [{"Name", "InstanceId", "Topology": {...}}]}
    assert parsers.detect_kind(raw) == "placement"
    rows = placement.parse(raw).rows("placement_fact")
    assert len(rows) == 24
    third = {r["key"]: (r["value"], r["line"]) for r in rows if r["node_name"].startswith("ip-192-168-51-1")}
    assert third["instance_id"] == ("i-3333333333example", 29)
    assert third["network_node_layer_1"] == ("nn-4444444444example", 31)
    assert third["availability_zone"] == ("us-west-2b", 36)


def test_json_after_a_prompt_in_a_fence_and_text_after_it() -> None:
    raw = "$ aws ec2 describe-instance-topology\n```json\n" + text(EC2_TOPO) + "```\nsome trailing note 1\n"
    result = placement.parse(raw)  # derived
    rows = result.rows("placement_fact")
    assert ("p4d.24xlarge", 7) in {(r["value"], r["line"]) for r in rows if r["key"] == "instance_type"}
    assert [(i.line_no, i.reason) for i in result.issues] == [(54, "text after the JSON document")]


def test_node_json_keeps_annotations_capacity_taints_and_unknown_keys() -> None:
    node = {  # synthetic: the layout kubectl get node -o json prints (2-space indent)
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "labels": {"sagemaker.amazonaws.com/node-health-status": "Schedulable"},
            "name": "hyperpod-i-0abc",
        },
        "spec": {"providerID": "aws:///us-west-2a/i-0abc", "taints": [{"effect": "NoSchedule", "key": "a"}]},
        "status": {
            "addresses": [{"address": "10.1.2.3", "type": "InternalIP"}],
            "allocatable": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
            "capacity": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "nodeInfo": {"kernelVersion": "6.1.0"},
        },
    }
    raw = json.dumps(node, indent=2) + "\n"
    lines = raw.splitlines()
    got = facts(raw, "hyperpod-i-0abc")
    efa = got["k8s-allocatable", "vpc.amazonaws.com/efa"]
    assert efa["value"] == "32" and lines[efa["line"] - 1].strip() == '"vpc.amazonaws.com/efa": "32"'
    cap = got["k8s-capacity", "vpc.amazonaws.com/efa"]["line"]

    def section(n: int) -> str:
        return next(lines[i] for i in range(n - 2, -1, -1) if lines[i].endswith("{")).strip()

    assert (section(cap), section(efa["line"])) == ('"capacity": {', '"allocatable": {')  # own section's line
    assert got["k8s-annotation", "node.alpha.kubernetes.io/ttl"]["value"] == "0"
    assert got["k8s-taint", "taint"]["value"] == "a=:NoSchedule"
    assert got["k8s-address", "InternalIP"]["value"] == "10.1.2.3"
    assert got["k8s-condition", "Ready"]["value"] == "True"
    assert got["k8s-node-info", "kernelVersion"]["value"] == "6.1.0"
    assert got["k8s-node", "creationTimestamp"]["value"] == "2025-01-02T03:04:05Z"
    assert got["k8s-label", "sagemaker.amazonaws.com/node-health-status"]["value"] == "Schedulable"


# --- Slurm topology.conf ------------------------------------------------------------------------------------


def test_topology_conf_comment_banner_and_mixed_hostlists() -> None:
    rows = members(text(PUPPET_CONF))  # real: puppet banner of '#' lines, a blank line
    s0 = [r["node_name"] for r in rows if r["switch"] == "s0"]
    assert len(s0) == 19 + 13 + 2 + 2 and s0[:2] == ["hpc001", "hpc002"] and s0[-1] == "master2"
    assert {r["line"] for r in rows if r["switch"] == "s0"} == {8}
    assert [(r["switch"], r["node_name"], r["line"], r["level"]) for r in rows[-3:]] == [
        ("s1", "xf11id-srv2", 9, 0), ("s2", "xf11id-srv3", 10, 0), ("s3", "saturn4", 11, 0)]  # fmt: skip


def test_topology_conf_multi_range_hostlists() -> None:
    rows = members(text(SUPERPOD_CONF))  # real: "circe-n[001-016],n[019-020]", "[037-039,051,061,078-080]"
    s0 = [r["node_name"] for r in rows if r["switch"] == "s0"]
    assert len(s0) == 18 and s0[-2:] == ["n019", "n020"]
    s4 = [r["node_name"] for r in rows if r["switch"] == "s4"]
    assert s4 == ["circe-n037", "circe-n038", "circe-n039", "circe-n051", "circe-n061"] + [
        "circe-n078", "circe-n079", "circe-n080"]  # fmt: skip
    assert len(rows) == 80


def test_topology_conf_block_plugin_keeps_block_sizes() -> None:
    rows = members(text(BLOCK_CONF))  # real: slurm topology.conf(5) block example, BlockSizes=30,120
    assert len(rows) == 128
    assert {r["source"] for r in rows} == {"slurm-block"}
    assert [(r["switch"], r["node_name"], r["line"]) for r in rows[::32]] == [
        ("block1", "node1", 5), ("block2", "node33", 6), ("block3", "node65", 7), ("block4", "node97", 8)]  # fmt: skip
    assert {r["extra"] for r in rows} == {'{"BlockSizes": "30,120"}'}
    assert {(r["level"], r["block_index"], r["parent"]) for r in rows} == {(None, None, None)}


def test_topology_conf_continuations_inline_comments_and_two_entries_on_a_line() -> None:
    raw = (  # synthetic: the syntax topology.conf(5) allows
        "# spine\n"
        "SwitchName=spine Switches=leaf[1-2] \\\n"
        "   LinkSpeed=100  # two leaves\n"
        "\n"
        "SwitchName=leaf1 Nodes=gpu-[01-02] SwitchName=leaf2 Nodes=gpu-03\n"
        "Switchname=leaf3 nodes=gpu-04 Weird=yes\n"
    )
    rows = members(raw)
    got = [(r["line"], r["switch"], r["level"], r["parent"], r["node_name"], r["extra"]) for r in rows]
    assert got == [
        (2, "spine", 1, None, None, '{"LinkSpeed": "100"}'),
        (5, "leaf1", 0, "spine", "gpu-01", None),
        (5, "leaf1", 0, "spine", "gpu-02", None),
        (5, "leaf2", 0, "spine", "gpu-03", None),
        (6, "leaf3", 0, None, "gpu-04", '{"Weird": "yes"}'),  # case-insensitive keys, unknown key kept
    ]


# --- scontrol show topology ---------------------------------------------------------------------------------


def test_scontrol_tree_with_level_linkspeed_and_nodes_on_upper_switches() -> None:
    rows = members(text(TREE_SHOW))  # real test fixture: a leading blank line, Nodes= on every level
    leaf = {}
    for r in sorted(rows, key=lambda r: (r["level"], r["line"])):
        leaf.setdefault(r["node_name"], r)
    assert {n: (r["switch"][:6], r["level"], r["line"]) for n, r in leaf.items()} == {
        "worker-1": ("185ccb", 0, 2),
        "worker-0": ("4d63b2", 0, 3),
        "worker-dynamic-0": ("unknow", 0, 7),
        "worker-payg-0": ("unknow", 0, 7),
    }
    root = [r for r in rows if r["switch"] == "root"]
    assert len(root) == 4 and {(r["level"], r["parent"]) for r in root} == {(2, None)}
    assert {r["extra"] for r in rows} == {'{"LinkSpeed": "1"}'}
    assert leaf["worker-0"]["parent"] == "c77d58ca27418e0713112f6974e3a7e3"


def test_scontrol_block_after_a_prompt_line() -> None:
    rows = members(text(BLOCK_SHOW))  # real: "ubuntu@slurm-head-node-0:~$ scontrol show topology" first
    assert len(rows) == 180
    assert (rows[0]["switch"], rows[0]["node_name"], rows[0]["line"], rows[0]["block_index"]) == (
        "block01", "slurm-compute-node-000", 2, 0)  # fmt: skip
    assert (rows[-1]["switch"], rows[-1]["node_name"], rows[-1]["line"], rows[-1]["block_size"]) == (
        "block10", "slurm-compute-node-179", 11, 18)  # fmt: skip


def test_scontrol_aggregated_block_is_its_own_source() -> None:
    rows = members(text(AGG_SHOW))  # real: topology.yaml block plugin, AggregatedBlock=gb300_b[0-1]
    base = [(r["switch"], r["node_name"]) for r in rows if r["source"] == "slurm-block"]
    assert base == [("gb300_b0", "10.140.71.103"), ("gb300_b0", "10.140.88.115"),
                    ("gb300_b1", "10.140.79.152"), ("gb300_b1", "10.140.93.120")]  # fmt: skip
    agg = [r for r in rows if r["source"] == "slurm-block-aggregate"]
    assert {(r["switch"], r["block_index"], r["block_size"], r["line"]) for r in agg} == {
        ("gb300_b[0-1]", 2, 4, 3)
    }
    assert len(agg) == 4


def test_scontrol_through_srun_prefix_and_a_timestamp_column() -> None:
    raw = "".join(f"0: {line}\n" for line in text(AGG_SHOW).splitlines())  # derived: srun -l
    rows = members(raw)
    assert len(rows) == 8 and {r["host"] for r in rows} == {"0"}
    stamped = "12:38:31  BlockName=block001 BlockIndex=0 Nodes=sched-worker[1-2]\n"  # synthetic, polled log
    result = placement.parse(stamped)
    assert [r["node_name"] for r in result.rows("topology_member")] == ["sched-worker1", "sched-worker2"]
    assert [(i.line_no, i.reason) for i in result.issues] == [
        (1, "words outside key=value read past: 12:38:31")
    ]


# --- errors and detection -----------------------------------------------------------------------------------


def test_no_facts_is_a_parse_error_that_says_what_was_seen() -> None:
    with pytest.raises(ParseError, match=r"expected IMDS key=value lines.*first line seen: '#### \?\?\?\?'"):
        placement.parse("#### ????\n!!!\n")  # synthetic


def test_imds_facts_from_several_hosts_keep_their_host() -> None:
    raw = (  # synthetic: pdsh over two hosts reading IMDS
        "ip-10-1-2-3: instance-type=p5.48xlarge\n"
        "ip-10-1-2-4: instance-type=p5.48xlarge\n"
        "ip-10-1-2-3: placement/availability-zone-id=use2-az2\n"
        "ip-10-1-2-4: placement/availability-zone-id=use2-az3\n"
    )
    rows = placement.parse(raw).rows("placement_fact")
    assert [(r["host"], r["key"], r["value"], r["line"]) for r in rows] == [
        ("ip-10-1-2-3", "instance_type", "p5.48xlarge", 1),
        ("ip-10-1-2-4", "instance_type", "p5.48xlarge", 2),
        ("ip-10-1-2-3", "az_id", "use2-az2", 3),
        ("ip-10-1-2-4", "az_id", "use2-az3", 4),
    ]


@pytest.mark.parametrize(
    ("name", "first", "last"),
    [
        (
            P4D_FULL,
            120,
            150,
        ),  # Addresses, Capacity, Allocatable, System Info, ProviderID: no Name:, no Labels:
        (TRN1, 30, 60),  # Annotations .. Capacity
        (PUPPET_CONF, 9, 11),
        (BLOCK_SHOW, 5, 8),
        (TREE_SHOW, 5, 7),
    ],
)
def test_fragment_of_a_fixture_is_still_detected_and_read(name: str, first: int, last: int) -> None:
    lines = text(name).splitlines()
    part = "\n".join(lines[first - 1 : last]) + "\n"  # derived: a grep'd or cut excerpt
    assert parsers.detect_kind(part) == "placement"
    result = placement.parse(part)
    assert result.tables and result.issues == []
