"""Every input accounted for: what was not read, duplicates, node-name clashes, extra/, .sha256 files.

The loader (analyzer.intake.load.load) is called as the CLI calls it; the tests assert on its LoadSummary and on
the store tables (input_issue, bundle_checksum, node, parse_problems).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import duckdb
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.intake.load import LoadSummary, load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.conftest import SAMPLES, make_tar
from tests.test_bundle_safety import _add_bytes, _hostile_node_tar


def _load(
    tmp_path: Path, inputs: list[Path], limits: Limits | None = None, jobs: int = 1
) -> tuple[LoadSummary, duckdb.DuckDBPyConnection]:
    con = connect(None)
    work = tmp_path / f"work-{len(list(tmp_path.glob('work-*')))}"
    work.mkdir()
    return load(con, inputs, work, limits or Limits(), jobs=jobs), con


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _unread(summary: LoadSummary) -> dict[str, str]:
    return {u.path: u.reason for u in summary.unread_inputs}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_unusable_inputs_are_named_beside_a_good_one(sample_cluster: Path, tmp_path: Path) -> None:
    good = sample_cluster / "p5-node-01"
    missing = tmp_path / "no-such-bundle"
    empty = tmp_path / "empty.tar.gz"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(os.urandom(5000))
    binary = tmp_path / "core.bin"
    binary.write_bytes(os.urandom(3000))
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("nothing to see\n")
    (junk / "blob").write_bytes(os.urandom(100))
    inputs = [good, missing, empty, garbage, binary, junk]
    summary, con = _load(tmp_path, inputs)
    assert summary.nodes == ["p5-node-01"]
    unread = _unread(summary)
    assert set(unread) == {str(p) for p in inputs[1:]}, unread
    assert unread[str(missing)] == "no such file or directory"
    assert "unreadable archive" in unread[str(empty)] and "unreadable archive" in unread[str(garbage)]
    assert "not a bundle" in unread[str(binary)]
    assert "no bundle in it" in unread[str(junk)] and "2 other file(s)" in unread[str(junk)]
    # the parse problems keep every one of them too, and the store has them as input issues
    problem_files = {r["file"] for r in _rows(con, "SELECT file FROM parse_problems WHERE bundle_id = ''")}
    assert problem_files == set(unread)
    issues = _rows(con, "SELECT path, issue, reason FROM input_issue WHERE issue = 'unread'")
    assert {r["path"] for r in issues} == set(unread)


def test_refused_members_are_named_inside_their_tarball(sample_cluster: Path, tmp_path: Path) -> None:
    hostile = _hostile_node_tar(sample_cluster, tmp_path / "hostile.tar.gz")
    big = make_tar(sample_cluster / "p5-node-02", tmp_path / "p5-node-02.tar.gz")
    # a cluster tarball whose own members are refused while unpacking it
    inner = tmp_path / "inner"
    inner.mkdir()
    make_tar(sample_cluster / "p5-node-03", inner / "p5-node-03.tar.gz")
    cluster = tmp_path / "cluster.tar.gz"
    with tarfile.open(cluster, "w:gz") as tar:
        tar.add(inner / "p5-node-03.tar.gz", arcname="c/p5-node-03.tar.gz")
        _add_bytes(tar, "../outside.txt", b"owned\n")
        link = tarfile.TarInfo("c/link.tar.gz")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
    summary, con = _load(tmp_path, [hostile, big, cluster], limits=Limits(max_file_bytes=50_000))
    assert sorted(summary.nodes) == ["p5-node-01", "p5-node-02", "p5-node-03"]
    unread = _unread(summary)
    h = str(hostile)
    assert "unsafe name" in unread[f"{h}!p5-node-01/../../escaped.txt"]
    assert "unsafe name" in unread[f"{h}!/tmp/absolute-escape.txt"]
    assert "link to '/etc/passwd' not followed" in unread[f"{h}!p5-node-01/cmd/passwd-link.txt"]
    assert "not a regular file" in unread[f"{h}!p5-node-01/cmd/dev-null.txt"]
    assert "per-file cap" in unread[f"{big}!p5-node-02/cmd/nvidia-smi-q.txt"]
    assert "unsafe name" in unread[f"{cluster}!../outside.txt"]
    assert "not followed" in unread[f"{cluster}!c/link.tar.gz"]
    stored = _rows(con, "SELECT path, node FROM input_issue WHERE issue = 'unread'")
    assert {r["path"]: r["node"] for r in stored}[f"{h}!p5-node-01/cmd/passwd-link.txt"] == "p5-node-01"
    # as before, the parse problems still carry them
    problems = " | ".join(r["error"] for r in _rows(con, "SELECT error FROM parse_problems"))
    assert "unsafe name" in problems and "per-file cap" in problems


def test_same_tarball_twice_and_a_copy_are_analyzed_once(sample_cluster: Path, tmp_path: Path) -> None:
    tarball = make_tar(sample_cluster / "p5-node-01", tmp_path / "p5-node-01.tar.gz")
    copy = tmp_path / "elsewhere" / "again.tar.gz"
    copy.parent.mkdir()
    shutil.copy(tarball, copy)
    single, con1 = _load(tmp_path, [tarball])
    summary, con = _load(tmp_path, [tarball, tarball, copy])
    assert summary.nodes == ["p5-node-01"]
    assert summary.duplicates == [
        {"path": str(tarball), "same_as": str(tarball)},
        {"path": str(copy), "same_as": str(tarball)},
    ]
    assert con.execute("SELECT count(*) FROM node").fetchone() == (1,)
    events = "SELECT count(*) FROM kernel_event"
    assert con.execute(events).fetchone() == con1.execute(events).fetchone()
    issues = _rows(con, "SELECT path, same_as FROM input_issue WHERE issue = 'duplicate'")
    assert {r["path"]: r["same_as"] for r in issues} == {str(tarball): str(tarball), str(copy): str(tarball)}
    assert single.duplicates == []


def test_same_content_in_other_forms_is_analyzed_once(sample_cluster: Path, tmp_path: Path) -> None:
    """A cluster directory and a copy of it; a node directory and a tarball of it; a node inside an
    input given again on its own."""
    copy = tmp_path / "copy-of-cluster"
    shutil.copytree(sample_cluster, copy)
    tarball = make_tar(sample_cluster / "p5-node-02", tmp_path / "hptriage-p5-node-02-stamp.tar.gz")
    summary, con = _load(tmp_path, [sample_cluster, copy, tarball, sample_cluster / "p5-node-03"], jobs=2)
    assert sorted(summary.nodes) == ["h100-node-04", "p5-node-01", "p5-node-02", "p5-node-03"]
    assert con.execute("SELECT count(*) FROM node").fetchone() == (4,)
    dups = {d["path"]: d["same_as"] for d in summary.duplicates}
    for node in ("h100-node-04", "p5-node-01", "p5-node-02", "p5-node-03"):
        assert dups[str(copy / node)] == str(sample_cluster / node)
    assert dups[str(tarball)] == str(sample_cluster / "p5-node-02")
    assert dups[str(sample_cluster / "p5-node-03")] == str(sample_cluster / "p5-node-03")
    assert summary.node_conflicts == []


def test_different_bundles_of_one_node_are_both_kept(sample_cluster: Path, tmp_path: Path) -> None:
    later = tmp_path / "later" / "p5-node-01"
    shutil.copytree(sample_cluster / "p5-node-01", later)
    meta = later / "meta.env"
    meta.write_text(meta.read_text().replace("2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z"))
    summary, con = _load(tmp_path, [sample_cluster, later.parent], jobs=2)
    assert sorted(summary.nodes) == ["h100-node-04", "p5-node-01", "p5-node-01#2", "p5-node-02", "p5-node-03"]
    assert summary.duplicates == []
    assert summary.node_conflicts == [
        {
            "node": "p5-node-01",
            "bundles": [
                {
                    "path": str(sample_cluster / "p5-node-01"),
                    "shown_as": "p5-node-01",
                    "collected_at": "2026-12-01T08:00:00Z",
                },
                {"path": str(later), "shown_as": "p5-node-01#2", "collected_at": "2026-12-02T08:00:00Z"},
            ],
        }
    ]
    nodes = _rows(con, "SELECT node, source, bundle_id FROM node ORDER BY node")
    assert [(n["node"], n["source"]) for n in nodes if n["node"].startswith("p5-node-01")] == [
        ("p5-node-01", str(sample_cluster / "p5-node-01")),
        ("p5-node-01#2", str(later)),
    ]
    assert len({n["bundle_id"] for n in nodes}) == 5
    # each bundle's rows carry its own name, evidence paths included
    per_node = _rows(con, "SELECT node, count(*) AS n, min(source_file) AS f FROM kernel_event GROUP BY node")
    by_node = {r["node"]: r for r in per_node}
    assert by_node["p5-node-01"]["n"] == by_node["p5-node-01#2"]["n"] > 0
    assert by_node["p5-node-01#2"]["f"].startswith("p5-node-01#2/")
    conflict_rows = _rows(con, "SELECT path, node FROM input_issue WHERE issue = 'node-conflict'")
    assert {r["path"]: r["node"] for r in conflict_rows} == {
        str(sample_cluster / "p5-node-01"): "p5-node-01",
        str(later): "p5-node-01#2",
    }


def test_extra_is_not_a_bundle_but_is_read(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "nccl-slow-node" / "bundle", cluster)
    (cluster / "README.txt").write_text("collected by ops\n")
    summary, con = _load(tmp_path, [cluster], jobs=2)
    assert len(summary.bundles) == len(summary.nodes) == 8
    assert all(b["type"] == "node" for b in summary.bundles)
    assert [e["source"] for e in summary.extras] == [str(cluster / "extra")]
    assert con.execute("SELECT count(*) FROM node").fetchone() == (8,)
    # its files are still read as cluster-level inputs
    assert con.execute("SELECT count(*) FROM nccl_run WHERE node IS NULL").fetchone()[0] > 0
    # a loose file beside the bundles is named as not read, with why (files are read inside a bundle
    # or an extra/ folder), not as a parse problem
    assert [u.path for u in summary.unread_inputs] == [str(cluster / "README.txt")]
    assert "loose file beside the bundles" in summary.unread_inputs[0].reason
    assert summary.problems == 0


def test_sha256_beside_a_tarball_is_verified(sample_cluster: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    good = make_tar(sample_cluster / "p5-node-01", out / "hptriage-p5-node-01-20261201T080000Z.tar.gz")
    bad = make_tar(sample_cluster / "p5-node-02", out / "hptriage-p5-node-02-20261201T080000Z.tar.gz")
    bare = make_tar(sample_cluster / "p5-node-03", out / "hptriage-p5-node-03-20261201T080000Z.tar.gz")
    junk = make_tar(sample_cluster / "h100-node-04", out / "hptriage-h100-node-04-20261201T080000Z.tar.gz")
    # sha256sum format, as the collector writes it; a binary marker; a bare digest; no digest at all
    Path(f"{good}.sha256").write_text(f"{_sha256(good)}  {good.name}\n")
    Path(f"{bad}.sha256").write_text(f"{'0' * 64} *{bad.name}\n")
    Path(f"{bare}.sha256").write_text(_sha256(bare))
    Path(f"{junk}.sha256").write_text("this is not a digest\n")
    # the checksum files given by a shell glob next to the tarballs are not inputs that went unread
    inputs = sorted(out.iterdir())
    summary, con = _load(tmp_path, inputs)
    assert sorted(summary.nodes) == ["h100-node-04", "p5-node-01", "p5-node-02", "p5-node-03"]
    assert summary.unread_inputs == []
    status = {c["path"]: c for c in summary.checksums}
    assert set(status) == {str(good), str(bad), str(bare), str(junk)}
    assert status[str(good)]["status"] == "ok" and status[str(good)]["expected"] == _sha256(good)
    assert status[str(bare)]["status"] == "ok"
    assert status[str(bad)]["status"] == "mismatch"
    assert status[str(bad)]["expected"] == "0" * 64 and status[str(bad)]["actual"] == _sha256(bad)
    assert status[str(junk)]["status"] == "unreadable" and status[str(junk)]["expected"] is None
    rows = _rows(
        con,
        "SELECT c.node, c.status, c.expected, c.actual, c.sha256_file FROM bundle_checksum c "
        "JOIN node n USING (bundle_id) ORDER BY c.node",
    )
    assert [(r["node"], r["status"]) for r in rows] == [
        ("h100-node-04", "unreadable"),
        ("p5-node-01", "ok"),
        ("p5-node-02", "mismatch"),
        ("p5-node-03", "ok"),
    ]
    assert rows[2]["sha256_file"] == f"{bad}.sha256"
    # the mismatching bundle is still analyzed
    assert con.execute("SELECT count(*) FROM gpu WHERE node = 'p5-node-02'").fetchone()[0] > 0


def test_a_reader_failure_is_recorded_and_the_rest_read(
    sample_cluster: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    import analyzer.intake.read_node as read_node_module

    real = read_node_module.read_node

    def flaky(source, limits, cluster_id=None):  # type: ignore[no-untyped-def]
        if source.location.name == "p5-node-02":
            raise OSError(5, "Input/output error")
        return real(source, limits, cluster_id)

    monkeypatch.setattr(read_node_module, "read_node", flaky)
    summary, con = _load(tmp_path, [sample_cluster])
    assert sorted(summary.nodes) == ["h100-node-04", "p5-node-01", "p5-node-03"]
    reason = _unread(summary)[str(sample_cluster / "p5-node-02")]
    assert reason.startswith("reading failed: OSError") and "Input/output error" in reason


def test_nothing_usable_still_ends_in_no_usable_bundle(tmp_path: Path) -> None:
    garbage = tmp_path / "x.tar.gz"
    garbage.write_bytes(os.urandom(2000))
    missing = tmp_path / "missing.tar.gz"
    summary, _ = _load(tmp_path, [garbage, missing])
    assert summary.nodes == [] and summary.bundles == []
    assert set(_unread(summary)) == {str(garbage), str(missing)}
    result = CliRunner().invoke(cli, ["analyze", str(garbage), str(missing), "-q"])
    assert result.exit_code == 3, result.output


def test_a_clash_seen_only_while_reading_is_renamed_too(
    sample_cluster: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """Where discovery cannot read meta.env (here: a cap lowered to nothing), the reader's name decides;
    a second bundle claiming a name already taken is read again under a distinct name."""
    import analyzer.intake.bundle

    monkeypatch.setattr(analyzer.intake.bundle, "MAX_META_BYTES", 0)
    again = tmp_path / "later" / "p5-node-01-again"
    shutil.copytree(sample_cluster / "p5-node-01", again)
    meta = again / "meta.env"
    meta.write_text(meta.read_text().replace("2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z"))
    summary, con = _load(tmp_path, [sample_cluster / "p5-node-01", again])
    assert summary.nodes == ["p5-node-01", "p5-node-01#2"]
    assert [(b["path"], b["shown_as"]) for b in summary.node_conflicts[0]["bundles"]] == [
        (str(sample_cluster / "p5-node-01"), "p5-node-01"),
        (str(again), "p5-node-01#2"),
    ]
    assert _rows(con, "SELECT node, source FROM node ORDER BY node") == [
        {"node": "p5-node-01", "source": str(sample_cluster / "p5-node-01")},
        {"node": "p5-node-01#2", "source": str(again)},
    ]


def test_a_node_output_in_extra_is_analyzed_under_its_file_name(tmp_path: Path) -> None:
    """One node's nvidia-smi -q and shm listing dropped into a cluster's extra/ beside the cluster-wide
    logs: the rows carry the file as their node (charts and findings then say where they came from, and
    nothing sorts a missing node), a parse problem says to put it in the node's bundle, and the
    cluster-wide nccl-tests rows keep no node."""
    cluster = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "nccl-slow-node" / "bundle", cluster)
    q = next((SAMPLES.parent / "tests" / "fixtures" / "nvidia-smi-q").glob("jp-simulator-8xh100-565*.txt"))
    shutil.copy(q, cluster / "extra" / "gpu-q.txt")
    summary, con = _load(tmp_path, [cluster])
    assert con.execute("SELECT DISTINCT node FROM gpu WHERE source_file LIKE '%extra/%'").fetchall() == [
        ("extra/gpu-q.txt",)
    ]
    assert con.execute("SELECT count(*) FROM nccl_run WHERE node IS NULL").fetchone()[0] > 0
    problems = _rows(con, "SELECT error FROM parse_problems WHERE file LIKE '%gpu-q.txt'")
    assert any("names no node" in p["error"] for p in problems)
    result = CliRunner().invoke(cli, ["analyze", str(cluster), "--json", str(tmp_path / "f.json"), "-q"])
    assert result.exit_code == 0, result.output
