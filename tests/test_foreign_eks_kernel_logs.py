"""The EKS log collector's kernel logs beside dmesg, and a GPU node whose NVIDIA driver is not there.

Tarballs are laid out as ``eks-log-collector.sh`` lays them out (tests/test_foreign_eks_log_collector.py
says how).  ``var_log/messages`` is the ``/var/log/kern.log`` part of the real tool_man nvidia-bug-report
(tests/fixtures/nvidia-bug-report/PROVENANCE.md): real rsyslog kernel lines of four boots, the first of
them with Xid 13, 45 and 62.  The driverless node's ``kernel/dmesg.current`` is the real ``dmesg | grep
pci`` of an RTX A2000 before its driver was installed (tests/fixtures/eks-log-collector/PROVENANCE.md).
"""

from __future__ import annotations

from pathlib import Path

from analyzer.intake.foreign import eks_log_collector as eks
from analyzer.intake.foreign import nvidia_bug_report as nbr
from tests.analyze_json import analyze_json
from tests.test_foreign_eks_log_collector import NAME, _layout, _store, _tarball

FIXTURES = Path(__file__).parent / "fixtures"
WHOLE = FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--kernel-scan-whole.log"
NO_DRIVER = FIXTURES / "eks-log-collector" / "geerlingguy-rpi-509-dmesg-grep-pci-a2000-before-driver.txt"
HOST = "ip-10-0-1-23.ec2.internal"


def _kern_log() -> bytes:
    (part,) = [
        p
        for b in nbr.split_blocks(WHOLE.read_text(encoding="utf-8"))
        for p in nbr.kernel_scan(b)
        if p.boot is None
    ]
    return part.text.encode()


def test_messages_gives_the_boots_before_the_running_one(tmp_path: Path) -> None:
    files = _layout()
    files["var_log/messages"] = _kern_log()
    files.pop("gpu/nvidia-bug-report.log.gz")  # its own kernel-log scan would give these boots too
    tarball = _tarball(tmp_path / NAME, files)
    summary, con, _ = _store(tmp_path, tarball)
    boots = con.execute(
        "SELECT boot, count(*) FILTER (WHERE xid = 45), count(*) FILTER (WHERE xid IS NOT NULL) "
        "FROM kernel_event GROUP BY 1 ORDER BY 1"
    ).fetchall()
    # messages' three boots before its last one; the running boot's events are dmesg.current's own
    assert [b for b, _, _ in boots] == [-3, -2, -1, 0], boots
    assert boots[0][1:] == (29, 194)
    files_read = con.execute("SELECT path, source_file FROM file WHERE kind = 'dmesg' ORDER BY 1").fetchall()
    assert [Path(p).name for p, _ in files_read] == [
        "dmesg-boot-1-messages.txt",
        "dmesg-boot-2-messages.txt",
        "dmesg-boot-3-messages.txt",
        "dmesg.txt",
    ]
    assert files_read[2][1] == f"{HOST}/{NAME}!var_log/messages"
    line = con.execute("SELECT min(line) FROM kernel_event WHERE boot = -3 AND xid = 45").fetchone()[0]
    assert (
        _kern_log()
        .decode()
        .splitlines()[line - 1]
        .endswith("NVRM: Xid (PCI:0000:03:00): 45, pid=10839, Ch 00000000")
    )

    code, report, output = analyze_json(tmp_path / "a", tarball)
    assert code in (0, 1), output
    (xid45,) = [f for f in report["findings"] if f["rule"] == "gpu.xid" and f["params"].get("xid") == 45]
    assert "in a previous boot (boot -3)" in xid45["message"]
    assert xid45["evidence"][0]["file"] == f"{HOST}/{NAME}!var_log/messages"


def test_dmesg_saved_at_boot_is_read_only_when_it_is_this_boots(tmp_path: Path) -> None:
    files = _layout()
    current = files["kernel/dmesg.current"].decode()
    files["kernel/dmesg.boot"] = "".join(current.splitlines(keepends=True)[:3]).encode()  # the same boot
    layout = eks.NodeLayout("n", eks.SOURCE, NAME)
    assert eks.kernel_logs(layout, files, NAME) == [] and layout.has("dmesg")
    files["kernel/dmesg.boot"] = NO_DRIVER.read_bytes()  # another machine's: no line in common
    layout = eks.NodeLayout("n", eks.SOURCE, NAME)
    (said,) = eks.kernel_logs(layout, files, NAME)
    assert "is not read: no line of it is in kernel/dmesg.current" in said and not layout.has("dmesg")


def test_a_gpu_on_the_bus_without_a_driver_is_a_finding(tmp_path: Path) -> None:
    files = _layout()
    files.pop("gpu/nvidia-bug-report.log.gz")  # the collector found no nvidia-bug-report.sh
    files.pop("kernel/dmesg.human.current")
    files["kernel/dmesg.current"] = NO_DRIVER.read_bytes()
    tarball = _tarball(tmp_path / NAME, files)
    code, report, output = analyze_json(tmp_path, tarball)
    assert code in (0, 1), output
    (finding,) = [f for f in report["findings"] if f["rule"] == "gpu.smi.unreachable"]
    assert finding["node"] == HOST and finding["params"]["exit_codes"] == [9]
    assert finding["severity"] == "warning"  # the collector names no instance type
    reasons = {r["what"].split(" ")[0] for r in report["verdict"]["not_examined"] if r["node"] == HOST}
    assert "nvidia-smi-q" not in reasons
    # no line of the tarball says it: the evidence is the conversion's record of why (the GPU the kernel
    # lists, no NVRM line, no bug report), with exit 9, NVML's 'driver not loaded'
    (evidence,) = finding["evidence"]
    assert "0000:01:00.0" in evidence["text"] and "no NVRM line" in evidence["text"]


def test_a_node_whose_kernel_shows_the_driver_and_no_bug_report_is_not_examined(tmp_path: Path) -> None:
    files = _layout()
    files.pop("gpu/nvidia-bug-report.log.gz")  # dmesg.current shows NVRM lines: the driver is loaded
    tarball = _tarball(tmp_path / NAME, files)
    code, report, output = analyze_json(tmp_path, tarball)
    assert code in (0, 1), output
    assert not [f for f in report["findings"] if f["rule"] == "gpu.smi.unreachable"]
    reasons = {
        r["what"].split(" ")[0]: r.get("reason")
        for r in report["verdict"]["not_examined"]
        if r["node"] == HOST
    }
    assert reasons["nvidia-smi-q"] == eks.NOT_CARRIED_NOTE
