"""Terminal, JSON and HTML writers for ``hptriage history`` and ``hptriage diff`` (plain data in)."""

from __future__ import annotations

import html
import json
from datetime import datetime, timedelta
from typing import Any

#: Nodes listed in full in the terminal; the rest are counted (the JSON has them all).
TERMINAL_NODES = 25
#: Timeline severities, drawn in this order: the last is drawn on top.
TIMELINE_ORDER = ("ok", "info", "warning", "critical")
#: severity -> (colour, marker, size) on the timeline; shapes differ so it reads in grey.
TIMELINE_STYLE = {
    "critical": ("#b00020", "X", 40),
    "warning": ("#8a5a00", "o", 28),
    "info": ("#7a8ca8", ".", 28),
    "ok": ("#1b6e20", ".", 20),
}


#: Least padding either side of the timeline's data: one snapshot sits in a span of two hours.
TIME_PAD = timedelta(hours=1)


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else str(value or "-")


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def history_text(data: dict[str, Any], verbose: bool = False) -> str:
    snaps = data["snapshots"]
    # a snapshot whose inputs carry no collection time (a bug report in a local zone) goes by its ingest
    first = _when(snaps[0]["collected_at"] or snaps[0]["ingested_at"]) if snaps else "-"
    last = _when(snaps[-1]["collected_at"] or snaps[-1]["ingested_at"]) if snaps else "-"
    out = [f"{len(snaps)} snapshot(s), {first} to {last}; repeat offenders first"]
    nodes = data["nodes"] if verbose else data["nodes"][:TERMINAL_NODES]
    for n in nodes:
        out.append(f"\n{n['node']}: {n['recurring']} recurring, {len(n['findings'])} finding(s) over time")
        for f in n["findings"]:
            gpu = f" GPU {f['gpu']}" if f["gpu"] is not None else ""
            out.append(f"  [{f['severity'].upper()}] {f['rule']}{gpu}: seen {f['times_seen']}x, first "
                       f"{_when(f['first_seen'])}, last {_when(f['last_seen'])}  {f['message'][:90]}")  # fmt: skip
        for x in n["xids"]:
            where = x["pci"] or "a GPU the log names no address for"
            out.append(f"  Xid {x['xid']} on {where}: in {x['bundles']} bundle(s), {x['events']} event(s), "
                       f"first {_when(x['first_seen'])}, last {_when(x['last_seen'])}")  # fmt: skip
        for e in n["ecc"]:
            if e["growth"]:
                rate = f", {e['per_day']}/day" if e["per_day"] is not None else ""
                out.append(f"  corrected ECC GPU {e['gpu']}: {e['first']} -> {e['last']} over {e['bundles']} "
                           f"bundle(s){rate}")  # fmt: skip
        for m in n["memory"]:
            out.append(f"  {m['kind']} pages/rows GPU {m['gpu']}: {m['first']} -> {m['last']}")
        for v in n["versions"]:
            steps = ", ".join(f"{c['from']} -> {c['to']} ({_when(c['at'])})" for c in v["changes"])
            out.append(f"  {v['component']}: {steps}")
        out += _busbw_lines(n["busbw"])
    if len(data["nodes"]) > len(nodes):
        out.append(f"\n... {len(data['nodes']) - len(nodes)} more node(s): -v lists all, --json has all")
    hosts = data.get("busbw_unmatched_hosts") or []
    if hosts:
        out.append(f"\nhosts of nccl-tests logs that no node bundle of their snapshot names ({len(hosts)}):")
        out += [
            f"  {h['host']}: {_figure(h)} in snapshot {h['snapshot_id'][:12]} ({_when(h['at'])})"
            for h in hosts
        ]
    return "\n".join(out) + "\n"


def _figure(b: dict[str, Any]) -> str:
    """'404 GB/s (median of 7 runs, slowest 241 in extra/nccl-pair-03-05.txt)' for one snapshot."""
    if b["runs"] == 1:
        return f"{b['busbw_gbps']:.0f} GB/s (1 run: {b['slowest_run']})"
    return f"{b['busbw_gbps']:.0f} GB/s (median of {b['runs']} runs, slowest {b['min_gbps']:.0f} in {b['slowest_run']})"


def _busbw_lines(points: list[dict[str, Any]], last: int = 6) -> list[str]:
    """A node's busbw, one series per kind of run and collective, one point per snapshot (the last few)."""
    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for b in points:
        series.setdefault((b["family"], b["collective"]), []).append(b)
    out = []
    for (family, collective), of in series.items():
        shown = of[-last:]
        what = "1 snapshot" if len(of) == 1 else f"last {len(shown)} of {len(of)} snapshots"
        out.append(f"  busbw {family} {collective} per snapshot ({what}):")
        out += [f"    {_when(b['at'])} {b['snapshot_id'][:12]}: {_figure(b)}" for b in shown]
    return out


