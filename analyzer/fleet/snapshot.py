"""The driver's side of ``ingest --parquet``: the workers' answers grouped into snapshots as ``ingest
--db`` groups bundles (one cluster's bundles in one folder), each snapshot judged by the cross-node rules
over its rows read back from the dataset through DuckDB (node-local outcomes merged), and its rows
written.  A snapshot already in the dataset, judged by the same rules, is left as it is; a bundle already
there keeps its first snapshot.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer import __version__
from analyzer.fleet.dataset import Tally, partition_files
from analyzer.fleet.read_input import (
    BUNDLE,
    FINDINGS,
    OUTCOMES,
    UNREAD,
    stored_bundle_id,
)
from analyzer.fleet.worker import HELD, WRITTEN, Written, concat_tables
from analyzer.history.ingest import contents_id

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from analyzer.judge.settings import Settings


#: How a driver judges snapshots: a map of judge_part over the parts (in order).
MapParts = Callable[[Callable[[Any], Any], list[Any]], list[Any]]


@dataclass
class SnapshotResult:
    snapshot_id: str
    status: str  # stored | already stored | judged again
    cluster: str
    folder: str
    bundles_new: int = 0
    bundles_known: int = 0
    nodes: int = 0
    findings: int = 0


@dataclass
class FleetIngest:
    snapshots: list[SnapshotResult] = field(default_factory=list)
    unread: list[tuple[str, str]] = field(default_factory=list)
    inputs: int = 0
    tally: Tally = field(default_factory=Tally)  # what was written


@dataclass
class _Group:
    """What the workers said about one folder's inputs."""

    folder: str
    bundles: list[dict[str, Any]] = field(default_factory=list)
    findings: list[pa.Table] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    held: dict[str, list[pa.Table]] = field(default_factory=dict)
    written: list[Written] = field(default_factory=list)  # the fact files its workers wrote


def gather(answers: Iterable[dict[str, Any]], result: FleetIngest) -> dict[str, _Group]:
    """The workers' answers by the cluster folder of each bundle."""
    groups: dict[str, _Group] = {}
    for answer in answers:
        result.unread += [(r["path"], r["reason"]) for r in answer[UNREAD].to_pylist()]
        if "tally" in answer:
            result.tally.join(answer["tally"])
        bundles = answer[BUNDLE].to_pylist()
        folders = {b["folder"] for b in bundles} or {str(answer["name"]).rstrip("/").rpartition("/")[0]}
        answered = frozenset(b["bundle_hash"] for b in bundles)
        outcomes = [{**o, "bundles": answered} for o in answer[OUTCOMES].to_pylist()]
        for folder in folders:  # an input of several folders (a cluster tarball) adds to each
            group = groups.setdefault(folder, _Group(folder))
            group.bundles += [b for b in bundles if b["folder"] == folder]
            if answer[FINDINGS].num_rows:
                group.findings.append(answer[FINDINGS])  # each snapshot keeps those of its bundles
            group.outcomes += outcomes
            for table, rows in answer[HELD].items():
                group.held.setdefault(table, []).append(rows)
        if folders:
            groups[min(folders)].written += answer.get(WRITTEN, [])
    return groups


