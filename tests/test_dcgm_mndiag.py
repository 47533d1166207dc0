"""DCGM multi-node diagnostics JSON (``dcgmi mndiag --json``): parsed, accepted by ``analyze`` given on its
own or in a cluster's extra/ folder, and judged by gpu.dcgm.mndiag_failed per node.

The JSON documents are the fixtures of tests/fixtures/dcgm-mndiag (derived from NVIDIA/DCGM's writer and
tests, see its PROVENANCE.md); the node bundles hold a real nvidia-smi -q fixture and are named after the
JSON's hosts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import parsers
from analyzer.cli import cli
from analyzer.intake import foreign
from analyzer.intake.foreign import dcgm_mndiag as reader
from analyzer.intake.safe_read import Limits
from tests.conftest import FIXTURES
from tests.rules.helpers import analyze, fixture, write_node

RULE = "gpu.dcgm.mndiag_failed"
FAIL = FIXTURES / "dcgm-mndiag" / "dcgmi-mndiag-unit-test-response-3hosts-2gpus-fail.txt"
RUNNER = FIXTURES / "dcgm-mndiag" / "dcgm-mnubergemm-runner-test-4hosts-cuda-nccl-imex-errors.txt"
MPI = FIXTURES / "dcgm-mndiag" / "dcgm-mnubergemm-mpi-exit-code-2hosts-pass.txt"
RUNTIME = FIXTURES / "dcgm-mndiag" / "dcgmi-mndiag-unit-test-runtime-error-timeout.txt"
SCHEMA_KEYED = FIXTURES / "dcgm-mndiag" / "schema-keyed-2hosts-warn-skip-indent2.txt"


def _bundles(root: Path, *names: str) -> Path:
    q = fixture("nvidia-smi-q", "della-h100-545-single-no-blank-after-banner.txt")
    for name in names:
        write_node(root, name, {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", q)})
    return root


def _analyze_cli(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "f.json"
    result = CliRunner().invoke(
        cli,
        ["analyze", *map(str, inputs), "--json", str(out), "--db", str(tmp_path / "t.duckdb"), "-q"]
        + ["--jobs", "1"],
    )
    return result.exit_code, (json.loads(out.read_text()) if out.exists() else {}), result.output


def _findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["rule"] == RULE]


# --- the parser -------------------------------------------------------------------------------------


def test_the_writers_document_parses_per_host_and_gpu() -> None:
    text = FAIL.read_text(encoding="utf-8")
    assert parsers.detect_kind(text) == "dcgm-mndiag"  # not dcgmi-diag, whose root key it shares
    r = parsers.parse("dcgm-mndiag", text)
    hosts = {h["hostname"]: h for h in r.rows("dcgm_mndiag_host")}
    assert {n: (h["status"], h["failed"], h["gpus"]) for n, h in hosts.items()} == {
        "host-01": ("fail", 1, "0,1"),
        "host-02": ("fail", 1, "0,1"),
        "host-03": ("pass", 0, "0"),
    }
    assert hosts["host-01"]["dcgm_version"] == "4.3.0" and hosts["host-01"]["driver_version"] == "570.32.17"
    failed = [x for x in r.rows("dcgm_mndiag_result") if x["status"] == "fail"]
    assert [(x["hostname"], x["gpu"], x["message"], x["error_id"]) for x in failed] == [
        ("host-01", 1, "CUDA memory allocation failed", "1"),
        ("host-02", 1, "NCCL communication timeout", "1"),
    ]
    lines = text.splitlines()
    assert all('"status" : "Fail"' in lines[x["line"] - 1] for x in failed)
    assert r.rows("dcgm_mndiag_run")[0]["failed_hosts"] == 2 and not r.rows("dcgm_mndiag_error")


def test_mpi_and_runtime_errors_are_errors_not_tied_to_a_gpu() -> None:
    mpi = parsers.parse("dcgm-mndiag", MPI.read_text(encoding="utf-8"))
    assert {e["scope"] for e in mpi.rows("dcgm_mndiag_error")} == {"mpi", "global"}
    assert all(e["error_category"] == "MPI" for e in mpi.rows("dcgm_mndiag_error"))
    assert {x["status"] for x in mpi.rows("dcgm_mndiag_result")} == {"pass"}
    runtime = parsers.parse("dcgm-mndiag", RUNTIME.read_text(encoding="utf-8"))
    assert [(e["scope"], e["message"]) for e in runtime.rows("dcgm_mndiag_error")] == [
        ("runtime", "Multi-node diagnostic failed with timeout")
    ]
    assert not runtime.rows("dcgm_mndiag_host")


def test_the_schemas_root_key_and_warn_skip() -> None:
    r = parsers.parse("dcgm-mndiag", SCHEMA_KEYED.read_text(encoding="utf-8"))
    assert [(h["hostname"], h["status"]) for h in r.rows("dcgm_mndiag_host")] == [
        ("gb200-node-01", "warn"),
        ("gb200-node-02", "skip"),
    ]
    assert r.rows("dcgm_mndiag_result")[0]["info"] == "rerun recommended"


def test_a_dcgmi_diag_document_is_not_taken_for_one() -> None:
    text = (FIXTURES / "dcgmi-diag" / "gb10-423-r1-json-software-fail-testfixture.txt").read_text()
    assert parsers.detect_kind(text) == "dcgmi-diag"


# --- the foreign reader -------------------------------------------------------------------------------


def test_the_reader_detects_by_content_and_writes_an_extra_folder(tmp_path: Path) -> None:
    given = tmp_path / "results-2026.log"  # any name: recognised by content
    shutil.copy(FAIL, given)
    assert foreign.detect(given) == "dcgm-mndiag"
    converted = reader.convert(given, tmp_path / "out", Limits())
    assert [p.name for p in converted.extras] == ["extra"] and not converted.nodes
    assert (converted.extras[0] / "results-2026.log").read_bytes() == FAIL.read_bytes()
    other = tmp_path / "other.json"
    other.write_text('{"DCGM Diagnostic": {"test_categories": []}}')
    assert foreign.detect(other) is None
    assert reader.convert(other, tmp_path / "o2", Limits()).reason


def test_the_reader_respects_the_file_cap(tmp_path: Path) -> None:
    given = tmp_path / "mndiag.json"
    shutil.copy(FAIL, given)
    converted = reader.convert(given, tmp_path / "out", Limits(max_file_bytes=100))
    assert not converted.extras and "cap" in converted.reason


# --- the rule -----------------------------------------------------------------------------------------


def test_rule_flags_the_failing_host_on_its_node_and_names_a_host_not_analyzed(tmp_path: Path) -> None:
    root = _bundles(tmp_path / "cluster", "host-01", "host-03")
    (root / "extra").mkdir()
    shutil.copy(FAIL, root / "extra" / "mndiag.json")
    res = analyze(root)
    assert res.outcome(RULE) == "fail"
    found = {f.params["host"]: f for f in res.of(RULE)}
    assert set(found) == {"host-01", "host-02"}
    on_node = found["host-01"]
    assert (on_node.node, on_node.gpu, on_node.severity.value) == ("host-01", 1, "critical")
    assert "CUDA memory allocation failed" in on_node.message
    assert on_node.evidence[0].file.endswith("extra/mndiag.json") and on_node.evidence[0].line
    assert '"status" : "Fail"' in (on_node.evidence[0].text or "")
    stray = found["host-02"]
    assert stray.node is None and stray.params["matched_node"] is None and "host-02" in stray.message
    assert on_node.params["hosts_not_analyzed"] == ["host-02"]
    assert sorted(res.outcomes[RULE].nodes_checked) == ["host-01", "host-03"]


def test_rule_maps_ec2_names_and_passes_a_clean_run(tmp_path: Path) -> None:
    root = _bundles(tmp_path / "cluster", "b07-p1-dgx-07-c12.cluster.local", "b07-p1-dgx-07-c13")
    (root / "extra").mkdir()
    shutil.copy(MPI, root / "extra" / "mndiag.txt")
    res = analyze(root)
    findings = res.of(RULE)
    assert [(f.node, f.severity.value) for f in findings] == [(None, "warning")]  # the MPI error only
    assert "MPI exited with code: 1" in findings[0].message
    assert sorted(res.outcomes[RULE].nodes_checked) == [
        "b07-p1-dgx-07-c12.cluster.local",
        "b07-p1-dgx-07-c13",
    ]


def test_rule_is_skipped_without_the_json(tmp_path: Path) -> None:
    res = analyze(_bundles(tmp_path / "cluster", "host-01"))
    assert res.outcome(RULE) == "skipped"


# --- hptriage analyze ----------------------------------------------------------------------------------


def test_analyze_given_json_beside_bundles_or_in_extra_gives_the_same_finding(tmp_path: Path) -> None:
    beside = _bundles(tmp_path / "a" / "bundles", "host-01", "host-03")
    given = tmp_path / "a" / "mndiag.json"
    shutil.copy(FAIL, given)
    code, report, output = _analyze_cli(tmp_path / "a", given, beside / "host-01", beside / "host-03")
    assert code == 0, output

    inside = _bundles(tmp_path / "b" / "cluster", "host-01", "host-03")
    (inside / "extra").mkdir()
    shutil.copy(FAIL, inside / "extra" / "mndiag.json")
    code2, report2, output2 = _analyze_cli(tmp_path / "b", inside)
    assert code2 == 0, output2

    def summary(rep: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted(
            (f["node"] or "", f["gpu"], f["severity"], f["params"]["host"], f["params"]["hosts_not_analyzed"])
            for f in _findings(rep)
        )

    assert (
        summary(report)
        == summary(report2)
        == [
            ("", 1, "critical", "host-02", ["host-02"]),
            ("host-01", 1, "critical", "host-01", ["host-02"]),
        ]
    )


def test_analyze_finds_the_json_inside_a_directory(tmp_path: Path) -> None:
    root = _bundles(tmp_path / "cluster", "b07-p1-dgx-07-c17", "b07-p1-dgx-07-c18")
    shutil.copy(RUNNER, root / "mndiag-output.json")  # beside the bundles, not in extra/
    code, report, output = _analyze_cli(tmp_path, root)
    assert code == 0, output
    by_node = {f["node"]: f for f in _findings(report)}
    assert set(by_node) == {"b07-p1-dgx-07-c17", "b07-p1-dgx-07-c18"}
    assert by_node["b07-p1-dgx-07-c18"]["gpu"] is None  # two GPUs failed there
    assert by_node["b07-p1-dgx-07-c18"]["params"]["gpus"] == [0, 1]
    assert sorted(by_node["b07-p1-dgx-07-c17"]["params"]["hosts_not_analyzed"]) == [
        "b07-p1-dgx-07-c12",
        "b07-p1-dgx-07-c13",
    ]
