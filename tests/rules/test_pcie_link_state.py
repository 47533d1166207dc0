"""PCIe link state from ``lspci -vv`` (``LnkCap`` / ``LnkSta``): a GPU's width and a network adapter's
width and speed, each against the device's own maximum (gpu.pcie.width_degraded, net.pcie.link_degraded).

The listing is DERIVED (tests/fixtures/lspci/PROVENANCE.md): the HGX B200 board of NVIDIA's Fabric
Manager user guide with the two link lines ``lspci -vv`` prints under each device; one ConnectX-7
function at Gen4 of its Gen5, one GPU at x8 of its x16, one GPU whose speed fell to 2.5 GT/s at idle.
The same listing is then the ``lspci -nnDvvvxxxx`` section of a real nvidia-bug-report (the tool_man
excerpt), with the configuration-space dump lines that section holds under each device.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.intake.foreign import nvidia_bug_report as nbr
from tests.rules.helpers import analyze, fixture, write_node

LINKS = "derived-fm-guide-hgx-b200-vv-links-gpu-x8-cx7-gen4.txt"
HEALTHY = "derived-fm-guide-hgx-h100-at-jp-simulator-addresses-vv-links.txt"
REPORT = (
    Path(__file__).parents[1] / "fixtures" / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
)


def test_a_gpu_narrower_than_its_maximum_and_an_adapter_below_its_speed(tmp_path: Path) -> None:
    write_node(tmp_path / "c", "b200", {"cmd/lspci.txt": ("lspci", fixture("lspci", LINKS))})
    write_node(tmp_path / "c", "h100", {"cmd/lspci.txt": ("lspci", fixture("lspci", HEALTHY))})
    res = analyze(tmp_path / "c")
    (gpu,) = res.of("gpu.pcie.width_degraded")
    assert gpu.node == "b200" and gpu.params["pci"] == "0000:43:00.0"
    assert (gpu.params["width_current"], gpu.params["width_max"], gpu.params["source"]) == (8, 16, "lspci")
    assert gpu.evidence[0].file == "b200/cmd/lspci.txt" and gpu.evidence[0].line == 19  # its LnkSta line
    (nic,) = res.of("net.pcie.link_degraded")
    assert nic.node == "b200" and nic.params["pci"] == "0000:05:00.0"
    assert (nic.params["speed_gts"], nic.params["speed_max_gts"]) == (16.0, 32.0)
    assert "16GT/s x16, its maximum is 32GT/s x16" in nic.message
    # the GPU at 2.5 GT/s is at idle: its speed is never judged against its own maximum
    assert all(f.params["pci"] != "0000:1b:00.0" for f in res.findings if f.rule.startswith(("gpu.", "net.")))
    # the H100 node's links are all at their maximum: checked by both rules, no finding
    for rule in ("gpu.pcie.width_degraded", "net.pcie.link_degraded"):
        assert "h100" in res.outcomes[rule].nodes_checked, rule
    assert res.outcome("net.pcie.link_degraded") == "fail"


def test_lspci_without_link_lines_is_not_examined_for_the_link(tmp_path: Path) -> None:
    plain = fixture("lspci", "nvidia-fm-guide-hgx-b200-grep-nvidia-mella.txt")
    write_node(tmp_path / "c", "plain", {"cmd/lspci.txt": ("lspci", plain)})
    res = analyze(tmp_path / "c")
    assert res.outcome("net.pcie.link_degraded") == "skipped"
    assert "plain" not in res.outcomes["gpu.pcie.width_degraded"].nodes_checked


def _config_space(address: str) -> str:
    """The lines ``lspci -xxxx`` prints for a device's configuration space: 256 of 16 bytes (zeros past
    the header here; the parser skips every such line)."""
    return "".join(f"{i * 16:03x}: " + " ".join(["00"] * 16) + "\n" for i in range(256))


def test_the_bug_reports_lspci_section_is_read_with_its_dump_lines(tmp_path: Path) -> None:
    sep = "_" * 44 + "\n"
    section = ["/usr/bin/lspci -nnDvvvxxxx\n", "\n"]
    for line in fixture("lspci", LINKS).splitlines(keepends=True)[1:]:
        section.append(line)
        if line.startswith("\t\tLnkSta"):
            section.append(_config_space(line))
    report = tmp_path / "nvidia-bug-report.log"
    report.write_text(REPORT.read_text(encoding="utf-8") + sep + "\n" + "".join(section), encoding="utf-8")
    content = nbr.read_text(report.read_text(encoding="utf-8"), origin=report.name)
    assert not isinstance(content, str)
    (lspci,) = [o for o in content.outputs if o.kind == "lspci"]
    assert lspci.command == "/usr/bin/lspci -nnDvvvxxxx"
    res = analyze(tmp_path)
    (gpu,) = res.of("gpu.pcie.width_degraded")
    assert gpu.params["pci"] == "0000:43:00.0" and gpu.evidence[0].file.endswith("/nvidia-bug-report.log")
    assert report.read_text(encoding="utf-8").splitlines()[gpu.evidence[0].line - 1].startswith("\t\tLnkSta")
    (nic,) = res.of("net.pcie.link_degraded")
    assert nic.params["pci"] == "0000:05:00.0"
    problems = res.con.execute("SELECT count(*) FROM parse_problems WHERE kind = 'lspci'").fetchone()
    assert problems == (0,)  # the 4096 dump lines of each device are no lines not understood
