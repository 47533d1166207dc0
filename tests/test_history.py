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


# --- busbw per node and per snapshot; the timeline spans its data -------------------------------------


def _nccl_day(dest: Path, day: int, *, healthy: bool = False, extra_host: bool = False) -> Path:
    """The real-sample cluster nccl-slow-node collected on 2026-12-<day>; ``healthy``: its extra/ holds
    the derived healthy run of the same 28 pairs (tests/test_nccl_runs.py) instead of the slow one;
    ``extra_host``: one more pair log whose second host (ip-10-1-0-99) no node bundle names."""
    from tests.test_nccl_runs import LOGS, SLOW, healthy_log

    shutil.copytree(SLOW, dest)
    for meta in dest.glob("*/meta.env"):
        meta.write_text(
            re.sub(r"collected_at=\S+", f"collected_at=2026-12-{day:02d}T08:00:00Z", meta.read_text())
        )
    if healthy:
        for log in LOGS:
            (dest / "extra" / log.name).write_text(healthy_log(log))
    if extra_host:
        text = (
            (SLOW / "extra" / "nccl-pair-01-02.txt")
            .read_text()
            .replace("on ip-10-1-0-2 ", "on ip-10-1-0-99 ")
        )
        (dest / "extra" / "nccl-pair-01-99.txt").write_text(text)
    return dest


def _median_8g(texts: list[str]) -> float:
    from statistics import median

    from tests.test_nccl_runs import busbw_8g

    return round(median(busbw_8g(t) for t in texts), 2)


def test_history_keeps_busbw_per_node_and_per_snapshot(tmp_path: Path) -> None:
    """Two snapshots of the 8-node cluster (p5-node-05 slow on day 1, healthy on day 2): busbw is kept
    under the node names (the logs' host names mapped as the analysis maps them), one point per node and
    snapshot (the median of the node's 7 pair runs), never one point per pair run of a snapshot."""
    from tests.test_nccl_runs import LOGS, healthy_log

    db = tmp_path / "h.duckdb"
    for day, healthy in ((1, False), (2, True)):
        folder = _nccl_day(tmp_path / f"2026-12-0{day}", day, healthy=healthy)
        assert _run("ingest", str(folder), "--db", str(db), "-q")[0] == 0
    code, out = _run("history", "--db", str(db), "--json", str(tmp_path / "h.json"))
    assert code == 0, out
    doc = json.loads((tmp_path / "h.json").read_text())
    assert {n["node"] for n in doc["nodes"]} == {f"p5-node-0{i}" for i in range(1, 9)}  # no host names
    assert doc["busbw_unmatched_hosts"] == []
    snaps = [s["snapshot_id"] for s in doc["snapshots"]]
    assert len(snaps) == 2
    five = next(n for n in doc["nodes"] if n["node"] == "p5-node-05")
    assert [(b["snapshot_id"], b["family"], b["collective"], b["runs"]) for b in five["busbw"]] == [
        (snaps[0], "pairwise", "all_reduce", 7),
        (snaps[1], "pairwise", "all_reduce", 7),
    ]
    mine = [log for log in LOGS if "05" in log.name]
    assert five["busbw"][0]["busbw_gbps"] == _median_8g([log.read_text() for log in mine])
    assert five["busbw"][1]["busbw_gbps"] == _median_8g([healthy_log(log) for log in mine])
    assert five["busbw"][0]["busbw_gbps"] < 0.7 * five["busbw"][1]["busbw_gbps"]
    assert five["busbw"][0]["slowest_run"] == "extra/nccl-pair-03-05.txt"
    assert [b["at"][:10] for b in five["busbw"]] == ["2026-12-01", "2026-12-02"]
    for n in doc["nodes"]:  # every node: one point per snapshot
        assert [b["snapshot_id"] for b in n["busbw"]] == snaps, n["node"]
    # --node reaches the node's busbw; the text says per snapshot
    code, out = _run("history", "--db", str(db), "--node", "p5-node-05")
    assert code == 0 and "busbw pairwise all_reduce per snapshot (last 2 of 2 snapshots):" in out
    assert "2026-12-01 08:00" in out and "median of 7 runs" in out and "ip-10-1-0-5" not in out
    # diff: the node's busbw then and now
    code, out = _run("diff", "--db", str(db), "previous", "latest", "--json", str(tmp_path / "d.json"))
    assert code == 0, out
    moved = {(b["node"], b["family"]): b for b in json.loads((tmp_path / "d.json").read_text())["busbw"]}
    assert set(moved) == {(f"p5-node-0{i}", "pairwise") for i in range(1, 9)}
    assert moved[("p5-node-05", "pairwise")]["old_gbps"] == five["busbw"][0]["busbw_gbps"]
    assert moved[("p5-node-05", "pairwise")]["delta_pct"] > 50


