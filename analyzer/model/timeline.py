"""The cluster timeline as the reports show it: the first events in words, and the chart's data.

The timeline itself is built in the judge layer (:func:`analyzer.judge.signals.timeline.build`: every
node's dated events in UTC, or not placed with why, and the first event of the incident); this module is
what renderers read of it.  :func:`words` is the few lines the terminal and Markdown print; :func:`chart`
is what the HTML (and the PDF made from it) draws: one row per node, markers by family, the first event
marked, and the events that could not be placed, grouped.

Bounded for 1,024-node clusters: at most :data:`MAX_ROWS` rows (the nodes of the incident's window first,
then the nodes with the most faults; the rest drawn together in one last row), at most
:data:`MAX_MARKERS` markers per row and family (the first and the last; a line spans the ones between),
at most :data:`MAX_TOTAL_MARKERS` in all, and :data:`MAX_UNPLACED_GROUPS` groups of events not placed.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analyzer.judge.signals.timeline import (
    CLOCKS,
    FAMILIES,
    Event,
    Incident,
    LeftOut,
    Timeline,
    build,
    clock_text,
)

if TYPE_CHECKING:
    import duckdb

    from analyzer.judge.settings import Settings

__all__ = [
    "CLOCKS", "FAMILIES", "Event", "Incident", "LeftOut", "Timeline", "chart", "clock_text", "gather", "words",
]  # fmt: skip

#: Rows drawn; the nodes past them share one last row.
MAX_ROWS = 40
#: Markers per row and family (the first and the last half each; a line spans those between).
MAX_MARKERS = 12
#: Markers in all: the per-row cap shrinks (to 2) to stay under it.
MAX_TOTAL_MARKERS = 2000
#: Groups (why, family) of events not placed listed; the rest counted.
MAX_UNPLACED_GROUPS = 30
#: Lines of the first events in words.
WORDS = 5


def gather(con: duckdb.DuckDBPyConnection, settings: Settings | None = None) -> Timeline:
    """The timeline of the analysis' store."""
    from analyzer.judge.engine import Context

    return build(Context(con, settings))


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min"


def headline(timeline: Timeline) -> str:
    """One line: what the first event is the first of, or why nothing is marked."""
    inc = timeline.incident
    if inc is None:
        return f"No first event marked: {timeline.no_incident or 'no event'}."
    what = []
    if inc.hangs:
        what.append(f"{inc.hangs} watchdog timeout(s)")
    if inc.critical:
        what.append(f"{inc.critical} critical event(s)")
    span = _iso(inc.start) if inc.start == inc.end else f"{_iso(inc.start)} to {_iso(inc.end)}"
    return (
        f"The incident: the latest hangs and critical events ({', '.join(what)}), {span}; its first event "
        f"is the earliest fault from {_minutes(timeline.lookback_s)} before."
    )


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def line_of(e: Event) -> str:
    """``2026-12-01T07:59:15Z  p5-node-01  Xid 79 on ...  p5-node-01/cmd/dmesg.txt:3 (clock)``."""
    return f"{e.iso or 'time unknown'}  {e.row}  {e.what}  {e.where} ({clock_text(e.clock)})"


def words(timeline: Timeline, limit: int = WORDS) -> list[str]:
    """The few lines the terminal and Markdown say: the headline, the first events (time, node, event,
    source and its clock), and how many events could not be placed."""
    out = [headline(timeline)]
    inc = timeline.incident
    if inc is not None:
        for n, e in enumerate(inc.events[:limit]):
            out.append(("first: " if n == 0 else "then: ") + line_of(e))
        if len(inc.events) > limit:
            out.append(
                f"… and {len(inc.events) - limit} more fault event(s) in the window (the HTML report draws them)"
            )
    unplaced = timeline.unplaced
    if unplaced:
        reasons: dict[str, set[str]] = defaultdict(set)
        for e in unplaced:
            reasons[e.why or "unknown"].add(e.row)
        listed = "; ".join(
            f"{why} ({len(rows)} node(s))"
            for why, rows in sorted(reasons.items(), key=lambda x: -len(x[1]))[:3]
        )
        more = f"; and {len(reasons) - 3} other reason(s)" if len(reasons) > 3 else ""
        out.append(
            f"{len(unplaced)} event(s) could not be placed in time and are not guessed: {listed}{more} "
            "(listed in the HTML report)"
        )
    return out


