"""The one wiring of an analysis: inputs -> store -> rules -> the report model.

``analyze(paths, settings)`` is what ``hptriage analyze``, ``diff`` and any other front end call; the
history store's ``ingest`` calls the same two steps it is made of, :func:`load_inputs` and
:func:`judge`, once per part of its inputs.  Inputs are discovered and digested once (``load_inputs``
takes what discovery found, when the caller already has it).

The pipeline is the one door to the stages below it: the history store's ingest, the fleet's
per-input step and driver, and ``hptriage parse`` of an input another tool wrote call the steps here
(:func:`discover_inputs`, :func:`plan_parts`, :func:`load_inputs`, :func:`judge`,
:func:`merge_outcomes`, :func:`convert_input`, :func:`read_node_files`, :func:`read_extra_files`)
rather than intake's loader, its node reader or the rule engine themselves.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from analyzer.errors import no_usable_bundle

if TYPE_CHECKING:
    import duckdb

    from analyzer.intake.bundle import Discovery
    from analyzer.intake.foreign.layout import Converted
    from analyzer.intake.load import LoadSummary, Plan
    from analyzer.intake.read_node import NodeData, ParsedFile
    from analyzer.intake.safe_read import Limits
    from analyzer.judge.engine import RuleModule
    from analyzer.judge.findings import Finding, Outcome
    from analyzer.judge.settings import Settings
    from analyzer.model.report_data import ReportData
    from analyzer.store.deferred import Deferred


def analyze(
    paths: Sequence[Path],
    settings: Settings,
    *,
    db_path: Path | None = None,
    jobs: int | None = None,
    progress: Any = None,
    charts: bool = False,
    on_loaded: Callable[[LoadSummary], None] | None = None,
) -> ReportData:
    """Analyze node bundles, cluster bundles and folders of them into the report model.

    ``db_path`` keeps the DuckDB database (a new file); ``on_loaded`` sees what the loader did with the
    inputs before the rules run (the CLI warns about them); ``charts`` adds the chart data (HTML/PDF).
    """
    from analyzer.model.report_data import gather
    from analyzer.store.tables import connect

    workdir = Path(tempfile.mkdtemp(prefix="hptriage-"))
    try:
        con = connect(str(db_path) if db_path else None)
        # without a database to keep, the long tables wait, compressed, for a rule that reads one
        summary = load_inputs(con, workdir, paths=paths, jobs=jobs, progress=progress, defer=db_path is None)
        if not summary.nodes:
            unread = nothing_usable(paths, summary)
            raise no_usable_bundle(unread or con.execute("SELECT file, error FROM parse_problems").fetchall())
        if on_loaded is not None:
            on_loaded(summary)
        modules = rule_modules()
        findings, outcomes = judge(con, modules, settings, summary.parts, summary.deferred)
        data = gather(con, summary, findings, outcomes, modules, settings, charts=charts)
        notes = snapshot_notes(summary)
        data.inputs.update(parts=summary.parts, not_judged=summary.not_judged, notes=notes)
        if data.verdict is not None:
            data.verdict.notes = notes
        con.close()
        return data
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def nothing_usable(paths: Sequence[Path], summary: LoadSummary) -> list[tuple[str, str]]:
    """Why no node bundle was read: each input given, with why, first; then what was not read inside
    them.  An input read only for cluster-wide files (a DCGM mndiag JSON, an extra/ folder of
    nccl-tests logs) is named too: those files are judged with the node bundles they speak of."""
    out: list[tuple[str, str]] = []
    unread = [(u.path, u.reason) for u in summary.unread_inputs]
    for path in map(str, paths):
        inside = [u for u in unread if u[0] == path or u[0].startswith((path + "/", path + "!"))]
        extras = [e["source"] for e in summary.extras if e["source"] == path or e["source"].startswith(path)]
        if any(u[0] == path for u in inside):
            continue  # named with its own reason below
        if extras:
            out.append(
                (
                    path,
                    "read as cluster-wide files (a DCGM mndiag JSON or extra/ files speak of nodes and are"
                    " judged with those nodes' bundles), but no node bundle was given: give it with them",
                )
            )
        elif inside:
            out.append((path, f"no node bundle read in it ({len(inside)} part(s) of it not read, below)"))
        else:
            out.append((path, "no node bundle read in it"))
    return out + [u for u in unread if u not in out]


def load_inputs(
    con: duckdb.DuckDBPyConnection,
    workdir: Path,
    *,
    paths: Sequence[Path] = (),
    jobs: int | None = None,
    progress: Any = None,
    found: Discovery | None = None,
    plan: Plan | None = None,
    part: int | None = None,
    account: bool = True,
    defer: bool | Deferred = False,
) -> LoadSummary:
    """Read the inputs into the store: the paths, or (``found``/``plan``/``part``) one part of inputs
    already discovered; ``defer``: hold the long tables back until a rule reads one (``load``)."""
    from analyzer.intake.load import load
    from analyzer.intake.safe_read import Limits

    return load(
        con,
        list(paths),
        workdir,
        Limits(),
        jobs=jobs,
        progress=progress,
        found=found,
        plan=plan,
        part=part,
        account=account,
        defer=defer,
    )


def discover_inputs(paths: Sequence[Path], workdir: Path, limits: Limits | None = None) -> Discovery:
    """Find the node bundles, cluster bundles and ``extra/`` folders among the inputs (a cluster tarball
    or an input another tool wrote is unpacked or laid out under ``workdir``), and what was not read."""
    from analyzer.intake.bundle import discover
    from analyzer.intake.safe_read import Limits

    return discover(list(paths), workdir, limits or Limits())


def plan_parts(
    found: Discovery, limits: Limits | None = None, *, nodes: bool = True
) -> tuple[Plan, dict[str, str]]:
    """What was found grouped into parts (one cluster's bundles in one folder), with duplicates
    dropped, and the content digest of every node bundle and ``extra/`` folder, by its display name.
    ``nodes`` False: of the extra/ folders alone (a node bundle marked ``digest`` gives its digest when
    it is read: ``LoadSummary.bundles``)."""
    from analyzer.intake.bundle import content_digest
    from analyzer.intake.load import make_plan
    from analyzer.intake.safe_read import Limits

    limits = limits or Limits()
    plan = make_plan(found, limits)
    digest = {s.display: content_digest(s.location, s.is_tar, limits) for s in found.nodes if nodes}
    digest.update({e.display: content_digest(e.location, False, limits) for e in found.extras})
    return plan, digest


def convert_input(source: str, path: Path, dest: Path, limits: Limits | None = None) -> Converted:
    """An input another tool wrote (``source``, as detected) laid out under ``dest`` as node bundles
    and ``extra/`` folders, as analyze lays it out."""
    from analyzer.intake import foreign
    from analyzer.intake.safe_read import Limits

    return foreign.convert(source, path, dest, limits or Limits())


def read_node_files(
    location: Path, display: str, parsed: list[ParsedFile], limits: Limits | None = None
) -> NodeData:
    """One node bundle folder read as analyze reads it (its limits and guards); each file's parse is
    appended to ``parsed`` as its parser gave it."""
    from analyzer.intake.bundle import NodeSource
    from analyzer.intake.read_node import read_node
    from analyzer.intake.safe_read import Limits

    return read_node(NodeSource(location, False, display), limits or Limits(), parsed=parsed)


def read_extra_files(
    location: Path, display: str, parsed: list[ParsedFile], limits: Limits | None = None
) -> None:
    """One ``extra/`` folder read as analyze reads it; each file's parse is appended to ``parsed``."""
    from analyzer.intake.read_node import read_extra
    from analyzer.intake.safe_read import Limits

    read_extra(location, display, "parse", limits or Limits(), parsed=parsed)


def merge_outcomes(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """Each rule's outcomes of several runs as one (error, then fail, then pass, then skipped)."""
    from analyzer.judge import engine

    return engine.merge_outcomes(outcomes)


def rule_modules() -> list[RuleModule]:
    """The rules every analysis runs (built-ins and installed rule packs)."""
    from analyzer.judge.rules import load_rules

    # modules imported by name, each with RULE and check() (tests/test_conformance.py checks every RULE)
    return cast("list[RuleModule]", load_rules())


def judge(
    con: duckdb.DuckDBPyConnection,
    modules: Sequence[RuleModule],
    settings: Settings,
    parts: Sequence[dict[str, Any]] = (),
    deferred: Deferred | None = None,
) -> tuple[list[Finding], list[Outcome]]:
    """Run the rules; with several parts (clusters, folders), over each part's rows alone, so that no
    rule compares nodes, pools nccl-tests runs or counts a placement across them.  The findings of all
    parts are kept; each rule's outcomes are merged (error, then fail, then pass, then skipped).
    ``deferred``: the long tables the load held back, inserted when a rule reads one."""
    from analyzer.judge.engine import merge_outcomes, run_rules
    from analyzer.judge.findings import finding_order

    scopes = [p["bundle_ids"] for p in parts if p["bundle_ids"]]
    if len(scopes) <= 1:
        return run_rules(con, modules, settings, deferred)
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            " AND schema_name = 'main' AND table_name NOT IN ('findings', 'rule_outcome')"
        ).fetchall()
    ]
    findings: list[Finding] = []
    outcomes: list[Outcome] = []
    schemas: list[str] = []
    database = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
    try:
        for n, ids in enumerate(scopes):
            schema = f"hptriage_part_{n}"
            schemas.append(schema)
            listed = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
            loose = " OR bundle_id = '' OR bundle_id IS NULL" if n == 0 else ""  # inputs of no bundle
            con.execute(f'CREATE SCHEMA "{schema}"')
            for table in tables:
                con.execute(
                    f'CREATE VIEW "{schema}"."{table}" AS SELECT * FROM main."{table}"'
                    f" WHERE bundle_id IN ({listed}){loose}"
                )
            con.execute(f"SET search_path = '{database}.{schema},{database}.main'")
            found, judged = run_rules(con, modules, settings, deferred)
            findings += found
            outcomes += judged
    finally:
        con.execute(f'USE "{database}"')  # back to the store's own tables (RESET would leave its database)
        for schema in schemas:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    merged = merge_outcomes(outcomes)
    findings.sort(key=finding_order)
    con.execute("DELETE FROM rule_outcome")
    con.executemany(
        "INSERT INTO rule_outcome VALUES (?, ?, ?, ?)",
        [[o.rule, o.outcome, o.findings, o.reason] for o in merged],
    )
    return findings, merged


