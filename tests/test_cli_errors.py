"""Every command, given what it cannot use, says so in one line naming the path or value, with the
documented exit code (README "Exit codes": 2 usage, 3 no usable bundle, 4 internal), and no traceback."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import ROOT, SAMPLES

SAMPLE = SAMPLES / "xid-ecc-3node" / "bundle"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The things a user gives by mistake, and a good history store (and one of a newer schema)."""
    root = tmp_path_factory.mktemp("bad-inputs")
    (root / "notes.txt").write_text("these are notes, not a database\n")
    (root / "empty.duckdb").write_bytes(b"")
    (root / "random.bin").write_bytes(os.urandom(4096))
    (root / "a-dir").mkdir()
    (root / "full").mkdir()
    (root / "full" / "x").write_text("x\n")
    runner = CliRunner()
    store, analyzed = root / "history.duckdb", root / "analyzed.duckdb"
    assert runner.invoke(cli, ["ingest", str(SAMPLE), "--db", str(store), "-q"]).exit_code == 0
    assert runner.invoke(cli, ["analyze", str(SAMPLE), "--db", str(analyzed), "-q"]).exit_code == 0
    newer = root / "newer.duckdb"
    shutil.copy(store, newer)
    con = duckdb.connect(str(newer))
    con.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    return {
        "sample": str(SAMPLE),
        "missing": str(root / "no-such-thing"),
        "text": str(root / "notes.txt"),
        "empty": str(root / "empty.duckdb"),
        "bin": str(root / "random.bin"),
        "dir": str(root / "a-dir"),
        "full": str(root / "full"),
        "store": str(store),
        "analyzed": str(analyzed),
        "newer": str(newer),
        "out": str(root / "out-{n}"),  # a fresh output per case
    }


# (command line with {placeholders}, exit code, what the message must name)
CASES = [
    # analyze
    ("analyze {missing} -q", 3, "{missing}"),
    ("analyze {text} -q", 3, "{text}"),
    ("analyze {dir} -q", 3, "{dir}"),
    ("analyze {sample} -q --json {dir}", 2, "{dir}"),
    ("analyze {sample} -q --config {missing}", 2, "{missing}"),
    ("analyze {sample} -q --config {bin}", 2, "{bin}"),
    ("analyze {sample} -q --db {text}", 2, "{text}"),
    ("analyze {sample} -q --db {store}", 2, "is a history store"),
    ("analyze {sample} -q --fail-on sometimes", 2, "sometimes"),
    # parse
    ("parse {missing}", 2, "{missing}"),
    ("parse {dir}", 2, "{dir}"),
    ("parse {empty}", 2, "{empty} is empty"),
    ("parse {bin}", 2, "{bin}"),
    ("parse {text} --kind no-such-kind", 2, "no-such-kind"),
    # rules
    ("rules --config {text}", 2, "{text}"),
    ("rules --config {bin}", 2, "{bin}"),
    # sql
    ("sql {missing} SELECT", 2, "{missing}"),
    ("sql {text} SELECT", 2, "{text}"),
    ("sql {empty} SELECT", 2, "{empty}"),
    ("sql {dir} SELECT", 2, "{dir}"),
    ("sql {analyzed} 'SELECT nosuch FROM node'", 2, "nosuch"),
    # ingest
    ("ingest {missing} --db {out}", 3, "{missing}"),
    ("ingest {sample} --db {text} -q", 2, "{text} is not a DuckDB database"),
    ("ingest {sample} --db {empty} -q", 2, "{empty} is an empty file"),
    ("ingest {sample} --db {bin} -q", 2, "{bin}"),
    ("ingest {sample} --db {dir} -q", 2, "{dir}"),
    ("ingest {sample} --db {analyzed} -q", 2, "{analyzed} is not an hptriage history store"),
    ("ingest {sample} --db {newer} -q", 2, "{newer} has store schema 99"),
    # history
    ("history --db {missing}", 2, "{missing}: no such store"),
    ("history --db {text}", 2, "{text}"),
    ("history --db {empty}", 2, "{empty}"),
    ("history --db {bin}", 2, "{bin}"),
    ("history --db {dir}", 2, "{dir}"),
    ("history --db {analyzed}", 2, "{analyzed}"),
    ("history --db {newer}", 2, "upgrade hptriage"),
    ("history --db {store} --since not-a-date", 2, "not-a-date"),
    ("history --db {store} --node p5-node-1", 2, "no node 'p5-node-1'"),
    # diff
    ("diff {sample} {missing}", 3, "{missing}"),
    ("diff {missing} {sample}", 3, "{missing}"),
    ("diff {sample} {text}", 3, "{text}"),
    ("diff --db {store} previous latest", 2, "'previous' needs two snapshots"),
    ("diff --db {store} latest no-such-id", 2, "no-such-id"),
    ("diff --db {store} latest 2001-01-01", 2, "2001-01-01"),
    ("diff --db {text} previous latest", 2, "{text}"),
    ("diff --db {missing} previous latest", 2, "{missing}"),
    # export
    ("export --db {missing} --parquet {out}", 2, "{missing}"),
    ("export --db {text} --parquet {out}", 2, "{text}"),
    ("export --db {empty} --parquet {out}", 2, "{empty}"),
    ("export --db {analyzed} --parquet {out}", 2, "{analyzed}"),
    ("export --db {newer} --parquet {out}", 2, "{newer}"),
    ("export --db {store} --parquet {text}", 2, "{text}"),
    ("export --db {store} --parquet {full}", 2, "{full} exists and is not empty"),
    ("export --db {store} --parquet /proc/no-such-dir/parquet", 2, "/proc/no-such-dir/parquet"),
    # redact
    ("redact {missing} -o {out}", 3, "{missing}"),
    ("redact {sample} -o {text}", 2, "{text}"),
    ("redact {sample} -o {out} --map {text}", 2, "{text}"),
    ("redact {sample} -o {out} --map {dir}", 2, "{dir}"),
    ("redact --verify {missing} --map {text}", 2, "{missing}"),
    ("redact --verify {dir} --map {missing}", 2, "{missing}"),
    ("redact --verify {dir} --map {text}", 2, "{text}"),
]


