"""Every chart the sample scenarios draw says what it plots: its title names the metric, its value axis
starts at zero (a colour scale that does not says so in the figure's note), its legend is whole, and a
time axis spans the data.

The checks walk every figure of xid-ecc-3node, nccl-slow-node and fsx-saturated (their real bundles,
analyzed as `hptriage analyze --html` does); a chart drawn the way the FSx chart used to be (titled
"utilisation", a truncated axis, a legend beyond the figure's edge) fails them.
"""

from __future__ import annotations

import html
import re
from typing import Any

import matplotlib.dates as mdates
import pytest

from analyzer.judge.settings import load_settings
from analyzer.pipeline import analyze
from reports import charts
from reports.render import draw_charts, render_html
from tests.conftest import SAMPLES

SCENARIOS = ("xid-ecc-3node", "nccl-slow-node", "fsx-saturated")
#: A CloudWatch metric name in a series label (DiskIopsUtilization, DataReadBytes).
METRIC = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]*)+\b")
#: How far past the data a time axis may run, as a share of the data's span (or a minute).
TIME_SLACK = 0.05


def _drawn(data: Any) -> list[tuple[dict[str, Any], Any, str]]:
    """(figure as the report lists it, its matplotlib figure laid out, its SVG) for each drawn chart."""
    kept: list[Any] = []
    original = charts.to_svg

    def keep(fig: Any) -> str:
        fig.draw_without_rendering()
        kept.append(fig)
        return original(fig)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(charts, "to_svg", keep)
        figures = draw_charts(data)
    drawn = [f for f in figures if f["svg"]]
    assert len(drawn) == len(kept), "one matplotlib figure per drawn chart"
    return [(f, fig, f["svg"]) for f, fig in zip(drawn, kept, strict=True)]


@pytest.fixture(scope="module")
def drawn() -> dict[str, list[tuple[dict[str, Any], Any, str]]]:
    settings = load_settings()
    out = {}
    for name in SCENARIOS:
        data = analyze([SAMPLES / name / "bundle"], settings, charts=True, jobs=1)
        out[name] = _drawn(data)
    return out


def _svg_text(svg: str) -> str:
    return " ".join(html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))


def _is_time_axis(ax: Any) -> bool:
    return isinstance(ax.xaxis.get_major_formatter(), (mdates.AutoDateFormatter, mdates.ConciseDateFormatter))


def problems(figure: dict[str, Any], fig: Any, svg: str, tight: bool = True) -> list[str]:
    """What a chart fails of the four properties; empty when it has them all."""
    found: list[str] = []
    ax = fig.axes[0]
    colour_bars = fig.axes[1:]
    title = ax.get_title()
    note = f"{figure.get('note', '')} {figure.get('scale', '')}"
    said = f"{title} {note}"
    # 1. the title names the metric plotted
    if _is_time_axis(ax):
        names = {m for line in ax.get_lines() for m in METRIC.findall(line.get_label())}
        if not names:
            found.append(f"{title!r}: no metric named in the series labels")
        found += [f"{title!r} does not name {m}" for m in sorted(names) if m not in title]
    else:
        label = (colour_bars[0].get_ylabel() if ax.images and colour_bars else ax.get_ylabel()) or ""
        metric = label.split(" (")[0].strip()
        if not metric or metric.lower() not in title.lower():
            found.append(f"{title!r} does not name the metric of its value axis ({label!r})")
    # 2. value axes start at zero, or the chart says they do not
    if not ax.images:
        low = ax.get_ylim()[0]
        if low != 0 and "does not start at 0" not in said:
            found.append(f"{title!r}: y axis starts at {low:g}, not 0, and the chart does not say so")
    for bar in colour_bars:
        low = min(bar.get_ylim())
        if low != 0 and not ("does not start at 0" in note and f"colour from {low:g}" in note):
            found.append(f"{title!r}: colour scale starts at {low:g}, not 0, and the note does not say so")
    # 3. legends are whole: every label complete in the SVG text, every entry inside the saved figure
    text = re.sub(r"\s+", " ", _svg_text(svg))
    dpi = fig.dpi
    saved = fig.get_tightbbox().padded(0.1) if tight else fig.bbox_inches
    for legend in (a.get_legend() for a in fig.axes):
        if legend is None:
            continue
        for handle in legend.legend_handles:
            words = re.sub(r"\s+", " ", handle.get_label())
            if words not in text:
                found.append(f"{title!r}: legend label {words!r} is not whole in the SVG")
        for entry in legend.get_texts():
            box = entry.get_window_extent()
            x0, x1, y0, y1 = box.x0 / dpi, box.x1 / dpi, box.y0 / dpi, box.y1 / dpi
            if x0 < saved.x0 - 1e-3 or x1 > saved.x1 + 1e-3 or y0 < saved.y0 - 1e-3 or y1 > saved.y1 + 1e-3:
                found.append(f"{title!r}: legend entry {entry.get_text()!r} runs past the figure's edge")
    # 4. a time axis spans the data, with a small margin
    if _is_time_axis(ax):
        data_lines = [line for line in ax.get_lines() if line.get_transform() == ax.transData]
        xs = [float(x) for line in data_lines for x in line.get_xdata(orig=False)]
        left, right = ax.get_xlim()
        first, last = min(xs), max(xs)
        slack = (last - first) * TIME_SLACK or 1 / 1440
        if not (first - slack <= left <= first and last <= right <= last + slack):
            found.append(f"{title!r}: time axis {left}..{right} does not span the data {first}..{last}")
    return found


