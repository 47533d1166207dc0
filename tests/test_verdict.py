"""The verdict end to end through the CLI: every input named, exit codes, the ranking, the reports agree."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import SAMPLES, fixture_text, make_tar


def run(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["--debug", *args], env=env, catch_exceptions=False)


def _one_node(tmp_path: Path, node: str = "p5-node-01") -> Path:
    dest = tmp_path / node
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle" / node, dest)
    return dest


def test_every_unusable_input_is_named_and_exit_5(tmp_path: Path) -> None:
    good = _one_node(tmp_path)
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really gzip" * 10)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    missing = tmp_path / "nope"
    out = tmp_path / "f.json"
    result = run("analyze", str(good), str(garbage), str(binary), str(missing), "--json", str(out))
    assert result.exit_code == 5, result.output
    verdict_text = result.stdout.split("Verdict", 1)[1]
    unread = {u["path"] for u in json.loads(out.read_text())["verdict"]["unread_inputs"]}
    for path in (garbage, binary, missing):
        assert str(path) in verdict_text  # named in the terminal, not only counted
        assert str(path) in unread
        assert f"not read: {path}" in result.stderr
    # one good input and nothing else: exit 0
    assert run("analyze", str(good), "-q").exit_code == 0


def test_fail_on_takes_precedence_over_unread_inputs(tmp_path: Path) -> None:
    good = _one_node(tmp_path)
    result = run("analyze", str(good), str(tmp_path / "nope"), "--fail-on", "critical", "-q")
    assert result.exit_code == 1


def test_a_bundle_given_twice_is_analyzed_once_with_a_warning(tmp_path: Path) -> None:
    tar = make_tar(_one_node(tmp_path), tmp_path / "n1.tar.gz")
    copy = tmp_path / "copy.tar.gz"
    shutil.copy(tar, copy)
    out = tmp_path / "f.json"
    result = run("analyze", str(tar), str(copy), str(tar), "--json", str(out), "-q")
    assert result.exit_code == 0
    doc = json.loads(out.read_text())
    assert [n["node"] for n in doc["nodes"]] == ["p5-node-01"]
    assert "analyzed once" in result.stderr
    once = run("analyze", str(tar), "--json", str(tmp_path / "once.json"), "-q")
    assert once.exit_code == 0
    assert len(json.loads((tmp_path / "once.json").read_text())["findings"]) == len(doc["findings"])


def test_a_bad_checksum_is_a_finding_on_that_bundle(tmp_path: Path) -> None:
    tar = make_tar(_one_node(tmp_path), tmp_path / "n1.tar.gz")
    Path(f"{tar}.sha256").write_text(f"{'0' * 64}  {tar.name}\n")
    out = tmp_path / "f.json"
    assert run("analyze", str(tar), "--json", str(out), "-q").exit_code == 0
    (f,) = [f for f in json.loads(out.read_text())["findings"] if f["rule"] == "bundle.checksum"]
    assert f["node"] == "p5-node-01" and f["severity"] == "warning"
    assert f["params"]["actual"] == hashlib.sha256(tar.read_bytes()).hexdigest()
    Path(f"{tar}.sha256").write_text(f"{hashlib.sha256(tar.read_bytes()).hexdigest()}  {tar.name}\n")
    assert run("analyze", str(tar), "--json", str(out), "-q").exit_code == 0
    doc = json.loads(out.read_text())
    assert not [f for f in doc["findings"] if f["rule"] == "bundle.checksum"]
    assert {r["rule"]: r["outcome"] for r in doc["rules"]}["bundle.checksum"] == "pass"


def test_two_bundles_of_one_node_are_both_kept_and_flagged(tmp_path: Path) -> None:
    first = _one_node(tmp_path / "a")
    second = tmp_path / "b" / "p5-node-01"
    shutil.copytree(first, second)
    meta = second / "meta.env"
    meta.write_text(re.sub(r"collected_at=\S+", "collected_at=2026-12-02T09:00:00Z", meta.read_text()))
    out = tmp_path / "f.json"
    result = run("analyze", str(first), str(second), "--json", str(out), "-q")
    assert result.exit_code == 0
    doc = json.loads(out.read_text())
    assert sorted(n["node"] for n in doc["nodes"]) == ["p5-node-01", "p5-node-01#2"]
    assert any(
        f["rule"] == "bundle.checksum" and "claims the same node" in f["message"] for f in doc["findings"]
    )
    assert "several bundles claim node p5-node-01" in result.stderr


def _bare_node(tmp_path: Path, files: dict[str, tuple[str, str]]) -> Path:
    node = tmp_path / "bare-01"
    (node / "cmd").mkdir(parents=True)
    (node / "meta.env").write_text("node=bare-01\ncollected_at=2026-12-01T08:00:00Z\n")
    rows = ["path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote"]
    for name, (kind, text) in files.items():
        (node / name).write_text(text)
        rows.append(f"{name}\t{kind}\t0\t0.1\t{len(text)}\t-\t{kind}\t")
    (node / "manifest.tsv").write_text("\n".join(rows) + "\n")
    return node


def test_no_gpu_data_is_incomplete_never_no_concerns(tmp_path: Path) -> None:
    uptime = fixture_text("uptime", "handwritten-proc-uptime.txt")
    node = _bare_node(tmp_path, {"cmd/uptime.txt": ("uptime", uptime)})
    out, md = tmp_path / "f.json", tmp_path / "r.md"
    result = run("analyze", str(node), "--json", str(out), "--md", str(md))
    verdict = json.loads(out.read_text())["verdict"]
    assert verdict["status"] == "incomplete", verdict
    assert {r["what"] for r in verdict["not_examined"]} == {
        "GPU state (nvidia-smi -q, --query-gpu or the nvidia-smi table)",
        "kernel log (dmesg / journalctl -k)",
    }
    assert "No concerns" not in result.stdout and "Incomplete" in result.stdout
    assert "not examined: GPU state" in result.stdout
    assert "**Incomplete**" in md.read_text()


def test_meta_only_bundle_passes_no_check(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    result = run("analyze", str(_bare_node(tmp_path, {})), "--json", str(out))
    doc = json.loads(out.read_text())
    assert doc["verdict"]["status"] != "no-concerns"
    assert "[OK]" not in result.stdout  # nothing was read, so nothing passed
    assert not [r["rule"] for r in doc["rules"] if r["outcome"] == "pass"]


def test_cause_and_victim_on_a_saturated_file_system(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    assert run("analyze", str(SAMPLES / "fsx-saturated" / "bundle"), "--json", str(out), "-q").exit_code == 0
    verdict = json.loads(out.read_text())["verdict"]
    assert verdict["worst_nodes"] == []  # every node is a victim of the file system
    assert {"fs.fsx.utilization_sustained", "fs.verdict"} <= {c["rule"] for c in verdict["cluster_wide"]}


def test_ranking_puts_criticals_first_everywhere(tmp_path: Path) -> None:
    out, html, md = tmp_path / "f.json", tmp_path / "r.html", tmp_path / "r.md"
    result = run(
        "analyze",
        str(SAMPLES / "xid-ecc-3node" / "bundle"),
        "--json",
        str(out),
        "--html",
        str(html),
        "--md",
        str(md),
    )
    worst = json.loads(out.read_text())["verdict"]["worst_nodes"]
    assert worst[0]["critical"] >= 1
    assert [w["critical"] for w in worst] == sorted((w["critical"] for w in worst), reverse=True)
    order = [w["node"] for w in worst]
    box = html.read_text().split('id="verdict"', 1)[1].split("</div>", 1)[0]
    terminal = result.stdout.split("Verdict", 1)[1]
    markdown = md.read_text().split("## Verdict", 1)[1]
    for text in (box, terminal, markdown):
        positions = [text.index(n) for n in order]
        assert positions == sorted(positions), (order, text[:400])
        assert f"{worst[0]['critical']} critical" in text  # the numbers are labelled


def test_terminal_wraps_to_columns_and_verbose_unfolds(tmp_path: Path) -> None:
    bundle = str(SAMPLES / "nccl-slow-node" / "bundle")
    narrow = run("analyze", bundle, env={"COLUMNS": "80"})
    longest = max(len(line) for line in narrow.stdout.splitlines())
    assert longest <= 80, longest
    wide = run("analyze", bundle, env={"COLUMNS": "200"})
    assert max(len(line) for line in wide.stdout.splitlines()) > 80
    folded = [line for line in narrow.stdout.splitlines() if "-v lists every one" in line]
    verbose = run("analyze", bundle, "-v", env={"COLUMNS": "80"})
    assert "-v lists every one" not in verbose.stdout
    assert len(verbose.stdout.splitlines()) >= len(narrow.stdout.splitlines()) + len(folded)


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
def test_sql_on_a_kept_database(tmp_path: Path, fmt: str) -> None:
    db = tmp_path / "t.duckdb"
    assert run("analyze", str(SAMPLES / "xid-ecc-3node" / "bundle"), "--db", str(db), "-q").exit_code == 0
    result = run(
        "sql",
        str(db),
        "SELECT xid, count(*) AS n FROM kernel_event GROUP BY xid ORDER BY xid",
        "--format",
        fmt,
    )
    assert result.exit_code == 0
    assert "48" in result.stdout
    bad = CliRunner().invoke(cli, ["sql", str(db), "SELECT nope"])
    assert bad.exit_code == 2 and "Binder Error" in bad.output


def test_cluster_entry_counts_named_nodes_only() -> None:
    """A finding whose params hold a node *count* is grouped without failing (it once raised TypeError
    on a cluster that had a placement finding beside others of its rule)."""
    from analyzer.judge.findings import Finding, Route, Severity
    from analyzer.model.verdict import RuleScope, _cluster_entry

    def finding(node: str | None, params: dict) -> Finding:
        route = Route(owner="node-hardware", target="ops", action="check")
        return Finding("placement.no_pg", 1, Severity.WARNING, node, None, "m", params, route)

    group = [finding(None, {"nodes": 12, "nodes_without": ["a"]}), finding("b", {"nodes": ["c", 7]})]
    assert group[0].nodes_named == set() and group[1].nodes_named == {"b", "c"}
    assert _cluster_entry("placement.no_pg", group, RuleScope(), False)["nodes"] == 2
