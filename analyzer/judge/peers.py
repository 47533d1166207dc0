"""Robust peer statistics: judge a node against the other nodes of the same instance type.

Rules that compare nodes (stragglers, drift) describe one value per node with a SQL query and ask
this module for the peer band of each group.  The band is the group's median plus or minus
``k`` times its scaled MAD (median absolute deviation x 1.4826, a robust stand-in for the standard
deviation; k = 3.5 is the Iglewicz-Hoaglin modified z-score line), widened to a floor so that a
group whose values are all identical (MAD = 0) does not flag a harmless wiggle.  The 10th and
90th percentiles are carried along for the report.  A group is judged only with at least
``min_nodes`` nodes (the median of three cannot tell which one is odd); a rule asks through
:func:`judge`, which names the nodes of a smaller group as not examined ("too few peers: 3 of 4 nodes
(p5.48xlarge)"), so that a node without peers never reads as within its band.

The value query must return the columns ``peer_group`` (normally the instance type), ``node`` and
``value``, one row per node; any other column is passed through.

>>> import duckdb
>>> con = duckdb.connect()
>>> sql = "SELECT 'p5' AS peer_group, n AS node, v AS value FROM (VALUES ('a', 1980.0), ('b', 1975.0),"
>>> sql += " ('c', 1980.0), ('d', 1985.0), ('e', 1200.0)) t(n, v)"
>>> [(o.row["node"], o.direction, o.band.median) for o in outliers(con, sql, direction="low", k=3.5,
...     min_nodes=4, min_delta=50)]
[('e', 'low', 1980.0)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from analyzer.judge.engine import NotExamined, TooFewPeers, too_few_peers

if TYPE_CHECKING:
    import duckdb

    from analyzer.judge.engine import Context

#: Scale that makes the MAD of a normal sample estimate its standard deviation.
MAD_SCALE = 1.4826

#: Each node's instance type: meta.env first, then a placement fact (IMDS, Kubernetes label).
NODE_TYPE_SQL = """
    SELECT n.bundle_id, n.node,
           coalesce(n.instance_type, pf.instance_type, 'unknown') AS instance_type
    FROM node n
    LEFT JOIN (SELECT bundle_id, min(value) AS instance_type FROM placement_fact
               WHERE key = 'instance_type' AND value IS NOT NULL AND value <> '' GROUP BY bundle_id) pf
      ON pf.bundle_id = n.bundle_id
"""


@dataclass(frozen=True)
class Band:
    """One peer group's statistics and its acceptance band."""

    group: str
    nodes: int
    median: float
    mad: float  # scaled MAD (x 1.4826)
    p10: float
    p90: float
    low: float
    high: float
    half_width: float

    def as_params(self) -> dict[str, Any]:
        return {
            "peer_group": self.group,
            "peer_nodes": self.nodes,
            "peer_median": _r(self.median),
            "peer_mad": _r(self.mad),
            "peer_p10": _r(self.p10),
            "peer_p90": _r(self.p90),
            "band_low": _r(self.low),
            "band_high": _r(self.high),
        }


@dataclass(frozen=True)
class Outlier:
    """A node outside its group's band; ``row`` is the value query's row."""

    row: dict[str, Any]
    band: Band
    direction: str  # low | high


def median_mad(values: Sequence[float]) -> tuple[float, float]:
    """The median of some values and their MAD scaled to a standard deviation (x ``MAD_SCALE``).

    The one median/MAD of the project: the NCCL rules use it (:func:`bands` does the same in SQL).

    >>> median_mad([10.0, 10.0, 10.0, 10.0, 30.0])
    (10.0, 0.0)
    >>> median_mad([1.0, 2.0, 4.0, 8.0])
    (3.0, 2.2239)
    """
    if not values:
        raise ValueError("no values")
    mid = median(values)
    return mid, median(abs(v - mid) for v in values) * MAD_SCALE


