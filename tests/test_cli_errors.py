"""Every command, given what it cannot use, says so in one line naming the path or value, with the
documented exit code (README "Exit codes": 2 usage, 3 no usable bundle, 4 internal), and no traceback."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
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
    # every output of every command that cannot be written: refused before any work, naming it and why
    # (/proc takes no new file, even from root; a file cannot hold a folder)
    ("analyze {sample} -q --db /proc/x.duckdb", 2, "cannot write --db /proc/x.duckdb: /proc:"),
    ("analyze {sample} -q --db {text}/x.duckdb", 2, "{text} is not a directory"),
    ("analyze {sample} -q --json /proc/x.json", 2, "cannot write --json /proc/x.json"),
    ("analyze {sample} -q --json {text}/x.json", 2, "cannot write --json {text}/x.json"),
    ("analyze {sample} -q --html /proc/x.html", 2, "cannot write --html /proc/x.html"),
    ("analyze {sample} -q --pdf /proc/x.pdf", 2, "cannot write --pdf /proc/x.pdf"),
    ("analyze {sample} -q --md {text}/x.md", 2, "cannot write --md {text}/x.md"),
    ("analyze {sample} -q --md {dir}", 2, "cannot write --md {dir}: it is a directory"),
    ("analyze {sample} -q --json {out}.json --md {out}.json", 2, "--json and --md both name {out}.json"),
    ("analyze {text} -q --json {text}", 2, "--json {text} is one of the inputs"),
    ("ingest {sample} -q --db /proc/h.duckdb", 2, "cannot write --db /proc/h.duckdb"),
    ("ingest {sample} -q --db {text}/h.duckdb", 2, "cannot write --db {text}/h.duckdb"),
    ("ingest {sample} -q --parquet /proc/dataset", 2, "cannot write --parquet /proc/dataset"),
    (
        "ingest {sample} -q --parquet {text}",
        2,
        "cannot write --parquet {text}: it exists and is not a directory",
    ),
    ("history --db {store} --json /proc/h.json", 2, "cannot write --json /proc/h.json"),
    ("history --db {store} --html {text}/h.html", 2, "cannot write --html {text}/h.html"),
    ("diff --db {store} latest latest --json /proc/d.json", 2, "cannot write --json /proc/d.json"),
    ("export --db {store} --parquet {text}/x", 2, "cannot write --parquet {text}/x"),
    ("skill --out /proc/skills", 2, "cannot write --out /proc/skills"),
    ("skill --out {text}", 2, "cannot write --out {text}"),
    ("redact {sample} -o /proc/red", 2, "cannot write --out /proc/red"),
    ("redact {sample} -o {out} --map /proc/m.json", 2, "cannot write --map /proc/m.json"),
    ("redact {sample} -o {out} --map {text}/m.json", 2, "cannot write --map {text}/m.json"),
    ("redact {sample} -o {sample}/copy", 2, "lies inside the input"),
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


def test_an_unwritable_output_is_refused_before_the_analysis(files: dict[str, str], tmp_path: Path) -> None:
    """The bad --db is found when the options are read: nothing is analyzed, no other output written."""
    findings = tmp_path / "findings.json"
    args = ["analyze", files["sample"], "-q", "--json", str(findings), "--db", "/proc/triage.duckdb"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and not findings.exists()
    assert (
        result.stderr
        == "hptriage: error: cannot write --db /proc/triage.duckdb: /proc: no new file can be made there\n"
    )


def test_missing_folders_of_an_output_are_made(files: dict[str, str], tmp_path: Path) -> None:
    """As for --json, the folders above --db are made (an output that can be written is written)."""
    db, md = tmp_path / "a" / "b" / "triage.duckdb", tmp_path / "c" / "report.md"
    result = CliRunner().invoke(cli, ["analyze", files["sample"], "-q", "--db", str(db), "--md", str(md)])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(DISTINCT node) FROM node").fetchone() == (4,)
    assert md.read_text().startswith("#")


def test_a_write_that_fails_midway_is_the_users_error(
    files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Disk full while writing an output (after the check passed) is exit 2 naming the output, not an
    internal error: the OSError of the output's own file is recognised."""
    import errno

    import analyzer.history.export

    out = tmp_path / "dataset"

    def full(con: object, target: Path) -> dict[str, object]:
        raise OSError(errno.ENOSPC, "No space left on device", str(target / "bundle" / "x.parquet"))

    monkeypatch.setattr(analyzer.history.export, "export", full)
    result = CliRunner().invoke(cli, ["export", "--db", files["store"], "--parquet", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"hptriage: error: cannot write {out}: No space left on device\n"


def test_hptriage_alone_prints_the_help_as_help_does() -> None:
    """No command: the usage and the commands, as `hptriage --help` prints them (stdout, exit 0), not the
    help squeezed into one error line."""
    runner = CliRunner()
    alone = runner.invoke(cli, [], prog_name="hptriage")
    helped = runner.invoke(cli, ["--help"], prog_name="hptriage")
    assert alone.exit_code == helped.exit_code == 0
    assert alone.stdout == helped.stdout and alone.stderr == ""
    assert alone.stdout.startswith("Usage: hptriage [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nCommands:\n" in alone.stdout and "  analyze " in alone.stdout
    # as a user runs it, too
    alone_run, help_run = (
        subprocess.run(
            [sys.executable, "-m", "analyzer.cli", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        for args in ([], ["--help"])
    )
    assert alone_run.returncode == 0 and alone_run.stderr == ""
    assert alone_run.stdout == help_run.stdout and "\nCommands:\n" in alone_run.stdout


def _cli_line(*args: str) -> list[str]:
    return [sys.executable, "-m", "analyzer.cli", *args]


def _read_only_store(files: dict[str, str]) -> Path:
    """A copy of the history store in a new folder under /tmp (reachable by any user)."""
    folder = Path(tempfile.mkdtemp(prefix="hptriage-ro-", dir="/tmp"))
    shutil.copy(files["store"], folder / "history.duckdb")
    return folder


def _store_reads(
    run: Callable[[list[str]], subprocess.CompletedProcess[str]], store: Path, out: Path
) -> None:
    """history, diff, export and sql read a store they cannot write; what would write there is refused
    before any work, naming the path and why."""
    for args, says in (
        (["history", "--db", str(store)], "1 snapshot(s)"),
        (["diff", "--db", str(store), "previous", "latest"], None),
        (["diff", "--db", str(store), "latest", "latest"], "0 new, 0 resolved"),
        (["export", "--db", str(store), "--parquet", str(out / "dataset")], "schema version 1"),
        (["sql", str(store), "SELECT count(*) AS n FROM bundle", "--format", "csv"], "n\n4\n"),
    ):
        proc = run(_cli_line(*args))
        if says is None:  # one snapshot: 'previous' is named, as for a writable store
            assert proc.returncode == 2 and "'previous' needs two snapshots" in proc.stderr, proc.stderr
            continue
        assert proc.returncode == 0 and says in proc.stdout and proc.stderr == "", (args, proc.stderr)
    assert (out / "dataset" / "_hptriage_schema.json").is_file()
    here = store.parent
    for args, named in (
        (["history", "--db", str(store), "--json", str(here / "h.json")], f"--json {here / 'h.json'}"),
        (["ingest", SAMPLE.as_posix(), "-q", "--db", str(store)], f"--db {store}"),
        (["analyze", SAMPLE.as_posix(), "-q", "--db", str(here / "a.duckdb")], f"--db {here / 'a.duckdb'}"),
    ):
        proc = run(_cli_line(*args))
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2 and len(lines) == 1, (args, proc.stderr)
        assert lines[0].startswith(f"hptriage: error: cannot write {named}: "), lines[0]
        assert lines[0].endswith(("Read-only file system", "Permission denied")), lines[0]


@pytest.mark.optional(
    "a container may refuse user, mount and network namespaces whatever is installed",
    skips="no read-only bind mount here",
)
def test_a_store_on_a_read_only_mount_is_read(files: dict[str, str], tmp_path: Path) -> None:
    """A store on a read-only file system (here a read-only bind mount in a private mount namespace,
    which root cannot write either) is read by history, diff, export and sql."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    folder = _read_only_store(files)
    try:
        store = folder / "history.duckdb"
        before = store.read_bytes()
        mount = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
        probe = subprocess.run(
            ["unshare", "-rm", "sh", "-c", mount, str(folder), "sh", "-c", f"! touch {folder}/probe"],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            pytest.skip(f"no read-only bind mount here (user namespaces off?): {probe.stderr.strip()}")

        def run(line: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["unshare", "-rm", "sh", "-c", mount, str(folder), *line],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=300,
            )

        _store_reads(run, store, tmp_path)
        assert store.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["history.duckdb"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.optional(
    "a checkout in a folder only its owner may enter cannot be run by another user",
    skips="user nobody cannot run this Python",
)
def test_a_store_another_user_owns_is_read(files: dict[str, str]) -> None:
    """As a user who may read the store but not write it or its folder (nobody; file 0444, folder 0555,
    both root's), history, diff, export and sql read it."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the CLI as another user (root ignores permission bits)")
    folder = _read_only_store(files)
    out = Path(tempfile.mkdtemp(prefix="hptriage-out-", dir="/tmp"))
    try:
        store = folder / "history.duckdb"
        store.chmod(0o444)
        folder.chmod(0o555)
        out.chmod(0o777)

        def run(line: list[str]) -> subprocess.CompletedProcess[str]:
            as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
            env = {**os.environ, "HOME": str(out)}
            return subprocess.run(
                [*as_nobody, *line], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env
            )

        if run([sys.executable, "-c", "import analyzer.cli"]).returncode != 0:
            pytest.skip(
                "user nobody cannot run this Python on this checkout (its files are not readable to others)"
            )
        _store_reads(run, store, out)
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


# -- parse problems of another tool's input name the user's own file and line ----------------------------

BUG_REPORTS = sorted((ROOT / "tests" / "fixtures" / "nvidia-bug-report").glob("*.log"))


def _foreign_inputs(tmp_path: Path) -> list[Path]:
    """Every input type another tool writes, from the real samples in tests/fixtures: each
    nvidia-bug-report as given, and a sos report, a HyperPod issue report and an EKS log collector
    tarball as their tests build them from real outputs."""
    from tests import test_foreign_eks_log_collector as eks
    from tests import test_foreign_hyperpod_issue_report as hir
    from tests import test_foreign_sos_report as sos

    (tmp_path / "hir").mkdir()
    return [
        *BUG_REPORTS,
        sos._tarball(tmp_path / "sosreport-gpu-node-07-2026-01-26-abcdefg.tar.xz", sos._tree()),
        hir._report(tmp_path / "hir"),
        eks._tarball(tmp_path / "eks_i-0abc_2026-01-26_1430-UTC_0.7.6.tar.gz", eks._layout()),
    ]


def _member(data: bytes, name: str) -> bytes:
    """A member of a tarball (under its top folder or not), gunzipped when it is gzip."""
    import gzip
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for info in archive:
            if info.isfile() and (info.name == name or info.name.endswith("/" + name)):
                data = archive.extractfile(info).read()  # type: ignore[union-attr]
                return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    raise AssertionError(f"no member {name}")


def _users_text(given: Path, cited: str, nodes: set[str]) -> str | None:
    """The text of the file a problem cites, read from what the user gave; None when the citation is
    no file of it."""
    import gzip

    if cited == str(given):
        path: Path | None = given
        members: list[str] = []
    else:
        node, _, rest = cited.partition("/")
        if node not in nodes:
            return None
        first, *members = rest.split("!")
        path = given if first == given.name else given / first if given.is_dir() else None
    if path is not None and path.is_dir() and not members and cited == str(given):
        return ""  # the folder the user gave, named as a whole (a problem of no one file of it)
    if path is None or not path.is_file():
        return None
    data = path.read_bytes()
    for member in members:
        data = _member(data, member)
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8", "replace")


def test_parse_problems_of_another_tools_input_name_the_users_file_and_line(tmp_path: Path) -> None:
    """A problem cites the user's own file (the input as given, or a node's file in it: a member of their
    archive) with the line of that file holding the text shown, or says it comes from the conversion;
    never a file hptriage wrote (node/meta.env, manifest.tsv, cmd/...)."""
    from tests.analyze_json import analyze_json

    said_of_conversion = 0
    for n, given in enumerate(_foreign_inputs(tmp_path)):
        _, report, output = analyze_json(tmp_path, given, tag=f"r{n}")
        assert report, output
        nodes = {b["node"] for b in report["bundles"]}
        assert report["parse_problems"], given
        for problem in report["parse_problems"]:
            cited = problem["file"]
            internal = ("meta.env", "manifest.tsv", "origins.tsv", "cmd/", "foreign-0")
            assert not any(word in cited for word in internal), problem
            text = _users_text(given, cited, nodes)
            assert text is not None, (given, problem)
            if problem["line"] is not None:
                line = text.splitlines()[problem["line"] - 1]
                assert line.strip().startswith((problem["text"] or "").strip()), (problem, line)
            if problem["error"].startswith("from the conversion: "):
                assert cited == str(given) and problem["line"] is None, problem
                said_of_conversion += 1
    # the reports dated by nothing in them: no collection time, said of the report, not of meta.env
    assert said_of_conversion == 3


def test_a_problem_in_an_output_the_conversion_rewrote_is_said_of_the_conversion(tmp_path: Path) -> None:
    """An output a conversion made that is no stretch of the input's lines (no origin: a reformatted
    table, say) cites the user's input and says the problem comes from the conversion, naming the output
    by its command; one found verbatim cites the user's file and line (labelled derived: the real line
    1565-1566 of the tool-man bug report, whose GCC line the versions parser does not understand, placed
    both ways)."""
    from analyzer.intake.bundle import NodeSource
    from analyzer.intake.foreign.layout import NodeLayout, Output, write_node
    from analyzer.intake.read_node import read_node
    from analyzer.intake.safe_read import Limits

    report = ROOT / "tests" / "fixtures" / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
    version = "".join(line + "\n" for line in report.read_text().splitlines()[1564:1566])  # NVRM, GCC
    layout = NodeLayout("sdu-dpai-turing-1", "nvidia-bug-report", report.name)
    layout.add(Output("versions", version, "nvidia-bug-report.sh versions table", name="versions-table.txt"))
    layout.add(
        Output("versions", version, "cat /proc/driver/nvidia/version", origin=report.name, first_line=1565)
    )
    node_dir = write_node(tmp_path / "node", layout)
    data = read_node(NodeSource(node_dir, False, str(report)), Limits())
    problems = data.arrow["parse_problems"].to_pylist()
    said = {(p["file"], p["line"], p["error"]) for p in problems}
    assert said == {
        (str(report), None, "from the conversion: no collection time found in this input"),
        (
            str(report),
            None,
            "from the conversion: line not understood: unrecognised line (in the 'nvidia-bug-report.sh"
            " versions table' output hptriage took from this input, its line 2)",
        ),
        (f"sdu-dpai-turing-1/{report.name}", 1566, "line not understood: unrecognised line"),
    }


@pytest.mark.parametrize(
    "args",
    [
        ["rules"],
        ["analyze", SAMPLE.as_posix()],
        ["analyze", SAMPLE.as_posix(), "-q", "--format", "summary"],
        ["parse", "tests/fixtures/df/jc-ubuntu-18.04-df.out", "--format", "csv"],
        ["history", "--db", "{store}"],
        ["sql", "{store}", "SELECT * FROM bundle", "--format", "csv"],
    ],
    ids=["rules", "analyze", "summary", "parse-csv", "history", "sql-csv"],
)
def test_standard_output_that_cannot_be_written_is_named(files: dict[str, str], args: list[str]) -> None:
    """Standard output is an output too: redirected to a full disk (/dev/full) it is exit 2 in one line
    naming it, not an internal error (a reader that went away, | head, stays no error)."""
    line = _cli_line(*(a.format(**files) for a in args))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(line, stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr == "hptriage: error: cannot write standard output: No space left on device\n"


def test_parse_of_another_tools_input_names_the_users_file_and_line() -> None:
    """`hptriage parse REPORT`: a line not understood is said at the report's own line (as plain parse
    says FILE:LINE), and every record names the report and the line of it it came from, never cmd/..."""
    report = BUG_REPORTS[[p.name for p in BUG_REPORTS].index("tool-man-440.31-rtx2080ti-x4--excerpt.log")]
    result = CliRunner().invoke(cli, ["parse", str(report)])
    assert result.exit_code == 0, result.output
    assert f"{report}:1566: line not understood: unrecognised line\n" in result.stderr
    assert "cmd/" not in result.stderr and "meta.env" not in result.stderr
    records = json.loads(result.stdout)
    assert {r["file"] for r in records} == {str(report)}
    lines = report.read_text().splitlines()
    events = [r for r in records if r["table"] == "kernel_event"]
    assert events and all(lines[r["line"] - 1] == r["raw"] for r in events)
