"""One folder holding every input type at once gives one report, each fault on its own node.

The folder holds, side by side: our own 4-node sample cluster (sample_bundles/xid-ecc-3node), a
HyperPod issue report folder (3 instances: Xid 79 on one, one whose collection failed), a sos report
(Xid 79 in its dmesg), an EKS log collector tarball (Xid 13/109 in its dmesg) and per-node folders of
nvidia-bug-reports from two hosts (one with an Xid 79 line planted in its dmesg section).  The inputs
are built by the tests of each reader, as their scripts lay them out, from real outputs in
tests/fixtures (see those tests' docstrings).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import tests.test_foreign_eks_log_collector as eks_case
import tests.test_foreign_hyperpod_issue_report as hyperpod_case
import tests.test_foreign_sos_report as sos_case
from tests.analyze_json import analyze_json

ROOT = Path(__file__).parent.parent
BUG_REPORT = ROOT / "tests" / "fixtures" / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
BUG_HOST = "sdu-dpai-turing-1"
XID_79 = "[  600.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"


def _bug_reports(folder: Path) -> None:
    text = BUG_REPORT.read_text()
    at = text.index("\n", text.index("dmesg:")) + 1
    for host, planted in (("dgx-a", True), ("dgx-b", False)):
        (folder / host).mkdir(parents=True)
        body = text[:at] + XID_79 + text[at:] if planted else text
        (folder / host / "nvidia-bug-report.log").write_text(body.replace(BUG_HOST, host))


def _mixed(tmp_path: Path) -> Path:
    mixed = tmp_path / "case-1234"
    mixed.mkdir()
    shutil.copytree(ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle", mixed / "p5-cluster")
    report = hyperpod_case._report(tmp_path / "hp")
    shutil.move(report, mixed / report.name)
    sos_case._tarball(mixed / f"{sos_case.TOP}.tar.xz", sos_case._tree())
    eks_case._tarball(mixed / eks_case.NAME, eks_case._layout())
    _bug_reports(mixed / "bug-reports")
    return mixed


def _analyze(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs, jobs=2)


def _on(report: dict[str, Any], prefix: str) -> set[str]:
    return {f["node"] for f in report["findings"] if f["rule"].startswith(prefix)}


def test_every_input_type_in_one_folder_gives_one_report(tmp_path: Path) -> None:
    code, report, output = _analyze(tmp_path, _mixed(tmp_path))
    assert code == 0, output
    nodes = {n["node"] for n in report["nodes"]}
    sick, well, failed = hyperpod_case.SICK[2], hyperpod_case.WELL[2], hyperpod_case.FAILED[1]
    eks_host = eks_case.HOST
    assert {"p5-node-01", "p5-node-02", "p5-node-03", "h100-node-04"} <= nodes, "our own bundles"
    assert {sick, well, failed} <= nodes, "the HyperPod report's instances, by hostname or instance id"
    assert {sos_case.HOST, eks_host, "dgx-a", "dgx-b"} <= nodes, "sos, EKS and the bug reports, by host"
    assert len(nodes) == 11, sorted(nodes)

    fallen = _on(report, "gpu.xid.fallen_off_bus")
    assert fallen == {sick, sos_case.HOST, "dgx-a"}, fallen
    xids = _on(report, "gpu.xid")
    assert {"p5-node-01", "h100-node-04", eks_host} <= xids and "dgx-b" not in xids and well not in xids
    assert "p5-node-01" in _on(report, "gpu.ecc.uncorrectable"), "our own bundle's faults are still found"

    # what each input type cannot carry is not examined on its nodes, with why; never a pass
    reasons: dict[str, set[str]] = {}
    for row in report["verdict"]["not_examined"]:
        reasons.setdefault(row["node"], set()).add(row.get("reason", ""))
    assert any("not carried by nvidia-bug-report" in r for r in reasons["dgx-b"])
    assert any("not carried by the sos report" in r for r in reasons[sos_case.HOST])
    assert any("not carried by the EKS log collector" in r for r in reasons[eks_host])
    assert any("not carried by the HyperPod issue report" in r for r in reasons[well])
    assert any(hyperpod_case.ERROR in r for r in reasons[failed]), "the failed instance, with its error"
    assert report["verdict"]["status"] != "pass"

    # evidence names the user's own files: the member of the archive, the line there
    def files(node: str, rule: str) -> set[str]:
        return {
            e["file"]
            for f in report["findings"]
            if (f["node"], f["rule"]) == (node, rule)
            for e in f["evidence"]
        }

    assert all(".tar.xz!sos_commands/kernel/" in f for f in files(sos_case.HOST, "gpu.xid.fallen_off_bus"))
    assert all("instances/" in f and ".tar.gz!" in f for f in files(sick, "gpu.xid.fallen_off_bus"))
    assert all(f.startswith(f"{eks_host}/{eks_case.NAME}!kernel/") for f in files(eks_host, "gpu.xid"))
    # a report inside an archive is cited at its own line: the EKS host's temperature comes from the
    # bug report in gpu/, line for line as the decoded report numbers it
    (hot,) = [f for f in report["findings"] if (f["node"], f["rule"]) == (eks_host, "gpu.temperature.high")]
    cited = hot["evidence"][0]
    assert cited["file"] == f"{eks_host}/{eks_case.NAME}!gpu/nvidia-bug-report.log.gz"
    assert BUG_REPORT.read_text().splitlines()[cited["line"] - 1].strip() == cited["text"].strip()
