"""The history store: bundles kept for months in one DuckDB file, findings over time, snapshot diffs.

``ingest`` analyzes the inputs as ``analyze`` does (in memory), then adds to the store:

* ``bundle``: one row per node bundle (and per cluster ``extra/`` folder), keyed by the SHA-256 of its
  content (``bundle_hash``): the same bundle given twice is stored once, however it was packed;
* every fact table of the analyzer (``gpu``, ``kernel_event``, ``nccl_result`` ...) with ``bundle_hash``
  in front of its columns, for new bundles only;
* ``snapshot``: one row per set of bundles ingested together (``snapshot_id`` from their hashes), with the
  tool version and the rule versions that judged it; ``snapshot_bundle`` links the two.  Inputs holding
  several clusters or cluster folders (``/fsx/hptriage/*``) give one snapshot each, named by its cluster;
* ``findings`` and ``rule_outcome`` per snapshot.  Ingesting the same set again stores nothing new,
  unless the rules changed since: then the snapshot's findings are judged again and the versions noted.

``store_meta`` holds the schema version.  A store written by a newer hptriage is refused; a database that
is no history store (an ``analyze --db`` file) is refused with what to do instead.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer import __version__
from analyzer.errors import no_usable_bundle
from analyzer.intake.records import UnreadInput

if TYPE_CHECKING:
    import duckdb

SCHEMA_VERSION = 1
#: Tables of the store besides the analyzer's fact tables.
STORE_TABLES = ("store_meta", "bundle", "snapshot", "snapshot_bundle", "findings", "rule_outcome")
_DDL = """
CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS bundle (
    bundle_hash VARCHAR PRIMARY KEY, kind VARCHAR, node VARCHAR, source VARCHAR, collected_at TIMESTAMP,
    cluster VARCHAR, instance_type VARCHAR, first_snapshot VARCHAR, ingested_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS snapshot (
    snapshot_id VARCHAR PRIMARY KEY, ingested_at TIMESTAMP, judged_at TIMESTAMP, sources VARCHAR,
    cluster VARCHAR, collected_at TIMESTAMP, nodes INTEGER, tool_version VARCHAR, rules_json VARCHAR,
    rules_hash VARCHAR);
CREATE TABLE IF NOT EXISTS snapshot_bundle (snapshot_id VARCHAR, bundle_hash VARCHAR, bundle_id VARCHAR);
CREATE TABLE IF NOT EXISTS findings (
    snapshot_id VARCHAR, bundle_hash VARCHAR, fingerprint VARCHAR, rule VARCHAR, rule_version INTEGER,
    severity VARCHAR, node VARCHAR, gpu INTEGER, message VARCHAR, params_json VARCHAR, route_owner VARCHAR,
    route_target VARCHAR, route_action VARCHAR, evidence_json VARCHAR);
CREATE TABLE IF NOT EXISTS rule_outcome (
    snapshot_id VARCHAR, rule VARCHAR, outcome VARCHAR, findings INTEGER, reason VARCHAR);
"""


class StoreError(Exception):
    """A store that cannot be used as it is (newer schema, not a history store)."""


@dataclass
class IngestResult:
    snapshot_id: str
    status: str  # stored | already stored | judged again
    bundles_new: int = 0
    bundles_known: int = 0
    nodes: list[str] = field(default_factory=list)
    findings: int = 0
    unread: list[UnreadInput] = field(default_factory=list)
    cluster: str = ""  # the cluster and folder the snapshot holds
    folder: str = ""


def open_store(path: Path, create: bool = True, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the store at path, created (schema version 1) or checked.

    ``read_only`` (history, diff, export, sql: they only read) opens an existing store read-only, so a
    store the user may read but not write (a file of another user, a read-only mount) is read, and
    nothing of it changes: a table an older store lacks is made as an empty temporary table."""
    import duckdb

    if (read_only or not create) and not path.exists():
        raise StoreError(f"{path}: no such store (make one with 'hptriage ingest PATH... --db {path}')")
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a history store file")
    fresh = not path.exists()
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        raise StoreError(_unopenable(path, exc)) from exc
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if (not fresh and tables and "store_meta" not in tables) or (read_only and "store_meta" not in tables):
        con.close()
        raise StoreError(
            f"{path} is not an hptriage history store (an 'analyze --db' database?): ingest the bundles"
            " into a new file with 'hptriage ingest PATH... --db NEW.duckdb'"
        )
    if read_only:
        for statement in filter(str.strip, _DDL.split(";")):
            if statement.split("EXISTS", 1)[1].split("(", 1)[0].strip() not in tables:
                con.execute(statement.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
    else:
        con.execute(_DDL)
    row = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
    if row is None and read_only:
        row = (str(SCHEMA_VERSION),)  # a store that was never written to: nothing in it to misread
    if row is None:
        con.execute("INSERT INTO store_meta VALUES ('schema_version', ?), ('created_by', ?)",
                    [str(SCHEMA_VERSION), f"hptriage {__version__}"])  # fmt: skip
    elif int(row[0]) > SCHEMA_VERSION:
        con.close()
        raise StoreError(
            f"{path} has store schema {row[0]}, written by a newer hptriage; this one reads up to schema"
            f" {SCHEMA_VERSION}: upgrade hptriage to read it"
        )
    elif int(row[0]) < SCHEMA_VERSION:
        _migrate(con, int(row[0]))
    return con


def _unopenable(path: Path, exc: Exception) -> str:
    """Why DuckDB could not open the store file, in one line naming it."""
    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    make = "make a store with 'hptriage ingest PATH... --db NEW.duckdb'"
    if "not a valid DuckDB database" in why:
        try:
            empty = path.stat().st_size == 0
        except OSError:
            empty = False
        return (
            f"{path} is {'an empty file' if empty else 'not a DuckDB database'}, not a history store ({make})"
        )
    if "lock" in why.lower():
        return f"{path} is in use by another process: {why}"
    return f"cannot open the store {path}: {why}"


def _migrate(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Bring an older store up to SCHEMA_VERSION (there is no older schema yet: version 1 is the first)."""
    raise StoreError(f"store schema {version} is not known to this hptriage (expects {SCHEMA_VERSION})")


def rules_signature(modules: list[Any]) -> tuple[str, str]:
    """(JSON of rule id -> version, its hash with the tool version): what judged a snapshot."""
    rules = {m.RULE.id: m.RULE.version for m in modules}
    text = json.dumps(rules, sort_keys=True)
    return text, hashlib.sha256(f"{__version__}\0{text}".encode()).hexdigest()[:16]


def ingest(
    paths: list[Path],
    db_path: Path,
    jobs: int | None = None,
    settings: Any = None,
    progress: Any = None,
) -> list[IngestResult]:
    """Add the bundles at paths to the store (see the module docstring): one snapshot per part of the
    inputs (one cluster's bundles in one folder, :mod:`analyzer.intake.load`), so two dated folders of a
    cluster, or two clusters, given together are stored as two snapshots.  The first result also names
    the inputs that were not read.  A store this call created is removed again when nothing was
    stored."""
    from analyzer.intake.safe_read import Limits
    from analyzer.judge.settings import load_settings
    from analyzer.pipeline import discover_inputs, plan_parts, rule_modules

    settings = settings or load_settings()
    limits = Limits()
    fresh = not db_path.exists()
    workdir = Path(tempfile.mkdtemp(prefix="hptriage-ingest-"))
    results: list[IngestResult] = []
    try:
        open_store(db_path).close()  # the store is checked (or made) before any work
        found = discover_inputs(paths, workdir / "discover", limits)
        plan, digest = plan_parts(found, limits)
        modules = rule_modules()
        for n, part in enumerate(plan.parts):
            shown = [found.nodes[i].display for i in part.nodes] + [e.display for e in part.extras]
            given = [
                str(p)
                for p in paths
                if any(d == str(p) or d.startswith((str(p).rstrip("/") + "/", f"{p}!")) for d in shown)
            ]
            result = _ingest_part(
                found, plan, n, {d: digest[d] for d in shown}, db_path, workdir / f"load-{n}",
                given or [part.folder], jobs, settings, progress, modules,
            )  # fmt: skip
            if result is not None:
                result.cluster, result.folder = part.cluster, part.folder
                results.append(result)
        if not results:
            unread = [(u.path, u.reason) for u in found.unread] or [(str(p), "no bundle read") for p in paths]
            raise no_usable_bundle(unread)
        results[0].unread = list(found.unread) + results[0].unread
        return results
    except BaseException:
        if fresh and not results:
            for leftover in (db_path, db_path.with_name(db_path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _ingest_part(
    found: Any,
    plan: Any,
    part: int,
    digest: dict[str, str],
    db_path: Path,
    workdir: Path,
    sources: list[str],
    jobs: int | None,
    settings: Any,
    progress: Any,
    modules: list[Any],
) -> IngestResult | None:
    """One part of the inputs as one snapshot; None when none of its bundles could be read."""
    import pyarrow as pa

    from analyzer.pipeline import judge, load_inputs
    from analyzer.store.tables import connect

    rules_json, rules_hash = rules_signature(modules)
    store = open_store(db_path)
    early = _snapshot_id(set(digest.values()))
    row = store.execute("SELECT rules_hash, nodes FROM snapshot WHERE snapshot_id = ?", [early]).fetchone()
    if digest and row is not None and row[0] == rules_hash:  # nothing new: not even analyzed again
        store.close()
        return IngestResult(early, "already stored", bundles_known=len(set(digest.values())))
    con = connect(None)
    summary = load_inputs(
        con, workdir, jobs=jobs, progress=progress, found=found, plan=plan, part=part, account=False
    )
    entries = [(b["bundle_id"], digest.get(b["source"]), b["source"], "node") for b in summary.bundles]
    entries += [(e["bundle_id"], digest.get(e["source"]), e["source"], "cluster") for e in summary.extras]
    entries = [e for e in entries if e[1]]
    if not entries:
        store.close()
        con.close()
        return None
    cluster = plan.parts[part].cluster
    snapshot_id = _snapshot_id({e[1] for e in entries})
    known_snapshot = store.execute(
        "SELECT rules_hash FROM snapshot WHERE snapshot_id = ?", [snapshot_id]
    ).fetchone()
    result = IngestResult(snapshot_id, "stored", nodes=sorted(summary.nodes), unread=summary.unread_inputs)
    if known_snapshot is not None and known_snapshot[0] == rules_hash:
        result.status = "already stored"
        result.bundles_known = len(entries)
        store.close()
        con.close()
        return result
    findings, outcomes = judge(con, modules, settings)  # one part: its rows alone
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    known = {r[0] for r in store.execute("SELECT bundle_hash FROM bundle").fetchall()}
    new = [e for e in entries if e[1] not in known]
    result.bundles_new, result.bundles_known = len(new), len(entries) - len(new)
    con.register(
        "_map", pa.table({"bundle_id": [e[0] for e in entries], "bundle_hash": [e[1] for e in entries]})
    )
    con.register(
        "_new",
        pa.table(
            {
                "bundle_id": [e[0] for e in new],
                "bundle_hash": [e[1] for e in new],
                "source": [e[2] for e in new],
            }
        ),
    )
    store.close()  # the analysis connection writes the store from here on (one writer)
    con.execute(f"ATTACH '{_sql_path(db_path)}' AS h")
    try:
        con.execute("BEGIN TRANSACTION")
        _copy_facts(con)
        con.execute(
            """
            INSERT INTO h.bundle
            SELECT n.bundle_hash, CASE WHEN nd.bundle_id IS NULL THEN 'cluster' ELSE 'node' END,
                   nd.node, coalesce(nd.source, n.source), nd.collected_at, coalesce(nd.cluster, ?),
                   nd.instance_type, ?, ?
            FROM _new n LEFT JOIN node nd USING (bundle_id)
            """,
            [cluster, snapshot_id, now],
        )
        if known_snapshot is None:
            collected = con.execute("SELECT max(collected_at) FROM node").fetchone()
            con.execute(
                "INSERT INTO h.snapshot VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [snapshot_id, now, now, json.dumps(sorted(sources)), cluster,
                 collected[0] if collected else None, len(summary.nodes), __version__, rules_json, rules_hash],
            )  # fmt: skip
            con.execute(
                "INSERT INTO h.snapshot_bundle SELECT ?, bundle_hash, bundle_id FROM _map", [snapshot_id]
            )
        else:
            result.status = "judged again"
            con.execute("DELETE FROM h.findings WHERE snapshot_id = ?", [snapshot_id])
            con.execute("DELETE FROM h.rule_outcome WHERE snapshot_id = ?", [snapshot_id])
            con.execute(
                "UPDATE h.snapshot SET judged_at = ?, tool_version = ?, rules_json = ?, rules_hash = ?"
                " WHERE snapshot_id = ?",
                [now, __version__, rules_json, rules_hash, snapshot_id],
            )
        con.execute(
            """
            INSERT INTO h.findings
            SELECT ?, m.bundle_hash, f.* EXCLUDE (bundle_id)
            FROM findings f LEFT JOIN _map m USING (bundle_id)
            """,
            [snapshot_id],
        )
        con.execute("INSERT INTO h.rule_outcome SELECT ?, * FROM rule_outcome", [snapshot_id])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    result.findings = len(findings)
    con.execute("DETACH h")
    con.close()
    return result


def _copy_facts(con: duckdb.DuckDBPyConnection) -> None:
    """Every analyzer fact table's rows of the new bundles into the store, bundle_hash in front; a
    column the store does not have yet is added (a newer parser), one it has and the analysis lacks
    stays null."""
    from analyzer.store.tables import all_schemas

    tables = [t for t in all_schemas() if t not in STORE_TABLES]
    for table in tables:
        cols = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_catalog = current_database()"
            " AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
        if not cols:
            continue
        stored = con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'h' AND table_name = ?",
            [table],
        ).fetchall()
        if not stored:
            body = ", ".join(f'"{c}" {t}' for c, t in cols)
            con.execute(f'CREATE TABLE h."{table}" (bundle_hash VARCHAR, {body})')
        else:
            have = {r[0] for r in stored}
            for c, t in cols:
                if c not in have:
                    con.execute(f'ALTER TABLE h."{table}" ADD COLUMN "{c}" {t}')
        con.execute(
            f'INSERT INTO h."{table}" BY NAME SELECT n.bundle_hash, t.* FROM "{table}" t JOIN _new n USING (bundle_id)'
        )


def _snapshot_id(hashes: set[str | None]) -> str:
    """A snapshot is the set of bundle contents ingested together."""
    return contents_id(h for h in hashes if h)


def contents_id(hashes: Iterable[str], length: int = 16) -> str:
    """The id of a set of bundle contents (a snapshot's; a batch's fact files): a hash of their
    hashes, in any order.

    >>> contents_id(["b", "a"]) == contents_id(["a", "b"]), len(contents_id(["a"], 32))
    (True, 32)
    """
    return hashlib.sha256("\n".join(sorted(set(hashes))).encode()).hexdigest()[:length]


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
