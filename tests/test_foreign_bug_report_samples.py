"""Real nvidia-bug-report logs of other script versions than the tool_man report, read end to end.

The samples (tests/fixtures/nvidia-bug-report/PROVENANCE.md) are byte-exact excerpts of public reports:

- ``nomade007-...``: script 31831145 (2022), Arch Linux, one RTX 3060 Laptop GPU, driver 520.56.06; the
  header with a 12-hour ``Date:`` and a numeric zone, three ``journalctl -b -N _COMM=Xorg`` sections (X
  server logs, not kernel logs), the kernel-log scan with journal parts of boots -0, -1, -2 (no
  ``dmesg:`` section in the excerpt) and ``/sbin/nvidia-smi --query`` then ``--query --unit``.
- ``xubuntu-...``: script 4401225 (2010), Ubuntu 10.04, GeForce 7600 GT, driver 173.14.22; file sections
  under their bare path (``/proc/driver/nvidia/version``, no ``***``), the older scan title "Scanning
  kernel log files for NVRM messages:" over ``/var/log/messages``, a host name masked before posting,
  and no nvidia-smi section (that script did not run it).

The failed-nvidia-smi report is DERIVED: the 2022 sample with its nvidia-smi outputs replaced by the real
answer of tests/fixtures/probe-answers/nvidia-smi--tinygrad-ogkm-47-nvml-mismatch.txt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

FIXTURES = Path(__file__).parent / "fixtures"
ARCH = FIXTURES / "nvidia-bug-report" / "nomade007-520.56.06-rtx3060-laptop--excerpt.log"
OLD = FIXTURES / "nvidia-bug-report" / "xubuntu-173.14.22-geforce7600gt--excerpt.log"
MISMATCH = FIXTURES / "probe-answers" / "nvidia-smi--tinygrad-ogkm-47-nvml-mismatch.txt"


def _content(path: Path) -> nbr.ReportContent:
    content = nbr.read_text(path.read_text(encoding="utf-8"), origin=path.name)
    assert isinstance(content, nbr.ReportContent), content
    return content


def _store(tmp_path: Path, path: Path) -> tuple[list[str], Any]:
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    summary = load(con, [path], work, Limits(), jobs=1)
    return summary.nodes, con


def test_2022_report_header_smi_and_journal_boots(tmp_path: Path) -> None:
    content = _content(ARCH)
    assert content.facts["hostname"] == "nomade007"
    assert content.facts["collected_at"] == "2022-10-27T23:50:11Z"  # 08:50:11 PM -03
    outputs = {(o.kind, o.name): o for o in content.outputs}
    smi = outputs[("nvidia-smi-q", "")]
    assert smi.command == "/sbin/nvidia-smi --query" and smi.first_line == 85
    assert "--unit" not in smi.text and "Attached Units" not in smi.text
    dmesg = [(o.command, o.first_line) for o in content.outputs if o.kind == "dmesg"]
    # the scan's journal parts (the _COMM=Xorg sections before it are X server logs: never read)
    assert dmesg == [
        ("journalctl -b -0 | grep -e NVRM -e nvidia-", 43),
        ("journalctl -b -1 | grep -e NVRM -e nvidia-", 58),
        ("journalctl -b -2 | grep -e NVRM -e nvidia-", 70),
    ]
    assert all("_COMM" not in o.text and "No entries" not in o.text for o in content.outputs)

    nodes, con = _store(tmp_path, ARCH)
    assert nodes == ["nomade007"]
    gpus = con.execute("SELECT pci, driver_version FROM gpu WHERE node = 'nomade007'").fetchall()
    assert gpus == [("0000:01:00.0", "520.56.06")]  # nvidia-smi's Driver Version (no version file here)
    loads = con.execute(
        "SELECT boot, count(*) FROM kernel_event WHERE node = 'nomade007' AND event_type = 'nvrm_driver_loaded' "
        "GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert loads == [(-2, 1), (-1, 1), (0, 1)]  # one driver load per boot, each in its own boot
    xids = con.execute("SELECT count(*) FROM kernel_event WHERE xid IS NOT NULL").fetchone()
    assert xids == (0,)


def test_2022_report_analyzes_without_gpu_findings(tmp_path: Path) -> None:
    code, report, output = analyze_json(tmp_path, ARCH)
    assert code in (0, 1), output
    assert [n["node"] for n in report["nodes"]] == ["nomade007"] or "nomade007" in str(report["nodes"])
    rules = {f["rule"] for f in report["findings"]}
    assert "gpu.smi.unreachable" not in rules
    assert not {r for r in rules if r.startswith("gpu.xid")}


def test_2010_report_bare_paths_older_scan_and_masked_host(tmp_path: Path) -> None:
    content = _content(OLD)
    assert "hostname" not in content.facts  # 'uname: Linux ****-***** ...' was masked by the poster
    # 'Fr 10. Sep 04:31:01 CEST 2010': a German-locale date whose zone (CEST) says its offset
    assert content.facts["collected_at"] == "2010-09-10T02:31:01Z"
    assert any("host name '****-*****' is masked" in p for p in content.problems)
    kinds = {o.kind: o for o in content.outputs if not o.name}
    assert kinds["versions"].text.startswith("NVRM version: NVIDIA UNIX x86 Kernel Module  173.14.22")
    assert kinds["versions"].first_line == 43
    dmesg = kinds["dmesg"]
    assert dmesg.command == "grep NVRM /var/log/messages"
    # the lines of the file's last boot: the 173.14.22 load of Sep 10
    assert dmesg.text.startswith("Sep 10 03:02:49 hugo-kiste kernel: [   28.070849] NVRM: loading")
    assert dmesg.text.count("\n") == 1
    # the 14 loads before it are 14 earlier boots: the uptime falls (442.7 s, then 18.5 s) or the moment
    # each boot began (the stamp less the uptime) moves by minutes (18.5 s at 20:33:40, 18.8 s at 20:46:39)
    earlier = [(o.name, o.first_line, o.text) for o in content.outputs if o.name.startswith("dmesg-boot")]
    assert [name for name, _, _ in earlier] == [f"dmesg-boot-{n}-messages.txt" for n in range(1, 15)]
    assert earlier[0][2].startswith("Sep  9 23:34:56 ")
    assert earlier[-1][2].startswith("Sep  7 16:35:28 hugo-kiste kernel: [  442.742657]")
    assert [line for _, line, _ in earlier] == list(range(36, 22, -1))  # the report's own lines
    assert any("holds 14 boots before its last one" in p for p in content.problems)
    assert "nvidia-smi-q" not in kinds
    assert any("no 'nvidia-smi --query' output" in p for p in content.problems)

    nodes, con = _store(tmp_path, OLD)
    assert nodes == [OLD.name.removesuffix(".log")]
    versions = con.execute(
        "SELECT DISTINCT version FROM software_version WHERE component = 'nvidia_driver'"
    ).fetchall()
    assert versions == [("173.14.22",)]
    boots = con.execute(
        "SELECT boot, count(*) FROM kernel_event WHERE event_type = 'nvrm_driver_loaded' GROUP BY 1 ORDER BY 1"
    ).fetchall()
    # the file's last boot is the running one as far as the file says, not known for certain: boot null
    assert boots == [(b, 1) for b in range(-14, 0)] + [(None, 1)]


def test_a_failed_nvidia_smi_in_a_report_is_an_unreachable_finding(tmp_path: Path) -> None:
    text = ARCH.read_text(encoding="utf-8")
    answer = MISMATCH.read_text(encoding="utf-8")
    head, _ = text.split("/sbin/nvidia-smi --query\n", 1)
    failed = tmp_path / "nvidia-bug-report.log"
    failed.write_text(
        head
        + "/sbin/nvidia-smi --query\n\n"
        + answer
        + "\n/sbin/nvidia-smi --query --unit\n\n"
        + answer
        + "\n",
        encoding="utf-8",
    )
    content = _content(failed)
    (smi,) = [o for o in content.outputs if o.kind == "nvidia-smi-q"]
    assert smi.text.strip().startswith("Failed to initialize NVML: Driver/library version mismatch")
    code, report, output = analyze_json(tmp_path, failed)
    assert code in (0, 1), output
    (finding,) = [f for f in report["findings"] if f["rule"] == "gpu.smi.unreachable"]
    assert finding["node"] == "nomade007" and finding["params"]["answers"] == ["nvml-mismatch"]
    assert finding["evidence"][0]["file"] == "nomade007/nvidia-bug-report.log"
    assert finding["evidence"][0]["line"] == 86
    assert report["verdict"]["status"] != "pass"