def _rows(timeline: Timeline) -> tuple[list[str], dict[str, str]]:
    """The rows drawn, top first, and each row label -> the row it is drawn in (the last row stands for
    the nodes past MAX_ROWS)."""
    placed = timeline.placed
    labels = sorted({e.row for e in timeline.events})
    window_first: dict[str, Any] = {}
    for e in timeline.incident.events if timeline.incident else ():
        window_first.setdefault(e.row, e.utc)
    faults: dict[str, int] = defaultdict(int)
    for e in placed:
        if e.fault:
            faults[e.row] += 1
    first = timeline.incident.first.row if timeline.incident else None
    order = sorted(
        labels,
        key=lambda r: (r != first, r not in window_first, window_first.get(r) or "", -faults.get(r, 0), r),
    )
    if len(order) <= MAX_ROWS:
        return order, {r: r for r in order}
    kept = order[: MAX_ROWS - 1]
    rest = f"{len(order) - len(kept)} others"
    where = {r: r for r in kept}
    where.update({r: rest for r in order[len(kept) :]})
    return [*kept, rest], where


def chart(timeline: Timeline) -> dict[str, Any]:
    """What the HTML draws (plain data; times as ISO text, UTC)."""
    rows, row_of = _rows(timeline)
    index = {r: i for i, r in enumerate(rows)}
    inc = timeline.incident
    first = inc.first if inc else None
    groups: dict[tuple[int, str], list[Event]] = defaultdict(list)
    for e in timeline.placed:
        groups[(index[row_of[e.row]], e.family)].append(e)
    cap = MAX_MARKERS
    while cap > 2 and sum(min(len(g), cap) for g in groups.values()) > MAX_TOTAL_MARKERS:
        cap -= 2
    points: dict[str, list[list[Any]]] = defaultdict(list)
    spans: list[list[Any]] = []
    hidden = 0
    for (row, family), events in sorted(groups.items()):
        shown = events
        if len(events) > cap:
            half = cap // 2
            shown = events[:half] + events[-half:]
            if first is not None and first in events and first not in shown:
                shown = [*shown, first]
            hidden += len(events) - len(shown)
            spans.append([row, family, events[0].iso, events[-1].iso, len(events) - len(shown)])
        for e in shown:
            points[family].append([row, e.iso, e.level])
    left_out = sum(g.count for g in timeline.left_out)
    families = [[f, FAMILIES[f].title, FAMILIES[f].group] for f in FAMILIES if f in points]
    notes = []
    if rows and rows[-1] not in row_of:
        notes.append(f"the last row draws the events of {rows[-1].split()[0]} other rows together")
    if hidden:
        notes.append(
            f"{hidden} markers not drawn (at most {cap} per node and family: the first and the last; "
            "a line spans the rest)"
        )
    if left_out:
        notes.append(
            f"{left_out} kernel events of very long logs read as counts only (outside the incident's window)"
        )
    return {
        "rows": rows,
        "marked_row": index[row_of[first.row]] if first is not None else None,
        "points": dict(points),
        "spans": spans,
        "first": None
        if first is None
        else {
            "row": index[row_of[first.row]],
            "utc": first.iso,
            "what": first.what,
            "where": first.where,
            "family": first.family,
        },  # fmt: skip
        "window": [_iso(inc.window_start), _iso(inc.end)] if inc else None,
        "families": families,
        "placed": len(timeline.placed),
        "unplaced": len(timeline.unplaced),
        "clocks": _clocks(timeline),
        "unplaced_groups": _unplaced_groups(timeline),
        "headline": headline(timeline),
        "first_events": [line_of(e) for e in (inc.events[:WORDS] if inc else ())],
        "lookback_min": timeline.lookback_s / 60,
        "gap_min": timeline.gap_s / 60,
        "note": "; ".join(notes),
    }


def _clocks(timeline: Timeline) -> list[dict[str, Any]]:
    """Per clock: what it is, events placed by it and not, on how many rows."""
    by: dict[str, dict[str, Any]] = {}
    for e in timeline.events:
        c = by.setdefault(e.clock, {"clock": clock_text(e.clock), "placed": 0, "unplaced": 0, "rows": set()})
        c["placed" if e.utc is not None else "unplaced"] += 1
        c["rows"].add(e.row)
    return [
        {"clock": c["clock"], "placed": c["placed"], "unplaced": c["unplaced"], "nodes": len(c["rows"])}
        for c in sorted(by.values(), key=lambda c: (-c["placed"], c["clock"]))
    ]


def _unplaced_groups(timeline: Timeline) -> dict[str, Any]:
    groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for e in timeline.unplaced:
        groups[(e.why or "unknown", e.family)].append(e)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    rows = []
    for (why, family), events in ordered[:MAX_UNPLACED_GROUPS]:
        nodes = sorted({e.row for e in events})
        example = events[0]
        rows.append(
            {
                "why": why,
                "family": FAMILIES[family].title if family in FAMILIES else family,
                "count": len(events),
                "nodes": nodes[:5],
                "more_nodes": max(0, len(nodes) - 5),
                "example": example.where,
                "example_what": example.what,
                "time_text": example.time_text,
                "fault": any(e.fault for e in events),
            }
        )
    return {"rows": rows, "left_out": max(0, len(ordered) - MAX_UNPLACED_GROUPS)}
