"""Topology, GPU memory, DCGM-version, HyperPod health-label and /dev/shm rules on bundles built from
real fixtures (values edited to trigger): gpu.topo.pcie_path, gpu.topo.nic_drift, gpu.memory.high,
gpu.dcgm.pass_untrusted, host.deep_health.failed, host.shm.stale_nccl."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Severity
from analyzer.judge.settings import load_settings
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

MODULES = (
    "analyzer.judge.rules.gpu.topo_pcie_path",
    "analyzer.judge.rules.gpu.topo_nic_drift",
    "analyzer.judge.rules.gpu.memory_high",
    "analyzer.judge.rules.gpu.dcgm_pass_untrusted",
    "analyzer.judge.rules.host.deep_health_failed",
    "analyzer.judge.rules.host.shm_stale_nccl",
)
DELLA = "della-h100-nic-legend-empty-cpu-affinity.txt"
DGX = "dgxa100-12mlx5.txt"
P40 = "paddle-p40-old-soc-legend.txt"
H100_Q = "jp-simulator-8xh100-565-complete.txt"
DCGM = "dcgm-124-442-r2-1gpu-pass-complete.txt"
DESCRIBE = "eks-p4d-describe-node-labels-karpenter-nfd.txt"
SHM = "handwritten-collector-p5-stale-nccl.txt"
LAST_LABEL = "                    topology.kubernetes.io/zone=ap-northeast-2b\n"

Files = dict[str, tuple[str, str]]


def run(tmp_path: Path, nodes: dict[str, Files | tuple[Files, dict[str, str]]]) -> Result:
    """Write the nodes (files, or (files, meta)) and run only this module's rules."""
    root = tmp_path / "bundle"
    root.mkdir(parents=True)
    for name, spec in nodes.items():
        files, meta = spec if isinstance(spec, tuple) else (spec, None)
        write_node(root, name, files, meta=meta)
    con = connect(None)
    load(con, [root], tmp_path / "work", Limits(), jobs=1)
    findings, outcomes = run_rules(con, [importlib.import_module(m) for m in MODULES], load_settings())
    for o in outcomes:
        assert o.outcome != "error", o
    return Result(findings, {o.rule: o for o in outcomes}, con)


def topo(name: str, edit: dict[str, str] | None = None) -> Files:
    return {"cmd/nvidia-smi-topo.txt": ("nvidia-smi-topo", fixture("nvidia-smi-topo", name, edit))}


def typed(files: Files, instance_type: str) -> tuple[Files, dict[str, str]]:
    return files, {"instance_type": instance_type}


# -- gpu.topo.pcie_path ----------------------------------------------------------------------------

GPU3_ROW = "GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18"
GPU3_PCIE = "GPU3\tSYS\tSYS\tSYS\t X \tNODE\tNODE\tNODE\tNODE"


def test_pcie_path_fires_for_a_gpu_cut_off_nvlink_in_its_own_node(tmp_path: Path) -> None:
    res = run(tmp_path, {"n1": topo(DELLA, {GPU3_ROW: GPU3_PCIE})})
    [f] = res.of("gpu.topo.pcie_path")
    assert f.severity is Severity.WARNING and f.node == "n1" and f.gpu == 3
    assert f.params["count"] == 7 and f.params["expected_from"] == ["node"]
    assert "GPU3-GPU4 NODE" in f.params["pairs"] and f.evidence and f.evidence[0].text.startswith("GPU3")


def test_pcie_path_fires_when_peers_of_the_same_type_have_nvlink(tmp_path: Path) -> None:
    nodes = {
        "good-1": typed(topo(DGX), "p3dn.24xlarge"),
        "good-2": typed(topo(DGX), "p3dn.24xlarge"),
        "pcie": typed(topo(DGX, {"NV12": "PXB"}), "p3dn.24xlarge"),
    }
    [f] = run(tmp_path, nodes).of("gpu.topo.pcie_path")
    assert f.node == "pcie" and f.params["count"] == 28 and f.params["expected_from"] == ["peers"]
    assert f.gpu is None and f.params["peer_nodes"] == 2


