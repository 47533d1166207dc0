"""Charts only where they inform: uniform grids said in a line, temperature coloured against its
thresholds, GPUs and nodes with findings marked on the grids."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from analyzer.judge.findings import Evidence, Finding, Outcome, Route, Severity
from analyzer.judge.settings import load_settings
from analyzer.model.chart_data import gpu_grid, sick_gpus, temperature_scale
from analyzer.model.report_data import ReportData
from reports.render import draw_charts, render_html

ROUTE = Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace")


def _gpu_db(temps: dict[str, list[float]], clock: float = 345.0) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        'CREATE TABLE gpu (node VARCHAR, "index" INTEGER, temp_c DOUBLE, sm_clock_mhz DOUBLE,'
        " ecc_corrected_volatile DOUBLE, power_draw_w DOUBLE)"
    )
    for node, values in temps.items():
        for g, t in enumerate(values):
            con.execute("INSERT INTO gpu VALUES (?, ?, ?, ?, 0, 300)", [node, g, t, clock])
    return con


def _finding(node: str, gpu: int | None, rule: str = "gpu.ecc.uncorrectable") -> Finding:
    return Finding(
        rule,
        1,
        Severity.CRITICAL,
        node,
        gpu,
        f"{node} GPU {gpu} has uncorrectable ECC errors",
        {},
        ROUTE,
        [Evidence(f"{node}/cmd/nvidia-smi-q.txt", 1, "DRAM Uncorrectable : 2")],
    )


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


COOL = {"n1": [28.0, 30.0, 31.0, 33.0], "n2": [29.0, 30.0, 30.0, 32.0], "n3": [28.0, 29.0, 30.0, 31.0]}


def _data(charts: dict) -> ReportData:
    return ReportData(
        bundles=[],
        nodes=[{"node": n} for n in COOL],
        findings=[_finding("n2", 3)],
        outcomes=[Outcome("gpu.ecc.uncorrectable", "fail", 1)],
        problems=[],
        charts=charts,
    )


def test_uniform_grid_is_one_line_not_a_chart() -> None:
    con = _gpu_db(COOL)
    clock = gpu_grid(con, "sm_clock_mhz")
    ecc = gpu_grid(con, "ecc_corrected_volatile")
    assert clock["uniform"] == 345.0 and ecc["uniform"] == 0.0
    assert gpu_grid(con, "temp_c")["uniform"] is None
    figures = {f["title"]: f for f in draw_charts(_data({"gpu_sm_clock": clock, "gpu_ecc": ecc}))}
    line = figures["GPU SM clock"]
    assert line["svg"] == "" and line["note"].startswith("every GPU reads 345 MHz")
    assert figures["GPU corrected ECC (volatile)"]["svg"] == ""
    html = render_html(_data({"gpu_sm_clock": clock, "gpu_ecc": ecc}))
    assert "<svg" not in html
    html = _text(html)
    assert "GPU SM clock: every GPU reads 345 MHz (12 GPUs on 3 nodes)" in html
    assert "GPU corrected ECC (volatile): every GPU reads 0 errors" in html


def test_temperature_colour_scale_follows_the_thresholds(tmp_path: Path) -> None:
    con = _gpu_db(COOL)
    scale = temperature_scale(load_settings(), con)
    settings = load_settings()
    warning = settings.value("gpu.temperature.high", "warning_c")
    critical = settings.value("gpu.temperature.high", "critical_c")
    assert scale["lines"] == {"warning": warning, "critical": critical}
    assert scale["vmax"] == critical and scale["vmin"] <= 20, "28-33 °C sits at the cool end, not min-max"
    site = tmp_path / "site.toml"
    site.write_text("[gpu.temperature.high]\nwarning_c = 70\ncritical_c = 80\n")
    assert temperature_scale(load_settings(site), con)["lines"] == {"warning": 70, "critical": 80}
    grid = gpu_grid(con, "temp_c", scale=scale)
    svg = next(f for f in draw_charts(_data({"gpu_temp": grid})) if f["title"] == "GPU temperature")
    assert f"{critical:g} critical" in svg["svg"] and f"{warning:g} warning" in svg["svg"]
    assert f"colour from {scale['vmin']:g} to {critical:g} °C" in svg["note"]


def test_sick_gpu_cell_and_node_are_marked_on_the_grid() -> None:
    con = _gpu_db(COOL)
    cells, rows = sick_gpus([_finding("n2", 3), _finding("n3", None, "gpu.count.low")])
    assert cells == {("n2", 3)} and rows == {"n2", "n3"}
    grid = gpu_grid(con, "temp_c", cells, rows, temperature_scale(load_settings(), con))
    assert grid["marked"] == [["n2", 3]] and grid["marked_rows"] == ["n2", "n3"]
    html = render_html(_data({"gpu_temp": grid}))
    assert 'id="gpu_temp-marked-n2-GPU_3"' in html
    assert len(re.findall(r'id="gpu_temp-marked-', html)) == 1, "only the GPU with a finding"
    assert "▶ n2" in html and "▶ n3" in html and "▶ n1" not in html
    assert "hatched, outlined cells: GPUs with a finding (n2 GPU 3)" in html


def test_sick_nodes_are_kept_when_the_grid_is_cut() -> None:
    temps = {f"n{i:03d}": [30.0 + (i % 3)] * 4 for i in range(60)}
    temps["n777"] = [30.0] * 4  # at the median: would be cut without its finding
    grid = gpu_grid(_gpu_db(temps), "temp_c", {("n777", 1)}, {"n777"})
    assert "n777" in grid["rows"] and grid["left_out"] == 61 - len(grid["rows"])


def test_sample_report_grids(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    charts, timeline = html.split('<h2 id="timeline">', 1)
    assert charts.count("<svg") == 1, "only the temperature grid varies, so only it is drawn"
    assert timeline.count("<svg") == 1, "and the cluster timeline"
    # xid-ecc-3node: p5-node-01 GPU 3 has the uncorrectable ECC errors and its Xid 48
    assert 'id="gpu_temp-marked-p5-node-01-GPU_3"' in html
    text = _text(html)
    assert "GPU SM clock: every GPU reads 345 MHz" in text
    assert "GPU corrected ECC (volatile): every GPU reads 0 errors" in text