def snapshot_notes(summary: LoadSummary) -> list[str]:
    """One line per cluster given as several snapshots (the newest judged), and one when several
    clusters are judged side by side."""
    lines = []
    older: dict[str, list[dict[str, Any]]] = {}
    for snap in summary.not_judged:
        older.setdefault(snap["cluster"], []).append(snap)
    for cluster, snaps in older.items():
        newest = snaps[0]["newest"]
        new_at = _day(newest["collected_at"])
        skipped = "; ".join(f"{', '.join(s['folders'])} ({_day(s['collected_at'])})" for s in snaps)
        lines.append(
            f"{len(snaps) + 1} snapshots of cluster {cluster} given: judged the newest ({new_at}:"
            f" {', '.join(newest['folders'])}); not judged: {skipped}; compare them with"
            f" `hptriage diff {snaps[-1]['folders'][0]} {newest['folders'][0]}`"
        )
    clusters: dict[str, int] = {}
    for part in summary.parts:
        clusters[part["cluster"]] = clusters.get(part["cluster"], 0) + len(part["nodes"])
    if len(summary.parts) > 1:
        listed = ", ".join(f"{c} ({n} node(s))" for c, n in clusters.items())
        what = f"{len(clusters)} clusters" if len(clusters) > 1 else f"cluster {next(iter(clusters))}"
        lines.append(
            f"{what} in {len(summary.parts)} folders: {listed}; each folder's nodes are judged"
            " against each other (peers, drift and nccl-tests runs never cross folders)"
        )
    return lines


def _day(at: str | None) -> str:
    return at.replace("T", " ").removesuffix(":00Z") + " UTC" if at else "collection time unknown"
