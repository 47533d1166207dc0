"""Xid / SXid events whose device the kernel log does not give as an address are judged on their node.

The nodes are p5-node-03 of sample_bundles/xid-ecc-3node (its nvidia-smi -q; its kernel log has no Xid)
with the kernel log swapped for a fixture of tests/fixtures/dmesg/ whose Xid lines name no readable
address (see PROVENANCE.md there: "Devices that cannot be read")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.judge.findings import Severity
from tests.conftest import ROOT
from tests.rules.helpers import Result, analyze, fixture, write_node

SAMPLE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-03"
NODE = "p5-node-03"


def bundle(root: Path, dmesg: str | None) -> Path:
    """p5-node-03 of the sample, its kernel log replaced by a dmesg fixture (None: its own)."""
    meta = dict(line.split("=", 1) for line in (SAMPLE / "meta.env").read_text().splitlines() if "=" in line)
    text = (SAMPLE / "cmd" / "dmesg.txt").read_text() if dmesg is None else fixture("dmesg", dmesg)
    files = {
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", (SAMPLE / "cmd" / "nvidia-smi-q.txt").read_text()),
        "cmd/dmesg.txt": ("dmesg", text),
    }
    write_node(root, NODE, files, meta=meta)
    return root


@pytest.fixture(scope="module")
def redacted(tmp_path_factory: pytest.TempPathFactory) -> Result:
    root = tmp_path_factory.mktemp("redacted") / "bundle"
    return analyze(bundle(root, "derived-gpud-readme-xid-redacted-pci.txt"))


def test_the_sample_node_alone_has_no_xid(tmp_path: Path) -> None:
    result = analyze(bundle(tmp_path / "bundle", None))
    assert result.outcome("gpu.xid") == "pass" and result.of("gpu.xid") == []


def test_redacted_xid_is_a_finding_on_the_node_with_the_gpu_unknown(redacted: Result) -> None:
    assert redacted.outcome("gpu.xid") == "fail"
    found = {f.params["xid"]: f for f in redacted.of("gpu.xid")}
    assert set(found) == {13, 109}
    f = found[109]
    assert (f.node, f.gpu, f.severity) == (NODE, None, Severity.CRITICAL)
    assert f.params["pci"] is None and "gpu_index" not in f.params
    assert f.message.startswith(f"{NODE} an unknown GPU (PCI address not in the log) logged Xid 109")
    assert [(e.file, e.line) for e in f.evidence] == [(f"{NODE}/cmd/dmesg.txt", 2)]
    assert "NVRM: Xid (PCI:...): 109" in f.evidence[0].text


def test_redacted_xid79_is_a_fallen_off_bus_finding(tmp_path: Path) -> None:
    result = analyze(bundle(tmp_path / "bundle", "derived-gpud-870-xid79-redacted-pci.txt"))
    [f] = result.of("gpu.xid.fallen_off_bus")
    assert (f.node, f.gpu, f.params["pci"], f.params["xid"]) == (NODE, None, None, 79)
    assert "an unknown GPU (PCI address not in the log) has fallen off the bus" in f.message
    assert [e.line for e in f.evidence] == [1] and "Xid (PCI:xxxx:xx:xx): 79" in f.evidence[0].text
    assert result.of("gpu.xid") == []  # Xid 79 is judged apart


def test_xid_by_gpu_number_names_it_and_resolved_ones_join_their_address(tmp_path: Path) -> None:
    result = analyze(bundle(tmp_path / "bundle", "derived-gpud-500-xid119-by-gpu-number-and-uuid.txt"))
    by = {(f.params["xid"], f.params["pci"], f.params.get("gpu_index")): f for f in result.of("gpu.xid")}
    assert set(by) == {(119, "0000:9b:00.0", None), (119, None, 3), (13, "0000:9b:00.0", None)}
    assert by[(119, "0000:9b:00.0", None)].params["count"] == 2  # Xid (GPU4) resolved to GPU4's address
    number = by[(119, None, 3)]
    assert number.node == NODE and number.gpu is None
    assert number.message.startswith(f"{NODE} GPU3 as the driver numbers it (PCI address not in the log)")
    assert [e.line for e in number.evidence] == [4]
    assert len({f.fingerprint for f in result.of("gpu.xid")}) == 3


def test_redacted_sxid_is_a_finding_on_the_node(tmp_path: Path) -> None:
    result = analyze(bundle(tmp_path / "bundle", "derived-sber-nvswitch3-sxid-redacted-pci.txt"))
    [f] = result.of("gpu.sxid")
    assert (f.node, f.params["pci"], f.params["sxid"], f.params["non_fatal"]) == (NODE, None, 22013, 1)
    assert "NVSwitch (unknown: no PCI address in the log) logged SXid 22013" in f.message
    assert [e.line for e in f.evidence] == [1, 3]


def test_report_says_the_xid_not_ok(tmp_path: Path) -> None:
    root = bundle(tmp_path / "bundle", "derived-gpud-readme-xid-redacted-pci.txt")
    out = CliRunner().invoke(cli, ["analyze", str(root), "--color", "never"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "[OK] no Xid" not in out.output and "no Xid in the kernel log" not in out.output
    assert f"{NODE} an unknown GPU (PCI address not in the log) logged Xid 109" in out.output
    assert "NVRM: Xid (PCI:...): 109" in out.output
