"""Questions asked of the history store: what a node did over time, what changed between two snapshots.

Times are the bundles' own ``collected_at`` (a cluster ``extra/`` folder takes its snapshot's).  Every
function returns plain data (dicts and lists) for the terminal, JSON and HTML writers.

busbw is kept per node and per snapshot (:func:`node_busbw`): the host names a snapshot's nccl-tests logs
print are matched to that snapshot's node bundles as the analysis matches them
(analyzer.judge.signals.nccl.read_runs, analyzer.judge.hosts), and a node's figure in a snapshot is the
median of the large-message busbw of the runs it was in (with the slowest of them), per kind of run
(single-node, pairwise, multi-node) and collective: one point per snapshot, never one per run.  Hosts no
node bundle of their snapshot names are listed apart (``busbw_unmatched_hosts``), never made into nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analyzer.judge.signals.kernel_events import COLUMNS, distinct
from analyzer.judge.signals.nccl import Run, read_runs

if TYPE_CHECKING:
    import duckdb

#: A bundle's time: its own collected_at, else its snapshot's.
_WHEN = """
    (SELECT sb.bundle_hash, sb.snapshot_id, coalesce(b.collected_at, s.collected_at, s.ingested_at) AS at
     FROM snapshot_bundle sb JOIN bundle b USING (bundle_hash) JOIN snapshot s USING (snapshot_id))