def diff_text(data: dict[str, Any]) -> str:
    out = [f"diff {data['old'][:12]} -> {data['new'][:12]}: {len(data['new_findings'])} new, "
           f"{len(data['resolved_findings'])} resolved, {data['persisting']} persisting finding(s)"]  # fmt: skip
    for title, key in (("new findings", "new_findings"), ("resolved findings", "resolved_findings")):
        if data[key]:
            out.append(f"\n{title}:")
            for f in data[key]:
                gpu = f" GPU {f['gpu']}" if f["gpu"] is not None else ""
                out.append(
                    f"  [{f['severity'].upper()}] {f['node'] or 'cluster'}{gpu} {f['rule']}: {f['message'][:100]}"
                )
    if data["nodes_added"] or data["nodes_gone"]:
        out.append(
            f"\nnodes added: {', '.join(data['nodes_added']) or '-'}; gone: {', '.join(data['nodes_gone']) or '-'}"
        )
    if data["version_changes"]:
        out.append("\nversion changes:")
        out += [f"  {v['node']} {v['component']}: {v['from']} -> {v['to']}" for v in data["version_changes"]]
    moved = [b for b in data["busbw"] if b["delta_pct"] is not None and abs(b["delta_pct"]) >= 5]
    if moved:
        out.append("\nbusbw changes (>= 5 %; per node, the median of its runs in each snapshot):")
        out += [
            f"  {b['node']} {b['family']} {b['collective']}: {b['old_gbps']:.1f} -> {b['new_gbps']:.1f} GB/s "
            f"({b['delta_pct']:+.1f} %)"
            for b in moved
        ]
    if data["fsx"]:
        out.append("\nFSx / CloudWatch (mean):")
        out += [
            f"  {f['resource']} {f['metric']} {f['statistic']}: {f['old']} -> {f['new']}" for f in data["fsx"]
        ]
    return "\n".join(out) + "\n"


def history_html(data: dict[str, Any], timeline_svg: str) -> str:
    """One self-contained page: the per-node timeline chart, then each node's table."""
    rows = []
    for n in data["nodes"]:
        for f in n["findings"]:
            rows.append(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(str(v))}</td>"
                    for v in (
                        n["node"],
                        f["severity"],
                        f["rule"],
                        "" if f["gpu"] is None else f["gpu"],
                        f["times_seen"],
                        _when(f["first_seen"]),
                        _when(f["last_seen"]),
                        f["message"],
                    )
                )
                + "</tr>"  # fmt: skip
            )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>hptriage history</title><style>"
        "body{font-family:sans-serif;font-size:13px;margin:1.5em}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:2px 6px;vertical-align:top}th{background:#eee}</style></head><body>"
        f"<h1>Findings over time</h1><p>{len(data['snapshots'])} snapshot(s); repeat offenders first.</p>"
        f"{timeline_svg}<h2>Findings by node</h2><table><tr><th>node</th><th>severity</th><th>rule</th>"
        "<th>GPU</th><th>times seen</th><th>first seen</th><th>last seen</th><th>last message</th></tr>"
        + "".join(rows)
        + "</table></body></html>\n"
    )


def timeline_svg(data: dict[str, Any], most: int = 30) -> str:
    """Per node (repeat offenders first), a mark at each time a finding was seen: the timeline chart."""
    from reports.charts import _plt, legend_outside, to_svg

    nodes = [n for n in data["nodes"] if n["findings"]][:most]
    if not nodes:
        return "<p>No finding in the store.</p>"
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9.0, max(2.0, 0.3 * len(nodes) + 1)))
    points: dict[str, set[tuple[Any, int]]] = {severity: set() for severity in TIMELINE_ORDER}
    for y, n in enumerate(reversed(nodes)):
        for f in n["findings"]:
            for when in {f["first_seen"], f["last_seen"]}:
                points.setdefault(f["severity"], set()).add((when, y))
    # drawn least severe first, each severity above the one before (zorder), so a critical mark is never
    # hidden under a warning dot seen at the same time; one SVG group per severity, <g id="timeline-...">
    ranked = sorted(points, key=lambda s: TIMELINE_ORDER.index(s) if s in TIMELINE_ORDER else -1)
    for z, severity in enumerate(ranked):
        if not points[severity]:
            continue
        xs, ys = zip(*sorted(points[severity], key=lambda p: (str(p[0]), p[1])), strict=True)
        style = TIMELINE_STYLE.get(severity, ("#333333", "o", 28))
        dots = ax.scatter(
            list(xs), list(ys), color=style[0], marker=style[1], s=style[2], zorder=3 + z, label=severity
        )
        dots.set_gid(f"timeline-{severity}")
    ax.set_yticks(range(len(nodes)), [n["node"] for n in reversed(nodes)])
    ax.set_title("Findings per node over time (first and last seen)", fontsize=9)
    _time_axis(ax, [when for marks in points.values() for when, _ in marks])
    legend_outside(ax)
    fig.autofmt_xdate()
    return to_svg(fig)


def time_span(times: list[datetime]) -> tuple[datetime, datetime]:
    """The time axis' limits: the data's first and last time, padded by 5 % of the span (at least
    TIME_PAD either side, so that one snapshot, or several within minutes, sit inside a span of hours,
    never the years matplotlib gives a single date).

    >>> from datetime import datetime, timedelta
    >>> time_span([datetime(2026, 12, 1, 8), datetime(2026, 12, 1, 14)])
    (datetime.datetime(2026, 12, 1, 7, 0), datetime.datetime(2026, 12, 1, 15, 0))
    >>> time_span([datetime(2026, 1, 1), datetime(2026, 1, 21)])
    (datetime.datetime(2025, 12, 31, 0, 0), datetime.datetime(2026, 1, 22, 0, 0))
    """
    lo, hi = min(times), max(times)
    pad = max((hi - lo) * 0.05, TIME_PAD)
    return lo - pad, hi + pad


def _time_axis(ax: Any, times: list[Any]) -> None:
    """Limit the x axis to the data's times (:func:`time_span`), ticks dated concisely (the day, the
    hours of a short span, the year once)."""
    import matplotlib.dates as mdates

    known = [t for t in times if isinstance(t, datetime)]
    if not known:
        return
    ax.set_xlim(*time_span(known))
    locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel("collection time (UTC)", fontsize=8)