def test_history_lists_hosts_no_node_names_apart(tmp_path: Path) -> None:
    """A log with a host no node bundle names: its busbw is listed as that host's, not as a node's."""
    db = tmp_path / "h.duckdb"
    folder = _nccl_day(tmp_path / "c", 1, extra_host=True)
    assert _run("ingest", str(folder), "--db", str(db), "-q")[0] == 0
    code, out = _run("history", "--db", str(db), "--json", str(tmp_path / "h.json"))
    assert code == 0, out
    doc = json.loads((tmp_path / "h.json").read_text())
    assert "ip-10-1-0-99" not in {n["node"] for n in doc["nodes"]}
    [host] = doc["busbw_unmatched_hosts"]
    assert (host["host"], host["runs"], host["slowest_run"]) == (
        "ip-10-1-0-99",
        1,
        "extra/nccl-pair-01-99.txt",
    )
    one = next(n for n in doc["nodes"] if n["node"] == "p5-node-01")
    assert one["busbw"][0]["runs"] == 8  # its 7 pairs and the pair with the unknown host
    assert "hosts of nccl-tests logs that no node bundle of their snapshot names (1):" in out


def _tick_labels(page: str) -> list[str]:
    """The x tick labels of the timeline SVG in a history page."""
    import xml.etree.ElementTree as ET

    svg = page[page.index("<svg") : page.index("</svg>") + 6]  # inlined: its namespaces were dropped
    svg = ET.fromstring(svg.replace("<svg ", '<svg xmlns:xlink="http://www.w3.org/1999/xlink" ', 1))
    return [
        "".join(t.itertext())
        for g in svg.iter("g")
        if (g.get("id") or "").startswith("xtick_")
        for t in g.iter("text")
    ]


def test_history_timeline_spans_its_data(tmp_path: Path) -> None:
    """Two snapshots collected hours apart on one day: the time axis spans those hours (the labels are
    hours of that day), not the four years matplotlib gives a span this short on its own."""
    from datetime import datetime, timedelta

    from reports.history import TIME_PAD, time_span

    db = tmp_path / "h.duckdb"
    for hour in (8, 14):
        bundle = _day(NODE, tmp_path / f"h{hour}" / "p5-node-01", 1)
        meta = bundle / "meta.env"
        meta.write_text(meta.read_text().replace("T08:00:00Z", f"T{hour:02d}:00:00Z"))
        assert _run("ingest", str(bundle.parent), "--db", str(db), "-q")[0] == 0
        code, out = _run("history", "--db", str(db), "--html", str(tmp_path / "h.html"))
        assert code == 0, out
        page = (tmp_path / "h.html").read_text()
        labels = _tick_labels(page)
        # one snapshot (one time) or two hours apart: hours of 2026-11-01 (the day said once)
        assert len(labels) >= 3 and all(re.fullmatch(r"\d\d:\d\d", x) for x in labels), labels
        assert "08:00" in labels and f"{hour:02d}:00" in labels and "2026-Nov-01" in page
        assert not re.search(r">20(2[0-5]|2[7-9]|3\d)<", page)  # no other year on the axis
    # the limits: the data, padded
    one = datetime(2026, 11, 1, 8)
    assert time_span([one]) == (one - TIME_PAD, one + TIME_PAD)
    lo, hi = time_span([one, one + timedelta(days=30)])
    assert (one - lo, hi - one - timedelta(days=30)) == (timedelta(days=1.5), timedelta(days=1.5))