"""


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _has(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]
        ).fetchall()[0][0]
    )


def snapshots(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return _rows(
        con,
        "SELECT snapshot_id, collected_at, ingested_at, judged_at, cluster, nodes, tool_version, sources"
        " FROM snapshot ORDER BY collected_at, ingested_at",
    )


def history(
    con: duckdb.DuckDBPyConnection, node: str | None = None, since: datetime | None = None
) -> dict[str, Any]:
    """Per node: findings by fingerprint with first/last/times seen, recurring Xids per GPU, corrected-ECC
    rate per day across bundles, retired pages and row remaps growing, busbw per snapshot (the median of
    the node's runs in it), software version changes; repeat offenders (most findings seen more than once)
    first.  ``busbw_unmatched_hosts``: busbw of hosts in nccl-tests logs that no node bundle names."""
    where: list[str] = []
    params: list[str | datetime] = []
    if node:
        where.append("f.node = ?")
        params.append(node)
    if since:
        where.append("w.at >= ?")
        params.append(since)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    findings = _rows(
        con,
        f"""
        SELECT f.node, f.fingerprint, f.rule, f.gpu, min(w.at) AS first_seen, max(w.at) AS last_seen,
               count(DISTINCT f.snapshot_id) AS times_seen, arg_max(f.severity, w.at) AS severity,
               arg_max(f.message, w.at) AS message
        FROM findings f JOIN {_WHEN} w ON w.snapshot_id = f.snapshot_id
             AND w.bundle_hash = coalesce(f.bundle_hash, w.bundle_hash)
        {clause}
        GROUP BY ALL
        ORDER BY f.node, times_seen DESC,
                 CASE arg_max(f.severity, w.at) WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
                 first_seen, f.rule
        """,
        params,
    )
    nodes: dict[str, dict[str, Any]] = defaultdict(lambda: {"findings": [], "xids": [], "ecc": [], "memory": [],
                                                           "versions": [], "busbw": []})  # fmt: skip
    for f in findings:
        nodes[f["node"] or "(cluster)"]["findings"].append(f)
    for x in _xids(con, node, since):
        nodes[x.pop("node")]["xids"].append(x)
    for e in _gpu_trends(con, node, since):
        nodes[e.pop("node")][e.pop("what")].append(e)
    for v in _versions(con, node, since):
        nodes[v.pop("node")]["versions"].append(v)
    busbw, unmatched = _busbw(con, since)
    for b in busbw:
        if node is None or b["node"] == node:
            nodes[b.pop("node")]["busbw"].append(b)
    out = []
    for name, data in nodes.items():
        recurring = sum(1 for f in data["findings"] if f["times_seen"] > 1) + sum(
            1 for x in data["xids"] if x["bundles"] > 1
        )
        out.append({"node": name, "recurring": recurring, **data})
    out.sort(key=lambda n: (-n["recurring"], -len(n["findings"]), n["node"]))
    return {"snapshots": snapshots(con), "nodes": out, "busbw_unmatched_hosts": unmatched}


def _xids(con: duckdb.DuckDBPyConnection, node: str | None, since: datetime | None) -> list[dict[str, Any]]:
    """Xids per node, GPU and code: in how many bundles, how many events.  The same event in several logs
    of one bundle (a bug report's dmesg, journal and /var/log/messages) counts once
    (analyzer.judge.signals.kernel_events.distinct)."""
    if not _has(con, "kernel_event"):
        return []
    have = {r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'kernel_event'"
    ).fetchall()}  # fmt: skip
    picked = ", ".join(
        f"k.{c}" if c in have else f"NULL AS {c}" for c in COLUMNS if c != "bundle_id"
    )  # a store written before a column existed (boot) has it as NULL
    rows = _rows(
        con,
        f"""
        SELECT k.bundle_hash AS bundle_id, {picked}, min(w.at) AS at
        FROM kernel_event k JOIN {_WHEN} w USING (bundle_hash)
        WHERE k.event_type = 'xid' AND (? IS NULL OR k.node = ?) AND (? IS NULL OR w.at >= ?)
        GROUP BY ALL ORDER BY k.bundle_hash, k.source_file, k.line
        """,
        [node, node, since, since],
    )
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in distinct(rows):
        g = groups.setdefault(
            (r["node"], r["pci"], r["xid"]),
            {"node": r["node"], "pci": r["pci"], "xid": r["xid"], "hashes": set(), "events": 0, "at": []},
        )
        g["hashes"].add(r["bundle_id"])
        g["events"] += 1
        if r["at"] is not None:
            g["at"].append(r["at"])
    out = [
        {"node": g["node"], "pci": g["pci"], "xid": g["xid"], "bundles": len(g["hashes"]), "events": g["events"],
         "first_seen": min(g["at"], default=None), "last_seen": max(g["at"], default=None)}
        for g in groups.values()
    ]  # fmt: skip
    out.sort(key=lambda x: (x["node"] or "", -x["bundles"], x["pci"] is None, x["pci"] or "", x["xid"] or 0))
    return out


def _gpu_trends(
    con: duckdb.DuckDBPyConnection, node: str | None, since: datetime | None
) -> list[dict[str, Any]]:
    """Corrected ECC (aggregate, else volatile) with a rate per day between the first and last bundle;
    retired pages and remapped rows that grew."""
    if not _has(con, "gpu"):
        return []
    rows = _rows(
        con,
        f"""
        SELECT DISTINCT g.node, coalesce(g.uuid, g.pci, CAST(g."index" AS VARCHAR)) AS gpu_id, g."index" AS gpu,
               w.at, coalesce(g.ecc_corrected_aggregate, g.ecc_corrected_volatile) AS ecc,
               coalesce(g.retired_pages_sbe, 0) + coalesce(g.retired_pages_dbe, 0) AS retired,
               coalesce(g.remapped_rows_correctable, 0) + coalesce(g.remapped_rows_uncorrectable, 0) AS remapped
        FROM gpu g JOIN {_WHEN} w USING (bundle_hash)
        WHERE (? IS NULL OR g.node = ?) AND (? IS NULL OR w.at >= ?)
        ORDER BY g.node, gpu_id, w.at
        """,
        [node, node, since, since],
    )
    series: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        series[(r["node"], r["gpu_id"])].append(r)
    out = []
    for (name, gpu_id), points in series.items():
        first, last = points[0], points[-1]
        days = (last["at"] - first["at"]).total_seconds() / 86400 if first["at"] and last["at"] else 0
        if first["ecc"] is not None and last["ecc"] is not None and len(points) > 1:
            growth = last["ecc"] - first["ecc"]
            out.append({"node": name, "what": "ecc", "gpu": last["gpu"], "gpu_id": gpu_id, "bundles": len(points),
                        "first": first["ecc"], "last": last["ecc"], "growth": growth,
                        "per_day": round(growth / days, 2) if days > 0 else None,
                        "first_seen": first["at"], "last_seen": last["at"]})  # fmt: skip
        for key in ("retired", "remapped"):
            if len(points) > 1 and last[key] > first[key]:
                out.append({"node": name, "what": "memory", "kind": key, "gpu": last["gpu"], "gpu_id": gpu_id,
                            "first": first[key], "last": last[key], "first_seen": first["at"],
                            "last_seen": last["at"]})  # fmt: skip
    return out


def _versions(
    con: duckdb.DuckDBPyConnection, node: str | None, since: datetime | None
) -> list[dict[str, Any]]:
    """Components whose version changed on a node between its bundles (software_version, GPU driver)."""
    parts = []
    if _has(con, "software_version"):
        parts.append("SELECT v.node, v.component, v.version, v.bundle_hash FROM software_version v")
    if _has(con, "gpu"):
        parts.append(
            "SELECT g.node, 'nvidia_driver (nvidia-smi)', g.driver_version, g.bundle_hash FROM gpu g"
        )
    if not parts:
        return []
    rows = _rows(
        con,
        f"""
        SELECT DISTINCT x.node, x.component, x.version, w.at
        FROM ({" UNION ALL ".join(parts)}) x JOIN {_WHEN} w USING (bundle_hash)
        WHERE x.version IS NOT NULL AND (? IS NULL OR x.node = ?) AND (? IS NULL OR w.at >= ?)
        ORDER BY x.node, x.component, w.at
        """,
        [node, node, since, since],
    )
    seq: dict[tuple[str, str], list[tuple[Any, str]]] = defaultdict(list)
    for r in rows:
        seq[(r["node"], r["component"])].append((r["at"], r["version"]))
    out = []
    for (name, component), points in seq.items():
        changes = []
        for (at, version), (_, before) in zip(points[1:], points[:-1], strict=True):
            if version != before:
                changes.append({"at": at, "from": before, "to": version})
        if changes:
            out.append({"node": name, "component": component, "changes": changes})
    return out


def _busbw(
    con: duckdb.DuckDBPyConnection, since: datetime | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each node's busbw per snapshot (:func:`node_busbw`), oldest snapshot first; and the hosts of the
    logs that no node bundle of their snapshot names."""
    if not all(_has(con, t) for t in ("node", "nccl_run", "nccl_rank", "nccl_result")):
        return [], []
    snaps = _rows(
        con,
        """
        SELECT snapshot_id, coalesce(collected_at, ingested_at) AS at FROM snapshot
        WHERE snapshot_id IN (SELECT sb.snapshot_id FROM snapshot_bundle sb JOIN nccl_run r USING (bundle_hash))
          AND (? IS NULL OR coalesce(collected_at, ingested_at) >= ?)
        ORDER BY 2, 1
        """,
        [since, since],
    )
    out: list[dict[str, Any]] = []
    unmatched: list[dict[str, Any]] = []
    for snap in snaps:
        figures, hosts = node_busbw(con, snap["snapshot_id"])
        at = {"snapshot_id": snap["snapshot_id"], "at": snap["at"]}
        out += [{"node": name, **at, **f} for (name, _, _), f in sorted(figures.items())]
        unmatched += [{"host": host, **at, **f} for (host, _, _), f in sorted(hosts.items())]
    return out, unmatched


BusbwFigures = dict[tuple[str, str, str], dict[str, Any]]


def node_busbw(con: duckdb.DuckDBPyConnection, snapshot_id: str) -> tuple[BusbwFigures, BusbwFigures]:
    """(node, kind of run, collective) -> the node's busbw in one snapshot: the median of the large-message
    busbw (the figure the NCCL rules judge) of the runs it was in there, their count, the slowest and its
    run; hosts matched to the snapshot's nodes as the analysis matches them.  Second: the same per host
    of the logs that no node bundle of the snapshot names."""
    from statistics import median

    from analyzer.judge.settings import load_settings

    min_bytes = int(load_settings().value("nccl.pair.slow", "large_message_bytes"))
    rows = _snapshot_rows(con, snapshot_id)
    known = {r["node"] for r in rows("SELECT node FROM node") if r["node"]}
    runs: dict[tuple[str, str, str, bool], list[Run]] = defaultdict(list)
    for run in read_runs(rows, min_bytes):
        if run.busbw is None:
            continue
        for member in set(run.members):
            runs[(member, _family(run), run.collective or "all_reduce", member in known)].append(run)
    nodes: BusbwFigures = {}
    hosts: BusbwFigures = {}
    for (member, family, collective, is_node), of in runs.items():
        slowest = min(of, key=lambda r: (r.busbw or 0.0, r.name))
        figure = {
            "family": family,
            "collective": collective,
            "busbw_gbps": round(median(r.busbw or 0.0 for r in of), 2),
            "runs": len(of),
            "min_gbps": slowest.busbw,
            "slowest_run": slowest.name,
        }
        (nodes if is_node else hosts)[(member, family, collective)] = figure
    return nodes, hosts


def _family(run: Run) -> str:
    if run.scope is None:
        return "no rank lines"
    return {1: "single-node", 2: "pairwise"}.get(len(run.subject), "multi-node")


def _snapshot_rows(con: duckdb.DuckDBPyConnection, snapshot_id: str) -> Callable[[str], list[dict[str, Any]]]:
    """``rows(sql)`` over one snapshot's bundles: the tables read_runs reads, as the analysis has them
    (``bundle_id`` is the bundle's hash, unique in the store)."""
    snap = snapshot_id.replace("'", "''")
    of = f"bundle_hash IN (SELECT bundle_hash FROM snapshot_bundle WHERE snapshot_id = '{snap}')"
    columns = {
        "node": "node, hostname, instance_type, placement_group, network_node_layers",
        "nccl_run": "node, source_file, run, line, collective, net_transport",
        "nccl_rank": "source_file, run, host, rank",
        "nccl_result": "source_file, run, size_bytes, line, oop_busbw_gbps, ip_busbw_gbps",
    }
    ctes = "WITH " + ", ".join(
        f"{t} AS (SELECT bundle_hash AS bundle_id, {c} FROM {t} WHERE {of})" for t, c in columns.items()
    )
    return lambda sql: _rows(con, f"{ctes} {sql}")


# --- diff ---------------------------------------------------------------------------------------------


def resolve_snapshot(con: duckdb.DuckDBPyConnection, ref: str) -> str:
    """A snapshot id from an id (or its start), 'latest', 'previous', or a date (the last snapshot
    collected on or before it).  LookupError names the reference and what the store holds."""
    ids = [
        r[0]
        for r in con.execute("SELECT snapshot_id FROM snapshot ORDER BY collected_at, ingested_at").fetchall()
    ]
    listed = ", ".join(i[:8] for i in ids[-5:]) + (f" (the last 5 of {len(ids)})" if len(ids) > 5 else "")
    if not ids:
        raise LookupError(
            f"no snapshot for {ref!r}: the store holds none yet (add one with 'hptriage ingest')"
        )
    if ref in ("latest", "last"):
        return ids[-1]
    if ref == "previous":
        if len(ids) > 1:
            return ids[-2]
        raise LookupError(f"'previous' needs two snapshots; the store holds one ({ids[0][:8]})")
    matches = [i for i in ids if i.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise LookupError(
            f"{ref!r} is the start of {len(matches)} snapshot ids; give more of it (ids: {listed})"
        )
    try:
        day = datetime.fromisoformat(ref)
    except ValueError:
        day = None
    if day is not None:
        row = con.execute(
            "SELECT snapshot_id FROM snapshot WHERE CAST(collected_at AS DATE) <= CAST(? AS DATE)"
            " ORDER BY collected_at DESC, ingested_at DESC LIMIT 1",
            [day],
        ).fetchone()
        if row:
            return str(row[0])
        raise LookupError(f"no snapshot collected on or before {ref} (ids: {listed})")
    raise LookupError(
        f"no snapshot matches {ref!r}: give an id (or its start), a date (YYYY-MM-DD), 'latest' or"
        f" 'previous' (ids: {listed})"
    )


def known_nodes(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every node name the store holds (of bundles and of findings)."""
    return [
        r[0]
        for r in con.execute(
            "SELECT node FROM bundle WHERE node IS NOT NULL UNION SELECT node FROM findings"
            " WHERE node IS NOT NULL ORDER BY 1"
        ).fetchall()
    ]


def diff(con: duckdb.DuckDBPyConnection, old: str, new: str) -> dict[str, Any]:
    """What changed from snapshot old to snapshot new."""

    def findings(snap: str) -> dict[str, dict[str, Any]]:
        return {r["fingerprint"]: r for r in _rows(
            con, "SELECT fingerprint, rule, severity, node, gpu, message FROM findings WHERE snapshot_id = ?", [snap])}  # fmt: skip

    def nodes(snap: str) -> set[str]:
        return {r[0] for r in con.execute(
            "SELECT b.node FROM snapshot_bundle sb JOIN bundle b USING (bundle_hash) WHERE sb.snapshot_id = ?"
            " AND b.node IS NOT NULL", [snap]).fetchall()}  # fmt: skip

    a, b = findings(old), findings(new)
    na, nb = nodes(old), nodes(new)
    return {
        "old": old,
        "new": new,
        "new_findings": sorted((b[k] for k in b.keys() - a.keys()), key=_order),
        "resolved_findings": sorted((a[k] for k in a.keys() - b.keys()), key=_order),
        "persisting": len(a.keys() & b.keys()),
        "nodes_added": sorted(nb - na),
        "nodes_gone": sorted(na - nb),
        "version_changes": _version_changes(con, old, new),
        "busbw": _busbw_deltas(con, old, new),
        "fsx": _fsx_deltas(con, old, new),
    }


def _order(f: dict[str, Any]) -> tuple[Any, ...]:
    rank = {"critical": 0, "warning": 1, "info": 2}.get(f["severity"], 3)
    return (rank, f["node"] or "", f["gpu"] if f["gpu"] is not None else -1, f["rule"])


def _in(snap: str) -> str:
    return f"bundle_hash IN (SELECT bundle_hash FROM snapshot_bundle WHERE snapshot_id = '{snap}')"


def _version_changes(con: duckdb.DuckDBPyConnection, old: str, new: str) -> list[dict[str, Any]]:
    if not _has(con, "software_version"):
        return []

    def versions(snap: str) -> dict[tuple[str, str], str]:
        out: dict[tuple[str, str], str] = {}
        for node, component, version in con.execute(
            f"SELECT node, component, version FROM software_version WHERE {_in(snap)} AND version IS NOT NULL"
            " ORDER BY node, component, line"
        ).fetchall():
            out.setdefault((node, component), version)
        if _has(con, "gpu"):
            for node, version in con.execute(
                f"SELECT node, any_value(driver_version) FROM gpu WHERE {_in(snap)} GROUP BY node"
            ).fetchall():
                if version:
                    out.setdefault((node, "nvidia_driver (nvidia-smi)"), version)
        return out

    a, b = versions(old), versions(new)
    return [
        {"node": node, "component": component, "from": a[(node, component)], "to": b[(node, component)]}
        for node, component in sorted(a.keys() & b.keys())
        if a[(node, component)] != b[(node, component)]
    ]


def _busbw_deltas(con: duckdb.DuckDBPyConnection, old: str, new: str) -> list[dict[str, Any]]:
    """Per node, kind of run and collective present in both snapshots: its busbw (:func:`node_busbw`)
    then and now."""
    if not all(_has(con, t) for t in ("node", "nccl_run", "nccl_rank", "nccl_result")):
        return []
    a, b = node_busbw(con, old)[0], node_busbw(con, new)[0]
    out = []
    for key in sorted(a.keys() & b.keys()):
        was, now = a[key]["busbw_gbps"], b[key]["busbw_gbps"]
        out.append(
            {"node": key[0], "family": key[1], "collective": key[2], "old_gbps": was, "new_gbps": now,
             "delta_gbps": round(now - was, 2), "delta_pct": round(100 * (now - was) / was, 1) if was else None,
             "old_slowest_gbps": a[key]["min_gbps"], "new_slowest_gbps": b[key]["min_gbps"]}
        )  # fmt: skip
    return out


def _fsx_deltas(con: duckdb.DuckDBPyConnection, old: str, new: str) -> list[dict[str, Any]]:
    if not _has(con, "cw_metric"):
        return []

    def means(snap: str) -> dict[tuple[str, str, str], float]:
        return {(d or "", m, s or ""): v for d, m, s, v in con.execute(
            f"SELECT dimension_value, metric, statistic, avg(value) FROM cw_metric WHERE {_in(snap)}"
            " AND value IS NOT NULL GROUP BY ALL").fetchall()}  # fmt: skip

    a, b = means(old), means(new)
    return [
        {"resource": k[0], "metric": k[1], "statistic": k[2], "old": round(a[k], 3), "new": round(b[k], 3),
         "delta": round(b[k] - a[k], 3)}
        for k in sorted(a.keys() & b.keys())
    ]  # fmt: skip
