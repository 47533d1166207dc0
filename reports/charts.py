"""Charts drawn with matplotlib and inlined as SVG: no JavaScript, no network, readable in grey.

Each function takes plain data (already summarised for the report) and returns an ``<svg>`` string.
Sizes adapt to the data so a 1,000-node cluster stays readable: long node lists are cut to the
interesting ends (the report says how many were left out).

Every chart is titled by the metric it plots; a value axis starts at zero (a colour scale that does not
is said in the figure's note by the renderer); a legend sits below the plot, its labels wrapped to the
figure's width so none is cut; a time axis spans the data with a small margin.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Sequence
from datetime import datetime
from types import ModuleType
from typing import Any

#: Node count above which per-node bar charts show only the worst and best ends.
MAX_BARS = 40
#: A time axis spans the data plus this share of its span on each side.
TIME_MARGIN = 0.02
#: Characters of a legend label per inch of figure width before it wraps (7 pt DejaVu Sans).
LEGEND_CHARS_PER_INCH = 14

_LINE_STYLES = {
    "expected": ("-", "#1b6e20"),
    "warning": ("--", "#8a5a00"),
    "failure": (":", "#b00020"),
    "critical": (":", "#b00020"),
}


def _plt() -> ModuleType:
    """matplotlib.pyplot, set up for SVG (imported on first use: only the HTML and PDF reports draw)."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.family": "DejaVu Sans",
            "font.size": 8,
            "svg.fonttype": "none",  # text stays text: searchable, and smaller files
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def to_svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    _plt().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: the SVG is inlined in HTML
    # Inline SVG in HTML needs no namespace declarations (the HTML parser assigns them); dropping them
    # leaves the report with no http(s) string at all, so "no external reference" is easy to check.
    text = re.sub(r'\s+xmlns(?::xlink)?="[^"]*"', "", text, count=2)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def legend_outside(ax: Any) -> Any:
    """The axes' legend to the right of the data area, its top at the axes' top: it never covers a bar,
    a line or a marker (the SVG is cut to fit with ``bbox_inches="tight"``, so it is kept)."""
    return ax.legend(
        fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=True
    )


