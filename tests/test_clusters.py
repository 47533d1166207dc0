"""Several clusters and snapshots in one call: each cluster folder keeps its identity.

Built from the real-sample cluster ``nccl-slow-node`` (8 nodes, 28 pairwise nccl-tests logs in extra/,
p5-node-05 slow), copied with another collection time or cluster name; in some copies the slow node
is moved to p5-node-03 by swapping the two hosts in every log, so each copy has its own answer.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.conftest import SAMPLES

SLOW = SAMPLES / "nccl-slow-node" / "bundle"


def _copy(dest: Path, *, day: str = "2026-12-01", cluster: str | None = None, slow: int = 5,
          driver: str | None = None) -> Path:  # fmt: skip
    """The sample cluster collected on ``day`` (meta.env ``cluster`` set when given), its slow node
    moved from p5-node-05 to p5-node-0<slow>, its NVIDIA driver changed when given."""
    shutil.copytree(SLOW, dest)
    for meta in dest.glob("*/meta.env"):
        text = re.sub(r"collected_at=\S+", f"collected_at={day}T08:00:00Z", meta.read_text())
        meta.write_text(text + (f"cluster={cluster}\n" if cluster else ""))
    if slow != 5:
        swap = {"5": str(slow), str(slow): "5"}
        for log in (dest / "extra").iterdir():
            text = re.sub(
                r"on ip-10-1-0-(\d) ", lambda m: f"on ip-10-1-0-{swap.get(m[1], m[1])} ", log.read_text()
            )
            log.write_text(text)
    if driver:
        for q in dest.glob("*/cmd/nvidia-smi-q.txt"):
            q.write_text(q.read_text().replace("565.57.01", driver))
    return dest


def _analyze(tmp_path: Path, *paths: Path) -> tuple[dict, str, duckdb.DuckDBPyConnection]:
    n = len(list(tmp_path.glob("a-*.duckdb")))
    out, db = tmp_path / f"f-{n}.json", tmp_path / f"a-{n}.duckdb"
    result = CliRunner().invoke(
        cli, ["analyze", *map(str, paths), "-q", "--json", str(out), "--db", str(db), "--jobs", "1"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.stderr, duckdb.connect(str(db), read_only=True)


def _concerns(doc: dict) -> set[tuple[str, str | None, str]]:
    return {
        (f["rule"], f["node"], f["severity"])
        for f in doc["findings"]
        if f["severity"] in ("critical", "warning")
    }


@pytest.fixture
def dated(tmp_path: Path) -> tuple[Path, Path]:
    """/.../hptriage/2026-01-05 (p5-node-05 slow) and /.../hptriage/2026-01-06 (p5-node-03 slow): the
    collector's layout, no cluster name in meta.env."""
    base = tmp_path / "hptriage"
    return _copy(base / "2026-01-05", day="2026-01-05"), _copy(base / "2026-01-06", day="2026-01-06", slow=3)


def test_each_snapshot_alone_finds_its_slow_node(dated: tuple[Path, Path], tmp_path: Path) -> None:
    for folder, slow in zip(dated, ("p5-node-05", "p5-node-03"), strict=True):
        doc, _, _ = _analyze(tmp_path, folder)
        assert {n for _, n, s in _concerns(doc) if s == "critical"} == {slow}
        assert doc["inputs"]["not_judged"] == []


