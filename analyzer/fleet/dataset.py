"""The history store as a hive-partitioned Parquet dataset, written a bundle at a time and appended
snapshot by snapshot: the layout ``hptriage export`` writes (:mod:`analyzer.history.export`).

    DIR/<table>/cluster=<name>/collection_date=<YYYY-MM-DD>/<stem>_0.parquet
    DIR/_hptriage_schema.json

A fact table's file is named by its bundle's content hash and a snapshot's rows by its id, so writing
the same bundle or judging the same snapshot again replaces a file instead of adding one.  The node
table's own ``cluster`` column is the partition's, as in an export.  :func:`open_dataset` gives a DuckDB
connection whose views are the store's tables, for ``history``, ``diff`` and ``sql --parquet``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.history.export import PARTITIONS, SCHEMA_FILE, save_schema_doc, schema_doc, table_entry
from analyzer.history.ingest import SCHEMA_VERSION

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


class DatasetError(Exception):
    """A directory that is not a dataset hptriage can read or append to."""


def write_rows(root: Path, table: str, rows: pa.Table, cluster: str, date: str, stem: str) -> int:
    """Write ``rows`` of one store table as ``DIR/<table>/cluster=<c>/collection_date=<d>/<stem>_0.parquet``,
    replacing the file that is there (no rows: the file is removed).  Returns the change in the table's
    row count.  A worker calls it for its bundles' facts, the driver for a snapshot's rows."""
    import pyarrow.parquet as pq

    target = file_of(root, table, cluster, date, stem)
    before = 0
    if target.is_file():
        try:
            before = pq.ParquetFile(target).metadata.num_rows
        except (OSError, ValueError):  # a file left half written by another tool: replaced
            before = 0
    if rows.num_rows == 0:
        target.unlink(missing_ok=True)
        return -before
    keep = [c for c in rows.column_names if c not in PARTITIONS]
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(target.name + ".part")
    pq.write_table(rows.select(keep), scratch)
    scratch.replace(target)  # a reader never sees half a file
    return int(rows.num_rows) - before


@dataclass
class Tally:
    """What an ingest (a worker, the driver) wrote: the change in each table's row count and one file of
    each table written, for :func:`update_schema_doc`."""

    added: dict[str, int] = field(default_factory=dict)
    samples: dict[str, str] = field(default_factory=dict)

    def write(self, root: Path, table: str, rows: pa.Table, cluster: str, date: str, stem: str) -> int:
        """:func:`write_rows`, counted."""
        delta = write_rows(root, table, rows, cluster, date, stem)
        self.added[table] = self.added.get(table, 0) + delta
        if rows.num_rows:
            self.samples.setdefault(table, str(file_of(root, table, cluster, date, stem)))
        return delta

    def join(self, other: Tally) -> None:
        for table, delta in other.added.items():
            self.added[table] = self.added.get(table, 0) + delta
        for table, sample in other.samples.items():
            self.samples.setdefault(table, sample)


def file_of(root: Path, table: str, cluster: str, date: str, stem: str) -> Path:
    """The file write_rows writes."""
    return partition_dir(root, table, cluster, date) / f"{_file_safe(stem)}_0.parquet"


def partition_dir(root: Path, table: str, cluster: str, date: str) -> Path:
    """The folder of one table's rows of one cluster and collection day."""
    return root / table / f"cluster={partition_value(cluster or 'unknown')}" / f"collection_date={date}"


def partition_files(root: Path, table: str, cluster: str, date: str) -> list[Path]:
    """The files write_rows wrote in one partition, by name (none when the folder is missing)."""
    folder = partition_dir(root, table, cluster, date)
    try:
        return [folder / n for n in sorted(os.listdir(folder)) if n.endswith("_0.parquet")]
    except FileNotFoundError:
        return []


