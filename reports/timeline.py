"""The cluster timeline chart: one row per node, markers by family, on one UTC axis (matplotlib SVG).

Drawn from the plain data :func:`analyzer.model.timeline.chart` gives.  The time axis spans the data (a
small margin each side); where nothing happened for a long time (more than :data:`BREAK_MIN_S` and a fifth
of the whole span: an incident and a collection days later) it is broken into panels, each spanning its
own data, with ``//`` between them.  The first event of the incident is ringed and its time drawn as a
line, the window it was searched in shaded; the legend, below the plot, names every family drawn.
Marker shapes say the group (kernel, GPU, link, job, probe, boot, collection), colours the family: a
family stays told apart in grey by its shape and its legend entry.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from reports.charts import _plt, to_svg

#: A gap longer than this (and than a fifth of the whole span) breaks the time axis (seconds).
BREAK_MIN_S = 2 * 3600
#: Panels at most (the longest gaps break the axis).
MAX_PANELS = 3
_SHAPES = {"kernel": "o", "gpu": "D", "link": "^", "job": "s", "probe": "h", "boot": ">", "collection": "|"}
_SPECIAL = {
    "xid": "X",
    "sxid": "x",
    "hang_began": "|",
    "watchdog": "s",
    "nccl": "P",
    "cuda": "*",
    "rank_exit": "p",
}
#: Colours by family (the first event's ring and line are #b00020, which no family uses).
_PALETTE = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
    "#393b79", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
]  # fmt: skip


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", ""))


def _panels(times: list[float], span_days: float) -> list[tuple[float, float]]:
    """[(first, last)] per panel, in matplotlib date numbers (days)."""
    times = sorted(set(times))
    if not times:
        return []
    limit = max(BREAK_MIN_S / 86400, span_days / 5)
    gaps = sorted(
        ((times[i + 1] - times[i], i) for i in range(len(times) - 1) if times[i + 1] - times[i] > limit),
        reverse=True,
    )[: MAX_PANELS - 1]
    cuts = sorted(i for _, i in gaps)
    out, start = [], 0
    for i in cuts:
        out.append((times[start], times[i]))
        start = i + 1
    out.append((times[start], times[-1]))
    return out


def _markers(
    ax: Any,
    inside: list[list[Any]],
    num: dict[str, float],
    ys: dict[int, int],
    marker: str,
    colour: str,
    critical: bool,
) -> None:
    """One family's events of one level in one panel, as Line2D markers (one SVG definition, a <use> each)."""
    line_only = marker in ("|", "x")
    ax.plot(
        [num[p[1]] for p in inside],
        [ys[p[0]] for p in inside],
        linestyle="none",
        marker=marker,
        markersize=7.0 if critical else 5.5,
        markerfacecolor=colour,
        markeredgecolor=colour if line_only else "black",
        markeredgewidth=1.4 if line_only else (0.8 if critical else 0.2),
        zorder=3,
    )


