"""Kernel messages of earlier boots, and one event found in several kernel logs of one node.

Reports are built from real fixtures (tests/fixtures/nvidia-bug-report/PROVENANCE.md): the tool_man
report's header, dmesg, version and nvidia-smi sections (``--excerpt.log``) followed by its kernel-log scan
(``--kernel-scan.log``: kern.log lines and the journal of boots -0, -1, -2).  Where a test needs an Xid 79,
one line is added to a part, worded as the driver prints it (the line of the gpud-870 dmesg fixture) with
the stamp style of that part: those lines are derived, the rest is the real report.  The tables reports
are the logs derived from the script's printers (``derived-37062940-*``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.signals.kernel_events import distinct
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json
from tests.rules.helpers import analyze, fixture, write_node

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-bug-report"
EXCERPT = FIXTURES / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
SCAN = FIXTURES / "tool-man-440.31-rtx2080ti-x4--kernel-scan.log"
HOST = "sdu-dpai-turing-1"
SEP = "_" * 44 + "\n"
XID79 = "NVRM: Xid (PCI:0000:03:00): 79, pid=3074, GPU has fallen off the bus."


def _scan_block() -> str:
    """The kernel-log scan section of the real report (its underscore line first)."""
    blocks = SCAN.read_text(encoding="utf-8").split(SEP)
    scan = [b for b in blocks if b.lstrip().startswith(nbr._SCAN)]
    assert len(scan) == 1
    return SEP + scan[0]


def _report(
    tmp_path: Path, name: str, dmesg_extra: str = "", scan_edits: dict[str, str] | None = None
) -> Path:
    text = EXCERPT.read_text(encoding="utf-8")
    if dmesg_extra:
        head, rest = text.split("\ndmesg:\n\n", 1)
        first_section_end = rest.index(SEP)
        text = head + "\ndmesg:\n\n" + rest[:first_section_end] + dmesg_extra + rest[first_section_end:]
    scan = _scan_block()
    for old, new in (scan_edits or {}).items():
        assert old in scan, old
        scan = scan.replace(old, new, 1)
    path = tmp_path / name
    path.write_text(text + scan, encoding="utf-8")
    return path


def _analyze(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs)


def _findings(report: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["rule"] == rule]


# the journal of boot -1 in the real report ends with the driver unloading at 11:21:34
_BOOT_1_END = "11月 16 11:21:34 sdu-dpai-turing-1 kernel: nvidia-modeset: Unloading\n"


def test_an_xid_79_of_the_previous_boot_is_a_finding_that_says_so(tmp_path: Path) -> None:
    path = _report(
        tmp_path,
        "nvidia-bug-report.log",
        scan_edits={_BOOT_1_END: f"11月 16 11:20:02 sdu-dpai-turing-1 kernel: {XID79}\n" + _BOOT_1_END},
    )
    code, report, output = _analyze(tmp_path, path)
    assert code in (0, 1), output
    fallen = _findings(report, "gpu.xid.fallen_off_bus")
    assert len(fallen) == 1, fallen
    f = fallen[0]
    assert f["node"] == HOST and f["params"]["pci"] == "0000:03:00.0"
    assert "in a previous boot (boot -1)" in f["message"]
    assert f["params"]["boot"] == -1 and f["params"]["boots"] == [-1]
    assert f["severity"] == "warning"  # hardware: not below warning, though the node rebooted since
    assert "rebooted since" in f["route"]["action"]
    # evidence cites the report's own line, not the work directory's cmd/dmesg-boot-1.txt
    assert f["evidence"][0]["file"] == f"{HOST}/nvidia-bug-report.log"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert XID79 in lines[f["evidence"][0]["line"] - 1] and "11:20:02" in lines[f["evidence"][0]["line"] - 1]
    # the real Xid 13/62/32 of boots -1 and -2 are findings of earlier boots too, none critical
    xids = _findings(report, "gpu.xid")
    assert xids and all("previous boot" in x["message"] for x in xids)
    assert {x["params"]["boot"] for x in xids} <= {-1, -2}
    assert all(x["severity"] != "critical" for x in xids)


def test_the_current_boot_in_dmesg_journal_and_kern_log_counts_once(tmp_path: Path) -> None:
    path = _report(
        tmp_path,
        "nvidia-bug-report.log",
        dmesg_extra=f"[ 1479.100000] {XID79}\n",
        scan_edits={
            # kern.log (rsyslog keeps the dmesg stamp) and the journal of the current boot
            "  journalctl -b -0:\n": f"Nov 16 11:50:29 {HOST} kernel: [ 1479.100000] {XID79}\n\n  journalctl -b -0:\n",
            "\n\n  journalctl -b -1:\n": f"\n11月 16 11:50:29 {HOST} kernel: {XID79}\n\n  journalctl -b -1:\n",
        },
    )
    code, report, output = _analyze(tmp_path, path)
    fallen = _findings(report, "gpu.xid.fallen_off_bus")
    assert len(fallen) == 1, fallen
    assert fallen[0]["params"]["count"] == 1 and "boot" not in fallen[0]["params"]
    assert fallen[0]["severity"] == "critical"
    cited = fallen[0]["evidence"][0]
    assert cited["file"] == f"{HOST}/nvidia-bug-report.log"
    assert path.read_text(encoding="utf-8").splitlines()[cited["line"] - 1] == f"[ 1479.100000] {XID79}"


def test_one_event_in_three_logs_of_a_bundle_counts_once(tmp_path: Path) -> None:
    """A node bundle holding dmesg -T, the journal (short-iso) and /var/log/messages: the real
    gpud-readme Xid 109 line, and the same message in the journal's and syslog's stamp styles."""
    dmesg = fixture("dmesg", "gpud-readme-dmesg-ctime-xid13-109.txt").replace("> ", "")
    line = next(ln for ln in dmesg.splitlines() if "): 109," in ln)
    text = line.split("] ", 1)[1]
    node = write_node(
        tmp_path,
        "node-a",
        {
            "cmd/dmesg.txt": ("dmesg", line + "\n"),
            "cmd/journal.txt": ("dmesg", f"2024-08-30T11:43:14+0000 node-a kernel: {text}\n"),
            "cmd/messages.txt": ("dmesg", f"Aug 30 11:43:14 node-a kernel: {text}\n"),
        },
    )
    result = analyze(node)
    xids = [f for f in result.of("gpu.xid") if f.params["xid"] == 109]
    assert len(xids) == 1 and xids[0].params["count"] == 1, [f.message for f in xids]
    rows = result.con.execute("SELECT count(*) FROM kernel_event WHERE xid = 109").fetchone()
    assert rows == (3,)  # the store keeps every line; the rules count the event once


def test_the_same_text_at_two_times_stays_two_events() -> None:
    base = {"bundle_id": "b", "node": "n", "event_type": "xid", "xid": 13, "pci": "0000:03:00.0",
            "gpu_index": None, "pid": 1, "process": None, "message": "x", "uptime_s": None, "ts": None,
            "boot": None}  # fmt: skip
    a = {**base, "source_file": "n/cmd/dmesg.txt", "line": 1, "ts_raw": "Aug 30 11:43:14"}
    b = {**base, "source_file": "n/cmd/messages.txt", "line": 1, "ts_raw": "Aug 30 11:43:16"}
    c = {**base, "source_file": "n/cmd/messages.txt", "line": 2, "ts_raw": "Aug 30 11:43:15"}
    assert [r["ts_raw"] for r in distinct([a, b, c])] == ["Aug 30 11:43:14", "Aug 30 11:43:16"]


def test_a_safe_mode_report_says_so(tmp_path: Path) -> None:
    path = FIXTURES / "derived-37062940-safe-mode--tables.log"
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    summary = load(con, [path], work, Limits(), jobs=1)
    assert summary.nodes == ["gpu-node-7"]
    problems = " ".join(str(p) for p in con.execute("SELECT * FROM parse_problems").fetchall())
    assert "--safe-mode" in problems and "skips nvidia-smi" in problems
    versions = dict(
        con.execute("SELECT component, version FROM software_version WHERE source = 'collector'").fetchall()
    )
    assert versions == {
        "nvidia_driver": "570.133.20",
        "fabricmanager": "570.133.20",
        "kernel": "6.8.0-1029-aws",
    }
    code, report, output = _analyze(tmp_path, path)
    reasons = {r["what"].split(" ")[0]: r.get("reason") for r in report["verdict"]["not_examined"]}
    assert reasons["nvidia-smi-q"] == "nvidia-bug-report: Skipping due to --safe-mode-argument", reasons


def test_a_report_without_a_loaded_driver_is_a_finding_and_other_skips_keep_the_scripts_reason(
    tmp_path: Path,
) -> None:
    """The script found no nvidia-smi and says 'GPU Driver not installed?' (lsmod lists no nvidia
    module): on a node the user ran the bug report on, that is a finding of the node, as a failed
    nvidia-smi is, cited at the report's own line; what else it skipped keeps the script's reason."""
    path = FIXTURES / "derived-37062940-smi-not-found--tables.log"
    code, report, output = _analyze(tmp_path, path)
    assert code in (0, 1), output
    (finding,) = _findings(report, "gpu.smi.unreachable")
    assert finding["node"] == "gpu-node-7" and finding["params"]["answers"] == ["driver-not-loaded"]
    assert finding["severity"] == "warning"  # the report names no instance type: as a failed nvidia-smi
    assert "no NVIDIA driver is loaded" in finding["message"]
    assert finding["evidence"][0]["file"] == "gpu-node-7/derived-37062940-smi-not-found--tables.log"
    assert finding["evidence"][0]["line"] == 38  # 'Detected driver type: GPU Driver not installed?'
    reasons = {r["what"].split(" ")[0]: r.get("reason") for r in report["verdict"]["not_examined"]}
    assert "nvidia-smi-q" not in reasons
    assert reasons["nvidia-smi-nvlink"] == "nvidia-bug-report: nvidia-smi not found"
    assert reasons["efa-ports"] == "nvidia-bug-report: ibstat not found"
    content = nbr.read_text(path.read_text(encoding="utf-8"))
    assert not isinstance(content, str)
    assert any("says no NVIDIA driver is loaded" in p for p in content.problems)
