"""Shared query for host rules: kernel events of some types, grouped per node (a burst is one row)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding


def events_per_node(ctx: Context, types: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per (bundle, node, event_type): count, first/last line and time, processes, messages."""
    marks = ", ".join("?" for _ in types)
    return ctx.rows(
        f"""
        SELECT bundle_id, node, event_type, count(*) AS n, any_value(source_file) AS source_file,
               min(line) AS first_line, max(line) AS last_line,
               arg_min(coalesce(strftime(ts, '%Y-%m-%dT%H:%M:%S'), ts_raw), line) AS first_seen,
               arg_max(coalesce(strftime(ts, '%Y-%m-%dT%H:%M:%S'), ts_raw), line) AS last_seen,
               list(DISTINCT process) FILTER (WHERE process IS NOT NULL) AS processes,
               arg_min(message, line) AS first_message
        FROM kernel_event WHERE event_type IN ({marks})
        GROUP BY bundle_id, node, event_type ORDER BY node, event_type
        """,
        *types,
    )


def when(r: dict[str, Any]) -> str:
    if not r["first_seen"]:
        return ""
    if r["first_seen"] == r["last_seen"]:
        return f" at {r['first_seen']}"
    return f" between {r['first_seen']} and {r['last_seen']}"


def process_findings(ctx: Context, rule: RuleInfo, event_type: str, what: str) -> Iterable[Finding]:
    """One finding per node for kernel events that name processes (OOM kills, hung tasks).

    ``what`` describes the events, with ``{n}`` for their count: "OOM killer ended {n} process(es)"."""
    for r in events_per_node(ctx, (event_type,)):
        procs = sorted(r["processes"] or [])
        yield rule.finding(
            node=r["node"],
            message=f"{r['node']}: {what.format(n=r['n'])}{when(r)}: {', '.join(procs) or 'unknown'}",
            params={
                "count": r["n"],
                "processes": procs,
                "first_seen": r["first_seen"],
                "last_seen": r["last_seen"],
            },
            evidence=[ctx.evidence(r["source_file"], r["first_line"])],
            bundle_id=r["bundle_id"],
        )
