"""A node's rank is never hidden by grouping: only findings that share one cause fold into a cluster-wide
cause; a fault of its own on every node of a small set ranks every one of them.

The set is DERIVED from the real sample sample_bundles/xid-ecc-3node/bundle, its three p5.48xlarge nodes
(h100-node-04, a one-GPU capture, left out), each with a hardware fault of its own:

- p5-node-01 as built: Xid 48 (double-bit ECC error), 63 and 94 on GPU 3, and ``DRAM Uncorrectable : 2``
  in its nvidia-smi -q (tests/fixtures/dmesg/uce-runbook-xid48-63-94-dbe.txt, bus moved to GPU 3);
- p5-node-02 as built: Xid 45 after the NVLink Xids 149/145 on four GPUs, judged as those NVLink errors
  (tests/fixtures/dmesg/ogkm-1150-xid45-after-149-145-syslog.txt);
- p5-node-03: its kernel log (PCIe AER only, no Xid) replaced by the real
  tests/fixtures/dmesg/gpud-readme-dmesg-ctime-xid13-109.txt with the bus ``cb`` moved to ``18`` (GPU 0 of
  the p5 dump): Xid 13 (SM warp exceptions) and Xid 109 (context-switch timeout).

Each edited file's manifest row is rewritten (bytes, sha256), so no checksum finding joins in.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import ROOT, SAMPLES, fixture_text

NODES = ("p5-node-01", "p5-node-02", "p5-node-03")
XID_109 = fixture_text("dmesg", "gpud-readme-dmesg-ctime-xid13-109.txt").replace(
    "PCI:0000:cb:00", "PCI:0000:18:00"
)


def _write(node: Path, rel: str, kind: str, text: str) -> None:
    """Write (or add) a file of a node bundle and its manifest row, with the right size and sha256."""
    data = text.encode()
    (node / rel).parent.mkdir(parents=True, exist_ok=True)
    (node / rel).write_bytes(data)
    manifest = node / "manifest.tsv"
    rows = [r for r in manifest.read_text().splitlines() if not r.startswith(f"{rel}\t")]
    rows.append(f"{rel}\t{kind}\t0\t0.10\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\t-\t-")
    manifest.write_text("\n".join(rows) + "\n")


def three_sick_nodes(tmp_path: Path) -> Path:
    root = tmp_path / "three"
    for node in NODES:
        shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle" / node, root / node)
    _write(root / "p5-node-03", "cmd/dmesg.txt", "dmesg", XID_109)
    return root


def analyze(root: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / f"{root.name}.json"
    result = CliRunner().invoke(cli, ["--debug", "analyze", str(root), "--json", str(out), "-q"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_each_node_with_its_own_xid_is_ranked(tmp_path: Path) -> None:
    doc = analyze(three_sick_nodes(tmp_path), tmp_path)
    xids = {(f["node"], f["params"]["xid"]) for f in doc["findings"] if f["rule"] == "gpu.xid"}
    assert {x for n, x in xids if n == "p5-node-01"} >= {48}
    assert {x for n, x in xids if n == "p5-node-02"} & {145, 149}  # the NVLink Xids behind its Xid 45
    assert {x for n, x in xids if n == "p5-node-03"} >= {109}
    verdict = doc["verdict"]
    ranked = {r["node"]: r for r in verdict["worst_nodes"]}
    assert set(ranked) == set(NODES), verdict["worst_nodes"]
    for node in NODES:
        assert "gpu.xid" in ranked[node]["rules"]
    assert not [c for c in verdict["cluster_wide"] if c["rule"] == "gpu.xid"]
    # the DBE node with its ECC error and the context-switch timeout node lead the node with warnings only
    assert verdict["worst_nodes"][-1]["node"] == "p5-node-02"


def test_every_fault_rule_ranks_every_node_it_fires_on() -> None:
    """The rules that judge separate devices or separate events are faults; the settings are the ones
    whose value one image, configuration or install gives every node."""
    from analyzer.judge.rules import load_rules

    kinds = {m.RULE.id: m.RULE.cause_kind for m in load_rules(include_plugins=False)}
    faults = {
        "gpu.xid", "gpu.xid.fallen_off_bus", "gpu.sxid", "gpu.ecc.uncorrectable", "gpu.ecc.corrected_rate",
        "gpu.remap.failed", "gpu.remap.pending", "gpu.nvlink.inactive", "gpu.nvlink.count", "gpu.nvlink.slow",
        "gpu.temperature.high", "gpu.pcie.width_degraded", "gpu.pcie.gen_below_peers", "gpu.count.low",
        "gpu.smi.unreachable", "host.pcie.aer", "host.kernel.panic", "host.hung_task", "host.oom",
        "net.efa.port_down", "net.efa.port_errors", "fs.rootvol.full", "fs.data.full",
        "straggler.gpu.sm_clock",
    }  # fmt: skip
    settings = {
        "gpu.persistence.off", "host.cpu.governor", "fs.shm.small", "version.drift",
        "version.cuda_driver.compat", "version.nccl.driver_min",
    }  # fmt: skip
    assert {r for r in faults if kinds[r] != "fault"} == set()
    assert {r for r in settings if kinds[r] != "setting"} == set()


def test_one_setting_on_every_node_still_folds_and_names_its_nodes(tmp_path: Path) -> None:
    """The powersave governor on all three (a real capture) is one configuration: one cluster-wide cause
    that names its three nodes; their Xids still rank them."""
    root = three_sick_nodes(tmp_path)
    governor = fixture_text("cpu-governor", "scaling_governor-cat-8cpus-powersave.txt")
    for node in NODES:
        _write(root / node, "cmd/cpu-governor.txt", "cpu-governor", governor)
    doc = analyze(root, tmp_path)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "findings.schema.json").read_text()))
    verdict = doc["verdict"]
    (entry,) = [c for c in verdict["cluster_wide"] if c["rule"] == "host.cpu.governor"]
    assert entry["node_names"] == list(NODES) and entry["nodes"] == 3
    assert all(n in entry["message"] for n in NODES)
    assert {r["node"] for r in verdict["worst_nodes"]} == set(NODES)
    assert not any("host.cpu.governor" in r["rules"] for r in verdict["worst_nodes"])


def test_the_same_old_driver_on_every_node_folds(tmp_path: Path) -> None:
    """Driver 470 (below NCCL's 525 line) on all three: one install, one cluster-wide cause."""
    root = three_sick_nodes(tmp_path)
    for node in NODES:
        q = (root / node / "cmd" / "nvidia-smi-q.txt").read_text()
        old = "Driver Version                            : 565.57.01"
        assert old in q
        _write(
            root / node,
            "cmd/nvidia-smi-q.txt",
            "nvidia-smi-q",
            q.replace(old, old.replace("565.57.01", "470.182.03")),
        )
    verdict = analyze(root, tmp_path)["verdict"]
    (entry,) = [c for c in verdict["cluster_wide"] if c["rule"] == "version.nccl.driver_min"]
    assert entry["node_names"] == list(NODES)
    assert not any("version.nccl.driver_min" in r["rules"] for r in verdict["worst_nodes"])


def test_a_setting_with_different_values_ranks_its_nodes(tmp_path: Path) -> None:
    """Powersave on two nodes and schedutil (a real amd-pstate capture) on the third are not one value:
    nothing folds, and each node is ranked for its own governor."""
    root = three_sick_nodes(tmp_path)
    powersave = fixture_text("cpu-governor", "scaling_governor-cat-8cpus-powersave.txt")
    schedutil = fixture_text("cpu-governor", "frogging-78-cpupower-amd-pstate-schedutil-boost-inactive.txt")
    for node in NODES:
        _write(
            root / node,
            "cmd/cpu-governor.txt",
            "cpu-governor",
            schedutil if node == "p5-node-03" else powersave,
        )
    doc = analyze(root, tmp_path)
    assert len([f for f in doc["findings"] if f["rule"] == "host.cpu.governor"]) == 3
    verdict = doc["verdict"]
    assert not [c for c in verdict["cluster_wide"] if c["rule"] == "host.cpu.governor"]
    for r in verdict["worst_nodes"]:
        assert "host.cpu.governor" in r["rules"], r
