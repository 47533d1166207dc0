"""ingest --parquet --engine ray on a local Ray of 2 CPUs writes the dataset the local engine writes for
a generated 64-node cluster (the same files, tables, row counts and findings), and ``history --parquet``
over it equals ``history --db`` over an ingest of the same bundles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_fleet import COMPARED, _untimed, fact_rows, generate, rows, run

ray = pytest.importorskip("ray", reason="the ray extra (pip install 'hptriage[ray]') is not installed")

NODES = 64


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ray") / "p5-fleet"
    generate.generate(out, NODES, "mixed", 11)
    return out


def _partitions(root: Path) -> list[str]:
    return sorted({str(p.parent.relative_to(root)) for p in root.rglob("*.parquet")})


def test_ray_and_local_write_the_same_dataset(local_ray: None, cluster: Path, tmp_path: Path) -> None:
    from analyzer.fleet.dataset import open_dataset
    from analyzer.history.ingest import open_store

    by_ray, by_pool, db = tmp_path / "ray", tmp_path / "local", tmp_path / "history.duckdb"
    done = run("ingest", str(cluster), "--parquet", str(by_ray), "--engine", "ray", "-q")
    assert done.exit_code == 0, done.output
    assert f"stored; {NODES + 1} new bundle(s)" in done.output
    assert run("ingest", str(cluster), "--parquet", str(by_pool), "--jobs", "2", "-q").exit_code == 0
    # the same partitions and, in them, each bundle's rows of every table (the files are named by the
    # batches, which Ray's blocks make otherwise than the pool)
    assert _partitions(by_ray) == _partitions(by_pool)
    assert fact_rows(by_ray) == fact_rows(by_pool)
    assert len(fact_rows(by_ray)["gpu"]) == NODES
    a, b = open_dataset(by_ray), open_dataset(by_pool)
    doc_a = json.loads((by_ray / "_hptriage_schema.json").read_text())
    doc_b = json.loads((by_pool / "_hptriage_schema.json").read_text())
    assert {t: d["rows"] for t, d in doc_a["tables"].items()} == {
        t: d["rows"] for t, d in doc_b["tables"].items()
    }
    for name, sql in COMPARED.items():
        assert rows(a, sql) == rows(b, sql), name
    planted = json.loads(generate.answer_key(cluster).read_text())["faults"]
    found: dict[str, set[Any]] = {}
    for rule, node in a.execute("SELECT rule, node FROM findings").fetchall():
        found.setdefault(rule, set()).add(node)
    for rule, nodes in planted.items():
        assert set(nodes) <= found.get(rule, set()), rule
    # the history store over the same bundles: the same history
    assert run("ingest", str(cluster), "--db", str(db), "-q").exit_code == 0
    store = open_store(db, create=False)
    for name, sql in COMPARED.items():
        assert rows(a, sql) == rows(store, sql), name
    store.close()  # history opens the store read-only, which DuckDB refuses while this process writes it
    out_db, out_pq = tmp_path / "db.json", tmp_path / "pq.json"
    assert run("history", "--db", str(db), "--json", str(out_db)).exit_code == 0
    assert run("history", "--parquet", str(by_ray), "--json", str(out_pq)).exit_code == 0
    assert _untimed(json.loads(out_db.read_text())) == _untimed(json.loads(out_pq.read_text()))


def test_ray_judges_several_snapshots_as_the_pool_does(local_ray: None, tmp_path: Path) -> None:
    """A case folder of every input type is four snapshots: judged as Ray tasks, the same rows."""
    from analyzer.fleet.dataset import open_dataset
    from tests.test_foreign_mixed import _mixed

    case = _mixed(tmp_path)
    by_ray, by_pool = tmp_path / "ray", tmp_path / "local"
    done = run("ingest", str(case), "--parquet", str(by_ray), "--engine", "ray", "-q")
    assert done.exit_code == 0 and done.output.count("snapshot ") >= 4, done.output
    assert run("ingest", str(case), "--parquet", str(by_pool), "--jobs", "2", "-q").exit_code == 0
    a, b = open_dataset(by_ray), open_dataset(by_pool)
    for name, sql in COMPARED.items():
        assert rows(a, sql) == rows(b, sql), name