def test_pcie_path_fires_for_every_node_of_several_on_pcie(tmp_path: Path) -> None:
    """Each node is judged against the same tally of its peers (the first one flagged used to replace
    the tally, so the rule failed on the second)."""
    good = {f"good-{i}": typed(topo(DGX), "p3dn.24xlarge") for i in range(3)}
    bad = {f"pcie-{i}": typed(topo(DGX, {"NV12": "PXB"}), "p3dn.24xlarge") for i in range(2)}
    found = run(tmp_path, good | bad).of("gpu.topo.pcie_path")
    assert [(f.node, f.params["expected_from"]) for f in found] == [
        ("pcie-0", ["peers"]),
        ("pcie-1", ["peers"]),
    ]


def test_pcie_path_fires_on_an_nvswitch_sku_without_peers(tmp_path: Path) -> None:
    res = run(tmp_path, {"lonely": typed(topo(DELLA, {"NV18": "PHB"}), "p5.48xlarge")})
    [f] = res.of("gpu.topo.pcie_path")
    assert f.params["expected_from"] == ["sku"] and f.params["instance_type"] == "p5.48xlarge"


def test_pcie_path_quiet_on_pcie_only_boxes_and_healthy_nvlink(tmp_path: Path) -> None:
    nodes = {
        "p40-a": typed(topo(P40), "p40-box"),
        "p40-b": typed(topo(P40), "p40-box"),
        "p40-untyped": topo(P40),
        "h100": topo(DELLA),
        "a100": typed(topo(DGX), "p4d.24xlarge"),
    }
    res = run(tmp_path, nodes)
    assert res.of("gpu.topo.pcie_path") == [] and res.outcome("gpu.topo.pcie_path") == "pass"


# -- gpu.topo.nic_drift ----------------------------------------------------------------------------

GPU0_NICS = "NV18\tPIX\tPIX\tNODE"  # GPU0's row: last NVLink cell, then NIC0, NIC1, NIC2


def test_nic_drift_names_the_deviating_node_and_cells(tmp_path: Path) -> None:
    moved = topo(DELLA, {GPU0_NICS: "NV18\tSYS\tSYS\tNODE"})
    nodes = {n: typed(topo(DELLA), "p5.48xlarge") for n in ("a", "b")} | {"c": typed(moved, "p5.48xlarge")}
    [f] = run(tmp_path, nodes).of("gpu.topo.nic_drift")
    assert f.severity is Severity.WARNING and f.node == "c" and f.params["majority_nodes"] == ["a", "b"]
    assert f.params["differences"] == ["GPU0-NIC0 SYS (majority PIX)", "GPU0-NIC1 SYS (majority PIX)"]
    assert f.evidence[0].text.startswith("GPU0")


def test_nic_drift_without_a_majority_is_one_cluster_finding(tmp_path: Path) -> None:
    moved = topo(DELLA, {GPU0_NICS: "NV18\tSYS\tSYS\tNODE"})
    nodes = {"a": typed(topo(DELLA), "p5.48xlarge"), "b": typed(moved, "p5.48xlarge")}
    [f] = run(tmp_path, nodes).of("gpu.topo.nic_drift")
    assert f.node is None and f.params["groups"] == [["a"], ["b"]]


def test_nic_drift_quiet_on_identical_nodes_and_across_types(tmp_path: Path) -> None:
    moved = topo(DELLA, {GPU0_NICS: "NV18\tSYS\tSYS\tNODE"})
    nodes = {
        "a": typed(topo(DELLA), "p5.48xlarge"),
        "b": typed(topo(DELLA), "p5.48xlarge"),
        "other-type": typed(moved, "p5e.48xlarge"),
        "untyped": moved,
    }
    res = run(tmp_path, nodes)
    assert res.of("gpu.topo.nic_drift") == [] and res.outcome("gpu.topo.nic_drift") == "pass"


# -- gpu.memory.high -------------------------------------------------------------------------------


