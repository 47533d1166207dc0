"""The DuckDB store: one table per kind of fact, every row carrying bundle_id and node.

Tables are created from the parsers' declared schemas before any data arrives, so a rule can tell an
empty table (nothing collected) from a missing one.  Rows arrive in batches as Arrow tables.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol

import parsers
from parsers._base import Column

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from analyzer.store.packed import Packed

_SQL_TYPES = {"str": "VARCHAR", "int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN", "ts": "TIMESTAMP"}


def sql_type(declared: str) -> str:
    """The DuckDB type of a declared column type.

    >>> sql_type("ts"), sql_type("int")
    ('TIMESTAMP', 'BIGINT')
    """
    return _SQL_TYPES[declared]


#: A parsed file whose rows cite this many of its lines or more (and of at most KEEP_WHOLE_BYTES) is
#: kept whole as one ``source_text`` row instead of one ``source_line`` row per cited line: a row per
#: line of every nvidia-smi -q dump was 2,300 rows a node to build, send and insert, for the few lines
#: a finding cites (benchmarks/RESULTS.md, "Columns").
KEEP_WHOLE_AT = 64
KEEP_WHOLE_BYTES = 1024 * 1024

#: Tables the analyzer itself fills (not parsers).
CORE_TABLES: dict[str, tuple[Column, ...]] = {
    "node": (
        Column("source", "str", "where the bundle was read from"),
        Column("collected_at", "ts", "meta.env collected_at (UTC)"),
        Column("hostname", "str"),
        Column("instance_id", "str"),
        Column("instance_type", "str"),
        Column("availability_zone", "str"),
        Column("az_id", "str"),
        Column("placement_group", "str"),
        Column("cluster", "str"),
        Column("instance_group", "str"),
        Column("ultraserver_id", "str"),
        Column("network_node_layers", "str"),
        Column("collector_version", "str"),
        Column("kernel", "str"),
        Column("os_release", "str"),
        Column("nproc", "int"),
        Column("meta_json", "str", "every meta.env key, as JSON"),
    ),
    "probe": (
        Column("path", "str"),
        Column("kind", "str"),
        Column("exit_code", "int", "124 = timed out, 127 = tool missing"),
        Column("duration_s", "float"),
        Column("bytes", "int"),
        Column("sha256", "str"),
        Column("command", "str"),
        Column("note", "str"),
        Column("present", "bool", "the file is in the bundle"),
        Column("stderr_head", "str", "first 2000 characters of the probe's stderr"),
        Column("line", "int", "manifest.tsv line"),
    ),
    "probe_answer": (
        Column("path", "str", "the probe's output file (cmd/<name>.txt)"),
        Column("kind", "str"),
        Column("family", "str", "nvidia-smi, fi-info, efa, dcgm, fabricmanager (the kind for a timeout)"),
        Column("answer", "str", "catalogued failure answer (parsers.probe_answers), or timeout"),
        Column("stream", "str", "stdout, stderr, or manifest (the exit code)"),
        Column("exit_code", "int"),
        Column("pci", "str", "the GPU the answer names, dddd:bb:dd.f"),
        Column(
            "source_file", "str", "the file the answer was read from: the output, its .err, or manifest.tsv"
        ),
        Column("line", "int"),
        Column("text", "str", "the answer's line as printed"),
    ),
    "file": (
        Column("path", "str"),
        Column("source_file", "str"),
        Column("kind", "str"),
        Column("kind_source", "str", "manifest, name or content"),
        Column("bytes", "int"),
        Column("status", "str", "parsed, empty, failed, tool-error, unrecognised, kept"),
        Column("rows", "int"),
    ),
    "source_line": (
        Column("source_file", "str"),
        Column("line", "int"),
        Column("text", "str", "the line as printed (its first 1,000 characters)"),
    ),
    "source_text": (
        Column("source_file", "str"),
        Column(
            "first_line", "int", "the line number of the text's first line (1, or where origins.tsv puts it)"
        ),
        Column(
            "text",
            "str",
            "the whole file, kept instead of a source_line row per cited line when its rows cite"
            f" {KEEP_WHOLE_AT} lines or more (an nvidia-smi -q dump, fi_info -v); its lines are those of"
            " Python's str.splitlines",
        ),
    ),
    "parse_problems": (
        Column("file", "str"),
        Column("kind", "str"),
        Column("error", "str"),
        Column("line", "int"),
        Column("text", "str"),
    ),
    "bundle_checksum": (
        Column(
            "path", "str", "the tarball, as given (cluster.tar.gz!inner/x.tar.gz inside a cluster tarball)"
        ),
        Column("sha256_file", "str", "the <tarball>.sha256 beside it (or the <tarball>.md5 sos writes)"),
        Column("status", "str", "ok, mismatch, or unreadable (no digest could be read from the file)"),
        Column("expected", "str", "the digest the .sha256 (.md5) file states"),
        Column("actual", "str", "the SHA-256 (MD5) of the tarball's bytes"),
        Column("reason", "str", "why unreadable, or a note (the file names another tarball)"),
    ),
    "input_issue": (
        Column("path", "str", "the input as given, or bundle.tar.gz!member inside it"),
        Column(
            "issue",
            "str",
            "unread (not read: missing, no bundle, refused member, damaged, a loose file beside the"
            " bundles, a file no parser recognises, a node bundle without meta.env, read all the same),"
            " duplicate (identical to same_as: analyzed once), node-conflict (another bundle claims the"
            " same node; this one is shown under node)",
        ),
        Column("reason", "str"),
        Column("same_as", "str", "duplicate: the input analyzed in its place"),
    ),
}

FINDINGS_DDL = """
CREATE TABLE IF NOT EXISTS findings (
    fingerprint VARCHAR, rule VARCHAR, rule_version INTEGER, severity VARCHAR,
    bundle_id VARCHAR, node VARCHAR, gpu INTEGER, message VARCHAR, params_json VARCHAR,
    route_owner VARCHAR, route_target VARCHAR, route_action VARCHAR, evidence_json VARCHAR
);
CREATE TABLE IF NOT EXISTS rule_outcome (
    rule VARCHAR, outcome VARCHAR, findings INTEGER, reason VARCHAR
);
"""


@functools.lru_cache(maxsize=1)
def all_schemas() -> dict[str, tuple[Column, ...]]:
    """Every table: core ones plus each available parser's declared tables."""
    schemas = dict(CORE_TABLES)
    for kind in parsers.available_kinds():
        for table, cols in parsers.module_for(kind).SCHEMA.items():
            schemas[table] = (Column("source_file", "str"), *cols)
    return schemas