def legend_below(ax: Any, width_in: float) -> Any:
    """The axes' legend under the plot, below its tick labels, one entry a row and left-aligned: it
    never covers the data, and a label wider than the figure wraps instead of running off its edge (the
    SVG is cut to fit with ``bbox_inches="tight"``, so the whole legend is kept)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    chars = max(30, int(width_in * LEGEND_CHARS_PER_INCH))
    wrapped = [textwrap.fill(label, chars, break_on_hyphens=False) for label in labels]
    fig = ax.figure
    fig.draw_without_rendering()  # lays out the tick labels, so the legend goes below them
    inverse = ax.transAxes.inverted()
    below = ax.get_tightbbox()
    _, top = inverse.transform((0, below.y0))
    return ax.legend(
        handles,
        wrapped,
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(0.0, top - 0.02),
        borderaxespad=0.0,
        frameon=True,
        ncols=1,
    )


def bars_with_lines(
    labels: Sequence[str],
    values: Sequence[float],
    lines: dict[str, float],
    highlight: set[str],
    title: str,
    ylabel: str,
    lower_is_worse: bool = True,
) -> tuple[str, int]:
    """Per-node bars with reference lines; returns (svg, number of nodes left out)."""
    plt = _plt()
    pairs = sorted(zip(labels, values, strict=True), key=lambda p: p[1], reverse=not lower_is_worse)
    left_out = 0
    if len(pairs) > MAX_BARS:
        half = MAX_BARS // 2
        kept = pairs[:half] + pairs[-half:]
        kept_labels = {p[0] for p in kept}
        kept += [p for p in pairs if p[0] in highlight and p[0] not in kept_labels][:half]
        left_out = len(pairs) - len(kept)
        pairs = sorted(kept, key=lambda p: p[1], reverse=not lower_is_worse)
    width = max(4.5, min(11.0, 0.28 * len(pairs) + 2))
    fig, ax = plt.subplots(figsize=(width, 3.0))
    xs = range(len(pairs))
    colours = ["#b00020" if p[0] in highlight else "#7a8ca8" for p in pairs]
    hatches = ["////" if p[0] in highlight else "" for p in pairs]
    for x, (_, value), colour, hatch in zip(xs, pairs, colours, hatches, strict=True):
        ax.bar(x, value, color=colour, hatch=hatch, edgecolor="black", linewidth=0.4)
    for name, value in lines.items():
        style, colour = _LINE_STYLES.get(name, ("-.", "#333333"))
        ax.axhline(value, linestyle=style, color=colour, linewidth=1.2, label=f"{name} {value:g}")
    ax.set_xticks(list(xs), [p[0] for p in pairs], rotation=60, ha="right")
    ax.set_ylabel(ylabel)
    top = max([0.0, *(p[1] for p in pairs), *lines.values()])
    ax.set_ylim(0.0, top * 1.05 if top > 0 else 1.0)  # bars start at zero, the lines are all in view
    ax.set_title(title + (f" ({left_out} middle nodes not drawn)" if left_out else ""), fontsize=9)
    if lines:
        legend_below(ax, width)
    return to_svg(fig), left_out


def heatmap(
    labels: Sequence[str],
    matrix: Sequence[Sequence[float | None]],
    highlight: set[str],
    title: str,
    unit: str,
) -> str:
    """A symmetric node x node matrix (pairwise busbw); highlighted nodes' labels are marked."""
    import numpy as np

    plt = _plt()
    n = len(labels)
    data = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)
    size = max(3.5, min(9.0, 0.32 * n + 2))
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    image = ax.imshow(data, cmap="viridis", interpolation="nearest")
    marked = [f"▶ {lab}" if lab in highlight else lab for lab in labels]
    ax.set_xticks(range(n), marked, rotation=60, ha="right")
    ax.set_yticks(range(n), marked)
    for tick in list(ax.get_xticklabels()) + list(ax.get_yticklabels()):
        if tick.get_text().startswith("▶"):
            tick.set_color("#b00020")
            tick.set_fontweight("bold")
    if n <= 16:
        finite = data[np.isfinite(data)]
        mid = float(np.median(finite)) if finite.size else 0.0
        for i in range(n):
            for j in range(n):
                if np.isfinite(data[i, j]):
                    ax.text(
                        j,
                        i,
                        f"{data[i, j]:.0f}",
                        ha="center",
                        va="center",
                        fontsize=6,
                        color="white" if data[i, j] < mid else "black",
                    )
    fig.colorbar(image, ax=ax, label=unit, shrink=0.8)
    ax.set_title(title, fontsize=9)
    return to_svg(fig)


def _when(value: Any) -> Any:
    """A timestamp as matplotlib plots it: an ISO text ('2026-12-01T08:00:00Z') becomes a datetime."""
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def timeseries(
    series: dict[str, tuple[Sequence[Any], Sequence[float]]],
    line: float | None,
    title: str,
    ylabel: str,
    *,
    line_label: str | None = None,
    top: float | None = None,
) -> str:
    """Lines over time (e.g. FSx DiskIopsUtilization) with an optional threshold line.

    The value axis runs from 0 (from the lowest value when one is below 0) to the highest value, the
    line or ``top`` (100 for a percentage), whichever is higher; the time axis spans the data with a
    margin of TIME_MARGIN of its span on each side (a minute when every point has one time)."""
    import matplotlib.dates as mdates

    plt = _plt()
    width = 8.0
    fig, ax = plt.subplots(figsize=(width, 3.0))
    styles = ["-", "--", "-.", ":"]
    times: list[float] = []
    values: list[float] = []
    for i, (name, (xs, ys)) in enumerate(sorted(series.items())):
        when = [_when(x) for x in xs]
        ax.plot(when, list(ys), linestyle=styles[i % 4], linewidth=1.2, label=name)
        times += [float(mdates.date2num(w)) for w in when]
        values += [float(y) for y in ys]
    if line is not None:
        label = line_label or f"{line:g} line"
        ax.axhline(line, color="#b00020", linestyle="--", linewidth=1.2, label=label)
    if times:
        first, last = min(times), max(times)
        pad = (last - first) * TIME_MARGIN or 1 / 1440  # a day is 1.0: one minute
        ax.set_xlim(first - pad, last + pad)
        days = sorted({f"{mdates.num2date(t):%Y-%m-%d}" for t in (first, last)})
        ax.set_xlabel(f"time (UTC), {' to '.join(days)}")
    low = min([0.0, *values])
    high = max([*values, line if line is not None else 0.0, top or 0.0])
    ax.set_ylim(low, high * 1.05 if high > 0 else 1.0)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    fig.autofmt_xdate()
    legend_below(ax, width)
    return to_svg(fig)


