"""Long tables held back from the store until a query names one.

The long tables of key/value tools (one row per printed key: ``gpu_attribute`` of nvidia-smi -q,
``provider_attribute`` of fi_info -v, ...) are most of a bundle's rows (~2,000 of ~2,600 a p5 node) and
few rules read them (the evidence line of a lowered power limit); the whole files of ``source_text``
(~90 KB a node) are read for a finding's evidence lines only.  An analysis that keeps no database holds
their Arrow batches here, compressed (zstd Arrow IPC: 2 M rows in 39 MiB at 1,024 nodes), inserts a
table into the store the first time a query names it (``Context.rows``), and hands the evidence lookup
the few whole files it wants; a table never named costs its compression only.  An analysis that writes
``--db``, and every ingest, stores them as they come: every printed value stays queryable in a kept
database.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from analyzer.store.packed import Packed, pack

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

#: The columns that make a table a long one (``parsers._base.long_columns``).
_LONG = frozenset({"entity", "section", "key", "value", "number", "unit", "line"})


#: The whole files kept for their cited lines: read by the evidence lookup alone (``engine.line_texts``),
#: which takes the few files it wants from here without inserting the table.
TEXTS = "source_text"


@functools.cache
def long_tables() -> frozenset[str]:
    """The parsers' long tables: those declaring every column of ``long_columns``."""
    from analyzer.store.tables import all_schemas

    return frozenset(t for t, cols in all_schemas().items() if {c.name for c in cols} >= _LONG)


def deferrable() -> frozenset[str]:
    """The tables an analysis without a database holds back: the long tables and the whole files."""
    return long_tables() | {TEXTS}


class Deferred:
    """Batches of the long tables, compressed (``compress`` False: Arrow IPC as it is, for a reader that
    writes them out soon, as an ingest worker does), not yet in the store."""

    def __init__(self, tables: frozenset[str] | None = None, *, compress: bool = True) -> None:
        self.tables = deferrable() if tables is None else tables
        self.compress = compress
        self.held: dict[str, list[pa.Buffer]] = {}
        self.rows: dict[str, int] = {}
        self._named: re.Pattern[str] | None = None

    def add(self, table: str, batch: pa.Table | Packed) -> None:
        packed = batch if isinstance(batch, Packed) else pack(batch, self.compress)
        self.held.setdefault(table, []).append(packed.buffer)
        self.rows[table] = self.rows.get(table, 0) + packed.num_rows

    def held_bytes(self) -> int:
        return sum(b.size for buffers in self.held.values() for b in buffers)

    def ensure(self, con: duckdb.DuckDBPyConnection, sql: str) -> None:
        """Insert every held table ``sql`` names before it runs."""
        if not self.held:
            return
        if self._named is None:
            self._named = re.compile(r"\b(" + "|".join(sorted(map(re.escape, self.tables))) + r")\b")
        for table in {m.group(1) for m in self._named.finditer(sql)} & self.held.keys():
            self.insert(con, table)

    def insert(self, con: duckdb.DuckDBPyConnection, table: str) -> None:
        """Insert one held table into the store (and hold it no more)."""
        import pyarrow as pa

        from analyzer.store.tables import BatchWriter

        writer = BatchWriter(con)
        for buffer in self.held.pop(table, []):
            writer.add_arrow(table, pa.ipc.open_stream(buffer).read_all())
        writer.flush()

    def whole_files(self, files: set[str]) -> list[tuple[str, int, str]]:
        """(source_file, first_line, text) of the wanted files held in ``source_text`` (the table stays
        held: a finding's evidence needs a few files of a thousand)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = pa.array(sorted(files), pa.string())
        out: list[tuple[str, int, str]] = []
        for buffer in self.held.get(TEXTS, []):
            batch = pa.ipc.open_stream(buffer).read_all()
            mine = batch.filter(pc.is_in(batch.column("source_file"), value_set=wanted))
            for row in mine.select(["source_file", "first_line", "text"]).to_pylist():
                out.append((row["source_file"], row["first_line"], row["text"]))
        return out

    def batches(self, table: str) -> list[pa.Table]:
        """The held batches of one table, as Arrow (the table stays held)."""
        import pyarrow as pa

        return [pa.ipc.open_stream(buffer).read_all() for buffer in self.held.get(table, [])]

    def insert_all(self, con: duckdb.DuckDBPyConnection) -> None:
        for table in sorted(self.held):
            self.insert(con, table)