def partition_value(value: str) -> str:
    """A cluster name as a hive partition value: characters a path or the key=value form cannot hold
    are %-escaped (as Hive and Spark write them; DuckDB and Spark read them back decoded).

    >>> partition_value("p5-prod"), partition_value("a/b=c")
    ('p5-prod', 'a%2Fb%3Dc')
    """
    from urllib.parse import quote

    return quote(value, safe=" -_.@+,")


def _file_safe(stem: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) or "rows"


def tables_in(root: Path) -> list[str]:
    """The tables the dataset holds rows of."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.rglob("*.parquet")))


def open_dataset(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per table of the dataset at root (hive partitions
    read back as the ``cluster`` and ``collection_date`` columns).  Raises DatasetError when root holds
    no hptriage dataset."""
    import duckdb

    if not root.is_dir():
        raise DatasetError(
            f"{root}: no such directory (write one with 'hptriage ingest PATH... --parquet {root}')"
        )
    doc = root / SCHEMA_FILE
    if not doc.is_file():
        raise DatasetError(
            f"{root} is not an hptriage Parquet dataset (no {SCHEMA_FILE}): write one with"
            f" 'hptriage ingest PATH... --parquet {root}' or 'hptriage export'"
        )
    try:
        version = int(json.loads(doc.read_text(encoding="utf-8")).get("schema_version", 0))
    except (ValueError, OSError, AttributeError) as exc:
        raise DatasetError(f"{doc}: unreadable schema document: {exc}") from exc
    if version > SCHEMA_VERSION:
        raise DatasetError(
            f"{root} has store schema {version}, written by a newer hptriage; this one reads up to schema"
            f" {SCHEMA_VERSION}: upgrade hptriage to read it"
        )
    con = duckdb.connect(":memory:")
    held = tables_in(root)
    for table in held:
        con.execute(f'CREATE VIEW "{table}" AS {scan(root, table)}')
    for table, ddl in _empty_tables().items():  # a table no bundle or snapshot wrote yet reads as empty
        if table not in held:
            con.execute(ddl)
    _confine(con, root)
    return con


