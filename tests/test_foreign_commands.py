"""``ingest``, ``history``, ``diff`` and ``parse`` on the inputs other tools write (analyzer.intake.foreign).

The input is the real nvidia-bug-report excerpt (tests/fixtures/nvidia-bug-report: four RTX 2080 Ti,
driver 440.31, its ``Date:`` line in a local zone, so it carries no collection time); the second
snapshot is the same report with one real Xid 79 line (the kernel's wording, as in
tests/fixtures/dmesg) planted in its ``dmesg:`` section.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.intake import foreign

FIXTURE = (
    Path(__file__).parent / "fixtures" / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
)
HOST = "sdu-dpai-turing-1"
XID_79 = "[  600.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"


def _two_snapshots(tmp_path: Path) -> tuple[Path, Path]:
    text = FIXTURE.read_text()
    header_end = text.index("\n", text.index("dmesg:")) + 1
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "nvidia-bug-report.log").write_text(text)
    (new / "nvidia-bug-report.log").write_text(text[:header_end] + XID_79 + text[header_end:])
    return old / "nvidia-bug-report.log", new / "nvidia-bug-report.log"


def test_diff_of_two_bug_reports_names_the_new_xid(tmp_path: Path) -> None:
    old, new = _two_snapshots(tmp_path)
    out = tmp_path / "diff.json"
    result = CliRunner().invoke(cli, ["diff", str(old), str(new), "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [(f["node"], f["rule"]) for f in data["new_findings"]] == [(HOST, "gpu.xid.fallen_off_bus")]
    assert data["resolved_findings"] == [] and data["nodes_added"] == []


def test_ingest_and_history_of_bug_reports_without_a_collection_time(tmp_path: Path) -> None:
    old, new = _two_snapshots(tmp_path)
    db = tmp_path / "h.duckdb"
    runner = CliRunner()
    for path in (old, new):
        result = runner.invoke(cli, ["ingest", str(path), "--db", str(db), "-q"])
        assert result.exit_code == 0, result.output
    out = tmp_path / "h.json"
    result = runner.invoke(cli, ["history", "--db", str(db), "--node", HOST, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "snapshot(s), - to -" not in result.output, "a snapshot without collected_at goes by its ingest"
    (node,) = json.loads(out.read_text())["nodes"]
    seen = {f["rule"]: (f["times_seen"], f["severity"]) for f in node["findings"]}
    assert seen["gpu.xid.fallen_off_bus"] == (1, "critical")
    assert all(sev is not None for _, sev in seen.values())
    assert max(times for times, _ in seen.values()) == 2, "findings of both reports counted per snapshot"


def test_parse_list_names_every_foreign_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["parse", "--list"])
    assert result.exit_code == 0
    listed = result.output.split("Inputs other tools write", 1)[1]
    for source in foreign.sources():
        assert f"\n{source} " in listed


def test_parse_of_a_bug_report_prints_its_records_by_kind(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["parse", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    kinds = {r["kind"] for r in records}
    assert {"nvidia-smi-q", "dmesg", "versions"} <= kinds
    gpus = [r for r in records if r["table"] == "gpu"]
    assert len(gpus) == 4 and {r["node"] for r in gpus} == {HOST}
    assert "not carried by nvidia-bug-report: " in result.stderr and "fi-info" in result.stderr


def test_parse_of_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["parse", str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory" in result.output and "Traceback" not in result.output


def test_bug_reports_in_per_node_folders_are_one_cluster(tmp_path: Path) -> None:
    """``case/<node>/nvidia-bug-report.log`` (one folder per node, as users gather them): the nodes are
    judged together, and the planted Xid lands on its node."""
    (tmp_path / "src").mkdir()
    _, with_xid = _two_snapshots(tmp_path / "src")
    case = tmp_path / "case"
    for name in ("gpu-node-a", "gpu-node-b", "gpu-node-c"):
        (case / name).mkdir(parents=True)
        source = with_xid if name == "gpu-node-b" else FIXTURE
        (case / name / "nvidia-bug-report.log").write_text(source.read_text().replace(HOST, name))
    (case / "gpu-node-a" / "notes.txt").write_text("drained on Monday\n")  # a loose file beside it
    out = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["analyze", str(case), "--json", str(out), "-q", "--jobs", "1"])
    # the loose notes are named as not read (exit 5), and nothing else is
    assert result.exit_code == 5, result.output
    assert "clusters in" not in result.output, "one folder of per-node folders is one cluster"
    report = json.loads(out.read_text())
    unread = report["verdict"]["unread_inputs"]
    assert [u["path"] for u in unread] == [str(case / "gpu-node-a" / "notes.txt")]
    assert "loose file beside the bundles" in unread[0]["reason"]
    assert sorted(n["node"] for n in report["nodes"]) == ["gpu-node-a", "gpu-node-b", "gpu-node-c"]
    xids = [f["node"] for f in report["findings"] if f["rule"] == "gpu.xid.fallen_off_bus"]
    assert xids == ["gpu-node-b"]
    assert report["verdict"]["worst_nodes"][0]["node"] == "gpu-node-b"


def test_parse_and_analyze_read_a_report_alike(tmp_path: Path) -> None:
    """``parse`` of another tool's input reads it with the node reader analyze uses: the records it
    prints are the rows analyze stores (the same kernel events and GPUs, at the same lines of the
    user's file), and a file the reader refuses is refused by both."""
    import duckdb

    from analyzer.judge.settings import load_settings
    from analyzer.pipeline import analyze

    result = CliRunner().invoke(cli, ["parse", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    db = tmp_path / "a.duckdb"
    analyze([FIXTURE], load_settings(), db_path=db, jobs=1)
    con = duckdb.connect(str(db), read_only=True)
    for table, columns in (("kernel_event", "line, raw, event_type"), ("gpu", "line, pci")):
        stored = sorted(con.execute(f"SELECT node, {columns} FROM {table}").fetchall(), key=repr)
        printed = sorted(
            (
                tuple([r["node"], *(r[c.strip()] for c in columns.split(","))])
                for r in records
                if r["table"] == table
            ),
            key=repr,
        )
        assert stored and printed == stored, table
    con.close()


def test_parse_of_a_report_keeps_the_readers_guards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A converted output with a line longer than any tool prints is not parsed by parse either (the
    reader's guard, which parse's own copy of the reading code lacked): said on stderr, no record."""
    import analyzer.intake.read_node as read_node

    text = FIXTURE.read_text()
    header_end = text.index("\n", text.index("dmesg:")) + 1
    report = tmp_path / "nvidia-bug-report.log"
    report.write_text(text[:header_end] + "[    1.000000] " + "x" * 400 + "\n" + text[header_end:])
    real = read_node.long_line
    monkeypatch.setattr(read_node, "long_line", lambda t, limit=300: real(t, limit))  # a smaller cap
    result = CliRunner().invoke(cli, ["parse", str(report)])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert not [r for r in records if r["kind"] == "dmesg"]
    assert f"{HOST}: not parsed as dmesg: line " in result.stderr
    assert "characters long (no tool prints that)" in result.stderr