def grid(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    title: str,
    unit: str,
    *,
    marked: Sequence[tuple[str, str]] = (),
    marked_rows: Sequence[str] = (),
    vmin: float | None = None,
    vmax: float | None = None,
    lines: dict[str, float] | None = None,
    cmap: str = "cividis",
    gid: str = "grid",
    label: str | None = None,
) -> str:
    """A node x GPU grid of one metric, values printed in the cells.

    ``vmin``/``vmax`` pin the colour range (to thresholds, not the data's min and max) and ``lines``
    are drawn on the colour bar.  ``marked`` (row, column) cells, the GPUs with a finding, are hatched
    and outlined (each an SVG group ``<gid>-marked-<row>-<column>``); ``marked_rows`` get a ▶ label.
    """
    import numpy as np
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    plt = _plt()
    data = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    fig, ax = plt.subplots(figsize=(max(3.5, 0.5 * len(columns) + 2), max(1.6, 0.26 * len(rows) + 1)))
    finite = data[np.isfinite(data)]
    low = vmin if vmin is not None else (float(finite.min()) if finite.size else 0.0)
    high = vmax if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    if high <= low:
        high = low + 1.0
    norm = Normalize(vmin=low, vmax=high)
    colours = plt.get_cmap(cmap)
    image = ax.imshow(data, cmap=colours, norm=norm, aspect="auto", interpolation="nearest")
    row_marks = set(marked_rows)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(rows)), [f"▶ {r}" if r in row_marks else r for r in rows])
    for tick in ax.get_yticklabels():
        if tick.get_text().startswith("▶"):
            tick.set_color("#b00020")
            tick.set_fontweight("bold")
    row_at = {r: i for i, r in enumerate(rows)}
    column_at = {c: j for j, c in enumerate(columns)}
    cells = {(row_at[r], column_at[c]) for r, c in marked if r in row_at and c in column_at}
    if data.size <= 400:
        for i in range(len(rows)):
            for j in range(len(columns)):
                if np.isfinite(data[i, j]):
                    r, g, b, _ = colours(norm(data[i, j]))
                    label_box = (
                        {"facecolor": "white", "edgecolor": "none", "pad": 0.8} if (i, j) in cells else None
                    )
                    ax.text(
                        j,
                        i,
                        f"{data[i, j]:g}",
                        ha="center",
                        va="center",
                        fontsize=6,
                        color="black" if label_box or 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white",
                        bbox=label_box,
                        zorder=4,
                    )
    for row, column in marked:
        if row in row_at and column in column_at:
            box = Rectangle(
                (column_at[column] - 0.5, row_at[row] - 0.5),
                1,
                1,
                fill=False,
                hatch="///",
                edgecolor="#b00020",
                linewidth=1.8,
                zorder=3,
            )
            box.set_gid(_gid(f"{gid}-marked-{row}-{column}"))
            ax.add_patch(box)
    bar = fig.colorbar(image, ax=ax, label=label or unit, shrink=0.9)
    for name, value in (lines or {}).items():
        style, colour = _LINE_STYLES.get(name, ("-.", "#333333"))
        bar.ax.axhline(value, linestyle=style, color=colour, linewidth=1.4)
    if lines:
        ticks = sorted({low, high, *lines.values()})
        names = {v: k for k, v in lines.items()}
        bar.set_ticks(ticks, labels=[f"{v:g} {names[v]}" if v in names else f"{v:g}" for v in ticks])
    ax.set_title(title, fontsize=9)
    return to_svg(fig)


def _gid(text: str) -> str:
    """An SVG/HTML id from free text: letters, digits, '-' and '_' only."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text)
