"""host.k8s.condition on real ``kubectl describe node`` outputs (tests/fixtures/placement/PROVENANCE.md):

- FULL: the full describe of an EKS p4d.24xlarge (Ready True, no pressure): passes;
- STOPPED: kubectl 1.5's describe of a node whose kubelet stopped posting its status (every condition
  Unknown, tab-aligned): Ready Unknown is one critical finding, the Unknown pressures none;
- the p4d describe with one row edited (a value changed, named where it is done) for the pressures and
  a node agent's ``...Ready`` condition; and two nodes in one output.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Severity
from analyzer.judge.settings import load_settings
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

RULE = "host.k8s.condition"
FULL = "training-on-eks-p4d-describe-node-full-prompt-fence-cut-tail.txt"
STOPPED = "vmware-k8s-describe-node-ready-unknown-tabs-conditions.txt"
DISK_ROW = "  DiskPressure     False   Thu, 18 Dec 2025 01:29:49 +0000   Thu, 18 Dec 2025 01:28:46 +0000   KubeletHasNoDiskPressure     kubelet has no disk pressure"  # noqa: E501


def run(tmp_path: Path, placements: dict[str, str], meta: dict[str, dict[str, str]] | None = None) -> Result:
    root = tmp_path / "bundle"
    root.mkdir(parents=True)
    for name, text in placements.items():
        write_node(root, name, {"cmd/placement.txt": ("placement", text)}, meta=(meta or {}).get(name))
    con = connect(None)
    load(con, [root], tmp_path / "work", Limits(), jobs=1)
    module = importlib.import_module("analyzer.judge.rules.host.k8s_condition")
    findings, outcomes = run_rules(con, [module], load_settings())
    return Result(findings, {o.rule: o for o in outcomes}, con)


def test_a_healthy_eks_gpu_node_passes_and_a_stopped_kubelet_is_critical(tmp_path: Path) -> None:
    r = run(tmp_path, {"p4d": fixture("placement", FULL), "node1": fixture("placement", STOPPED)})
    assert r.outcome(RULE) == "fail"
    assert sorted(r.outcomes[RULE].nodes_checked) == ["node1", "p4d"]
    (f,) = r.of(RULE)
    assert (f.node, f.severity, f.params["condition"], f.params["status"]) == (
        "node1", Severity.CRITICAL, "Ready", "Unknown",
    )  # fmt: skip
    assert f.params["reason"] == "NodeStatusUnknown"
    assert "Kubelet stopped posting node status." in f.message
    assert f.evidence[0].file == "node1/cmd/placement.txt" and f.evidence[0].line == 19


def test_pressure_and_an_agents_ready_condition(tmp_path: Path) -> None:
    # DiskPressure True with the kubelet's own words for it, and the EKS node monitoring agent's GPU
    # condition False (a row added after Ready, in the table's layout)
    sick = fixture(
        "placement",
        FULL,
        {
            DISK_ROW: DISK_ROW.replace("False  ", "True   ")
            .replace("KubeletHasNoDiskPressure", "KubeletHasDiskPressure  ")
            .replace("kubelet has no disk pressure", "kubelet has disk pressure"),
            "kubelet is posting ready status\n": "kubelet is posting ready status\n"
            "  AcceleratedHardwareReady  False   Thu, 18 Dec 2025 01:29:49 +0000   Thu, 18 Dec 2025 01:29:17 +0000"
            "   DCGMError   failed to initialize DCGM\n",
        },
    )
    r = run(tmp_path, {"p4d": sick})
    got = {(f.params["condition"], f.severity, f.route.owner) for f in r.of(RULE)}
    assert got == {
        ("DiskPressure", Severity.WARNING, "filesystem-capacity"),
        ("AcceleratedHardwareReady", Severity.CRITICAL, "node-hardware"),
    }


def test_several_nodes_in_one_output_are_judged_on_the_node_they_name(tmp_path: Path) -> None:
    both = fixture("placement", FULL) + "\n" + fixture("placement", STOPPED)
    meta = {"ip-10-0-5-152": {"hostname": "ip-10-0-5-152"}, "other": {"hostname": "ip-10-9-9-9"}}
    r = run(tmp_path, {"ip-10-0-5-152": both, "other": both}, meta)
    assert r.of(RULE) == []  # the p4d's own conditions are healthy: node1's Ready Unknown is not its
    assert r.outcomes[RULE].nodes_checked == ["ip-10-0-5-152"]
    assert "other" in r.outcomes[RULE].nodes_without_data
