"""Robust peer statistics (analyzer/judge/peers.py): median/MAD bands per instance type."""

from __future__ import annotations

from statistics import quantiles

import duckdb
import pytest

from analyzer.judge.peers import MAD_SCALE, bands, median_mad, outliers


def _values(rows: list[tuple[str, str, float]]) -> str:
    body = ", ".join(f"('{g}', '{n}', {v})" for g, n, v in rows)
    return f"SELECT * FROM (VALUES {body}) t(peer_group, node, value)"


CLOCKS = [("p5", f"n{i}", v) for i, v in enumerate([1980, 1965, 1980, 1995, 1200])] + [
    ("p4d", f"m{i}", v) for i, v in enumerate([1410, 1410, 900])
]


def test_band_matches_pure_python() -> None:
    con = duckdb.connect()
    got = bands(con, _values(CLOCKS), k=3.5, min_nodes=4)
    assert set(got) == {"p5"}  # p4d has only 3 nodes: never judged
    values = sorted(float(v) for g, _, v in CLOCKS if g == "p5")
    mid, mad = median_mad(values)
    deciles = quantiles(values, n=10, method="inclusive")  # linear, as DuckDB's quantile_cont
    assert got["p5"].median == mid == 1980.0
    assert got["p5"].mad == pytest.approx(mad) == pytest.approx(15 * MAD_SCALE)
    assert (got["p5"].p10, got["p5"].p90) == pytest.approx((deciles[0], deciles[-1]))


def test_low_outlier_named_with_band() -> None:
    con = duckdb.connect()
    found = outliers(con, _values(CLOCKS), direction="low", k=3.5, min_nodes=4, min_delta=100)
    assert [(o.row["node"], o.direction) for o in found] == [("n4", "low")]
    band = found[0].band
    assert band.low == 1880.0 and band.high == 2080.0  # floor 100 MHz wins over 3.5 x 22.2
    assert band.as_params()["peer_nodes"] == 5


def test_direction_filters_and_floor_protects_identical_peers() -> None:
    con = duckdb.connect()
    temps = [("p5", f"n{i}", v) for i, v in enumerate([30, 30, 30, 31, 45])]
    assert outliers(con, _values(temps), direction="low", k=3.5, min_nodes=4, min_delta=8) == []
    high = outliers(con, _values(temps), direction="high", k=3.5, min_nodes=4, min_delta=8)
    assert [o.row["node"] for o in high] == ["n4"]
    # MAD is 0 here: without a floor the 31 C node would be flagged too
    both = outliers(con, _values(temps), direction="both", k=3.5, min_nodes=4, min_delta=0)
    assert [o.row["node"] for o in both] == ["n3", "n4"]


def test_too_few_peers_judges_nobody() -> None:
    con = duckdb.connect()
    rows = [("p5", "a", 1980.0), ("p5", "b", 1980.0), ("p5", "c", 300.0)]
    assert outliers(con, _values(rows), direction="low", k=3.5, min_nodes=4, min_delta=100) == []


def test_bad_direction() -> None:
    with pytest.raises(ValueError):
        outliers(duckdb.connect(), _values(CLOCKS), direction="down", k=3.5, min_nodes=4)
