"""ingest --parquet: the engine-neutral read_input, the dataset it writes, and the same answers as the
history store (--db) gives for the same bundles: findings, outcomes, bundles, snapshots, history."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.errors import EXIT_USAGE

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

#: What the two stores must agree on (time of ingest aside).
COMPARED = {
    "findings": "SELECT snapshot_id, bundle_hash, fingerprint, rule, rule_version, severity, node, gpu, message,"
    " params_json, route_owner, route_target, route_action, evidence_json FROM findings",
    "rule_outcome": "SELECT snapshot_id, rule, outcome, findings FROM rule_outcome",
    "snapshot_bundle": "SELECT snapshot_id, bundle_hash FROM snapshot_bundle",
    "bundle": "SELECT bundle_hash, kind, node, source, collected_at, cluster, instance_type, first_snapshot FROM bundle",
    "snapshot": "SELECT snapshot_id, sources, cluster, collected_at, nodes, tool_version, rules_hash FROM snapshot",
}


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def rows(con: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in con.execute(sql).fetchall()), key=repr)


def fact_rows(ds: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Each fact table's row count per bundle, as the dataset's views read it."""
    from analyzer.fleet.dataset import open_dataset, tables_in
    from analyzer.history.ingest import STORE_TABLES

    con = open_dataset(ds)
    try:
        return {
            t: rows(con, f'SELECT bundle_hash, count(*) FROM "{t}" GROUP BY 1')
            for t in tables_in(ds)
            if t not in STORE_TABLES
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet") / "c1"
    generate.generate(out, 12, "mixed", 3)
    return out


@pytest.fixture(scope="module")
def stores(cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("stores")
    db, ds = work / "history.duckdb", work / "dataset"
    assert run("ingest", str(cluster), "--db", str(db), "-q", "--jobs", "1").exit_code == 0
    done = run("ingest", str(cluster), "--parquet", str(ds), "-q", "--jobs", "2")
    assert done.exit_code == 0, done.output
    assert "stored; 13 new bundle(s)" in done.output
    return db, ds


def test_parquet_ingest_agrees_with_the_history_store(stores: tuple[Path, Path]) -> None:
    from analyzer.fleet.dataset import open_dataset
    from analyzer.history.ingest import open_store

    db, ds = stores
    store, dataset = open_store(db, create=False), open_dataset(ds)
    findings = rows(store, COMPARED["findings"])
    assert len(findings) >= 8  # the planted faults (xid, ecc, straggler, fsx, iowait ...) were judged
    assert {f[3] for f in findings} >= {"gpu.xid", "nccl.pair.slow", "straggler.host.iowait"}
    for name, sql in COMPARED.items():
        assert rows(dataset, sql) == rows(store, sql), name
    # every fact table holds the same rows per bundle (bundle_id aside: the dataset's is the content's)
    for (table,) in store.execute(
        "SELECT table_name FROM information_schema.columns WHERE column_name = 'bundle_hash'"
        " AND table_name NOT IN ('bundle', 'findings', 'snapshot_bundle') GROUP BY 1"
    ).fetchall():
        count = f'SELECT bundle_hash, count(*) FROM "{table}" GROUP BY 1'
        assert rows(dataset, count) == rows(store, count), table


def test_history_and_diff_read_the_dataset_as_the_store(stores: tuple[Path, Path], tmp_path: Path) -> None:
    db, ds = stores
    a, b = tmp_path / "db.json", tmp_path / "pq.json"
    assert run("history", "--db", str(db), "--json", str(a)).exit_code == 0
    assert run("history", "--parquet", str(ds), "--json", str(b)).exit_code == 0
    assert _untimed(json.loads(a.read_text())) == _untimed(json.loads(b.read_text()))
    one = run("diff", "--parquet", str(ds), "latest", "latest")
    assert one.exit_code == 0, one.output
    assert one.output == run("diff", "--db", str(db), "latest", "latest").output


def _untimed(doc: Any) -> Any:
    """The history document without the times of ingest (two ingests, two times)."""
    if isinstance(doc, dict):
        return {k: _untimed(v) for k, v in doc.items() if k not in ("ingested_at", "judged_at")}
    if isinstance(doc, list):
        return [_untimed(v) for v in doc]
    return doc


def test_dataset_is_hive_partitioned_and_appendable(
    cluster: Path, stores: tuple[Path, Path], tmp_path: Path
) -> None:
    _, ds = stores
    doc = json.loads((ds / "_hptriage_schema.json").read_text())
    assert doc["tables"]["findings"]["partitioned_by"] == ["cluster", "collection_date"]
    node_files = sorted((ds / "node").rglob("*.parquet"))
    assert len(node_files) == 12 and all(  # --jobs 2 on 13 inputs: a batch of one bundle each
        "cluster=c1" in str(p) and "collection_date=2026-" in str(p) for p in node_files
    )
    facts = fact_rows(ds)
    assert len(facts["node"]) == 12 and {n for _, n in facts["node"]} == {1}
    again = run("ingest", str(cluster), "--parquet", str(ds), "-q", "--jobs", "1")
    assert "already stored; 0 new bundle(s), 13 already in the dataset" in again.output
    # read again in one batch: one file a partition (collection day), each bundle's rows once (the old
    # files of one bundle each removed)
    batched = list((ds / "node").rglob("*.parquet"))
    assert len(batched) == len({p.parent for p in node_files}) < 12
    assert fact_rows(ds) == facts
    again = run("ingest", str(cluster), "--parquet", str(ds), "-q", "--jobs", "2")
    assert len(list((ds / "node").rglob("*.parquet"))) == 12 and fact_rows(ds) == facts
    # a second day of the cluster, with one node changed: a new snapshot, 1 new bundle, the rest known
    day2 = tmp_path / "day2" / "c1"
    generate.generate(day2, 12, "mixed", 3)
    (day2 / "p5-node-0000.tar.gz").unlink()
    (day2 / "p5-node-0000.tar.gz.sha256").unlink()
    generate_one = tmp_path / "other" / "c1"
    generate.generate(generate_one, 12, "healthy", 9)
    (generate_one / "p5-node-0000.tar.gz").rename(day2 / "p5-node-0000.tar.gz")
    added = run("ingest", str(day2), "--parquet", str(ds), "-q", "--jobs", "1")
    assert "stored; 1 new bundle(s), 12 already in the dataset" in added.output, added.output
    listed = run("sql", "--parquet", str(ds), "SELECT count(*) AS n FROM snapshot", "--format", "json")
    assert json.loads(listed.output) == [{"n": 2}]
    first = again.output.split("snapshot ", 1)[1].split(":", 1)[0]
    second = added.output.split("snapshot ", 1)[1].split(":", 1)[0]
    changed = run("diff", "--parquet", str(ds), "previous", "latest")
    assert changed.exit_code == 0
    # the schema document, kept up to date by each ingest without reading the dataset again, says
    # what a count of every file says
    import duckdb

    from analyzer.fleet.dataset import write_schema_doc

    kept = json.loads((ds / "_hptriage_schema.json").read_text())
    con = duckdb.connect()
    recount = write_schema_doc(con, ds)
    assert {t: d["rows"] for t, d in kept["tables"].items()} == {
        t: d["rows"] for t, d in recount["tables"].items()
    }
    assert all(set(kept["tables"][t]["columns"]) == set(d["columns"]) for t, d in recount["tables"].items())
    assert changed.output.startswith(f"diff {first[:12]} -> {second[:12]}: 0 new, 0 resolved, 11 persisting")


def test_read_input_is_pure_and_names_its_input(cluster: Path) -> None:
    from analyzer.fleet.read_input import read_input

    node = json.loads(generate.answer_key(cluster).read_text())["faults"]["gpu.xid"][0]  # the planted Xid
    name = f"/fsx/hptriage/c1/{node}.tar.gz"
    body = (cluster / f"{node}.tar.gz").read_bytes()
    tables = read_input(name, body, checksum=(cluster / f"{node}.tar.gz.sha256").read_bytes())
    bundle = tables["bundle"].to_pylist()
    assert [(b["kind"], b["node"], b["source"]) for b in bundle] == [("node", node, name)]
    assert {f["rule"] for f in tables["findings"].to_pylist()} >= {"gpu.xid", "gpu.ecc.uncorrectable"}
    assert all(o["rule"] for o in tables["rule_outcome"].to_pylist())
    assert tables["gpu"].num_rows == 8 and tables["gpu"].column_names[0] == "bundle_hash"
    for table in tables.values():  # nothing of the scratch folder the worker used is kept
        for column in table.columns:
            assert not any("hptriage-input-" in str(v) for v in column.to_pylist())
    extra = {p.name: p.read_bytes() for p in sorted((cluster / "extra").iterdir())}
    from_dir = read_input("/fsx/hptriage/c1/extra", extra)
    assert from_dir["bundle"].to_pylist()[0]["kind"] == "cluster"
    assert from_dir["nccl_result"].num_rows > 0


def test_parquet_sql_reads_the_dataset_only(stores: tuple[Path, Path], tmp_path: Path) -> None:
    _, ds = stores
    empty = run("sql", "--parquet", str(ds), "SELECT count(*) AS n FROM smi_mig", "--format", "json")
    assert json.loads(empty.output) == [{"n": 0}]  # a table no bundle wrote reads as empty
    outside = run("sql", "--parquet", str(ds), f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'")
    assert outside.exit_code == EXIT_USAGE and not (tmp_path / "x.csv").exists()


def test_ingest_refuses_unclear_targets(cluster: Path, tmp_path: Path) -> None:
    neither = run("ingest", str(cluster))
    assert neither.exit_code == EXIT_USAGE and "--db FILE" in neither.output
    both = run("ingest", str(cluster), "--db", str(tmp_path / "a.duckdb"), "--parquet", str(tmp_path / "d"))
    assert both.exit_code == EXIT_USAGE
    ray_db = run("ingest", str(cluster), "--db", str(tmp_path / "a.duckdb"), "--engine", "ray")
    assert ray_db.exit_code == EXIT_USAGE and "--parquet DIR" in ray_db.output
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("not a dataset\n")
    busy = run("ingest", str(cluster), "--parquet", str(tmp_path / "busy"))
    assert busy.exit_code == EXIT_USAGE and "holds no hptriage dataset" in busy.output
    s3 = run("ingest", "s3://bucket/hptriage/", "--parquet", str(tmp_path / "d"))
    assert s3.exit_code == EXIT_USAGE and "--engine ray" in s3.output
    assert run("history", "--parquet", str(tmp_path / "nothing")).exit_code == EXIT_USAGE


def test_ray_engine_missing_is_one_line(
    cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as on an install without the ray extra
    done = run("ingest", str(cluster), "--parquet", str(tmp_path / "d"), "--engine", "ray", "-q")
    assert done.exit_code == EXIT_USAGE
    assert "pip install 'hptriage[ray]'" in done.output and "Traceback" not in done.output


@pytest.mark.parametrize("sample", ["xid-ecc-3node", "nccl-slow-node", "fsx-saturated"])
def test_sample_bundles_judged_alike_by_both_stores(sample: str, tmp_path: Path) -> None:
    """The split of the rules (node-local in the workers, the rest over the dataset) finds what one
    judgement of the whole snapshot finds, on the sample bundles' faults."""
    from analyzer.fleet.dataset import open_dataset
    from analyzer.history.ingest import open_store

    bundle = ROOT / "sample_bundles" / sample / "bundle"
    db, ds = tmp_path / "h.duckdb", tmp_path / "ds"
    assert run("ingest", str(bundle), "--db", str(db), "-q", "--jobs", "1").exit_code == 0
    assert run("ingest", str(bundle), "--parquet", str(ds), "-q", "--jobs", "1").exit_code == 0
    store, dataset = open_store(db, create=False), open_dataset(ds)
    assert rows(store, COMPARED["findings"]), "the sample's faults are found"
    for name in ("findings", "rule_outcome", "bundle", "snapshot"):
        assert rows(dataset, COMPARED[name]) == rows(store, COMPARED[name]), name


def test_foreign_inputs_are_ingested_as_by_the_history_store(tmp_path: Path) -> None:
    """A case folder of every input type (a cluster folder, a HyperPod issue report, a sos report, an EKS
    log collector archive, nvidia-bug-reports): the same snapshots, bundles and findings."""
    from analyzer.fleet.dataset import open_dataset
    from analyzer.history.ingest import open_store
    from tests.test_foreign_mixed import _mixed

    case = _mixed(tmp_path)
    db, ds = tmp_path / "h.duckdb", tmp_path / "ds"
    by_db = run("ingest", str(case), "--db", str(db), "-q", "--jobs", "1")
    by_pq = run("ingest", str(case), "--parquet", str(ds), "-q", "--jobs", "2")
    assert by_pq.exit_code == by_db.exit_code, (by_db.output, by_pq.output)
    store, dataset = open_store(db, create=False), open_dataset(ds)
    assert {r[2] for r in rows(store, COMPARED["bundle"])} >= {"dgx-a", "dgx-b"}
    for name in ("findings", "bundle", "snapshot_bundle", "snapshot", "rule_outcome"):
        assert rows(dataset, COMPARED[name]) == rows(store, COMPARED[name]), name


def test_a_bundle_in_two_batches_is_stored_once(cluster: Path, tmp_path: Path) -> None:
    """The same bundles in two folders of one run (two batches, two snapshots) and again in a later run
    with other batches: each bundle's fact rows are in the dataset once, and the schema document counts
    what the files hold."""
    import shutil

    import duckdb

    from analyzer.fleet.dataset import write_schema_doc

    alone = tmp_path / "alone"
    assert run("ingest", str(cluster), "--parquet", str(alone), "-q", "--jobs", "1").exit_code == 0
    once = fact_rows(alone)
    twice = tmp_path / "twice"
    for copy in ("a", "b"):
        shutil.copytree(cluster, tmp_path / copy / "c1")
    both = run(
        "ingest", str(tmp_path / "a"), str(tmp_path / "b"), "--parquet", str(twice), "-q", "--jobs", "1"
    )
    assert both.exit_code == 0, both.output
    assert fact_rows(twice) == once
    assert run("ingest", str(tmp_path / "b"), "--parquet", str(twice), "-q", "--jobs", "2").exit_code == 0
    assert fact_rows(twice) == once
    kept = json.loads((twice / "_hptriage_schema.json").read_text())
    recount = write_schema_doc(duckdb.connect(), twice)
    assert {t: d["rows"] for t, d in kept["tables"].items()} == {
        t: d["rows"] for t, d in recount["tables"].items()
    }


def test_schema_doc_survives_a_sample_removed(stores: tuple[Path, Path], tmp_path: Path) -> None:
    """A table's sample file removed before the schema document is brought up to date (the driver
    emptied a batch file of repeated bundles): another file of the table gives its columns."""
    import shutil

    from analyzer.fleet.dataset import update_schema_doc

    _, ds = stores
    copy = tmp_path / "ds"
    shutil.copytree(ds, copy)
    kept = json.loads((copy / "_hptriage_schema.json").read_text())
    doc = update_schema_doc(copy, {"gpu": 0}, {"gpu": str(copy / "gpu" / "gone_0.parquet")})
    assert doc["tables"]["gpu"] == kept["tables"]["gpu"]


def test_a_run_stopped_half_way_leaves_no_repeats(cluster: Path, tmp_path: Path) -> None:
    """Fact files a run wrote before it stopped (no snapshot stored, so no bundle known) and a run
    again with other batches: each bundle's rows once."""
    import os

    from analyzer.fleet.inputs import list_inputs
    from analyzer.fleet.worker import Task, run_tasks

    alone = tmp_path / "alone"
    assert run("ingest", str(cluster), "--parquet", str(alone), "-q", "--jobs", "1").exit_code == 0
    once = fact_rows(alone)
    stopped = tmp_path / "stopped"
    assert run("ingest", str(cluster), "--parquet", str(stopped), "-q", "--jobs", "2").exit_code == 0
    for path in stopped.rglob("*.parquet"):  # only the workers' fact files stay, as after a stop
        if path.parent.parent.parent.name in (
            "bundle",
            "snapshot",
            "snapshot_bundle",
            "findings",
            "rule_outcome",
        ):
            path.unlink()
    items = list_inputs([cluster]).items
    tasks = [
        Task(i.path, os.path.abspath(i.path), i.is_dir, i.checksum, i.place()) for i in items if not i.is_dir
    ]
    run_tasks(tasks[:5], str(stopped))  # a batch of five written again, unlike any batch before
    assert run("ingest", str(cluster), "--parquet", str(stopped), "-q", "--jobs", "1").exit_code == 0
    assert fact_rows(stopped) == once