def test_every_sample_chart_names_its_metric_starts_at_zero_and_keeps_its_legend(
    drawn: dict[str, list[tuple[dict[str, Any], Any, str]]],
) -> None:
    titles = {name: [f["title"] for f, _, _ in figures] for name, figures in drawn.items()}
    # the charts each scenario is about are drawn, and so walked here
    assert any("DiskIopsUtilization" in t for t in titles["fsx-saturated"]), titles
    assert any("DataReadBytes" in t for t in titles["fsx-saturated"]), titles
    assert any("iowait" in t for t in titles["fsx-saturated"]), titles
    assert any("busbw" in t for t in titles["nccl-slow-node"]), titles
    assert any("temperature" in t for t in titles["xid-ecc-3node"]), titles
    walked = 0
    for name, figures in drawn.items():
        for figure, fig, svg in figures:
            assert problems(figure, fig, svg) == [], (name, figure["title"])
            walked += 1
    assert walked >= 8


def test_fsx_chart_is_titled_by_its_metric_from_zero(
    drawn: dict[str, list[tuple[dict[str, Any], Any, str]]],
) -> None:
    figure, fig, svg = next(x for x in drawn["fsx-saturated"] if "DiskIopsUtilization" in x[0]["title"])
    ax = fig.axes[0]
    assert ax.get_title() == figure["title"] and "utilisation" not in figure["title"].lower()
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 100, "a percentage from 0 to at least 100"
    legend = ax.get_legend()
    assert legend is not None
    box, area = legend.get_window_extent(), ax.get_window_extent()
    assert box.y1 <= area.y0, "the legend sits below the plot"
    labels = [h.get_label() for h in legend.legend_handles]
    assert "fs-0123456789abcdef0 DiskIopsUtilization (Maximum)" in labels
    assert "fs-0123456789abcdef0 DiskIopsUtilization (Maximum)" in _svg_text(svg)


def test_the_checks_fail_a_chart_drawn_the_old_way() -> None:
    """A chart titled 'utilisation', on an axis from 55, with its legend past the figure's right edge."""
    plt = charts._plt()
    fig, ax = plt.subplots(figsize=(3.0, 2.0))
    when = [mdates.datestr2num("2026-12-01 06:30"), mdates.datestr2num("2026-12-01 08:00")]
    label = "fs-0123456789abcdef0 DiskIopsUtilization (Maximum)"
    ax.plot(mdates.num2date(when), [55.0, 95.0], label=label)
    ax.set_xlim(when[0] - 30, when[1] + 30)  # a month either side of 90 minutes of data
    ax.set_title("FSx utilisation")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.draw_without_rendering()
    svg = charts.to_svg(fig).replace(label, label[:20])  # the legend label cut short in the SVG
    found = problems({"title": "FSx utilisation", "note": ""}, fig, svg, tight=False)
    assert any("does not name DiskIopsUtilization" in p for p in found), found
    assert any("y axis starts at" in p for p in found), found
    assert any("is not whole in the SVG" in p for p in found), found
    assert any("runs past the figure's edge" in p for p in found), found
    assert any("does not span the data" in p for p in found), found


def test_a_colour_scale_not_from_zero_is_said() -> None:
    """The pairwise heatmap's colours run over the pairs' range: its note says where they start."""
    matrix = [[None, 398.0, 241.0], [398.0, None, 244.0], [241.0, 244.0, None]]
    from analyzer.model.report_data import ReportData

    data = ReportData(
        [],
        [{"node": n} for n in "abc"],
        [],
        [],
        [],
        charts={"pairs": {"labels": ["a", "b", "c"], "matrix": matrix, "highlight": ["c"], "note": ""}},
    )
    ((figure, fig, svg),) = _drawn(data)
    assert "colour from 241 to 398 GB/s" in figure["scale"] and "does not start at 0" in figure["scale"]
    assert problems(figure, fig, svg) == []
    assert problems({**figure, "scale": ""}, fig, svg), "without saying so the checks fail"
    assert "colour from 241 to 398 GB/s" in render_html(data), "the figure's caption says it"