def bands(
    con: duckdb.DuckDBPyConnection,
    values_sql: str,
    params: Iterable[Any] = (),
    *,
    k: float,
    min_nodes: int,
    min_delta: float = 0.0,
    rel_delta: float = 0.0,
) -> dict[str, Band]:
    """The band of every peer group with at least ``min_nodes`` nodes."""
    sql = f"""
        WITH v AS ({values_sql}),
        s AS (
            SELECT peer_group, count(DISTINCT node) AS n, CAST(median(value) AS DOUBLE) AS med,
                   CAST(quantile_cont(value, 0.1) AS DOUBLE) AS p10,
                   CAST(quantile_cont(value, 0.9) AS DOUBLE) AS p90
            FROM v WHERE value IS NOT NULL GROUP BY peer_group HAVING count(DISTINCT node) >= ?
        )
        SELECT s.peer_group, s.n, s.med, s.p10, s.p90,
               CAST(median(abs(v.value - s.med)) AS DOUBLE) AS mad
        FROM s JOIN v ON v.peer_group IS NOT DISTINCT FROM s.peer_group AND v.value IS NOT NULL
        GROUP BY ALL
    """
    rows = con.execute(sql, [*params, min_nodes]).fetchall()
    return {
        str(g): _band(str(g), int(n), med, mad * MAD_SCALE, p10, p90, k, min_delta, rel_delta)
        for g, n, med, p10, p90, mad in rows
    }


def outliers(
    con: duckdb.DuckDBPyConnection,
    values_sql: str,
    params: Iterable[Any] = (),
    *,
    direction: str,
    k: float,
    min_nodes: int,
    min_delta: float = 0.0,
    rel_delta: float = 0.0,
) -> list[Outlier]:
    """Nodes outside their group's band: ``direction`` is 'low', 'high' or 'both' (what is bad)."""
    if direction not in ("low", "high", "both"):
        raise ValueError(f"direction must be low, high or both, not {direction!r}")
    params = list(params)
    found = bands(con, values_sql, params, k=k, min_nodes=min_nodes, min_delta=min_delta, rel_delta=rel_delta)
    if not found:
        return []
    cur = con.execute(f"SELECT * FROM ({values_sql}) WHERE value IS NOT NULL ORDER BY node", params)
    names = [d[0] for d in cur.description]
    out: list[Outlier] = []
    for values in cur.fetchall():
        row = dict(zip(names, values, strict=True))
        band = found.get(str(row["peer_group"]))
        if band is None:
            continue
        value = float(row["value"])
        if value < band.low and direction in ("low", "both"):
            out.append(Outlier(row, band, "low"))
        elif value > band.high and direction in ("high", "both"):
            out.append(Outlier(row, band, "high"))
    return out


def group_nodes(
    con: duckdb.DuckDBPyConnection, values_sql: str, params: Iterable[Any] = ()
) -> dict[str, list[str]]:
    """Every peer group of a value query and its nodes that have a value, by name."""
    rows = con.execute(
        f"SELECT DISTINCT peer_group, node FROM ({values_sql}) WHERE value IS NOT NULL ORDER BY node",
        list(params),
    ).fetchall()
    out: dict[str, list[str]] = {}
    for group, node in rows:
        out.setdefault(str(group), []).append(str(node))
    return out


def judge(
    ctx: Context,
    values_sql: str,
    params: Iterable[Any] = (),
    *,
    direction: str,
    k: float,
    min_nodes: int,
    min_delta: float = 0.0,
    rel_delta: float = 0.0,
) -> list[Outlier]:
    """:func:`outliers` for a rule: the nodes of a group smaller than ``min_nodes`` are not judged
    (``ctx.not_judged``, "too few peers: N of M nodes (group)"); with no group that large the rule is
    not examined (:class:`TooFewPeers`), and with no value at all it has nothing to compare
    (:class:`NotExamined`)."""
    params = list(params)
    groups = group_nodes(ctx.con, values_sql, params)
    if not groups:
        raise NotExamined("no node has a value to compare")
    small = {g: nodes for g, nodes in groups.items() if len(nodes) < min_nodes}
    for group, nodes in small.items():
        ctx.not_judged(nodes, too_few_peers(len(nodes), min_nodes, "nodes", group))
    if len(small) == len(groups):
        raise TooFewPeers(
            "; ".join(too_few_peers(len(n), min_nodes, "nodes", g) for g, n in sorted(small.items()))
        )
    return outliers(
        ctx.con,
        values_sql,
        params,
        direction=direction,
        k=k,
        min_nodes=min_nodes,
        min_delta=min_delta,
        rel_delta=rel_delta,
    )


def _band(
    group: str, n: int, med: float, mad: float, p10: float, p90: float, k: float, min_delta: float, rel: float
) -> Band:
    half = max(k * mad, min_delta, rel * abs(med))
    return Band(group, n, float(med), float(mad), float(p10), float(p90), med - half, med + half, half)


def _r(x: float) -> float:
    return round(float(x), 3)
