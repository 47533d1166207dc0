"""One input in, its rows out: the engine-neutral step of a fleet ingest.

:func:`read_input` takes one input's bytes and the name it goes by (a node bundle ``.tar.gz``, a foreign
input such as an ``nvidia-bug-report.log.gz`` or a sos report, or a cluster's ``extra/`` folder as its
files) and returns a dict of Arrow tables in the history store's form: every fact table with
``bundle_hash`` in front, the ``bundle`` rows, the findings and outcomes of the node-local rules
(:attr:`analyzer.judge.engine.RuleInfo.node_local`), and what could not be read.  It touches nothing
but a private scratch folder, so a process pool, a Ray task or a Spark ``mapInArrow`` can call it the
same way; the rules that compare nodes then run once per snapshot over what was written
(:mod:`analyzer.fleet.snapshot`).

The name matters twice: its last folder names the cluster when no meta.env does (as when the folder is
analyzed), and it is the ``source`` the store keeps.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from analyzer.intake.bundle import Discovery
    from analyzer.intake.safe_read import Limits
    from analyzer.judge.settings import Settings
    from analyzer.store.deferred import Deferred

#: The tables read_input returns besides the fact tables.
BUNDLE, FINDINGS, OUTCOMES, UNREAD = "bundle", "findings", "rule_outcome", "unread"
#: Columns of a bundle row as read_input gives it (the driver adds first_snapshot and ingested_at).
BUNDLE_COLUMNS = ("bundle_hash", "kind", "node", "source", "collected_at", "cluster", "instance_type")
#: Columns of the bundle table read_input adds for the driver (not stored): see read_input.
PLACE_COLUMNS = ("folder", "named_cluster")
_CHECKSUM_SUFFIX = ".sha256"


def read_input(
    name: str,
    data: bytes | Mapping[str, bytes],
    *,
    checksum: bytes | None = None,
    place: Place | None = None,
    settings: Settings | None = None,
    limits: Limits | None = None,
) -> dict[str, pa.Table]:
    """The rows of one input (see the module docstring).

    ``data`` is the input's bytes, or for a directory (a cluster's ``extra/`` folder, an unpacked node
    bundle) its files by relative name.  ``checksum`` is the text of the ``<bundle>.sha256`` beside it,
    when there is one; ``place`` the cluster folder it belongs to (default: the folder it lies in).
    Bundles that cannot be read give no fact rows and an ``unread`` row saying why.  The ``bundle``
    table also says each bundle's cluster folder (``folder``) and the cluster its meta.env names
    (``named_cluster``), by which a driver groups bundles into snapshots as discovery does."""
    parent, _, base = name.rstrip("/").rpartition("/")
    return read_inputs(parent, [(base, data, checksum)], place=place, settings=settings, limits=limits)


#: One input of a folder: its name in the folder, its bytes (or files), its checksum file's text.
Member = tuple[str, "bytes | Mapping[str, bytes]", "bytes | None"]


def _digest_suffix(checksum: bytes) -> str:
    """The name a digest file's text is written under beside its tarball, for discovery to check it as
    analyze does: ``.md5`` for an MD5 digest (sos's: a bare 32-digit hex, ``md5sum``'s or BSD's
    ``MD5 (x) = ...`` line), else ``.sha256``.

    >>> _digest_suffix(b"0123456789abcdef0123456789abcdef\\n"), _digest_suffix(b"ab" * 32 + b"  x.tar.gz\\n")
    ('.md5', '.sha256')
    """
    first = checksum.strip().split(maxsplit=1)[0].lstrip(b"\\") if checksum.strip() else b""
    md5 = len(first) == 32 and all(c in b"0123456789abcdefABCDEF" for c in first)
    return ".md5" if md5 or checksum.lstrip().startswith(b"MD5") else _CHECKSUM_SUFFIX


def read_inputs(
    parent: str,
    members: Sequence[Member],
    *,
    place: Place | None = None,
    settings: Settings | None = None,
    limits: Limits | None = None,
) -> dict[str, pa.Table]:
    """The rows of several inputs lying in one folder (``parent``), read together: what
    :func:`read_input` gives for each, at the cost of one store and one run of the node-local rules for
    all of them.  The inputs must belong to one cluster folder (one ``place``)."""
    import pyarrow as pa

    from analyzer.intake.safe_read import Limits
    from analyzer.judge.settings import load_settings
    from analyzer.pipeline import discover_inputs, judge, load_inputs, plan_parts, rule_modules
    from analyzer.store.deferred import Deferred
    from analyzer.store.tables import connect

    limits = limits or Limits()
    settings = settings or load_settings()
    work = Path(tempfile.mkdtemp(prefix="hptriage-input-"))
    try:
        # the folder the inputs lie in, under its own name
        folder = work / "in" / _safe(parent.rpartition("/")[2])
        folder.mkdir(parents=True)
        given = parent  # what the scratch folder stands for in every path shown
        for base, data, checksum in members:
            if isinstance(data, Mapping):  # a directory: an extra/ folder, an unpacked bundle
                for member, body in data.items():
                    target = folder / _safe(base) / _safe_relative(member)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(body)
                continue
            (folder / _safe(base)).write_bytes(data)
            if checksum is not None:
                (folder / (_safe(base) + _digest_suffix(checksum))).write_bytes(checksum)
        found = discover_inputs([folder], work / "discover", limits)
        _place(found, str(folder), given, place or Place(parent), work / "discover")
        found.nodes[:] = [replace(n, digest=True) for n in found.nodes]  # digested in the one read
        plan, digest = plan_parts(found, limits, nodes=False)
        con = connect(None)
        held = Deferred(
            compress=False
        )  # the long tables, written out soon: inserted only if a rule reads one
        entries: list[dict[str, Any]] = []
        unread: list[tuple[str, str]] = [(u.path, u.reason) for u in found.unread]
        for n, part in enumerate(plan.parts):
            summary = load_inputs(
                con, work / f"load-{n}", jobs=1, found=found, plan=plan, part=n, account=n == 0, defer=held
            )  # one process: the caller is the pool
            unread += [(u.path, u.reason) for u in summary.unread_inputs if (u.path, u.reason) not in unread]
            for b in summary.bundles:
                entries.append({"bundle_id": b["bundle_id"], "source": b["source"], "kind": "node",
                                "cluster": part.cluster, "folder": part.folder,
                                "bundle_hash": b.get("content_digest")})  # fmt: skip
            for e in summary.extras:
                entries.append({"bundle_id": e["bundle_id"], "source": e["source"], "kind": "cluster",
                                "cluster": part.cluster, "folder": part.folder,
                                "bundle_hash": digest.get(e["source"])})  # fmt: skip
        entries = [e for e in entries if e["bundle_hash"]]
        local = [m for m in rule_modules() if m.RULE.node_local]
        _, outcomes = judge(con, local, settings, deferred=held) if entries else ([], [])
        shown = _display(str(folder), given)
        # the long tables and whole files hold the files' own text and names inside the bundle: no
        # scratch path to write back (scanning them would cost a third of the worker's renaming)
        tables = {
            t: rows if t in held.tables else _named(rows, str(folder), given)
            for t, rows in _facts(con, entries, held).items()
        }
        tables[BUNDLE] = _named(_bundles(con), str(folder), given)
        tables[FINDINGS] = _named(_findings(con), str(folder), given)
        tables[OUTCOMES] = pa.table(
            {
                "rule": pa.array([o.rule for o in outcomes], pa.string()),
                "outcome": pa.array([o.outcome for o in outcomes], pa.string()),
                "findings": pa.array([o.findings for o in outcomes], pa.int32()),
                "reason": pa.array([o.reason for o in outcomes], pa.string()),
            }
        )
        tables[UNREAD] = pa.table(
            {
                "path": pa.array([shown(p) for p, _ in unread], pa.string()),
                "reason": pa.array([r for _, r in unread], pa.string()),
            }
        )
        con.close()
        return tables
    finally:
        shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True)
class Place:
    """Where an input belongs, as discovery of the whole folder would have it: ``folder`` the cluster
    folder (the folder it lies in, or the one above holding ``extra/``) and the cluster name that folder
    gives (``folder_cluster``, None: from the folder's own name); ``outer`` (with ``outer_cluster``) the
    folder above, for an input another tool wrote that lies alone in a folder of its own below the
    path given (``case/node-a/nvidia-bug-report.log.gz``): a one-node input there is that folder's."""

    folder: str
    folder_cluster: str | None = None
    outer: str | None = None
    outer_cluster: str | None = None


def _place(found: Discovery, scratch: str, given: str, place: Place, converted_under: Path) -> None:
    """Discovery of the scratch folder, its folders made the input's own (see :class:`Place`): a
    bundle found directly in the scratch folder belongs to ``place.folder``; a folder inside the input (a
    cluster tarball's, a HyperPod issue report's) keeps its name, under the input's."""
    from analyzer.intake.bundle import folder_name

    converted = [n for n in found.nodes if Path(n.location).is_relative_to(converted_under)]
    one_foreign = len(found.nodes) == 1 and len(converted) == 1 and not found.extras
    outer = place.outer if one_foreign and place.outer else None

    def holder(folder: str) -> str:
        if folder in (scratch, scratch + "/"):
            return outer or place.folder
        return folder.replace(scratch, given, 1) if folder.startswith(scratch) else folder

    names = {place.folder: place.folder_cluster}
    if outer:
        names[outer] = place.outer_cluster
    found.nodes[:] = [replace(n, folder=holder(n.folder)) for n in found.nodes]
    found.extras[:] = [replace(e, folder=holder(e.folder)) for e in found.extras]
    found.folders = {
        holder(f): names.get(holder(f)) or (name if holder(f) == f else folder_name(holder(f)))
        for f, name in found.folders.items()
    }


def _register(con: duckdb.DuckDBPyConnection, entries: list[dict[str, Any]]) -> None:
    import pyarrow as pa

    con.register(
        "_input_map",
        pa.table(
            {
                "bundle_id": pa.array([e["bundle_id"] for e in entries], pa.string()),
                "bundle_hash": pa.array([e["bundle_hash"] for e in entries], pa.string()),
                "new_id": pa.array([stored_bundle_id(e["bundle_hash"]) for e in entries], pa.string()),
                "kind": pa.array([e["kind"] for e in entries], pa.string()),
                "source": pa.array([e["source"] for e in entries], pa.string()),
                "part_cluster": pa.array([e["cluster"] for e in entries], pa.string()),
                "part_folder": pa.array([e["folder"] for e in entries], pa.string()),
            }
        ),
    )


def stored_bundle_id(bundle_hash: str) -> str:
    """The bundle_id a fleet ingest gives a bundle's rows: its content's, so that two workers reading
    two bundles never give them one id."""
    return bundle_hash[:12]


def _facts(
    con: duckdb.DuckDBPyConnection, entries: list[dict[str, Any]], held: Deferred
) -> dict[str, pa.Table]:
    """Every fact table with rows of the bundles read, bundle_hash in front, bundle_id made the
    content's: from the store, or for a long table no rule read, from its batches held back (``held``),
    typed as the store types them.  Rows of no bundle (the loader's notes about the inputs as a whole)
    are left out, as the history store leaves them out."""
    import pyarrow as pa

    from analyzer.history.ingest import STORE_TABLES
    from analyzer.store.tables import all_schemas, stored_columns

    _register(con, entries)
    stored = {t: n for t, n in con.execute(
        "SELECT table_name, estimated_size FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}  # fmt: skip
    columns = dict(con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns()"
        " WHERE schema_name = 'main' GROUP BY 1").fetchall())  # fmt: skip
    out: dict[str, pa.Table] = {}
    for table in all_schemas():
        batches = held.batches(table)
        if table in STORE_TABLES or not (stored.get(table) or batches) or not columns.get(table):
            continue  # a table no parser filled for this input (most of them)
        replace = ["m.new_id AS bundle_id"]
        if table == "node" and "source" in columns[table]:
            replace.append("m.source AS source")
        rows = f'"{table}"'
        if batches:  # held back: typed here as the store's insert types it
            con.register("_held", pa.concat_tables(batches))
            rows = f"(SELECT {stored_columns(table)} FROM _held)"
        got = arrow(
            con,
            f"SELECT m.bundle_hash, t.* REPLACE ({', '.join(replace)}) FROM {rows} t"
            " JOIN _input_map m USING (bundle_id)",
        )
        if batches:
            con.unregister("_held")
        if got.num_rows:
            out[table] = got
    return out


def _bundles(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """One row per bundle (node bundle or extra/ folder), as the store's ``bundle`` table keeps it."""
    return arrow(
        con,
        """
        SELECT m.bundle_hash, m.kind, nd.node, m.source, nd.collected_at,
               coalesce(nd.cluster, m.part_cluster) AS cluster, nd.instance_type,
               m.part_folder AS folder,
               nullif(json_extract_string(nd.meta_json, '$.cluster'), '') AS named_cluster
        FROM _input_map m LEFT JOIN node nd USING (bundle_id)
        """,
    )


def _findings(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """The node-local rules' findings, bundle_hash in front of the analyzer's columns (no bundle_id)."""
    return arrow(
        con,
        "SELECT m.bundle_hash, f.* EXCLUDE (bundle_id) FROM findings f LEFT JOIN _input_map m USING (bundle_id)",
    )


def arrow(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """A query's result as one Arrow table (DuckDB 1.x and 2.x)."""
    rel = con.sql(sql)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()


def _named(table: pa.Table, scratch: str, given: str) -> pa.Table:
    """The table with every path under the scratch folder written as the input's own name (the node's
    source, a checksum file's path, a finding's evidence): nothing of the worker's file system is
    stored.  The scratch folder's name is unique, so it is replaced wherever it stands."""
    import pyarrow as pa
    import pyarrow.compute as pc

    old, new = (scratch, given) if given else (scratch + "/", "")
    for at, field in enumerate(table.schema):
        if not pa.types.is_string(field.type) or table.num_rows == 0:
            continue
        column = table.column(at)
        if not pc.any(pc.match_substring(column, scratch)).as_py():
            continue
        table = table.set_column(at, field, pc.replace_substring(column, old, new))
    return table


def _display(scratch: str, given: str) -> Any:
    """Paths under the scratch folder written back as the input's own name."""

    def shown(path: str | None) -> str | None:
        if path is None or not path.startswith(scratch):
            return path
        rest = path[len(scratch) :]
        return (given + rest) if given else rest.lstrip("/")

    return shown


def _safe(part: str) -> str:
    """One path component that stays inside the scratch folder."""
    cleaned = re.sub(r"[^A-Za-z0-9._@+=-]", "_", part).lstrip(".")
    return cleaned or "input"


def _safe_relative(member: str) -> Path:
    """A member name of an extra/ folder as a relative path inside it (no '..', no absolute path)."""
    parts = [_safe(p) for p in member.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return Path(*parts) if parts else Path("file")