def judge_snapshots(
    groups: dict[str, _Group],
    root: Path,
    paths: list[str],
    settings: Settings,
    tally: Tally,
    map_parts: MapParts | None = None,
) -> list[SnapshotResult]:
    """One snapshot per cluster and folder (as analyzer.intake.load groups them: a node's cluster is
    the one its meta.env names, else the one most nodes of its folder name, else the folder's), judged
    by the cross-node rules over the dataset.  Which snapshot a bundle is first stored with is settled
    here in order; the snapshots are then judged independently (``map_parts``)."""
    from analyzer.fleet.repeats import settle_repeats

    known = _known(root)
    settle_repeats(root, [w for g in groups.values() for w in g.written], known.bundles, tally)
    jobs: list[tuple[_Part, Path, Settings, _Known]] = []
    for folder, group in groups.items():
        named = Counter(
            b["named_cluster"] for b in group.bundles if b["kind"] == "node" and b["named_cluster"]
        )
        common = named.most_common(1)[0][0] if named else None
        by_cluster: dict[str, list[dict[str, Any]]] = {}
        for b in group.bundles:
            cluster = (b["named_cluster"] if b["kind"] == "node" else None) or common or b["cluster"]
            by_cluster.setdefault(cluster or "unknown", []).append(b)
        for cluster, bundles in by_cluster.items():
            part = _Part(folder, cluster, bundles, group, paths, Tally())
            hashes = set(part.hashes)
            seen = _Known(
                {h: known.bundles[h] for h in hashes if h in known.bundles},
                {part.snapshot_id: known.snapshots[part.snapshot_id]}
                if part.snapshot_id in known.snapshots
                else {},
            )
            jobs.append((part, root, settings, seen))
            known.bundles.update({b["bundle_hash"]: part.where(b) for b in bundles})
    judged = (map_parts or (lambda fn, items: [fn(i) for i in items]))(judge_part, jobs)
    for _, part_tally in judged:
        tally.join(part_tally)
    return [r for r, _ in judged]


def judge_part(job: tuple[_Part, Path, Settings, _Known]) -> tuple[SnapshotResult, Tally]:
    """One snapshot judged and written (in any process: what it needs travels with it)."""
    from analyzer.history.ingest import rules_signature
    from analyzer.pipeline import rule_modules

    part, root, settings, known = job
    modules = rule_modules()
    rules_json, rules_hash = rules_signature(modules)
    return part.judge(root, modules, settings, rules_json, rules_hash, known), part.tally


@dataclass
class _Known:
    """What the dataset holds already: bundle hash -> (cluster, day), snapshot id -> rules hash."""

    bundles: dict[str, tuple[str, str]]
    snapshots: dict[str, str]


def _known(root: Path) -> _Known:
    from analyzer.fleet.dataset import open_dataset
    from analyzer.history.export import SCHEMA_FILE

    if not (root / SCHEMA_FILE).is_file():
        return _Known({}, {})
    con = open_dataset(root)
    try:
        bundles = {h: (c, d) for h, c, d in con.execute(
            "SELECT bundle_hash, cluster, collection_date FROM bundle").fetchall()}  # fmt: skip
        snapshots = dict(con.execute("SELECT snapshot_id, rules_hash FROM snapshot").fetchall())
    finally:
        con.close()
    return _Known(bundles, snapshots)


