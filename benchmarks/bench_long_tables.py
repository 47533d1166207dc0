"""The long tables (one row per printed key) and their number-and-unit conversion, built the ways that
were candidates, measured in the same run (best of ``--runs``, CPU time of this one thread).

    .venv/bin/python benchmarks/bench_long_tables.py [--copies 512] [--runs 5]

Inputs: the real 8-GPU ``nvidia-smi -q`` the fleet generator copies into every node
(``tests/fixtures/collector/nvidia-smi-q/jp-simulator-8xh100-565-complete.txt``) and the generated
node's ``fi_info`` (32 EFA devices), ``--copies`` times over, each copy parsed on its own as the workers
do.  Measured:

1. *rows to Arrow*: the long table as one dict per row turned into Arrow (``pa.Table.from_pylist``, the
   store's way before), against the parser's column lists handed to Arrow as they are
   (``columns_to_arrow``); and a small table (the ``gpu`` rows: 8 rows of 100+ columns) by
   ``from_pylist`` (``rows_to_arrow``) against a list comprehension per column.
2. *number and unit of each value*: ``parsers._text.number_and_unit`` on every value (the way before),
   once per distinct value of a file (``LongTable`` now), pyarrow's RE2 ``extract_regex`` over the value
   column, and DuckDB's ``regexp_extract`` over the same column; the column ways are checked against
   the Python function value for value and their mismatches counted (RE2's ``\\d`` and ``\\s`` are ASCII
   only, Python's are not).
3. *the key/value pass of nvidia-smi -q*: the whole parser (sections, GPU rows, long table) against
   DuckDB (and polars) splitting the copies into lines and keys with plain string functions, the pass a
   vectorised reader would start from, for the order of magnitude (the issue's figure).

polars is not a dependency: where it is importable (``PYTHONPATH`` of a ``pip install --target`` aside)
its ways are measured too.

Prints a table per measure; findings in benchmarks/RESULTS.md ("Columns").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import generate  # noqa: E402

from analyzer.store.tables import arrow_schema, columns_to_arrow  # noqa: E402
from parsers import fi_info, nvidia_smi_q  # noqa: E402
from parsers._text import number_and_unit  # noqa: E402

#: number_and_unit as one RE2 pattern over a whole column (hex and the "1,2" list rule done after).
RE2_NUMBER = r"^\s*(?P<n>[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<u>[A-Za-z%°µ/][\w%°µ/.\- ]{0,15})?\s*$"


def best(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def _per_column(table: str, rows: list[dict[str, Any]]) -> Any:
    """Rows to Arrow a column at a time (a list comprehension per column), the way tried for the small
    tables and left: slower than ``from_pylist`` on them."""
    import pyarrow as pa

    schema = arrow_schema(table)
    return pa.Table.from_arrays(
        [pa.array([r.get(f.name) for r in rows], f.type) for f in schema], schema=schema
    )


def python_each(values: list[str]) -> list[tuple[float | None, str | None]]:
    return [number_and_unit(v) for v in values]


def python_distinct(values: list[str]) -> list[tuple[float | None, str | None]]:
    read = {v: number_and_unit(v) for v in set(values)}
    return [read[v] for v in values]


def _finish_column(
    values: list[str], numbers: list[str | None], units: list[str | None]
) -> list[tuple[float | None, str | None]]:
    """The parts a regex over the column cannot do: hex values, '1,2' lists, ',' as thousands."""
    out: list[tuple[float | None, str | None]] = []
    for v, n, u in zip(values, numbers, units, strict=True):
        s = v.strip()
        if s[:2].lower() == "0x" and len(s) > 2:
            out.append(number_and_unit(v))
        elif not n:
            out.append((None, None))
        elif "," in n:
            out.append(number_and_unit(v))
        else:
            out.append((float(n), (u or "").strip() or None))
    return out


def arrow_column(values: list[str]) -> list[tuple[float | None, str | None]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    got = pc.extract_regex(pa.array(values, pa.string()), RE2_NUMBER)
    numbers = pc.struct_field(got, "n").to_pylist()  # a row that does not match: null (its fields too)
    units = pc.struct_field(got, "u").to_pylist()
    return _finish_column(values, numbers, [u or None for u in units])


def duckdb_column(values: list[str]) -> list[tuple[float | None, str | None]]:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("v", pa.table({"value": pa.array(values, pa.string())}))
    pattern = RE2_NUMBER.replace("(?P<n>", "(").replace("(?P<u>", "(").replace("'", "''")
    rows = con.execute(
        f"SELECT nullif(regexp_extract(value, '{pattern}', 1), ''),"
        f" nullif(regexp_extract(value, '{pattern}', 2), '') FROM v"
    ).fetchall()
    return _finish_column(values, [r[0] for r in rows], [r[1] for r in rows])


def polars_column(values: list[str]) -> list[tuple[float | None, str | None]]:
    import polars as pl

    got = pl.Series("v", values).str.extract_groups(RE2_NUMBER)  # polars' regex crate: RE2-like too
    return _finish_column(values, got.struct.field("n").to_list(), got.struct.field("u").to_list())


def polars_kv(text: str, copies: int) -> int:
    """The key/value pass over ``copies`` dumps in polars' string expressions (the issue's 0.3 s way)."""
    import polars as pl

    lines = pl.DataFrame({"text": [text] * copies}).select(pl.col("text").str.split("\n")).explode("text")
    pairs = (
        lines.filter(pl.col("text").str.contains(" : ", literal=True))
        .select(pl.col("text").str.split_exact(" : ", 1).struct.rename_fields(["key", "value"]))
        .unnest("text")
        .select(pl.col("key").str.strip_chars(), pl.col("value").str.strip_chars())
    )
    return pairs.height


def _have_polars() -> bool:
    try:
        import polars  # noqa: F401
    except ImportError:
        return False
    return True


def mismatches(
    got: list[tuple[float | None, str | None]], want: list[tuple[float | None, str | None]]
) -> int:
    return sum(1 for g, w in zip(got, want, strict=True) if g != w)


def duckdb_kv(text: str, copies: int) -> int:
    """The key/value pass over ``copies`` dumps in DuckDB's string functions (strpos/left/substr/trim)."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.register("f", pa.table({"file": list(range(copies)), "text": [text] * copies}))
    return int(
        con.execute(
            """
            SELECT count(*) FROM (
              SELECT trim(left(l, strpos(l, ' : ') - 1)) AS key, trim(substr(l, strpos(l, ' : ') + 3)) AS value
              FROM (SELECT unnest(string_split(text, chr(10))) AS l FROM f) WHERE strpos(l, ' : ') > 0)
            """
        ).fetchone()[0]  # type: ignore[index]
    )


