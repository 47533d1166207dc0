"""Sources that disagree are evidence: GPU counts of the instance type, lspci, nvidia-smi and DCGM; the
driver's GPU Recovery Action on a node that otherwise reads healthy; Fabric Manager down under GPUs that
read healthy; a node's Xid count far above its same-type peers in the window their bundles share.

Built from real captures: the 8xH100 ``nvidia-smi -q`` dump (jp-simulator, driver 565) and the lspci
listing of an HGX H100 board at that dump's bus addresses (tests/fixtures/lspci, derived from NVIDIA's
Fabric Manager user guide), the nvidia-smi table and DCGM run of NVIDIA/nccl-tests#264 (eight H100s that
read healthy while Fabric Manager was down), Fabric Manager's systemctl status captures, and kernel logs.
Each fault is one edit of one real output (which GPU block left out, which value changed); each faulty node
sits among healthy peers built from the same captures, and the verdict ranks it and no peer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.judge.findings import Finding, Severity
from analyzer.judge.settings import Settings, load_settings
from analyzer.model.verdict import compute
from tests.rules.helpers import Result, analyze, fixture, write_node

P5 = {"instance_type": "p5.48xlarge"}
Q = "jp-simulator-8xh100-565-complete.txt"
LSPCI = "derived-fm-guide-hgx-h100-at-jp-simulator-addresses.txt"
GPU_5D = "5d:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"
RECOVERY = "GPU Recovery Action                   : None"
FM_RUNNING = "sber-590-running-clean-pager-cut.txt"
FM_FAILED = "devrel-580-failed-signal-kill-script-redacted.txt"
SMI_264 = "nccl-tests-264-560-8xh100-healthy-cuda-not-ready.txt"
DCGM_264 = "nccl-tests-264-338-r3-8xh100-cuinit-not-ready.txt"

Files = dict[str, tuple[str, str]]


def q(drop: str | None = None, gpu: int | None = None, edit: dict[str, str] | None = None) -> Files:
    """The 8xH100 -q dump; ``drop`` leaves out the GPU block of that bus id ("5D"), ``edit`` changes values
    inside GPU ``gpu``'s block only."""
    head, *blocks = fixture("nvidia-smi-q", Q).split("\nGPU 00000000:")
    if drop is not None:
        kept = [b for b in blocks if not b.startswith(f"{drop}:00.0")]
        assert len(kept) == len(blocks) - 1, drop
        blocks = kept
    if gpu is not None:
        for old, new in (edit or {}).items():
            assert old in blocks[gpu], old
            blocks[gpu] = blocks[gpu].replace(old, new, 1)
    return {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", "\nGPU 00000000:".join([head, *blocks]))}


def lspci(name: str = LSPCI, edit: dict[str, str] | None = None) -> Files:
    return {"cmd/lspci.txt": ("lspci", fixture("lspci", name, edit))}


def fm(name: str) -> Files:
    return {"cmd/fabricmanager.txt": ("fabricmanager", fixture("fabricmanager", name))}


def of(res: Result, rule: str, node: str | None) -> list[Finding]:
    return [f for f in res.of(rule) if f.node == node]


def ranked(res: Result, nodes: list[str], instance_type: str = "p5.48xlarge") -> set[str]:
    v = compute(
        res.findings,
        list(res.outcomes.values()),
        [{"node": n, "instance_type": instance_type} for n in nodes],
    )
    return {r.node for r in v.worst_nodes}


# --- GPU counts, recovery action, Fabric Manager: one cluster, each fault on one node ---------------------

HEALTHY = {**q(), **lspci(), **fm(FM_RUNNING)}
FAULTS: dict[str, Files] = {
    # GPU 5d on the PCI bus, missing from nvidia-smi: the driver lost it
    "lost": {**q(drop="5D"), **lspci(), **fm(FM_RUNNING)},
    # missing from nvidia-smi and from the bus
    "gone": {**q(drop="5D"), **lspci(edit={GPU_5D: ""}), **fm(FM_RUNNING)},
    # on the bus bound to vfio-pci (lspci -k), so nvidia-smi cannot list it
    "vfio": {
        **q(drop="5D"),
        **lspci(edit={GPU_5D: GPU_5D + "\tKernel driver in use: vfio-pci\n"}),
        **fm(FM_RUNNING),
    },
    # the bus reads GPU 5d as rev ff: no longer answering
    "revff": {**q(drop="5D"), **lspci(edit={GPU_5D: GPU_5D.replace("rev a1", "rev ff")}), **fm(FM_RUNNING)},
    # the driver's recovery action, every other reading healthy: the spellings nvidia-smi prints
    "reboot": {**q(gpu=2, edit={RECOVERY: RECOVERY.replace("None", "Reboot")}), **lspci(), **fm(FM_RUNNING)},
    "reset": {**q(gpu=5, edit={RECOVERY: RECOVERY.replace("None", "Reset")}), **lspci(), **fm(FM_RUNNING)},
    "drain": {
        **q(gpu=0, edit={RECOVERY: RECOVERY.replace("None", "Drain P2P")}),
        **lspci(),
        **fm(FM_RUNNING),
    },
    # nccl-tests#264: eight H100s read healthy in nvidia-smi, DCGM fails cuInit; Fabric Manager down
    "fmdown": {
        "cmd/nvidia-smi.txt": ("nvidia-smi", fixture("nvidia-smi", SMI_264)),
        "cmd/dcgmi-diag.txt": ("dcgmi-diag", fixture("dcgmi-diag", DCGM_264)),
        **fm(FM_FAILED),
    },
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Result:
    root = tmp_path_factory.mktemp("disagree") / "c"
    for i in range(4):
        write_node(root, f"ok-{i}", HEALTHY, meta=P5)
    # the guide's own listing: 8 GPUs and 4 NVSwitches at other addresses than the dump's (counts agree)
    write_node(root, "ok-guide", {**q(), **lspci("nvidia-fm-guide-hgx-h100-grep-nvidia.txt")}, meta=P5)
    for name, files in FAULTS.items():
        write_node(root, name, files, meta=P5)
    return analyze(root)


def test_healthy_real_inputs_give_no_finding(cluster: Result) -> None:
    for rule in ("gpu.count.low", "gpu.recovery_action.required", "gpu.fabric.state"):
        assert not [f for f in cluster.of(rule) if f.node and f.node.startswith("ok-")], rule
        assert {f"ok-{i}" for i in range(4)} | {"ok-guide"} <= set(cluster.outcomes[rule].nodes_checked), rule


def test_a_gpu_on_the_bus_missing_from_nvidia_smi(cluster: Result) -> None:
    [f] = of(cluster, "gpu.count.low", "lost")
    assert f.severity == Severity.CRITICAL
    assert f.params["counts"] == {"instance type": 8, "lspci": 8, "nvidia-smi": 7}
    assert f.params["missing_from_smi"] == ["0000:5d:00.0"]
    assert "on the PCI bus but missing from nvidia-smi (0000:5d:00.0)" in f.message
    assert f.route.action.startswith("reboot the node")
    assert {e.file.rsplit("/", 1)[-1] for e in f.evidence} >= {"nvidia-smi-q.txt", "lspci.txt", "meta.env"}
    assert any(e.text == GPU_5D.strip() for e in f.evidence)  # the bus line of the GPU nvidia-smi lost


def test_a_gpu_gone_from_the_bus(cluster: Result) -> None:
    [f] = of(cluster, "gpu.count.low", "gone")
    assert f.severity == Severity.CRITICAL
    assert f.params["counts"] == {"instance type": 8, "lspci": 7, "nvidia-smi": 7}
    assert "missing from the PCI bus: gone from the bus, a hardware fault" in f.message
    assert f.params["missing_from_smi"] == [] and f.route.action == "drain and replace"


def test_the_bus_names_the_driver_and_a_device_that_no_longer_answers(cluster: Result) -> None:
    [vfio] = of(cluster, "gpu.count.low", "vfio")
    assert "0000:5d:00.0 [driver vfio-pci]): bound to vfio-pci, not to the nvidia driver" in vfio.message
    assert vfio.severity == Severity.CRITICAL and vfio.route.action.startswith("bind the GPU to the nvidia")
    [dead] = of(cluster, "gpu.count.low", "revff")
    assert dead.params["not_answering"] == ["0000:5d:00.0"] and "rev ff" in dead.message


def test_recovery_action_per_value(cluster: Result) -> None:
    [reboot] = of(cluster, "gpu.recovery_action.required", "reboot")
    assert reboot.severity == Severity.CRITICAL and reboot.gpu == 2
    assert reboot.params["action"] == "node reboot" and reboot.route.action == "reboot the node"
    assert reboot.evidence[0].text and reboot.evidence[0].text.strip().startswith("GPU Recovery Action")
    [reset] = of(cluster, "gpu.recovery_action.required", "reset")
    assert reset.params["action"] == "gpu reset" and reset.gpu == 5 and "nvidia-smi -r" in reset.route.action
    [drain] = of(cluster, "gpu.recovery_action.required", "drain")
    assert drain.params["action"] == "drain p2p" and drain.severity == Severity.CRITICAL
    # the node with an nvidia-smi table (no -q) has no recovery action to read: not examined, never passed
    assert "fmdown" in cluster.outcomes["gpu.recovery_action.required"].nodes_without_data


def test_fabric_manager_down_under_gpus_that_read_healthy(cluster: Result) -> None:
    [f] = of(cluster, "gpu.fabric.state", "fmdown")
    assert f.severity == Severity.CRITICAL and f.params["nvswitch_type"]
    assert f.params["gpus_read_healthy"] == 8 and not f.params["gpus_report_fabric"]
    assert "cannot be trusted for multi-GPU work" in f.message
    # the same node's counts agree: 8 in nvidia-smi, 8 in DCGM, a p5 has 8
    assert not of(cluster, "gpu.count.low", "fmdown")
    assert cluster.outcomes["gpu.count.low"].nodes_checked.count("fmdown") == 1


def test_each_disagreement_ranks_its_node_among_healthy_peers(cluster: Result) -> None:
    nodes = [f"ok-{i}" for i in range(4)] + ["ok-guide", *FAULTS]
    assert ranked(cluster, nodes) == set(FAULTS)


def test_dcgm_testing_fewer_gpus_is_said_as_information(tmp_path: Path) -> None:
    """DCGM's run of a 1-GPU host beside the 8xH100 dump: DCGM tested fewer GPUs than nvidia-smi lists."""
    one = {
        "cmd/dcgmi-diag.txt": ("dcgmi-diag", fixture("dcgmi-diag", "dcgm-124-442-r2-1gpu-pass-complete.txt"))
    }
    root = tmp_path / "c"
    write_node(root, "dcgm", {**q(), **lspci(), **one}, meta=P5)
    res = analyze(root)
    [f] = res.of("gpu.count.low")
    assert f.severity == Severity.INFO and f.params["counts"]["DCGM"] == 1
    assert "DCGM detected 1: its diagnostic did not test every GPU" in f.message
    assert ranked(res, ["dcgm"]) == set()


def test_bus_listings_alone_count_gpus_not_nvswitches(tmp_path: Path) -> None:
    """The HGX A100 and B200 listings of NVIDIA's guide: 8 GPUs each (6 NVSwitch bridges, 4 ConnectX-7
    functions left out), as p4d and p6-b200 have; 4 GPUs on the bus of a p5 is a hardware fault."""
    root = tmp_path / "c"
    write_node(
        root,
        "a100",
        lspci("nvidia-fm-guide-hgx-a100-grep-nvidia.txt"),
        meta={"instance_type": "p4d.24xlarge"},
    )
    write_node(root, "b200", lspci("nvidia-fm-guide-hgx-b200-grep-nvidia-mella.txt"),
               meta={"instance_type": "p6-b200.48xlarge"})  # fmt: skip
    write_node(root, "l40s", lspci("nvsentinel-684-l40s-grep-nvidia-hash-prompt.txt"), meta=P5)
    res = analyze(root)
    assert {"a100", "b200", "l40s"} <= set(res.outcomes["gpu.count.low"].nodes_checked)
    [f] = res.of("gpu.count.low")
    assert f.node == "l40s" and f.severity == Severity.CRITICAL
    assert f.params["counts"] == {"instance type": 8, "lspci": 4}


# --- Xid counts against same-type peers ------------------------------------------------------------------

UPTIME = {"350735.47": "500000.00"}  # up 5.8 days: the runbook's Xids at 430,954 s fall in this boot
XID_LOG = "uce-runbook-xid48-63-94-dbe.txt"  # 3 Xids (48, 63, 94) on one GPU, seconds since boot
CLEAN_LOG = "returnn-1486-reltime-aer-no-xid.txt"


def node_files(log: str, edit_uptime: dict[str, str] | None = UPTIME) -> Files:
    return {
        "cmd/dmesg.txt": ("dmesg", fixture("dmesg", log)),
        "cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt", edit_uptime)),
    }