def test_two_snapshots_of_one_cluster_judge_the_newest(dated: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = dated
    doc, stderr, con = _analyze(tmp_path, old, new)
    assert _concerns(doc) == {
        ("nccl.pair.slow", "p5-node-03", "critical"),
        ("nccl.busbw.straggler", "p5-node-03", "warning"),
    }
    assert sorted(n["node"] for n in doc["nodes"]) == [f"p5-node-0{i}" for i in range(1, 9)]
    assert doc["inputs"]["node_conflicts"] == []
    [skipped] = doc["inputs"]["not_judged"]
    assert skipped["cluster"] == "hptriage" and skipped["folders"] == [str(old)] and skipped["nodes"] == 8
    assert skipped["newest"] == {"folders": [str(new)], "collected_at": "2026-01-06T08:00:00Z"}
    note = "2 snapshots of cluster hptriage given: judged the newest (2026-01-06 08:00 UTC"
    assert note in stderr and f"hptriage diff {old} {new}" in stderr
    assert any(note in line for line in doc["inputs"]["notes"])
    assert any(note in line for line in doc["verdict"]["notes"])  # every report shows the verdict's notes
    assert con.execute("SELECT DISTINCT cluster FROM node").fetchall() == [("hptriage",)]


def test_two_clusters_with_the_same_node_names_stay_apart(tmp_path: Path) -> None:
    """Cluster B runs another driver and has its slow node elsewhere: each cluster's slow node is found,
    the nodes keep their cluster, and nothing is compared across the two (no version drift)."""
    a = _copy(tmp_path / "A", cluster="train-a")
    b = _copy(tmp_path / "B", cluster="train-b", slow=3, driver="570.86.15")
    doc, stderr, con = _analyze(tmp_path, a, b)
    assert _concerns(doc) == {
        ("nccl.pair.slow", "p5-node-05@train-a", "critical"),
        ("nccl.busbw.straggler", "p5-node-05@train-a", "warning"),
        ("nccl.pair.slow", "p5-node-03@train-b", "critical"),
        ("nccl.busbw.straggler", "p5-node-03@train-b", "warning"),
    }
    assert not [f for f in doc["findings"] if f["rule"].startswith("version.")]
    assert doc["inputs"]["node_conflicts"] == [] and doc["inputs"]["not_judged"] == []
    assert len(doc["nodes"]) == 16
    rows = con.execute("SELECT cluster, count(*) FROM node GROUP BY ALL ORDER BY 1").fetchall()
    assert rows == [("train-a", 8), ("train-b", 8)]
    assert "2 clusters in 2 folders: train-a (8 node(s)), train-b (8 node(s))" in stderr
    # every pair finding cites its own cluster's logs
    slow = {f["node"]: f for f in doc["findings"] if f["rule"] == "nccl.pair.slow"}
    assert all(e["file"].startswith("A/extra/") for e in slow["p5-node-05@train-a"]["evidence"])
    assert all(e["file"].startswith("B/extra/") for e in slow["p5-node-03@train-b"]["evidence"])
    outcomes = {r["rule"]: r["outcome"] for r in doc["rules"]}
    assert outcomes["nccl.pair.slow"] == "fail" and outcomes["version.drift"] == "pass"


def test_extra_files_of_one_name_in_two_folders_do_not_collide(tmp_path: Path) -> None:
    a = _copy(tmp_path / "A", cluster="train-a")
    b = _copy(tmp_path / "B", cluster="train-b", slow=3)
    _, _, con = _analyze(tmp_path, a, b)
    files = [r[0] for r in con.execute("SELECT DISTINCT source_file FROM nccl_run ORDER BY 1").fetchall()]
    assert (
        len(files) == 56
        and files[0] == "A/extra/nccl-pair-01-02.txt"
        and files[28] == "B/extra/nccl-pair-01-02.txt"
    )
    # the same file name, two contents: the host lines kept apart
    hosts = dict(
        con.execute(
            "SELECT source_file, string_agg(DISTINCT host, ',' ORDER BY host) FROM nccl_rank"
            " WHERE source_file LIKE '%/extra/nccl-pair-03-04.txt' GROUP BY 1"
        ).fetchall()
    )
    assert hosts == {"A/extra/nccl-pair-03-04.txt": "ip-10-1-0-3,ip-10-1-0-4",
                     "B/extra/nccl-pair-03-04.txt": "ip-10-1-0-4,ip-10-1-0-5"}  # fmt: skip


def test_one_cluster_alone_keeps_its_extra_names(tmp_path: Path) -> None:
    _, _, con = _analyze(tmp_path, _copy(tmp_path / "A"))
    assert con.execute("SELECT min(source_file) FROM nccl_run").fetchone() == ("extra/nccl-pair-01-02.txt",)


def test_one_collection_split_over_two_folders_is_one_snapshot(tmp_path: Path) -> None:
    """Nodes 1-4 in one folder and 5-8 in another, collected within the hour: both are judged."""
    first, second = tmp_path / "c" / "2026-01-05", tmp_path / "c" / "2026-01-06"
    _copy(first, day="2026-01-05")
    shutil.copytree(first, second)
    for i in range(1, 9):
        shutil.rmtree((first if i > 4 else second) / f"p5-node-0{i}")
    shutil.rmtree(second / "extra")
    for meta in second.glob("*/meta.env"):
        meta.write_text(meta.read_text().replace("2026-01-05T08:00:00Z", "2026-01-05T08:30:00Z"))
    con = connect(None)
    summary = load(con, [first, second], tmp_path / "work", Limits(), jobs=1)
    assert summary.not_judged == [] and len(summary.nodes) == 8
    assert [(p["cluster"], p["folder"], len(p["nodes"])) for p in summary.parts] == [
        ("c", str(first), 4),
        ("c", str(second), 4),
    ]


def test_ingest_stores_one_snapshot_per_folder_and_export_names_the_clusters(
    dated: tuple[Path, Path], tmp_path: Path
) -> None:
    db = tmp_path / "h.duckdb"
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", *map(str, dated), "--db", str(db), "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout.count(": stored;") == 2 and f"(cluster hptriage, {dated[1]})" in result.stdout
    a = _copy(tmp_path / "A", cluster="train-a", slow=2)
    assert runner.invoke(cli, ["ingest", str(a), "--db", str(db), "-q"]).exit_code == 0
    con = duckdb.connect(str(db), read_only=True)
    snaps = con.execute(
        "SELECT cluster, strftime(collected_at, '%Y-%m-%d'), nodes FROM snapshot ORDER BY 2, 1"
    ).fetchall()
    assert snaps == [
        ("hptriage", "2026-01-05", 8),
        ("hptriage", "2026-01-06", 8),
        ("train-a", "2026-12-01", 8),
    ]
    slow = con.execute(
        "SELECT s.cluster, f.node FROM findings f JOIN snapshot s USING (snapshot_id)"
        " WHERE f.rule = 'nccl.pair.slow' ORDER BY s.collected_at"
    ).fetchall()
    assert slow == [("hptriage", "p5-node-05"), ("hptriage", "p5-node-03"), ("train-a", "p5-node-02")]
    assert con.execute("SELECT count(*) FROM bundle WHERE cluster IS NULL OR cluster = ''").fetchone() == (0,)
    con.close()
    out = tmp_path / "parquet"
    assert runner.invoke(cli, ["export", "--db", str(db), "--parquet", str(out)]).exit_code == 0
    for table in ("gpu", "nccl_result", "findings", "node"):
        assert {p.name for p in (out / table).iterdir()} == {"cluster=hptriage", "cluster=train-a"}, table
    assert list((out / "nccl_result" / "cluster=hptriage").glob("collection_date=2026-01-06/*.parquet"))
    # diff of two folders works; a side holding two snapshots is refused, naming the path
    result = runner.invoke(cli, ["diff", *map(str, dated)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["diff", str(dated[0].parent), str(a)])
    assert result.exit_code == 2 and f"{dated[0].parent} holds 2 snapshots" in result.output
    assert "Traceback" not in result.output
