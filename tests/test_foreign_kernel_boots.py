"""A kernel log file of several boots read as those boots: the nvidia-bug-report's kernel-log scan.

The report is a real one (tests/fixtures/nvidia-bug-report/PROVENANCE.md): the tool_man report's header
and its whole kernel-log scan.  Its ``/var/log/kern.log`` part holds four boots; the journal parts hold
the last three.  The boot of Nov 15 10:59, whose Xid 13, 45 and 62 are in no journal part, is only in
kern.log: it is read as boot -3; the two boots the journal holds too are read once, as the journal's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from analyzer.intake.foreign import boots
from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.signals.kernel_events import columns_sql, distinct
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

WHOLE = (
    Path(__file__).parent
    / "fixtures"
    / "nvidia-bug-report"
    / "tool-man-440.31-rtx2080ti-x4--kernel-scan-whole.log"
)
HOST = "sdu-dpai-turing-1"


def test_kern_log_is_cut_at_each_boot_by_the_kernels_uptime() -> None:
    content = nbr.read_text(WHOLE.read_text(encoding="utf-8"), origin=WHOLE.name)
    assert isinstance(content, nbr.ReportContent)
    (kern,) = [
        p
        for b in nbr.split_blocks(WHOLE.read_text(encoding="utf-8"))
        for p in nbr.kernel_scan(b)
        if p.boot is None
    ]
    cut = boots.split_boots(kern.text)
    assert [(b.how, b.text.splitlines()[0][:15]) for b in cut] == [
        ("", "Nov 15 10:59:09"),
        ("uptime", "Nov 15 13:56:20"),  # the uptime fell from 10856 s to 3.7 s: a reboot
        ("uptime", "Nov 15 14:25:29"),
        ("uptime", "Nov 16 11:33:45"),
    ]
    dmesg = [(o.name, o.command, o.first_line) for o in content.outputs if o.kind == "dmesg"]
    assert dmesg == [
        ("", "journalctl -b -0 | grep -e NVRM -e nvidia-", 524),
        ("dmesg-boot-1.txt", "journalctl -b -1 | grep -e NVRM -e nvidia-", 561),
        ("dmesg-boot-2.txt", "journalctl -b -2 | grep -e NVRM -e nvidia-", 791),
        # the first boot of kern.log, which no journal part holds; its other earlier boots are the
        # journal's boots -1 and -2 (the same lines, stamped a second apart)
        ("dmesg-boot-3-kern.log.txt", "grep -e NVRM -e nvidia- /var/log/kern.log", 19),
    ]
    assert any("read as boots -3; 2 of them as the journal's parts" in p for p in content.problems)


def test_an_earlier_boots_xid_only_in_kern_log_is_an_event_of_that_boot(tmp_path: Path) -> None:
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    load(con, [WHOLE], work, Limits(), jobs=1)
    names = [c.strip('"') for c in columns_sql().split(", ")]
    rows = [
        dict(zip(names, r, strict=True))
        for r in con.execute(f"SELECT {columns_sql()} FROM kernel_event WHERE xid IS NOT NULL").fetchall()
    ]
    counted = Counter((r["boot"], r["xid"]) for r in distinct(rows))
    assert counted[(-3, 45)] == 29 and counted[(-3, 13)] == 164 and counted[(-3, 62)] == 1
    assert counted[(-1, 13)] == 193  # the journal's boot -1, not counted again from kern.log

    code, report, output = analyze_json(tmp_path / "a", WHOLE)
    assert code in (0, 1), output
    (xid45,) = [f for f in report["findings"] if f["rule"] == "gpu.xid" and f["params"].get("xid") == 45]
    assert "in a previous boot (boot -3)" in xid45["message"] and xid45["severity"] == "info"
    evidence = xid45["evidence"][0]
    assert evidence["file"] == f"{HOST}/{WHOLE.name}" and evidence["line"] == 218
    assert WHOLE.read_text(encoding="utf-8").splitlines()[217] == evidence["text"]