def xid_settings(min_events: int) -> Settings:
    """The thresholds as a site would set them with --config: fewer events make a count."""
    settings = load_settings()
    rule = settings.sections["straggler.gpu.xid_count"]
    rule["min_events"] = {**rule["min_events"], "value": min_events}
    return settings


def xid_cluster(tmp_path: Path, logs: dict[str, str], min_events: int | None = None) -> Result:
    root = tmp_path / "c"
    for name, log in logs.items():
        write_node(root, name, node_files(log), meta=P5)
    return analyze(root, xid_settings(min_events) if min_events else None)


def test_a_lone_node_far_above_its_peers(tmp_path: Path) -> None:
    logs = {"xid": XID_LOG, **{f"ok-{i}": CLEAN_LOG for i in range(4)}}
    res = xid_cluster(tmp_path, logs, min_events=3)
    [f] = res.of("straggler.gpu.xid_count")
    assert f.node == "xid" and f.severity == Severity.WARNING
    assert f.params["xid_events"] == 3 and f.params["peer_median"] == 0 and f.params["peer_nodes"] == 4
    assert f.params["codes"] == {"48": 1, "63": 1, "94": 1}
    assert "3 Xid events in the window its 5 p5.48xlarge nodes share" in f.message
    assert set(res.outcomes["straggler.gpu.xid_count"].nodes_checked) == set(logs)
    assert "xid" in ranked(res, list(logs)) and not ranked(res, list(logs)) & {f"ok-{i}" for i in range(4)}