def _confine(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Queries over the dataset read the dataset and nothing else, and write nowhere outside it
    (DuckDB >= 1.1; on older versions the connection stays as it is)."""
    import duckdb

    folder = _sql(str(root.resolve()).rstrip("/") + "/")
    try:
        con.execute(f"SET allowed_directories = ['{folder}']")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except duckdb.Error:
        pass


def _empty_tables() -> dict[str, str]:
    """DDL of every table of the store, empty: the store's own and the analyzer's fact tables
    (bundle_hash in front, the partition columns at the end)."""
    from analyzer.history.ingest import STORE_TABLES
    from analyzer.store.tables import all_schemas, sql_type

    tables = dict(_EMPTY)
    for table, cols in all_schemas().items():
        if table in STORE_TABLES:
            continue
        body = ["bundle_hash VARCHAR", "bundle_id VARCHAR", "node VARCHAR"]
        body += [
            f'"{c.name}" {sql_type(c.type)}' for c in cols if c.name not in ("bundle_id", "node", *PARTITIONS)
        ]
        body += ["cluster VARCHAR", "collection_date VARCHAR"]
        tables[table] = f'CREATE TABLE "{table}" ({", ".join(body)})'
    return tables


def scan(root: Path, table: str) -> str:
    """The SQL reading one table of the dataset (every file, columns unified by name)."""
    pattern = _sql(str(root / table / "**" / "*.parquet"))
    return f"SELECT * FROM read_parquet('{pattern}', hive_partitioning = true, union_by_name = true)"


def write_schema_doc(con: duckdb.DuckDBPyConnection, root: Path) -> dict[str, Any]:
    """Write ``_hptriage_schema.json`` (the document ``export`` writes) for what the dataset holds now,
    every file counted (see :func:`update_schema_doc` for what an ingest does)."""
    doc = schema_doc({})
    for table in tables_in(root):
        query = scan(root, table)
        rows = con.execute(f"SELECT count(*) FROM ({query})").fetchall()[0][0]
        columns = {r[0]: r[1] for r in con.execute(f"DESCRIBE ({query})").fetchall()}
        doc["tables"][table] = table_entry(rows, columns)
    return save_schema_doc(root, doc)


def update_schema_doc(root: Path, added: dict[str, int], samples: dict[str, str]) -> dict[str, Any]:
    """Bring ``_hptriage_schema.json`` up to date after an ingest without reading the dataset again:
    each table's row count changed by ``added``, its columns joined by those of one file this ingest
    wrote (``samples``: table -> file), as a newer parser may add columns."""
    import duckdb

    path = root / SCHEMA_FILE
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        held = {}
    tables = held.get("tables") if isinstance(held, dict) else None
    doc = schema_doc(tables if isinstance(tables, dict) else {})
    con = duckdb.connect(":memory:")
    try:
        for table in sorted(samples.keys() | {t for t, n in added.items() if n > 0}):
            sample = _a_file_of(root, table, samples.get(table))
            if sample is None:
                continue
            entry = doc["tables"].setdefault(table, table_entry(0, {}))
            query = f"SELECT * FROM read_parquet('{_sql(sample)}', hive_partitioning = true)"
            for name, kind in (r[:2] for r in con.execute(f"DESCRIBE ({query})").fetchall()):
                entry["columns"].setdefault(name, kind)
    finally:
        con.close()
    for table, delta in added.items():
        if table in doc["tables"]:
            doc["tables"][table]["rows"] = max(0, doc["tables"][table]["rows"] + delta)
    doc["tables"] = {t: doc["tables"][t] for t in sorted(doc["tables"]) if doc["tables"][t]["rows"] > 0}
    return save_schema_doc(root, doc)


def _a_file_of(root: Path, table: str, sample: str | None) -> str | None:
    """The sample file of a table, or, when it is gone (a batch file the driver emptied of repeated
    bundles), another file of the table."""
    if sample is not None and Path(sample).is_file():
        return sample
    return next((str(p) for p in (root / table).rglob("*_0.parquet")), None)


def _sql(text: str) -> str:
    return text.replace("'", "''")


#: The store's own tables, empty, for a dataset that has none of their rows yet.
_EMPTY = {
    "bundle": "CREATE TABLE bundle (bundle_hash VARCHAR, kind VARCHAR, node VARCHAR, source VARCHAR,"
    " collected_at TIMESTAMP, cluster VARCHAR, instance_type VARCHAR, first_snapshot VARCHAR,"
    " ingested_at TIMESTAMP, collection_date VARCHAR)",
    "snapshot": "CREATE TABLE snapshot (snapshot_id VARCHAR, ingested_at TIMESTAMP, judged_at TIMESTAMP,"
    " sources VARCHAR, cluster VARCHAR, collected_at TIMESTAMP, nodes INTEGER, tool_version VARCHAR,"
    " rules_json VARCHAR, rules_hash VARCHAR, collection_date VARCHAR)",
    "snapshot_bundle": "CREATE TABLE snapshot_bundle (snapshot_id VARCHAR, bundle_hash VARCHAR, bundle_id VARCHAR,"
    " cluster VARCHAR, collection_date VARCHAR)",
    "findings": "CREATE TABLE findings (snapshot_id VARCHAR, bundle_hash VARCHAR, fingerprint VARCHAR,"
    " rule VARCHAR, rule_version INTEGER, severity VARCHAR, node VARCHAR, gpu INTEGER, message VARCHAR,"
    " params_json VARCHAR, route_owner VARCHAR, route_target VARCHAR, route_action VARCHAR,"
    " evidence_json VARCHAR, cluster VARCHAR, collection_date VARCHAR)",
    "rule_outcome": "CREATE TABLE rule_outcome (snapshot_id VARCHAR, rule VARCHAR, outcome VARCHAR,"
    " findings INTEGER, reason VARCHAR, cluster VARCHAR, collection_date VARCHAR)",
}