@dataclass
class _Part:
    folder: str
    cluster: str
    bundles: list[dict[str, Any]]
    group: _Group
    paths: list[str]
    tally: Tally
    now: datetime = field(default_factory=lambda: datetime.now(timezone.utc).replace(tzinfo=None))

    @property
    def hashes(self) -> list[str]:
        return sorted({b["bundle_hash"] for b in self.bundles})

    @property
    def snapshot_id(self) -> str:
        """A snapshot is the set of bundle contents ingested together (as the history store names it)."""
        return contents_id(self.hashes)

    @property
    def collected_at(self) -> datetime | None:
        times = [b["collected_at"] for b in self.bundles if b["kind"] == "node" and b["collected_at"]]
        return max(times) if times else None

    @property
    def day(self) -> str:
        return (self.collected_at or self.now).strftime("%Y-%m-%d")

    def where(self, bundle: dict[str, Any]) -> tuple[str, str]:
        """The partition of a bundle's facts: its cluster and its own day, or its snapshot's."""
        when = bundle["collected_at"]
        return (bundle["cluster"] or "unknown", when.strftime("%Y-%m-%d") if when else self.day)

    def judge(
        self,
        root: Path,
        modules: list[Any],
        settings: Settings,
        rules_json: str,
        rules_hash: str,
        known: _Known,
    ) -> SnapshotResult:
        snapshot_id = self.snapshot_id
        result = SnapshotResult(snapshot_id, "stored", self.cluster, self.folder)
        new = [b for b in self.bundles if b["bundle_hash"] not in known.bundles]
        result.bundles_new = len({b["bundle_hash"] for b in new})
        result.bundles_known = len(self.hashes) - result.bundles_new
        result.nodes = len({b["node"] for b in self.bundles if b["kind"] == "node"})
        if known.snapshots.get(snapshot_id) == rules_hash:
            result.status = "already stored"
            return result
        if snapshot_id in known.snapshots:
            result.status = "judged again"
        self._write_held(root)
        findings, outcomes = self._cross_findings(root, modules, settings, known)
        result.findings = findings.num_rows
        self._write_snapshot(root, snapshot_id, findings, outcomes, new, rules_json, rules_hash, known)
        return result

    def _write_held(self, root: Path) -> None:
        """Facts of bundles with no collection time: under their snapshot's day."""
        import pyarrow.compute as pc

        mine = {b["bundle_hash"]: b for b in self.bundles}
        for table, parts in self.group.held.items():
            rows = concat_tables(parts)
            for h in mine.keys() & set(rows.column("bundle_hash").to_pylist()):
                self.tally.write(
                    root,
                    table,
                    rows.filter(pc.equal(rows.column("bundle_hash"), h)),
                    *self.where(mine[h]),
                    stem=h,
                )

    def _cross_findings(
        self, root: Path, modules: list[Any], settings: Settings, known: _Known
    ) -> tuple[pa.Table, list[dict[str, Any]]]:
        """The cross-node rules over this snapshot's facts read back from the dataset, with the
        node-local findings the workers made; outcomes of both merged per rule.  A node-local rule
        some workers skipped for want of its input while others judged it is judged here again over the
        whole snapshot, as analyze judges it: with its input present somewhere, a node without it may
        get a finding of its own (an instance type unknown, a count not judged)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from analyzer.fleet.read_input import arrow
        from analyzer.judge.findings import Outcome
        from analyzer.pipeline import judge, merge_outcomes
        from analyzer.store.tables import connect

        con = connect(None)
        try:
            places = {
                b["bundle_hash"]: known.bundles.get(b["bundle_hash"]) or self.where(b) for b in self.bundles
            }
            _load_facts(con, root, places)
            mine = set(places)
            local_outcomes = [o for o in self.group.outcomes if o["bundles"] & mine]
            skipped: dict[str, set[bool]] = {}
            for o in local_outcomes:
                skipped.setdefault(o["rule"], set()).add(o["outcome"] == "skipped")
            again = {rule for rule, seen in skipped.items() if len(seen) == 2}
            here = [m for m in modules if not m.RULE.node_local or m.RULE.id in again]
            _, judged = judge(con, here, settings)
            ids = pa.table({"bundle_id": [stored_bundle_id(h) for h in places], "bundle_hash": list(places)})
            con.register("_ids", ids)
            cross_rows = arrow(
                con,
                "SELECT m.bundle_hash, f.* EXCLUDE (bundle_id) FROM findings f LEFT JOIN _ids m USING (bundle_id)",
            )
        finally:
            con.close()
        keep = pa.array(sorted(mine))
        local = [
            t.filter(
                pc.and_(
                    pc.is_in(t.column("bundle_hash"), keep),
                    pc.invert(pc.is_in(t.column("rule"), pa.array(sorted(again), pa.string()))),
                )
            )
            for t in self.group.findings
        ]
        findings = concat_tables([cross_rows, *local], like=cross_rows)
        local_judged = [
            Outcome(o["rule"], o["outcome"], o["findings"] or 0, o["reason"])
            for o in local_outcomes
            if o["rule"] not in again
        ]
        outcomes = [
            {"rule": o.rule, "outcome": o.outcome, "findings": o.findings, "reason": o.reason}
            for o in merge_outcomes([*judged, *local_judged])
        ]
        return findings, outcomes

    def _write_snapshot(
        self,
        root: Path,
        snapshot_id: str,
        findings: pa.Table,
        outcomes: list[dict[str, Any]],
        new: list[dict[str, Any]],
        rules_json: str,
        rules_hash: str,
        known: _Known,
    ) -> None:
        import pyarrow as pa

        cluster, day, stem = self.cluster, self.day, snapshot_id
        sid = pa.array([snapshot_id] * findings.num_rows, pa.string())
        self.tally.write(root, "findings", findings.add_column(0, "snapshot_id", sid), cluster, day, stem)
        self.tally.write(root, "rule_outcome", pa.table({
            "snapshot_id": [snapshot_id] * len(outcomes),
            "rule": [o["rule"] for o in outcomes],
            "outcome": [o["outcome"] for o in outcomes],
            "findings": pa.array([o["findings"] for o in outcomes], pa.int32()),
            "reason": pa.array([o["reason"] for o in outcomes], pa.string()),
        }), cluster, day, stem)  # fmt: skip
        hashes = self.hashes
        self.tally.write(root, "snapshot_bundle", pa.table({
            "snapshot_id": [snapshot_id] * len(hashes),
            "bundle_hash": hashes,
            "bundle_id": [stored_bundle_id(h) for h in hashes],
        }), cluster, day, stem)  # fmt: skip
        given = [
            p
            for p in self.paths
            if self.folder == p.rstrip("/") or self.folder.startswith(p.rstrip("/") + "/")
        ]
        given += [
            p
            for p in self.paths
            if any(b["source"] and b["source"].startswith(p.rstrip("/") + "/") for b in self.bundles)
        ]
        sources = sorted(set(given)) or [self.folder]
        self.tally.write(root, "snapshot", pa.table({
            "snapshot_id": [snapshot_id],
            "ingested_at": pa.array([self.now], pa.timestamp("us")),
            "judged_at": pa.array([self.now], pa.timestamp("us")),
            "sources": [json.dumps(sources)],
            "cluster": [self.cluster],
            "collected_at": pa.array([self.collected_at], pa.timestamp("us")),
            "nodes": pa.array([len({b["node"] for b in self.bundles if b["kind"] == "node"})], pa.int32()),
            "tool_version": [__version__],
            "rules_json": [rules_json],
            "rules_hash": [rules_hash],
        }), cluster, day, stem)  # fmt: skip
        first: dict[str, dict[str, Any]] = {}
        for b in new:
            first.setdefault(b["bundle_hash"], b)
        by_place: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for b in first.values():
            by_place.setdefault(self.where(b), []).append(b)
        for (b_cluster, b_day), rows in by_place.items():
            table = pa.Table.from_pylist(
                [
                    {
                        **r,
                        "cluster": r["cluster"] or "unknown",
                        "first_snapshot": snapshot_id,
                        "ingested_at": self.now,
                    }
                    for r in rows
                ]
            )
            self.tally.write(root, "bundle", table, b_cluster, b_day, stem)


def _load_facts(con: duckdb.DuckDBPyConnection, root: Path, places: dict[str, tuple[str, str]]) -> None:
    """The fact rows of the given bundles, read from the files of their partitions in the dataset (a
    batch's file holds several bundles: the rows are chosen by bundle_hash) into the analysis tables
    (bundle_id as stored; the node table's cluster from its partition)."""
    import pyarrow as pa

    from analyzer.history.ingest import STORE_TABLES
    from analyzer.store.tables import all_schemas

    con.register("_wanted", pa.table({"bundle_hash": pa.array(sorted(places), pa.string())}))
    partitions = sorted({(cluster, str(day)) for cluster, day in places.values()})  # a known day is a date
    for table in all_schemas():
        if table in STORE_TABLES or not (root / table).is_dir():
            continue
        files = [str(f) for cluster, day in partitions for f in partition_files(root, table, cluster, day)]
        if not files:
            continue
        have = {r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}  # fmt: skip
        scan = "read_parquet([{}], hive_partitioning = true, union_by_name = true)".format(
            ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        )
        got = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
        columns = ", ".join(f'"{c}"' for c in sorted(have & got - {"collection_date"}))
        con.execute(
            f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM {scan}'
            " WHERE bundle_hash IN (SELECT bundle_hash FROM _wanted)"
        )