def test_below_the_least_count_no_node_is_blamed(tmp_path: Path) -> None:
    """The default min_events (10): three Xids stay gpu.xid's to judge one by one."""
    logs = {"xid": XID_LOG, **{f"ok-{i}": CLEAN_LOG for i in range(4)}}
    res = xid_cluster(tmp_path, logs)
    assert res.of("straggler.gpu.xid_count") == []
    assert res.outcome("straggler.gpu.xid_count") == "pass"


def test_churn_on_every_node_is_the_jobs(tmp_path: Path) -> None:
    logs = {f"n-{i}": XID_LOG for i in range(5)}
    res = xid_cluster(tmp_path, logs, min_events=3)
    found = res.of("straggler.gpu.xid_count")
    assert [(f.node, f.severity) for f in found] == [(None, Severity.INFO)]
    assert "the job's, not one node's" in found[0].message and found[0].params["median"] == 3


def test_too_few_peers_is_not_examined(tmp_path: Path) -> None:
    res = xid_cluster(tmp_path, {"xid": XID_LOG, "ok-0": CLEAN_LOG, "ok-1": CLEAN_LOG}, min_events=3)
    o = res.outcomes["straggler.gpu.xid_count"]
    assert res.outcome("straggler.gpu.xid_count") == "skipped" and "too few peers: 3 of 4" in (o.reason or "")
    assert o.nodes_checked == []


def test_xids_without_a_time_are_not_placed_in_the_window(tmp_path: Path) -> None:
    """A syslog excerpt without a year (open-gpu-kernel-modules#1150): its Xids cannot be placed."""
    logs = {"noyear": "ogkm-1150-xid45-after-149-145-syslog.txt", **{f"ok-{i}": CLEAN_LOG for i in range(4)}}
    res = xid_cluster(tmp_path, logs, min_events=3)
    o = res.outcomes["straggler.gpu.xid_count"]
    assert "noyear" in o.nodes_without_data and "noyear" not in o.nodes_checked
    assert res.of("straggler.gpu.xid_count") == []
