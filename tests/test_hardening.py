"""Adversarial inputs: bounded time and memory, a parse problem, and the rest of the bundle analyzed.

Sizes are those of the issue (a 200 MB single-line file, a kernel log of 5 million lines, a CSV of
100,000 columns, deeply nested JSON) where the test can afford them; each test says what it bounds.
"""

from __future__ import annotations

import json
import resource
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import parsers
from analyzer.cli import cli
from analyzer.store.coerce import coerce_rows
from parsers._base import MAX_ISSUES, Column, ParseError, ParserFailure
from tests.conftest import ROOT

REGRESSIONS = sorted((ROOT / "tests" / "fuzz" / "regressions").glob("*.bin"))


def _node(tmp_path: Path) -> Path:
    node = tmp_path / "node"
    shutil.copytree(ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-01", node)
    return node


def _analyze(path: Path, out: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["analyze", str(path), "--json", str(out), "-q", "--jobs", "1"])
    return result.exit_code, json.loads(out.read_text())


def _problems(doc: dict, name: str) -> list[str]:
    return [p["error"] for p in doc["parse_problems"] if name in (p.get("file") or "")]


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.name)
def test_fuzz_findings_stay_fixed(path: Path) -> None:
    """Inputs the coverage-guided fuzzer found (numbers past 64 bits crashed the Arrow conversion)."""
    from analyzer.store.tables import rows_to_arrow

    text = path.read_bytes().decode("utf-8", errors="replace")
    for kind in parsers.KINDS:
        try:
            result = parsers.module_for(kind).parse(text)
        except ParserFailure:
            continue
        for table, rows in result.table_rows().items():
            if rows:
                rows_to_arrow(table, rows)


def test_numbers_past_64_bits_become_null_not_a_crash() -> None:
    cols = (Column("a", "int"), Column("b", "float"))
    assert coerce_rows([{"a": 10**30, "b": 10**400}], cols) == [{"a": None, "b": None}]
    assert coerce_rows([{"a": -(2**63), "b": 1}], cols) == [{"a": -(2**63), "b": 1.0}]


def test_a_200_mb_single_line_is_a_parse_problem_and_the_rest_is_read(tmp_path: Path) -> None:
    node = _node(tmp_path)
    (node / "cmd" / "iostat.txt").write_text("x" * (200 * 1024 * 1024))
    start = time.perf_counter()
    code, doc = _analyze(node, tmp_path / "f.json")
    assert time.perf_counter() - start < 120  # bounded: the parser never sees the line
    assert code == 0
    assert any("characters long" in e for e in _problems(doc, "iostat.txt"))
    assert any(f["rule"] == "gpu.xid" for f in doc["findings"])  # the rest of the bundle analyzed


def test_a_kernel_log_of_5_million_lines_is_read_in_bounded_time() -> None:
    text = "".join(
        f"[{i / 1000:12.6f}] usb 1-1: new high-speed USB device number {i}\n" for i in range(5_000_000)
    )
    text += "[99999.000000] NVRM: Xid (PCI:0000:5d:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    rows = parsers.module_for("dmesg").parse(text).rows("kernel_event")
    assert time.perf_counter() - start < 120
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 3 * 1024  # MiB
    assert [(r["event_type"], r["xid"], r["line"]) for r in rows] == [("xid", 79, 5_000_001)]


def test_a_csv_of_100000_columns_keeps_a_bounded_list_of_problems() -> None:
    header = ",".join(f"c{i}" for i in range(100_000))
    row = ",".join("1" for _ in range(100_000))
    start = time.perf_counter()
    try:
        result = parsers.module_for("cloudwatch").parse(f"{header}\n{row}\n{row}\n")
    except ParseError:
        return
    assert time.perf_counter() - start < 60
    assert len(result.issues) <= MAX_ISSUES and result.issues_dropped > 0


@pytest.mark.parametrize("kind", ["cloudwatch", "placement", "dcgmi-diag", "iostat", "fi-info"])
def test_deeply_nested_json_is_a_parse_error(kind: str) -> None:
    for text in ("[" * 200_000 + "]" * 200_000, '{"a":' * 100_000 + "1" + "}" * 100_000):
        with pytest.raises(ParserFailure):
            parsers.module_for(kind).parse(text)


def test_nested_json_in_a_bundle_is_a_problem_and_the_rest_is_read(tmp_path: Path) -> None:
    node = _node(tmp_path)
    (node / "cmd" / "placement.txt").write_text('{"items":' * 50_000 + "1" + "}" * 50_000)
    code, doc = _analyze(node, tmp_path / "f.json")
    assert code == 0
    assert any("nested too deep" in e for e in _problems(doc, "placement.txt"))
    assert any(f["rule"] == "gpu.xid" for f in doc["findings"])


def test_hptriage_parse_refuses_a_giant_line(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("y" * (17 * 1024 * 1024))
    result = CliRunner().invoke(cli, ["parse", str(path), "--kind", "dmesg"])
    assert result.exit_code == 2 and "characters long" in result.output
