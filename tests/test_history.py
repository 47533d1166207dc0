"""The history store: idempotent ingest, judged again after a rule change, a node's recurring Xid across
three bundles, snapshot diffs, the Parquet export read back by DuckDB and PySpark, schema versions."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import ROOT

SAMPLES = sorted((ROOT / "sample_bundles").glob("*/bundle"))
NODE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-01"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args])
    return result.exit_code, result.output


def _counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
    out = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}  # type: ignore[index]
    con.close()
    return out


def _day(src: Path, dest: Path, day: int, driver: str = "565.57.01", ecc: int = 0, xid: bool = True) -> Path:
    """The sample node collected on 2026-11-<day> (its own content: the meta differs)."""
    shutil.copytree(src, dest)
    meta = (dest / "meta.env").read_text()
    (dest / "meta.env").write_text(
        re.sub(r"collected_at=\S+", f"collected_at=2026-11-{day:02d}T08:00:00Z", meta)
    )
    q = (dest / "cmd" / "nvidia-smi-q.txt").read_text().replace("565.57.01", driver)
    at = q.index("        Aggregate")  # the lifetime counter (the volatile one starts again at each reboot)
    q = q[:at] + q[at:].replace(
        "SRAM Correctable              : 0", f"SRAM Correctable              : {ecc}", 1
    )
    (dest / "cmd" / "nvidia-smi-q.txt").write_text(q)
    if not xid:
        (dest / "cmd" / "dmesg.txt").write_text(
            "[  100.000000] usb 1-1: new high-speed USB device number 2\n"
        )
    return dest


def test_ingesting_twice_gives_the_same_counts(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    for sample in SAMPLES:
        code, out = _run("ingest", str(sample), "--db", str(db), "-q")
        assert code == 0 and ": stored;" in out, out
    first = _counts(db)
    assert first["snapshot"] == len(SAMPLES) and first["findings"] > 10 and first["gpu"] > 10
    for sample in SAMPLES:
        code, out = _run("ingest", str(sample), "--db", str(db), "-q")
        assert code == 0 and "already stored" in out
    assert _counts(db) == first
    # the same bundles packed otherwise (a tarball of a node) are the same content: stored once
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(DISTINCT bundle_hash) = count(*) FROM bundle").fetchone()[0]
    assert con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()[0] == "1"
    tool, rules = con.execute("SELECT tool_version, rules_json FROM snapshot LIMIT 1").fetchone()
    assert tool and json.loads(rules)["gpu.xid"] >= 1
    con.close()


def test_a_rule_change_judges_the_snapshot_again(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    bundle = SAMPLES[0]
    assert _run("ingest", str(bundle), "--db", str(db), "-q")[0] == 0
    before = _counts(db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE snapshot SET rules_hash = 'older-rules', rules_json = '{}'")
    con.close()
    code, out = _run("ingest", str(bundle), "--db", str(db), "-q")
    assert code == 0 and "judged again" in out
    assert _counts(db) == before  # facts stored once, findings replaced (not added)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT rules_hash <> 'older-rules' AND rules_json <> '{}' FROM snapshot").fetchone()[
        0
    ]
    con.close()


def test_history_shows_a_recurring_xid_across_three_bundles(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    for day, ecc in ((1, 10), (2, 40), (3, 100)):
        bundle = _day(NODE, tmp_path / f"d{day}" / "p5-node-01", day, ecc=ecc)
        assert _run("ingest", str(bundle.parent), "--db", str(db), "-q")[0] == 0
    code, out = _run("history", "--db", str(db), "--node", "p5-node-01", "--json", str(tmp_path / "h.json"),
                     "--html", str(tmp_path / "h.html"))  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "h.json").read_text())
    [node] = doc["nodes"]
    assert node["node"] == "p5-node-01" and node["recurring"] >= 2
    xid = next(f for f in node["findings"] if f["rule"] == "gpu.xid")
    assert xid["times_seen"] == 3
    assert xid["first_seen"].startswith("2026-11-01") and xid["last_seen"].startswith("2026-11-03")
    x48 = next(x for x in node["xids"] if x["xid"] == 48)
    assert x48["bundles"] == 3 and x48["pci"] == "0000:5d:00.0"
    ecc = next(e for e in node["ecc"] if e["growth"])
    assert (ecc["first"], ecc["last"], ecc["per_day"]) == (10, 100, 45.0)
    assert "seen 3x, first 2026-11-01 08:00, last 2026-11-03 08:00" in out
    page = (tmp_path / "h.html").read_text()
    assert "<svg" in page and "gpu.xid" in page and "http" not in page.replace("http-equiv", "")


def test_diff_lists_version_changes_and_new_and_resolved_findings(tmp_path: Path) -> None:
    old = _day(NODE, tmp_path / "old" / "p5-node-01", 1, xid=True)
    new = _day(NODE, tmp_path / "new" / "p5-node-01", 2, driver="570.86.15", xid=False)
    shutil.copytree(NODE.parent / "p5-node-02", tmp_path / "new" / "p5-node-02")
    code, out = _run("diff", str(old.parent), str(new.parent), "--json", str(tmp_path / "d.json"))
    assert code == 0, out
    doc = json.loads((tmp_path / "d.json").read_text())
    assert any(f["rule"] == "gpu.xid" and f["node"] == "p5-node-01" for f in doc["resolved_findings"])
    assert doc["nodes_added"] == ["p5-node-02"] and doc["nodes_gone"] == []
    assert {"node": "p5-node-01", "component": "nvidia_driver (nvidia-smi)", "from": "565.57.01",
            "to": "570.86.15"} in doc["version_changes"]  # fmt: skip
    assert doc["new_findings"], "p5-node-02 brings its own findings"
    assert "resolved findings:" in out and "565.57.01 -> 570.86.15" in out
    # the same through a store: snapshots by 'previous' / 'latest'
    db = tmp_path / "h.duckdb"
    for path in (old.parent, new.parent):
        assert _run("ingest", str(path), "--db", str(db), "-q")[0] == 0
    code, out2 = _run("diff", "--db", str(db), "previous", "latest")
    assert code == 0 and "565.57.01 -> 570.86.15" in out2


def test_cluster_tarballs_ingest_and_diff(tmp_path: Path) -> None:
    """A cluster given as one tarball (node folders and extra/ inside) is ingested and diffed like its
    folder (both once failed: the work folder for unpacking it was never made)."""
    import tarfile

    old = _day(NODE, tmp_path / "old" / "p5-node-01", 1, xid=True)
    new = _day(NODE, tmp_path / "new" / "p5-node-01", 2, xid=False)
    tarballs = []
    for folder in (old.parent, new.parent):
        tarball = tmp_path / f"{folder.name}.tar.gz"
        with tarfile.open(tarball, "w:gz") as archive:
            archive.add(folder, arcname="cluster")
        tarballs.append(tarball)
    db = tmp_path / "h.duckdb"
    code, out = _run("ingest", str(tarballs[0]), "--db", str(db), "-q")
    assert code == 0 and ": stored;" in out, out
    code, out = _run("diff", str(tarballs[0]), str(tarballs[1]), "--json", str(tmp_path / "d.json"))
    assert code == 0, out
    doc = json.loads((tmp_path / "d.json").read_text())
    assert any(f["rule"] == "gpu.xid" and f["node"] == "p5-node-01" for f in doc["resolved_findings"])


def test_parquet_export_reads_back_in_duckdb_and_pyspark(tmp_path: Path) -> None:
    db, out = tmp_path / "h.duckdb", tmp_path / "parquet"
    for sample in SAMPLES:
        assert _run("ingest", str(sample), "--db", str(db), "-q")[0] == 0
    code, text = _run("export", "--db", str(db), "--parquet", str(out))
    assert code == 0, text
    schema = json.loads((out / "_hptriage_schema.json").read_text())
    assert schema["schema_version"] == 1
    stored = _counts(db)
    exported = {t: v["rows"] for t, v in schema["tables"].items()}
    assert all(exported[t] == stored[t] for t in exported) and exported["gpu"] > 0
    assert list((out / "gpu").glob("cluster=*/collection_date=2026-12-01/*.parquet"))
    con = duckdb.connect()
    read_back = {
        t: con.execute(
            f"SELECT count(*) FROM read_parquet('{out / t}/**/*.parquet', hive_partitioning = true)"
        ).fetchone()[0]  # type: ignore[index]
        for t, n in exported.items()
        if n
    }
    assert read_back == {t: n for t, n in exported.items() if n}
    cols = [
        r[0]
        for r in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet('{out}/findings/**/*.parquet', hive_partitioning = true)"
        ).fetchall()
    ]
    assert {"snapshot_id", "fingerprint", "cluster", "collection_date"} <= set(cols)
    _pyspark_counts(out, read_back)


def _pyspark_counts(out: Path, expected: dict[str, int]) -> None:
    pyspark = pytest.importorskip("pyspark", reason="pyspark is in the test extras (CI installs it)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for PySpark (CI installs default-jre-headless)")
    script = (
        "import json, sys\n"
        "from pyspark.sql import SparkSession\n"
        "s = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')"
        ".config('spark.sql.session.timeZone', 'UTC').getOrCreate()\n"
        "s.sparkContext.setLogLevel('ERROR')\n"
        f"tables = {sorted(expected)!r}\n"
        f"print(json.dumps({{t: s.read.parquet({str(out)!r} + '/' + t).count() for t in tables}}))\n"
        "s.stop()\n"
    )
    assert pyspark
    result = subprocess.run([sys.executable, "-c", script],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected


def test_store_schema_is_checked(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    assert _run("ingest", str(SAMPLES[0]), "--db", str(db), "-q")[0] == 0
    con = duckdb.connect(str(db))
    con.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    code, out = _run("ingest", str(SAMPLES[0]), "--db", str(db), "-q")
    assert code == 2 and "newer hptriage" in out
    code, out = _run("history", "--db", str(db))
    assert code == 2 and "upgrade hptriage" in out
    analyzed = tmp_path / "a.duckdb"
    assert _run("analyze", str(SAMPLES[0]), "--db", str(analyzed), "-q")[0] in (0, 1, 5)
    code, out = _run("ingest", str(SAMPLES[0]), "--db", str(analyzed), "-q")
    assert code == 2 and "not an hptriage history store" in out
    code, out = _run("history", "--db", str(tmp_path / "missing.duckdb"))
    assert code == 2 and "no such store" in out