def draw(c: dict[str, Any]) -> str:
    """The timeline as inline SVG ('' when nothing is placed)."""
    import matplotlib.dates as mdates
    from matplotlib.lines import Line2D

    rows: list[str] = c["rows"]
    points: dict[str, list[list[Any]]] = c["points"]
    if not points:
        return ""
    plt = _plt()
    num = {}
    times: list[float] = []
    for pts in points.values():
        for p in pts:
            num[p[1]] = float(mdates.date2num(_when(p[1])))
            times.append(num[p[1]])
    for s in c["spans"]:
        for t in (s[2], s[3]):
            num[t] = float(mdates.date2num(_when(t)))
    window = [float(mdates.date2num(_when(t))) for t in c["window"]] if c.get("window") else None
    if window:
        times += window
    panels = _panels(times, max(times) - min(times))
    spans = [max(b - a, 1 / 1440) for a, b in panels]
    total = sum(spans)
    ratios = [max(s / total, 0.18) for s in spans]
    width, height = 8.0, max(1.2, 0.2 * len(rows) + 0.7)
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(width, height),
        sharey=True,
        squeeze=False,
        gridspec_kw={"width_ratios": ratios},
        layout="constrained",
    )
    axes = list(axes[0])
    colour = {f[0]: _PALETTE[i % len(_PALETTE)] for i, f in enumerate(c["families"])}
    shape = {f[0]: _SPECIAL.get(f[0], _SHAPES.get(f[2], "o")) for f in c["families"]}
    ys = {i: i for i in range(len(rows))}
    for ax, (a, b) in zip(axes, panels, strict=True):
        pad = (b - a) * 0.04 or 1 / 1440
        lo, hi = a - pad, b + pad
        ax.set_xlim(lo, hi)
        ax.hlines(range(len(rows)), lo, hi, color="#dddddd", linewidth=0.5, zorder=0)
        if window and window[1] >= lo and window[0] <= hi:
            ax.axvspan(
                max(window[0], lo), min(window[1], hi), color="#f4c7c3", alpha=0.5, zorder=0, linewidth=0
            )
        for s in c["spans"]:
            x0, x1 = num[s[2]], num[s[3]]
            if x1 >= lo and x0 <= hi:
                ax.plot([max(x0, lo), min(x1, hi)], [s[0], s[0]], color=colour[s[1]], linewidth=1.0, alpha=0.6,
                        zorder=1)  # fmt: skip
        for critical in (False, True):  # critical events on top
            for family, pts in points.items():
                inside = [p for p in pts if lo <= num[p[1]] <= hi and (p[2] == "critical") == critical]
                if inside:
                    _markers(ax, inside, num, ys, shape[family], colour[family], critical)
        first = c.get("first")
        if first:
            x = float(mdates.date2num(_when(first["utc"])))
            if lo <= x <= hi:
                ax.axvline(x, color="#b00020", linestyle="--", linewidth=1.0, zorder=2)
                ax.scatter([x], [first["row"]], s=190, facecolors="none", edgecolors="#b00020", linewidths=1.8,
                           zorder=4)  # fmt: skip
        locator = mdates.AutoDateLocator(minticks=2, maxticks=max(3, int(6 * (b - a + 2 * pad) / total + 2)))
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, show_offset=True))
        ax.tick_params(axis="x", labelsize=6.5)
    axes[0].set_ylim(len(rows) - 0.5, -0.5)
    marked = c.get("marked_row")
    axes[0].set_yticks(range(len(rows)), [f"▶ {r}" if i == marked else r for i, r in enumerate(rows)])
    for tick in axes[0].get_yticklabels():
        if tick.get_text().startswith("▶"):
            tick.set_color("#b00020")
            tick.set_fontweight("bold")
    for ax in axes[1:]:
        ax.tick_params(axis="y", left=False)
        ax.spines["left"].set_linestyle((0, (2, 2)))
    for left, right in zip(axes, axes[1:], strict=False):  # "//" where the axis is broken
        for ax, x in ((left, 1.0), (right, 0.0)):
            ax.plot([x], [0.0], transform=ax.transAxes, marker=[(-1, -1.6), (1, 1.6)], markersize=8,
                    linestyle="none", color="black", mec="black", mew=0.9, clip_on=False)  # fmt: skip
    broken = " (the axis is broken at //: nothing happened in between)" if len(panels) > 1 else ""
    fig.supxlabel(f"time (UTC){broken}", fontsize=7.5)
    fig.suptitle("Dated events per node, in UTC", fontsize=9)
    handles = [
        Line2D([], [], linestyle="none", marker=shape[f], markersize=6, markerfacecolor=colour[f],
               markeredgecolor="black" if shape[f] not in ("|", "x") else colour[f], color=colour[f],
               label=title)
        for f, title, _ in c["families"]
    ]  # fmt: skip
    if c.get("first"):
        handles.append(Line2D([], [], linestyle="--", color="#b00020", marker="o", markersize=10,
                              markerfacecolor="none", label="first event of the incident"))  # fmt: skip
    if window:
        handles.append(
            Line2D([], [], linewidth=6, color="#f4c7c3", label="window searched for the first event")
        )
    if c["spans"]:
        handles.append(
            Line2D([], [], linewidth=1.0, color="#7f7f7f", label="more events than drawn, between")
        )
    fig.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.0, 0.0),
        fontsize=6.5,
        ncols=3 if len(handles) > 4 else 2,
        frameon=True,
    )
    return compact(to_svg(fig))


def _declarations(style: str) -> dict[str, str]:
    return dict(
        (k.strip(), v.strip()) for k, _, v in (d.partition(":") for d in style.split(";")) if k.strip()
    )


_USE = re.compile(r'<use xlink:href="#([\w-]+)" (x="[^"]*" y="[^"]*") style="([^"]*)"/>')


def compact(svg: str) -> str:
    """The SVG with coordinates to a hundredth of a point, and a marker's style said once on its
    definition instead of on every ``<use>`` of it (where every use has the same): a chart of 2,000
    markers is about half the size, and looks the same.

    >>> compact('<defs><path id="m1" d="M 0 0"/></defs><use xlink:href="#m1" x="1.234567" y="2" style="fill: red"/>')
    '<defs><path id="m1" d="M 0 0" style="fill: red"/></defs><use xlink:href="#m1" x="1.23" y="2"/>'
    """
    svg = re.sub(r'(?<=[\s"(,])(-?\d+\.\d\d)\d+', r"\1", svg)
    styles: dict[str, set[str]] = {}
    for ref, _, style in _USE.findall(svg):
        styles.setdefault(ref, set()).add(style)
    for ref, found in styles.items():
        if len(found) != 1:
            continue
        (style,) = found
        head = re.search(rf'<path id="{ref}" d="[^"]*"(?: style="([^"]*)")?', svg)
        if head is None:
            continue
        # what the use's style gives the definition, and what the definition says itself (which wins)
        merged = {**_declarations(style), **_declarations(head.group(1) or "")}
        text = "; ".join(f"{k}: {v}" for k, v in merged.items())
        svg = (
            svg[: head.start()]
            + re.sub(r' style="[^"]*"$', "", head.group(0))
            + f' style="{text}"'
            + svg[head.end() :]
        )
        svg = re.sub(rf'(<use xlink:href="#{ref}" x="[^"]*" y="[^"]*") style="[^"]*"/>', r"\1/>", svg)
    return svg


def context(c: dict[str, Any] | None) -> dict[str, Any] | None:
    """The template's view of the timeline: the chart data and its SVG."""
    if not c:
        return None
    return {**c, "svg": draw(c)}