@pytest.mark.parametrize(("line", "code", "named"), CASES, ids=[c[0].split(" -q")[0] for c in CASES])
def test_a_bad_input_is_one_line_naming_it(
    files: dict[str, str], line: str, code: int, named: str, request: pytest.FixtureRequest
) -> None:
    values = {**files, "out": files["out"].format(n=abs(hash(request.node.name)))}
    args = [word.format(**values) for word in shlex.split(line)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("hptriage: error: "), result.stderr
    assert named.format(**values) in lines[0], lines[0]
    assert result.stdout == ""


def test_a_failed_ingest_leaves_no_store_behind(files: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    result = CliRunner().invoke(cli, ["ingest", files["missing"], "--db", str(db), "-q"])
    assert result.exit_code == 3 and not db.exists() and not Path(f"{db}.wal").exists()


def test_an_unknown_node_lists_nodes_the_store_holds(files: dict[str, str]) -> None:
    result = CliRunner().invoke(cli, ["history", "--db", files["store"], "--node", "p5-node-1"])
    assert result.exit_code == 2
    assert "nodes it holds include p5-node-01" in result.stderr and "h100-node-04" in result.stderr


def test_analyze_does_not_replace_what_is_not_its_own_database(files: dict[str, str], tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me\n")
    result = CliRunner().invoke(cli, ["analyze", files["sample"], "-q", "--db", str(notes)])
    assert result.exit_code == 2 and notes.read_text() == "keep me\n"
    assert duckdb.connect(files["store"], read_only=True).execute(
        "SELECT count(*) FROM snapshot"
    ).fetchone() == (1,)
    # an earlier analysis database (or an empty file) is replaced as before
    again = tmp_path / "again.duckdb"
    again.write_bytes(b"")
    for _ in range(2):
        assert CliRunner().invoke(cli, ["analyze", files["sample"], "-q", "--db", str(again)]).exit_code == 0


def test_an_internal_error_is_one_line_and_debug_shows_the_traceback(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.history.query

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(analyzer.history.query, "history", broken)
    result = CliRunner().invoke(cli, ["history", "--db", files["store"]])
    assert result.exit_code == 4 and "Traceback" not in result.output
    assert result.stderr.strip() == (
        "hptriage: error: internal error: RuntimeError: a bug (run 'hptriage --debug ...' for the traceback)"
    )
    debug = CliRunner().invoke(cli, ["--debug", "history", "--db", files["store"]])
    assert isinstance(debug.exception, RuntimeError)


def test_a_closed_pipe_is_no_error() -> None:
    """`hptriage rules | head -1`: the reader went away; no traceback, no internal error."""
    script = "import sys; from analyzer.cli import main; sys.argv = ['hptriage', 'rules']; main()"
    proc = subprocess.run(
        f'{sys.executable} -c "{script}" | head -1',
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr and "error" not in proc.stderr