def main() -> None:
    import pyarrow as pa

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=512)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    q_text = generate.fixture(generate.Q_FIXTURE)
    fi_text = generate.build_fi_info()
    copies, runs = args.copies, args.runs

    print(f"== 1. rows to Arrow ({copies} files each, ms per file, best of {runs}) ==")
    for kind, module, text, table in (
        ("nvidia-smi -q", nvidia_smi_q, q_text, "gpu_attribute"),
        ("fi_info", fi_info, fi_text, "provider_attribute"),
    ):
        result = module.parse(text)
        rows, columns = result.rows(table), result.columns[table].data
        schema = arrow_schema(table)
        dicts = best(
            lambda r=rows, s=schema: [pa.Table.from_pylist(r, schema=s) for _ in range(copies)], runs
        )
        lists = best(lambda t=table, c=columns: [columns_to_arrow(t, c) for _ in range(copies)], runs)
        print(
            f"{kind:14} {table:19} {len(rows):5} rows: dicts {dicts / copies * 1e3:6.3f}  lists {lists / copies * 1e3:6.3f}  ({dicts / lists:.1f}x)"
        )
    gpu = nvidia_smi_q.parse(q_text).rows("gpu")
    schema = arrow_schema("gpu")
    dicts = best(lambda: [pa.Table.from_pylist(gpu, schema=schema) for _ in range(copies)], runs)
    lists = best(lambda: [_per_column("gpu", gpu) for _ in range(copies)], runs)
    print(
        f"{'nvidia-smi -q':14} {'gpu':19} {len(gpu):5} rows: from_pylist {dicts / copies * 1e3:6.3f}  a list per column {lists / copies * 1e3:6.3f}  ({dicts / lists:.1f}x)"
    )

    print(f"\n== 2. number and unit of each value (ms per file, best of {runs}; mismatches vs Python) ==")
    for kind, module, text, table in (
        ("nvidia-smi -q", nvidia_smi_q, q_text, "gpu_attribute"),
        ("fi_info", fi_info, fi_text, "provider_attribute"),
    ):
        values = module.parse(text).columns[table].data["value"]
        want = python_each(values)
        ways: dict[str, Callable[[list[str]], list[tuple[float | None, str | None]]]] = {
            "Python, every value": python_each,
            "Python, each distinct value once": python_distinct,
            "pyarrow extract_regex (RE2)": arrow_column,
            "DuckDB regexp_extract": duckdb_column,
        }
        if _have_polars():
            ways["polars str.extract_groups"] = polars_column
        print(f"{kind} ({len(values)} values, {len(set(values))} distinct):")
        for name, way in ways.items():
            spent = best(lambda way=way, v=values: [way(v) for _ in range(max(1, copies // 8))], runs)
            print(
                f"  {name:34} {spent / max(1, copies // 8) * 1e3:7.3f} ms   mismatches {mismatches(way(values), want)}"
            )

    print(f"\n== 3. nvidia-smi -q, {copies} copies of the 8-GPU dump (s, best of {max(1, runs // 2)}) ==")
    parser = best(lambda: [nvidia_smi_q.parse(q_text) for _ in range(copies)], max(1, runs // 2))
    pairs = duckdb_kv(q_text, copies)
    kv = best(lambda: duckdb_kv(q_text, copies), max(1, runs // 2))
    print(f"  the parser (everything)                    {parser:6.2f} s")
    print(f"  DuckDB key/value pass only ({pairs} pairs) {kv:6.2f} s  (CPU of its threads too)")
    if _have_polars():
        pairs = polars_kv(q_text, copies)
        kv = best(lambda: polars_kv(q_text, copies), max(1, runs // 2))
        print(f"  polars key/value pass only ({pairs} pairs) {kv:6.2f} s  (CPU of its threads too)")


if __name__ == "__main__":
    main()