def keep_pandas_out() -> None:
    """Mark pandas absent in a process of the analyzer's own (the CLI's analyze and ingest, the reading
    workers), unless something imported it already.

    pyarrow imports pandas, when it is installed, at the first ``pa.array`` of a Python list (to ask
    whether the list is a pandas object): 54 MiB and ~0.3 s of CPU in every process (the ``ray`` extra
    installs pandas).  The analyzer hands Arrow only lists and Arrow arrays, and works without pandas (the
    core install has none), so its processes are as they would be without it installed.  pyarrow remembers
    for the process's life that it found no pandas: call it only in a process of the analyzer's own (the
    console script, a pool's worker), never in a library user's or a test's."""
    import sys

    if "pandas" not in sys.modules and not any(isinstance(f, _NoPandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoPandas())


class _NoPandas:
    """An import finder that answers "no such module" for pandas (see keep_pandas_out)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (not used by hptriage)", name=name)


def release_memory() -> None:
    """Give the heap's freed pages back to the system (glibc's malloc_trim; Arrow's pool likewise):
    after the load, the batches read and inserted would otherwise stay in the process's RSS through the
    rules and the reports.  Does nothing where there is no glibc."""
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        trim = getattr(libc, "malloc_trim", None)
    except OSError:
        trim = None
    if trim is not None:
        trim(0)


def connect(path: str | None) -> duckdb.DuckDBPyConnection:
    """The store: a new database file at ``path``, else a compressed in-memory database.

    In memory, DuckDB keeps its columns uncompressed unless the database is attached with COMPRESS
    (DuckDB 1.3 and later; an older one keeps them uncompressed): compressed, a long table takes about a
    third of the memory for the same query results (benchmarks/RESULTS.md, "Columns")."""
    import duckdb

    if path:
        con = duckdb.connect(path)
    else:
        con = duckdb.connect(":memory:")
        try:
            con.execute("ATTACH ':memory:' AS store (COMPRESS)")
            con.execute("USE store")
        except duckdb.Error:  # a DuckDB before in-memory compression (1.2 and older): uncompressed
            pass
    for table, cols in all_schemas().items():
        body = ", ".join(
            ["bundle_id VARCHAR", "node VARCHAR"]
            + [f'"{c.name}" {_SQL_TYPES[c.type]}' for c in cols if c.name not in ("bundle_id", "node")]
        )
        con.execute(f'CREATE TABLE IF NOT EXISTS "{table}" ({body})')
    con.execute(FINDINGS_DDL)
    return con


@functools.cache
def arrow_schema(table: str) -> pa.Schema:
    """The declared columns of a table as an Arrow schema, without bundle_id and node (timestamps
    stay text until the insert casts them)."""
    import pyarrow as pa

    arrow_types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    return pa.schema(
        [
            pa.field(c.name, arrow_types.get(c.type, pa.string()))
            for c in all_schemas()[table]
            if c.name not in ("bundle_id", "node")
        ]
    )


def rows_to_arrow(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows of one table as Arrow with the declared types: converted by Arrow directly when every
    value already has its column's type, else through ``coerce_rows`` (which also says what does not
    fit: RowTypeError).  Missing keys become nulls, undeclared keys are left out."""
    import pyarrow as pa

    from analyzer.store.coerce import coerce_rows

    schema = arrow_schema(table)
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.Table.from_pylist(coerce_rows(rows, all_schemas()[table]), schema=schema)


def columns_to_arrow(table: str, columns: dict[str, list[Any]]) -> pa.Table:
    """A table a parser built a column at a time (``parsers._base.Columns``) as Arrow with the declared
    types: each list handed to Arrow as it is (no dict per row); a list Arrow will not take as its
    declared type goes through ``coerce_rows`` like the rows of ``rows_to_arrow``.  Declared columns
    the parser did not fill are nulls."""
    import pyarrow as pa

    schema = arrow_schema(table)
    n = len(next(iter(columns.values()), ()))
    try:
        arrays = [
            pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema
        ]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        names = tuple(columns)
        rows = [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
        return rows_to_arrow(table, rows)
    return pa.Table.from_arrays(arrays, schema=schema)


def with_ids(body: pa.Table, bundle_id: str, node: str | None) -> pa.Table:
    """Prepend the bundle_id and node columns every stored row carries."""
    import pyarrow as pa

    n = body.num_rows
    return body.add_column(0, "node", pa.array([node or None] * n, pa.string())).add_column(
        0, "bundle_id", pa.array([bundle_id] * n, pa.string())
    )


def to_arrow(table: str, bundle_id: str, node: str | None, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows of one table as an Arrow table with the declared column types and the two id columns.
    Runs in the worker process, so the parent only appends batches."""
    return with_ids(rows_to_arrow(table, rows), bundle_id, node)


class HeldBack(Protocol):
    """Where a BatchWriter sends the batches of the tables it holds back (``store.deferred.Deferred``)."""

    tables: frozenset[str]

    def add(self, table: str, batch: pa.Table | Packed) -> None: ...


def stored_columns(table: str) -> str:
    """The select list that gives a table's Arrow batch (``to_arrow``) the store's column types: the id
    columns, then the declared ones, timestamps (text until here) cast.

    >>> stored_columns("host_uptime").startswith('"bundle_id", "node", ')
    True
    """
    cols = [Column("bundle_id", "str"), Column("node", "str")] + [
        c for c in all_schemas()[table] if c.name not in ("bundle_id", "node")
    ]
    return ", ".join(f'TRY_CAST("{c.name}" AS TIMESTAMP)' if c.type == "ts" else f'"{c.name}"' for c in cols)


class BatchWriter:
    """Collects Arrow batches per table and inserts them together (memory stays flat).

    ``batch_rows``: rows held before an insert.  100k keeps the peak RSS of a 1,024-node analysis under
    1 GiB (844 MiB against 1,035 MiB at 250k, for 9 % more wall time; benchmarks/RESULTS.md)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, batch_rows: int = 100_000, deferred: HeldBack | None = None
    ) -> None:
        self.con = con
        self.schemas = all_schemas()
        self.batch_rows = batch_rows
        self.pending: dict[str, list[pa.Table]] = {}
        self.count = 0
        #: where the batches of the long tables go instead of the store (``analyzer.store.deferred``)
        self.deferred = deferred

    def add(self, table: str, bundle_id: str, node: str | None, rows: list[dict[str, Any]]) -> None:
        if table in self.schemas and rows:
            self.add_arrow(table, to_arrow(table, bundle_id, node, rows))

    def add_arrow(self, table: str, batch: pa.Table | Packed) -> None:
        if table not in self.schemas or batch.num_rows == 0:
            return
        if self.deferred is not None and table in self.deferred.tables:
            self.deferred.add(table, batch)
            return
        from analyzer.store.packed import Packed

        if isinstance(batch, Packed):  # packed for a holder this writer does not have
            batch = batch.table()
        self.pending.setdefault(table, []).append(batch)
        self.count += batch.num_rows
        if self.count >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        for table, batches in self.pending.items():
            select = stored_columns(table)
            self.con.register("_batch", pa.concat_tables(batches).combine_chunks())
            # main.: the store's own table, also while the rules of one part see views of that name
            self.con.execute(f'INSERT INTO main."{table}" SELECT {select} FROM _batch').fetchall()
            self.con.unregister("_batch")
        self.pending = {}
        self.count = 0
