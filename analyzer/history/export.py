"""The history store as Parquet that Spark, Athena and Trino read: one folder per table, hive-partitioned
by ``cluster`` and ``collection_date`` (the bundle's collected_at, UTC day), and ``_hptriage_schema.json``
with the store's schema version and every table's columns.

    DIR/<table>/cluster=<name>/collection_date=<YYYY-MM-DD>/data_0.parquet

Rows of a fact table take the partition of their bundle; findings and rule outcomes that of their
snapshot.  A cluster name that is empty becomes ``unknown`` (a partition value cannot be empty).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.history.ingest import SCHEMA_VERSION, STORE_TABLES

if TYPE_CHECKING:
    import duckdb

SCHEMA_FILE = "_hptriage_schema.json"
PARTITIONS = ("cluster", "collection_date")
_BY_BUNDLE = """
    SELECT t.*{exclude}, coalesce(nullif(b.cluster, ''), nullif(s.cluster, ''), 'unknown') AS cluster,
           strftime(coalesce(b.collected_at, s.collected_at, b.ingested_at), '%Y-%m-%d') AS collection_date
    FROM "{table}" t
    JOIN bundle b USING (bundle_hash)
    LEFT JOIN snapshot s ON s.snapshot_id = b.first_snapshot
"""
_BY_SNAPSHOT = """
    SELECT t.*, coalesce(nullif(s.cluster, ''), 'unknown') AS cluster,
           strftime(coalesce(s.collected_at, s.ingested_at), '%Y-%m-%d') AS collection_date
    FROM "{table}" t JOIN snapshot s USING (snapshot_id)
"""


def export(con: duckdb.DuckDBPyConnection, out: Path) -> dict[str, Any]:
    """Write every table of the store under out; returns the schema document (also written)."""
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name").fetchall()]  # fmt: skip
    doc = schema_doc({})
    for table in tables:
        if table == "store_meta":
            continue
        columns = [c[0] for c in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
            [table]).fetchall()]  # fmt: skip
        if "bundle_hash" in columns and table not in ("bundle", "findings", "snapshot_bundle"):
            clash = [c for c in ("cluster", "collection_date") if c in columns]
            exclude = f" EXCLUDE ({', '.join(clash)})" if clash else ""
            query = _BY_BUNDLE.format(table=table, exclude=exclude)
        elif "snapshot_id" in columns and table != "snapshot":
            query = _BY_SNAPSHOT.format(table=table)
        else:  # bundle, snapshot: their own columns say
            query = _own(table, columns)
        rows = con.execute(f"SELECT count(*) FROM ({query})").fetchall()[0][0]
        doc["tables"][table] = table_entry(rows, _types(con, query))
        if rows:
            target = out / table
            con.execute(
                f"COPY ({query}) TO '{_sql(target)}' (FORMAT PARQUET, PARTITION_BY (cluster, collection_date),"
                " OVERWRITE_OR_IGNORE true)"
            )
    return save_schema_doc(out, doc)


def schema_doc(tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The schema document of a Parquet dataset (``DIR/_hptriage_schema.json``): the store schema
    version, the format and each table's entry (:func:`table_entry`).  The one shape ``export`` and a
    fleet ingest (:mod:`analyzer.fleet.dataset`) both write."""
    return {"schema_version": SCHEMA_VERSION, "format": "parquet, hive partitions", "tables": tables}


def table_entry(rows: int, columns: dict[str, str]) -> dict[str, Any]:
    """One table's entry in the schema document: its row count, its columns and types (as DuckDB
    names them) and the hive partition columns."""
    return {"rows": rows, "columns": columns, "partitioned_by": list(PARTITIONS)}


def save_schema_doc(root: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """Write ``doc`` as ``root/_hptriage_schema.json`` (whole or not at all: a reader never sees half a
    document); returns it."""
    root.mkdir(parents=True, exist_ok=True)
    scratch = root / (SCHEMA_FILE + ".part")
    scratch.write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    scratch.replace(root / SCHEMA_FILE)
    return doc


def _own(table: str, columns: list[str]) -> str:
    cluster = "coalesce(nullif(t.cluster, ''), 'unknown')" if "cluster" in columns else "'unknown'"
    when = "coalesce(t.collected_at, t.ingested_at)" if "collected_at" in columns else "t.ingested_at"
    keep = ", ".join(f't."{c}"' for c in columns if c not in ("cluster", "collection_date"))
    return f"SELECT {keep}, {cluster} AS cluster, strftime({when}, '%Y-%m-%d') AS collection_date FROM \"{table}\" t"


def _types(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, str]:
    cur = con.execute(f"DESCRIBE ({query})")
    return {r[0]: r[1] for r in cur.fetchall()}


def _sql(path: Path) -> str:
    return str(path).replace("'", "''")


__all__ = [
    "PARTITIONS",
    "SCHEMA_FILE",
    "STORE_TABLES",
    "export",
    "save_schema_doc",
    "schema_doc",
    "table_entry",
]
