"""Charts that say one thing each, checked on clusters analyzed end to end.

The per-node busbw chart marks nodes by busbw only; the pairwise heatmap of a 64-node cluster keeps the
slow node, every node it ran with and says what it left out; the history timeline draws critical marks
above warning dots; every legend sits outside the data area.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.rules import load_rules
from analyzer.judge.settings import load_settings
from analyzer.model.chart_data import busbw_flagged, iowait_flagged, pair_flagged
from analyzer.model.report_data import ReportData, gather
from analyzer.store.tables import connect
from reports import charts
from reports.history import timeline_svg
from reports.render import draw_charts, render_html
from tests.conftest import ROOT, SAMPLES

_spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

NODES = 64
#: generate.py's seed whose slow node (p5-node-0061) ran with nodes 59, 60, 62 and 63: all past the first
#: 32 by name, so a heatmap cut by order would leave the slow node's row empty.
SEED = 4
ROUTE = Route("node-hardware", "hyperpod-node-debugger § G", "enable persistence mode (nvidia-smi -pm 1)")


def _analyze(paths: list[Path]) -> ReportData:
    """The analysis `hptriage analyze --html` runs, with the chart data gathered."""
    settings = load_settings()
    workdir = Path(tempfile.mkdtemp(prefix="hptriage-test-"))
    try:
        con = connect(None)
        summary = load(con, paths, workdir, Limits(), jobs=1)
        modules = load_rules()
        findings, outcomes = run_rules(con, modules, settings)
        data = gather(con, summary, findings, outcomes, modules, settings, charts=True)
        con.close()
        return data
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _figures(draw: Any) -> list[Any]:
    """The matplotlib figures a drawing call makes, laid out, before they become SVG."""
    kept: list[Any] = []
    original = charts.to_svg

    def keep(fig: Any) -> str:
        fig.draw_without_rendering()
        kept.append(fig)
        return original(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(charts, "to_svg", keep)
        draw()
    return kept


@pytest.fixture(scope="module")
def slow64(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """64 generated p5 nodes, one slow in every pairwise nccl-tests run it is in, analyzed."""
    cluster = tmp_path_factory.mktemp("slow64") / "cluster"
    expected = generate.generate(cluster, NODES, "nccl-slow-node", seed=SEED)
    (slow,) = expected["faults"]["nccl.pair.slow"]
    index = expected["node_names"].index(slow)
    partners = set()
    for log in (cluster / "extra").glob("nccl-pair-*.txt"):
        a, b = (int(x) for x in log.stem.split("-")[2:])
        if index in (a, b):
            partners.add(generate.node_name(b if a == index else a))
    return {"slow": slow, "partners": partners, "data": _analyze([cluster])}


def test_heatmap_at_64_nodes_keeps_the_slow_node_and_its_partners(slow64: dict[str, Any]) -> None:
    slow, partners = slow64["slow"], slow64["partners"]
    pairs = slow64["data"].charts["pairs"]
    assert len(partners) == 4 and sorted(partners)[0] > generate.node_name(31), "partners past the first 32"
    assert len(pairs["labels"]) == 32 and pairs["nodes"] == NODES and pairs["left_out"] == 32
    assert slow in pairs["labels"] and partners <= set(pairs["labels"])
    assert pairs["flagged"] == [slow] and set(pairs["partners"]) == partners
    assert pairs["highlight"] == [slow], "only the node a pairwise finding names is marked"
    row = pairs["matrix"][pairs["labels"].index(slow)]
    drawn = {pairs["labels"][j] for j, v in enumerate(row) if v is not None}
    assert drawn == partners, "the slow node's row holds every pair it ran"
    note = pairs["note"]
    assert note.startswith(
        f"32 of 64 nodes shown: the flagged node ({slow}), its 4 partners and the 27 slowest"
    )
    assert note.endswith("32 nodes with no pairwise finding left out")
    figure = next(f for f in draw_charts(slow64["data"]) if f["title"] == "Pairwise nccl-tests busbw")
    assert figure["note"] == note and f"▶ {slow}" in figure["svg"]
    html = render_html(slow64["data"])
    assert "32 of 64 nodes shown: the flagged node" in html, "the caption says what was cut"


def test_busbw_bars_mark_the_slow_node_only(slow64: dict[str, Any]) -> None:
    (bars,) = slow64["data"].charts["busbw"]
    assert bars["highlight"] == [slow64["slow"]]
    assert "red hatched: 1 node(s) below the warning line or named by a busbw finding" in bars["note"]


@pytest.fixture(scope="module")
def throttled(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    """The 8-node sample with one slow node (p5-node-05), p5-node-01's GPUs in a software thermal
    slowdown: a GPU warning that is not a busbw finding."""
    bundle = tmp_path_factory.mktemp("throttled") / "bundle"
    shutil.copytree(SAMPLES / "nccl-slow-node" / "bundle", bundle)
    node = bundle / "p5-node-01"
    smi = node / "cmd" / "nvidia-smi-q.txt"
    old = smi.read_bytes()
    new = re.sub(rb"(SW Thermal Slowdown\s+: )Not Active", rb"\1Active", old)
    assert new != old
    smi.write_bytes(new)
    manifest = node / "manifest.tsv"
    text = manifest.read_text().replace(hashlib.sha256(old).hexdigest(), hashlib.sha256(new).hexdigest())
    manifest.write_text(text.replace(f"\t{len(old)}\t", f"\t{len(new)}\t"))
    return _analyze([bundle])


def test_a_gpu_warning_does_not_colour_the_busbw_chart(throttled: ReportData) -> None:
    concerns = {(f.rule, f.node) for f in throttled.findings if f.severity.value in ("critical", "warning")}
    assert ("gpu.clocks.throttled", "p5-node-01") in concerns
    assert {rule for rule, node in concerns if node == "p5-node-01"} == {"gpu.clocks.throttled"}
    assert "p5-node-01" in throttled.charts["sick_nodes"], "a node with a concern..."
    (bars,) = throttled.charts["busbw"]
    assert bars["highlight"] == ["p5-node-05"], "...but no busbw concern is not marked on the busbw chart"
    assert throttled.charts["pairs"]["highlight"] == ["p5-node-05"]
    figures = _figures(lambda: draw_charts(throttled))
    bar_fig = figures[0]
    ax = bar_fig.axes[0]
    colour = {
        tick.get_text(): bar.get_facecolor()
        for tick, bar in zip(ax.get_xticklabels(), ax.patches, strict=True)
    }
    assert colour["p5-node-01"] == colour["p5-node-02"] != colour["p5-node-05"]


def _finding(rule: str, node: str, params: dict[str, Any] | None = None) -> Finding:
    return Finding(
        rule, 1, Severity.WARNING, node, None, f"{node}: {rule}", params or {}, ROUTE, [Evidence("f", 1, "x")]
    )


def test_only_the_charts_own_findings_flag_a_node() -> None:
    findings = [
        _finding("gpu.persistence.off", "n1"),
        _finding("nccl.busbw.straggler", "n2", {"metric": "single-node all_reduce busbw"}),
        _finding("nccl.busbw.straggler", "n3", {"metric": "pairwise all_reduce busbw"}),
        _finding("nccl.pair.slow", "n4"),
        _finding("fs.iowait.high", "n5"),
    ]
    findings.append(_finding("nccl.pair.outlier", "", {"nodes": ["n6", "n7"]}))
    assert busbw_flagged(findings) == {"multi_node": {"n3", "n4"}, "single_node": {"n2"}}
    assert pair_flagged(findings) == {"n3", "n4", "n6", "n7"}
    rows = [("n1", 2.0), ("n5", 3.0), ("n8", 40.0)]
    assert iowait_flagged(findings, rows, 20.0) == ["n5", "n8"], "above the line, or an iowait finding"


def test_history_timeline_draws_critical_above_warning(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", bundle)
    db, page = tmp_path / "h.duckdb", tmp_path / "h.html"
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(bundle), "--db", str(db), "-q", "--jobs", "1"]).exit_code == 0
    result = runner.invoke(cli, ["history", "--db", str(db), "--html", str(page)])
    assert result.exit_code == 0, result.output
    svg = page.read_text(encoding="utf-8")
    # one snapshot: a node's critical and warning findings sit at the same time, on the same row
    assert 'id="timeline-critical"' in svg and 'id="timeline-warning"' in svg
    assert svg.index('id="timeline-warning"') < svg.index('id="timeline-critical"'), "critical drawn last"


def test_history_timeline_order_whatever_the_finding_order() -> None:
    when = "2026-12-01T08:00:00"
    finding = {"first_seen": when, "last_seen": when}
    data = {
        "nodes": [
            {
                "node": "n1",
                "findings": [{**finding, "severity": "critical"}, {**finding, "severity": "warning"}],
            },
            {
                "node": "n2",
                "findings": [{**finding, "severity": "info"}, {**finding, "severity": "critical"}],
            },
        ]
    }
    svg = timeline_svg(data)
    order = [svg.index(f'id="timeline-{s}"') for s in ("info", "warning", "critical")]
    assert order == sorted(order)


def _assert_legends_outside(figures: list[Any]) -> int:
    """Every legend's box is clear of its axes' data area; the number of legends."""
    legends = 0
    for fig in figures:
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            legends += 1
            box, area = legend.get_window_extent(), ax.get_window_extent()
            assert not box.overlaps(area), (ax.get_title(), box, area)
    return legends


def test_legends_sit_outside_the_data_area(slow64: dict[str, Any]) -> None:
    figures = _figures(lambda: draw_charts(slow64["data"]))
    assert _assert_legends_outside(figures) >= 1, "the busbw chart has a legend of its lines"
    when = ["2026-12-01T08:00:00", "2026-12-01T09:00:00"]
    series = {"fs-1 read": (when, [10.0, 90.0]), "fs-1 write": (when, [95.0, 5.0])}
    figures = _figures(lambda: charts.timeseries(series, 80.0, "FSx utilisation", "%"))
    figures += _figures(
        lambda: charts.bars_with_lines(["a", "b"], [1.0, 9.0], {"warning": 5.0}, set(), "t", "y")
    )
    when_seen = {"first_seen": when[0], "last_seen": when[1]}
    data = {
        "nodes": [{"node": "n1", "findings": [{**when_seen, "severity": s} for s in ("warning", "critical")]}]
    }
    figures += _figures(lambda: timeline_svg(data))
    assert _assert_legends_outside(figures) == 3
