"""The hptriage command line end to end on the sample cluster bundle built from real outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import FIXTURES

FINDING_KEYS = {
    "rule",
    "rule_version",
    "severity",
    "node",
    "gpu",
    "message",
    "params",
    "route",
    "evidence",
    "fingerprint",
}


def run(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, list(args), env=env)


def test_analyze_names_node_gpu_and_evidence(sample_cluster: Path, tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    result = run("analyze", str(sample_cluster), "--json", str(out), env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "\x1b[" not in result.output
    assert "p5-node-01 GPU 3 (0000:5d:00.0) has uncorrectable ECC errors" in result.output
    assert "p5-node-01/cmd/dmesg.txt:1:" in result.output and "→ node-hardware" in result.output
    doc = json.loads(out.read_text())
    assert set(doc) >= {"schema", "tool_version", "bundles", "nodes", "findings", "parse_problems"}
    assert len(doc["nodes"]) == 4
    for f in doc["findings"]:
        assert set(f) == FINDING_KEYS
        assert f["severity"] in ("critical", "warning", "info")
        assert set(f["route"]) == {"owner", "target", "action"}
        assert f["evidence"] and all(set(e) == {"file", "line", "text"} for e in f["evidence"])
    xid48 = [f for f in doc["findings"] if f["rule"] == "gpu.xid" and f["params"]["xid"] == 48]
    assert xid48[0]["node"] == "p5-node-01" and xid48[0]["gpu"] == 3 and xid48[0]["severity"] == "critical"
    assert xid48[0]["evidence"][0] == {
        "file": "p5-node-01/cmd/dmesg.txt",
        "line": 1,
        "text": "[430954.509105] NVRM: Xid (PCI:0000:5d:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
        "double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x18f31d80 partition 16, "
        "subpartition 3.",
    }
    ecc = [f for f in doc["findings"] if f["rule"] == "gpu.ecc.uncorrectable"]
    assert [(f["node"], f["gpu"], f["params"]["volatile"]) for f in ecc] == [("p5-node-01", 3, 2)]
    assert "DRAM Uncorrectable            : 2" in ecc[0]["evidence"][0]["text"]
    # the healthy node has no findings
    assert not [f for f in doc["findings"] if f["node"] == "p5-node-03"]


def test_db_file_is_queryable(sample_cluster: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    assert run("analyze", str(sample_cluster), "--db", str(db), "-q").exit_code == 0
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM gpu").fetchone() == (25,)
    assert con.execute(
        "SELECT count(DISTINCT node) FROM kernel_event WHERE event_type = 'xid'"
    ).fetchone() == (3,)
    assert con.execute("SELECT count(*) FROM findings WHERE severity = 'critical'").fetchone()[0] >= 2
    assert con.execute("SELECT count(*) FROM node WHERE instance_type = 'p5.48xlarge'").fetchone() == (4,)


def test_fail_on_and_exit_codes(sample_cluster: Path, tmp_path: Path) -> None:
    assert run("analyze", str(sample_cluster), "--fail-on", "critical", "-q").exit_code == 1
    assert run("analyze", str(sample_cluster / "p5-node-03"), "--fail-on", "warning", "-q").exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("analyze", str(empty))
    assert result.exit_code == 3 and "no usable bundle" in result.output and "Traceback" not in result.output
    assert run("analyze", str(sample_cluster), "--fail-on", "sometimes").exit_code == 2
    assert run("analyze").exit_code == 2


def test_colour_only_when_asked(sample_cluster: Path) -> None:
    assert "\x1b[31m" in run("analyze", str(sample_cluster), "--color", "always").output
    assert "\x1b[" not in run("analyze", str(sample_cluster)).output  # not a TTY


def test_parse_command_detects_and_lists() -> None:
    dmesg = FIXTURES / "dmesg" / "uce-runbook-xid48-63-94-dbe.txt"
    result = run("parse", str(dmesg))
    records = json.loads(result.output)
    assert [r["xid"] for r in records] == [48, 63, 94] and records[0]["table"] == "kernel_event"
    csv_out = run("parse", str(dmesg), "--kind", "dmesg", "--format", "csv").output.splitlines()
    assert csv_out[0].startswith("table,") and len(csv_out) == 4
    listing = run("parse", "--list").output
    assert "nvidia-smi-q" in listing and "dmesg" in listing
    bad = run("parse", str(dmesg), "--kind", "nope")
    assert bad.exit_code == 2 and "unknown kind" in bad.output


def test_rules_catalog() -> None:
    catalog = json.loads(run("rules", "--format", "json").output)
    ids = {r["rule"] for r in catalog}
    assert {"gpu.xid", "gpu.ecc.uncorrectable"} <= ids
    assert all(r["route"]["owner"] and r["route"]["target"] for r in catalog)


def test_real_entry_point_help_and_error_line(tmp_path: Path) -> None:
    exe = [sys.executable, "-c", "from analyzer.cli import main; main()"]
    assert "Exit codes" in subprocess.run([*exe, "--help"], capture_output=True, text=True).stdout
    done = subprocess.run([*exe, "analyze", str(tmp_path / "missing")], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stderr.startswith("hptriage: error:") and "Traceback" not in done.stderr


def test_parallel_workers_give_the_same_findings(tmp_path: Path) -> None:
    from tests.conftest import SAMPLES

    bundle = SAMPLES / "nccl-slow-node" / "bundle"
    docs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"f{jobs}.json"
        assert run("analyze", str(bundle), "--jobs", jobs, "--json", str(out), "-q").exit_code == 0
        docs.append(json.loads(out.read_text()))
    assert [f["fingerprint"] for f in docs[0]["findings"]] == [f["fingerprint"] for f in docs[1]["findings"]]
    assert len(docs[0]["nodes"]) == len(docs[1]["nodes"]) == 8


def test_rules_say_where_they_had_no_data(tmp_path: Path) -> None:
    from tests.conftest import SAMPLES

    out = tmp_path / "f.json"
    gpu_set, fs_set = SAMPLES / "xid-ecc-3node" / "bundle", SAMPLES / "fsx-saturated" / "bundle"
    result = run("analyze", str(gpu_set), str(fs_set), "--json", str(out))
    assert result.exit_code == 0, result.output
    rules = {r["rule"]: r for r in json.loads(out.read_text())["rules"]}
    # the fsx nodes have no kernel log: the Xid rule ran, but not on them, and says so
    assert rules["gpu.xid"]["outcome"] == "fail"
    assert rules["gpu.xid"]["nodes_without_data"] == ["train-01", "train-02", "train-03", "train-04"]
    assert rules["fs.iowait.high"]["nodes_without_data"] == [
        "h100-node-04",
        "p5-node-01",
        "p5-node-02",
        "p5-node-03",
    ]
    assert "not examined on:" in result.output


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys) -> None:
    import io

    from analyzer import cli as cli_module

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert cli_module._progress() is None  # not a terminal: no bar

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    show = cli_module._progress()
    assert show is not None
    for done in range(1, 4):
        show(done, 3)
    out = tty.getvalue()
    assert "reading bundles" in out and "3/3" in out and "nodes/s" in out


def test_quiet_shows_no_progress_bar(sample_cluster: Path, monkeypatch) -> None:
    from analyzer import cli as cli_module

    monkeypatch.setattr(cli_module, "_progress", lambda: (_ for _ in ()).throw(AssertionError("bar")))
    result = CliRunner().invoke(cli, ["analyze", str(sample_cluster), "-q"])
    assert result.exit_code in (0, 1, 5), result.output