def q_with_gpu2_used(used: str) -> Files:
    text = fixture("nvidia-smi-q", H100_Q)
    head, *blocks = text.split("\nGPU 00000000:")
    blocks[2] = blocks[2].replace(
        "Used                              : 1 MiB", f"Used                              : {used} MiB", 1
    )
    return {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", "\nGPU 00000000:".join([head, *blocks]))}


def test_memory_high_fires_from_q_and_from_the_csv(tmp_path: Path) -> None:
    csv = {"cmd/gpu-query.csv": ("nvidia-smi-csv", fixture("nvidia-smi-csv", "slurm-v100-timestamp-l5.txt"))}
    res = run(tmp_path, {"q": q_with_gpu2_used("80000"), "csv": csv})
    by_node = {f.node: f for f in res.of("gpu.memory.high")}
    assert set(by_node) == {"q", "csv"}
    assert by_node["q"].gpu == 2 and by_node["q"].params["used_pct"] == 98.1
    assert by_node["q"].severity is Severity.INFO
    assert by_node["csv"].params == {  # the real V100 training sample: 30994 of 32480 MiB = 95.4 %
        "used_mib": 30994, "total_mib": 32480, "used_pct": 95.4, "limit_pct": 95,
        "source": "--query-gpu", "pci": None,
    }  # fmt: skip


def test_memory_high_quiet_below_the_line(tmp_path: Path) -> None:
    csv = {"cmd/gpu-query.csv": ("nvidia-smi-csv", fixture("nvidia-smi-csv", "hpc-h100-595-11cols.txt"))}
    smi = {"cmd/nvidia-smi.txt": ("nvidia-smi", fixture("nvidia-smi", "della-h100-545-narrow-busid.txt"))}
    res = run(tmp_path, {"q": q_with_gpu2_used("77000"), "csv": csv, "smi": smi})  # 94.4 %
    assert res.of("gpu.memory.high") == [] and res.outcome("gpu.memory.high") == "pass"


# -- gpu.dcgm.pass_untrusted -----------------------------------------------------------------------

VERSION_ROW = "| DCGM Version              | 4.4.2 "


def dcgm(edit: dict[str, str] | None = None) -> Files:
    return {"cmd/dcgmi-diag.txt": ("dcgmi-diag", fixture("dcgmi-diag", DCGM, edit))}


def test_dcgm_pass_untrusted_fires_on_old_dcgm(tmp_path: Path) -> None:
    memtest = {"| memory                    |": "| memtest                   |"}
    res = run(tmp_path, {
        "old": dcgm({VERSION_ROW: "| DCGM Version              | 3.3.9 "}),
        "old-memtest": dcgm({VERSION_ROW: "| DCGM Version              | 3.3.5 ", **memtest}),
    })  # fmt: skip
    by_node = {f.node: f for f in res.of("gpu.dcgm.pass_untrusted")}
    assert set(by_node) == {"old", "old-memtest"}
    assert by_node["old"].severity is Severity.INFO and by_node["old"].params["memtest"] is False
    assert "not authoritative" in by_node["old"].message
    assert (
        by_node["old-memtest"].params["memtest"] is True
        and "medium+memtest" in by_node["old-memtest"].message
    )


def test_dcgm_pass_untrusted_quiet_on_new_dcgm_or_a_failure(tmp_path: Path) -> None:
    old_failed = {
        VERSION_ROW: "| DCGM Version              | 3.3.9 ",
        "| pcie                      | Pass ": "| pcie                      | Fail ",
    }
    res = run(tmp_path, {"new": dcgm(), "old-failed": dcgm(old_failed)})
    assert res.of("gpu.dcgm.pass_untrusted") == [] and res.outcome("gpu.dcgm.pass_untrusted") == "pass"


# -- host.deep_health.failed -----------------------------------------------------------------------


def labels(*extra: str) -> Files:
    added = "".join(f"                    sagemaker.amazonaws.com/{x}\n" for x in extra)
    text = fixture("placement", DESCRIBE, {LAST_LABEL: LAST_LABEL + added})
    return {"cmd/placement.txt": ("placement", text)}


def test_deep_health_failed_severities_and_routes(tmp_path: Path) -> None:
    node_json = {"metadata": {"name": "json-node", "labels": {
        "sagemaker.amazonaws.com/deep-health-check-status": "Failed",
        "sagemaker.amazonaws.com/fault-type": "NetworkFaultType",
        "sagemaker.amazonaws.com/fault-reason": "EfaHealthCheckFailed",
    }}}  # fmt: skip
    res = run(tmp_path, {
        "replace": labels("node-health-status=UnschedulablePendingReplacement"),
        "reboot": labels("node-health-status=UnschedulablePendingReboot", "fault-type=GpuFaultType"),
        "checking": labels("node-health-status=Unschedulable", "deep-health-check-status=InProgress"),
        "json": {"cmd/node.json": ("placement", json.dumps({"kind": "Node", **node_json}, indent=2))},
    })  # fmt: skip
    got = {(f.node, f.params["label"].split("/")[1]): f for f in res.of("host.deep_health.failed")}
    assert {k: f.severity for k, f in got.items()} == {
        ("replace", "node-health-status"): Severity.CRITICAL,
        ("reboot", "node-health-status"): Severity.WARNING,
        ("reboot", "fault-type"): Severity.WARNING,
        ("checking", "node-health-status"): Severity.INFO,
        ("json", "deep-health-check-status"): Severity.CRITICAL,
        ("json", "fault-type"): Severity.WARNING,
    }
    assert got[("reboot", "fault-type")].route.owner == "node-hardware"
    network = got[("json", "fault-type")]
    assert network.route.owner == "nccl-network" and network.params["detail"] == "EfaHealthCheckFailed"
    assert "about 2 h" in got[("checking", "node-health-status")].message
    assert got[("replace", "node-health-status")].evidence[0].text.strip().endswith("PendingReplacement")


def test_deep_health_failed_quiet_on_healthy_labels(tmp_path: Path) -> None:
    res = run(tmp_path, {
        "plain": {"cmd/placement.txt": ("placement", fixture("placement", DESCRIBE))},
        "healthy": labels("node-health-status=Schedulable", "deep-health-check-status=Passed"),
    })  # fmt: skip
    assert res.of("host.deep_health.failed") == [] and res.outcome("host.deep_health.failed") == "pass"


# -- host.shm.stale_nccl ---------------------------------------------------------------------------


def test_shm_stale_nccl_fires_as_info_and_says_it_cannot_tell(tmp_path: Path) -> None:
    res = run(tmp_path, {"n1": {"cmd/shm.txt": ("shm", fixture("shm", SHM))}})
    [f] = res.of("host.shm.stale_nccl")
    assert f.severity is Severity.INFO and f.params["nccl_files"] == 2 and f.params["nccl_bytes"] == 19275776
    assert "cannot tell" in f.message and f.evidence[0].text.startswith("tmpfs")


def test_shm_stale_nccl_quiet_without_nccl_segments(tmp_path: Path) -> None:
    clean = fixture("shm", SHM, {"nccl-5XyQ1b": "torch-5XyQ1b", "nccl-Ga7Lq0": "torch-Ga7Lq0"})
    res = run(tmp_path, {"n1": {"cmd/shm.txt": ("shm", clean)}})
    assert res.of("host.shm.stale_nccl") == [] and res.outcome("host.shm.stale_nccl") == "pass"


# -- all together ----------------------------------------------------------------------------------


def test_healthy_real_samples_raise_no_warning_or_critical(tmp_path: Path) -> None:
    files = {
        **topo(DELLA),
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", H100_Q)),
        **dcgm(),
        "cmd/placement.txt": ("placement", fixture("placement", DESCRIBE)),
    }
    nodes = {n: typed(files, "p5.48xlarge") for n in ("a", "b")} | {"p40": topo(P40)}
    res = run(tmp_path, nodes)
    assert [f for f in res.findings if f.severity is not Severity.INFO] == []
    ran = ("gpu.topo.pcie_path", "gpu.topo.nic_drift", "gpu.memory.high", "gpu.dcgm.pass_untrusted")
    assert {res.outcome(r) for r in (*ran, "host.deep_health.failed")} == {"pass"}
    assert res.outcome("host.shm.stale_nccl") == "skipped"
