"""What a history store remembers of the nodes of an analysis: their findings in earlier bundles.

The remediation plan (analyzer.plan.build) asks, for each node it would act on, whether the same fault
was seen on the node before and whether the node rebooted since: a fault back after a reboot is a
replace, one back after several reboots a reboot loop.  This module answers with plain data: per node,
every finding of its bundles collected before the analysed one, with that bundle's collection time, the
boot it was collected in (``collected_at`` minus the node's uptime, where ``/proc/uptime`` was read) and
the instance id (a replaced node has a new one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb


def _has(con: duckdb.DuckDBPyConnection, table: str, column: str | None = None) -> bool:
    sql = "SELECT count(*) FROM information_schema.columns WHERE table_name = ?"
    params: list[Any] = [table]
    if column is not None:
        sql += " AND column_name = ?"
        params.append(column)
    row = con.execute(sql, params).fetchone()
    return bool(row and row[0])


def earlier_findings(
    con: duckdb.DuckDBPyConnection, nodes: Sequence[Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Per node of ``nodes`` (rows with ``node`` and ``collected_at``, ISO text or None): the findings of
    the store's bundles of that node collected before it, oldest first.  Each is a dict with ``rule``,
    ``severity``, ``message``, ``params``, ``collected_at``, ``boot_at`` (None where no uptime was read),
    ``instance_id`` and ``snapshot_id``."""
    wanted = {str(n["node"]): _when(n.get("collected_at")) for n in nodes if n.get("node")}
    if not wanted or not _has(con, "findings") or not _has(con, "bundle"):
        return {}
    uptime = (
        "(SELECT max(u.uptime_s) FROM host_uptime u WHERE u.bundle_hash = b.bundle_hash)"
        if _has(con, "host_uptime", "uptime_s") and _has(con, "host_uptime", "bundle_hash")
        else "NULL"
    )
    instance = (
        "(SELECT any_value(n.instance_id) FROM node n WHERE n.bundle_hash = b.bundle_hash)"
        if _has(con, "node", "instance_id") and _has(con, "node", "bundle_hash")
        else "NULL"
    )
    listed = list(wanted)
    marks = ", ".join("?" for _ in listed)
    rows = con.execute(
        f"""
        SELECT b.node, f.rule, f.severity, f.message, f.params_json, b.collected_at, f.snapshot_id,
               {uptime} AS uptime_s, {instance} AS instance_id
        FROM findings f JOIN bundle b ON b.bundle_hash = f.bundle_hash
        WHERE b.node IN ({marks}) AND b.collected_at IS NOT NULL
        ORDER BY b.node, b.collected_at, f.rule
        """,
        listed,
    ).fetchall()
    out: dict[str, list[dict[str, Any]]] = {}
    for node, rule, severity, message, params_json, collected, snapshot, uptime_s, instance_id in rows:
        at = _aware(collected)
        now = wanted.get(node)
        if at is None or (now is not None and at >= now):
            continue  # the analysed bundle itself (or a later one) is no history of it
        try:
            params = json.loads(params_json) if params_json else {}
        except ValueError:
            params = {}
        boot = at - timedelta(seconds=float(uptime_s)) if uptime_s is not None else None
        out.setdefault(node, []).append(
            {
                "rule": rule,
                "severity": severity,
                "message": message,
                "params": params if isinstance(params, dict) else {},
                "collected_at": _iso(at),
                "boot_at": _iso(boot) if boot is not None else None,
                "instance_id": instance_id,
                "snapshot_id": snapshot,
            }
        )
    return out


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return _aware(value)
    if isinstance(value, str) and value:
        try:
            return _aware(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
