"""Shared query for host rules: kernel events of some types, grouped per node (a burst is one row)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding
from analyzer.judge.signals.kernel_time import KernelClock, stamp_sql


def events_per_node(ctx: Context, types: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per (bundle, node, event_type): count, first/last line and time, processes, messages.

    ``first_at`` / ``last_at`` are :class:`~analyzer.judge.signals.kernel_time.KernelTime` (UTC where the log
    or the bundle's uptime gives it); ``first_seen`` / ``last_seen`` their param form."""
    marks = ", ".join("?" for _ in types)
    rows = ctx.rows(
        f"""
        SELECT bundle_id, node, event_type, count(*) AS n, any_value(source_file) AS source_file,
               min(line) AS first_line, max(line) AS last_line,
               arg_min({stamp_sql()}, line) AS first_stamp, arg_max({stamp_sql()}, line) AS last_stamp,
               list(DISTINCT process) FILTER (WHERE process IS NOT NULL) AS processes,
               arg_min(message, line) AS first_message
        FROM kernel_event WHERE event_type IN ({marks})
        GROUP BY bundle_id, node, event_type ORDER BY node, event_type
        """,
        *types,
    )
    clock = KernelClock.load(ctx)
    for r in rows:
        r["first_at"] = clock.at(r["bundle_id"], r.pop("first_stamp"))
        r["last_at"] = clock.at(r["bundle_id"], r.pop("last_stamp"))
        r["first_seen"], r["last_seen"] = r["first_at"].seen, r["last_at"].seen
    return rows


def when(r: dict[str, Any]) -> str:
    first, last = r["first_at"].shown, r["last_at"].shown
    if not first:
        return ""
    return f" at {first}" if last in (None, first) else f" between {first} and {last}"


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
                **r["first_at"].params(),
            },
            evidence=[ctx.evidence(r["source_file"], r["first_line"])],
            bundle_id=r["bundle_id"],
        )
