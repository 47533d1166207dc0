"""NVIDIA's nvidia-bug-report.log(.gz) read as a node bundle (analyzer.intake.foreign.nvidia_bug_report).

The fixture is a real public report (tests/fixtures/nvidia-bug-report/PROVENANCE.md): four RTX 2080 Ti,
driver 440.31.  The ``.gz`` forms are built here as the script writes them: each section piped through
``gzip -c >>`` onto the same file, so one gzip member per section.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

FIXTURE = (
    Path(__file__).parent / "fixtures" / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
)
HOST = "sdu-dpai-turing-1"
SEP = b"_" * 44 + b"\n"


def _members(raw: bytes) -> list[bytes]:
    """The report cut where the script starts a section (each section begins with the underscore line)."""
    parts = raw.split(SEP)
    return [SEP + p for p in parts[1:]]


def _gz(tmp_path: Path, name: str, members: list[bytes], cut_tail: bytes | None = None) -> Path:
    path = tmp_path / name
    with open(path, "wb") as fh:
        for m in members:
            fh.write(gzip.compress(m))  # gzip -c >> LOG
        if cut_tail is not None:
            whole = gzip.compress(cut_tail)
            fh.write(whole[: len(whole) // 2])  # the run was killed mid-section
    return path


def _analyze(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs)


def _store(tmp_path: Path, *inputs: Path) -> Any:
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    summary = load(con, list(inputs), work, Limits(), jobs=1)
    return summary, con


def _check_node(tmp_path: Path, path: Path) -> Any:
    summary, con = _store(tmp_path, path)
    assert summary.nodes == [HOST]
    gpus = con.execute("SELECT pci FROM gpu WHERE node = ? ORDER BY 1", [HOST]).fetchall()
    assert len(gpus) == 4, gpus
    events = con.execute("SELECT count(*) FROM kernel_event WHERE node = ?", [HOST]).fetchone()
    assert events is not None and events[0] >= 2  # the driver's load lines of the dmesg section
    parsed = con.execute("SELECT kind FROM file WHERE node = ? AND status = 'parsed' ORDER BY 1", [HOST])
    assert [k for (k,) in parsed.fetchall()] == ["dmesg", "nvidia-smi-q", "versions"]
    versions = con.execute(
        "SELECT version FROM software_version WHERE node = ? AND component = 'nvidia_driver'", [HOST]
    )
    assert ("440.31",) in versions.fetchall()
    return summary, con


def test_plain_log_is_one_node_with_its_gpus_and_kernel_log(tmp_path: Path) -> None:
    _check_node(tmp_path, FIXTURE)
    code, report, output = _analyze(tmp_path, FIXTURE)
    assert code == 0, output
    assert [n["node"] for n in report["nodes"]] == [HOST] or HOST in json.dumps(report["nodes"])
    missing = {r["what"].split(" ")[0] for r in report["verdict"]["not_examined"] if r["node"] == HOST}
    assert {"fi-info", "efa-ports", "lfs-df", "df", "iostat", "mounts"} <= missing
    assert all(
        r["reason"] == nbr.NOT_CARRIED_NOTE for r in report["verdict"]["not_examined"] if "reason" in r
    )
    assert report["verdict"]["status"] != "pass"


def test_gzip_of_appended_members_reads_like_the_log(tmp_path: Path) -> None:
    raw = FIXTURE.read_bytes()
    members = _members(raw)
    assert b"".join(members) == raw and len(members) == 5
    path = _gz(tmp_path, "nvidia-bug-report.log.gz", members)
    text, problems = nbr.decode(path, Limits())
    assert text.encode() == raw and problems == []
    _check_node(tmp_path, path)


def test_cut_last_member_keeps_the_others_and_says_so(tmp_path: Path) -> None:
    raw = FIXTURE.read_bytes()
    members = _members(raw)
    path = _gz(
        tmp_path, "nvidia-bug-report.log.gz", members, cut_tail=SEP + b"\nlspci -nn:\n\n" + b"x" * 5000
    )
    text, problems = nbr.decode(path, Limits())
    assert text.encode() == raw
    assert len(problems) == 1 and "last gzip member (6) is cut" in problems[0]
    summary, con = _check_node(tmp_path, path)
    noted = con.execute("SELECT * FROM parse_problems").fetchall()
    assert any("is cut" in str(p) for p in noted), noted


def test_decoded_size_is_capped(tmp_path: Path) -> None:
    path = _gz(tmp_path, "big.log.gz", _members(FIXTURE.read_bytes()))
    text, problems = nbr.decode(path, Limits(max_file_bytes=50_000))
    assert len(text) <= 50_000 and problems and "cap" in problems[0]


def test_header_date_and_hostname() -> None:
    blocks = nbr.split_blocks(FIXTURE.read_text())
    facts = nbr.header_facts(blocks[0])
    assert facts["hostname"] == HOST
    assert "collected_at" not in facts  # a localised date with a named zone (CST) is not guessed
    assert sorted(nbr.pick(blocks)) == ["dmesg", "nvidia-smi-q", "versions"]


def test_a_file_that_only_looks_like_one_is_refused(tmp_path: Path) -> None:
    named = tmp_path / "nvidia-bug-report.log"
    named.write_text("this is not a report\n")
    header_only = tmp_path / "other.log"
    header_only.write_bytes(FIXTURE.read_bytes().split(SEP)[1].join([SEP, SEP]))
    bad_gz = tmp_path / "broken.log.gz"
    bad_gz.write_bytes(gzip.compress(FIXTURE.read_bytes()[:4000])[:200])
    code, report, output = _analyze(tmp_path, FIXTURE, named, header_only, bad_gz)
    assert code == 5, output
    unread = {Path(u["path"]).name: u["reason"] for u in report["verdict"]["unread_inputs"]}
    assert "content is not one" in unread["nvidia-bug-report.log"]
    assert "none of the sections hptriage reads" in unread["other.log"]
    assert "not readable" in unread["broken.log.gz"]


SCAN = FIXTURE.with_name("tool-man-440.31-rtx2080ti-x4--kernel-scan.log")


def test_kernel_scan_gives_earlier_boots_and_the_current_journal_without_dmesg(tmp_path: Path) -> None:
    content = nbr.read_text(SCAN.read_text(encoding="utf-8"))
    assert isinstance(content, nbr.ReportContent)
    dmesg = [(o.name, o.command) for o in content.outputs if o.kind == "dmesg"]
    assert dmesg == [
        ("", "journalctl -b -0 | grep -e NVRM -e nvidia-"),  # no dmesg: section: the journal's current boot
        ("dmesg-boot-1.txt", "journalctl -b -1 | grep -e NVRM -e nvidia-"),
        ("dmesg-boot-2.txt", "journalctl -b -2 | grep -e NVRM -e nvidia-"),
    ]
    assert any("no 'dmesg:' section" in p for p in content.problems)
    summary, con = _store(tmp_path, _gz(tmp_path, "nvidia-bug-report.log.gz", _members(SCAN.read_bytes())))
    boots = con.execute(
        "SELECT boot, count(*) FILTER (WHERE event_type = 'xid') FROM kernel_event WHERE node = ? GROUP BY 1 ORDER BY 1",
        [HOST],
    ).fetchall()
    assert boots == [(-2, 6), (-1, 201), (0, 0)], boots  # the Xid lines of each journal part


def test_report_with_dmesg_keeps_only_earlier_boots_of_the_scan(tmp_path: Path) -> None:
    scan = SCAN.read_text(encoding="utf-8").split(SEP.decode())[2]
    path = tmp_path / "nvidia-bug-report.log"
    path.write_text(FIXTURE.read_text(encoding="utf-8") + SEP.decode() + scan, encoding="utf-8")
    summary, con = _store(tmp_path, path)
    files = con.execute(
        "SELECT path, kind FROM file WHERE node = ? AND kind = 'dmesg' ORDER BY 1", [HOST]
    ).fetchall()
    assert [Path(p).name for p, _ in files] == ["dmesg-boot-1.txt", "dmesg-boot-2.txt", "dmesg.txt"], files
    # evidence names the report itself, at its own lines: the dmesg: section's events lie before the scan
    before_scan = len(FIXTURE.read_text(encoding="utf-8").splitlines())
    current = con.execute(
        "SELECT DISTINCT source_file, boot FROM kernel_event WHERE line <= ?", [before_scan]
    ).fetchall()
    assert current == [(f"{HOST}/nvidia-bug-report.log", 0)]


def test_versions_table_and_kernel_log_file_fallback() -> None:
    header = nbr.Block("x", FIXTURE.with_name("derived-37062940-safe-mode--tables.log").read_text())
    assert nbr.versions_table(header).splitlines()[1:] == [
        "nvidia_driver=570.133.20",
        "fabricmanager=570.133.20",
        "kernel=6.8.0-1029-aws",
    ]
    kern = SCAN.read_text(encoding="utf-8").split("  journalctl -b -0:")[0]
    content = nbr.read_text(kern)
    assert isinstance(content, nbr.ReportContent)
    (out,) = [o for o in content.outputs if o.kind == "dmesg"]
    assert out.command == "grep -e NVRM -e nvidia- /var/log/kern.log"
    assert (
        out.text.startswith("Nov 16 11:33:58 ") and "Kernel Module  440.31" in out.text
    )  # since the last load
