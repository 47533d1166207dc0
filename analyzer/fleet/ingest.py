"""``hptriage ingest --parquet DIR``: bundles read where they lie, by a pool of local processes or by Ray,
into the Parquet dataset ``export`` writes; the rules that compare nodes then run once per snapshot on
this machine over what was written.

Each worker takes one input (:func:`run_task`): :func:`analyzer.fleet.read_input.read_input` gives its
rows, the fact rows of every bundle whose collection time is known are written straight into the
dataset (one file per table and bundle, named by the bundle's content hash), and only the small rest
(bundle rows, the node-local rules' findings and outcomes, what could not be read) travels back.  The
driver groups the bundles into snapshots as ``ingest --db`` does (one cluster's bundles in one folder),
runs the cross-node rules over each snapshot's rows read back from the dataset through DuckDB, merges
the outcomes, and writes the snapshot's rows.  A snapshot already in the dataset, judged by the same
rules, is left as it is; a bundle already there keeps its first snapshot.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer import __version__
from analyzer.fleet.dataset import PARTITIONS, DatasetError, Tally, partition_value
from analyzer.fleet.read_input import (
    BUNDLE,
    FINDINGS,
    OUTCOMES,
    PLACE_COLUMNS,
    UNREAD,
    Place,
    stored_bundle_id,
)

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from analyzer.judge.settings import Settings

ENGINES = ("local", "ray")
#: Keys of a worker's answer besides the tables read_input returns.
_HELD = "held"
_SMALL = (BUNDLE, FINDINGS, OUTCOMES, UNREAD)
#: How outcomes of one rule over several inputs combine (as analyze combines a cluster's folders).
_RANK = {"error": 0, "fail": 1, "pass": 2, "skipped": 3}


class EngineMissing(Exception):
    """The engine asked for is not installed."""


@dataclass(frozen=True)
class Task:
    """One input for a worker: ``name`` as the user gave it, ``path`` where to read it, ``place`` the
    cluster folder it belongs to (default: the folder it lies in)."""

    name: str
    path: str
    is_dir: bool = False
    checksum: str | None = None
    place: Place | None = None


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


#: Inputs of one folder read together by one worker: one store and one run of the node-local rules for
#: all of them (a worker's cost per input falls to about a third).
BATCH = 16


def run_task(task: Task, root: str, settings: Settings | None = None) -> dict[str, Any]:
    """Read one input and write its dated facts under root (see the module docstring)."""
    return run_tasks([task], root, settings)


def run_tasks(tasks: list[Task], root: str, settings: Settings | None = None) -> dict[str, Any]:
    """Read inputs of one folder together (see :func:`batches`) and write their dated facts under root;
    an input that cannot be read is said, and the others are read."""
    from analyzer.fleet.inputs import read_path

    members: list[tuple[str, Any, bytes | None]] = []
    unread: list[tuple[str, str]] = []
    for task in tasks:
        try:
            data, checksum = read_path(task.path, task.is_dir, task.checksum)
        except OSError as exc:
            unread.append((task.name, f"cannot read: {exc.strerror or exc}"))
            continue
        members.append((_base(task.name), data, checksum))
    parent = _parent(tasks[0].name)
    if not members:
        return _unread_only(parent, unread)
    answer = digest_inputs(parent, members, Path(root), settings, tasks[0].place)
    if unread:
        import pyarrow as pa

        answer[UNREAD] = pa.concat_tables([answer[UNREAD], _unread_table(unread)])
    return answer


def batches(tasks: list[Task], size: int = BATCH) -> list[list[Task]]:
    """The tasks in batches of inputs lying in one folder and belonging to one cluster folder, at most
    ``size`` each, in the order given."""
    groups: dict[tuple[str, Place | None], list[Task]] = {}
    for task in tasks:
        groups.setdefault((_parent(task.name), task.place), []).append(task)
    return [g[i : i + size] for g in groups.values() for i in range(0, len(g), size)]


def _parent(name: str) -> str:
    return name.rstrip("/").rpartition("/")[0]


def _base(name: str) -> str:
    return name.rstrip("/").rpartition("/")[2]


def digest_input(
    name: str,
    data: bytes | dict[str, bytes],
    checksum: bytes | None,
    root: Path,
    settings: Settings | None,
    place: Place | None = None,
) -> dict[str, Any]:
    """read_input, then the facts of each bundle with a collection time written under root; those of a
    bundle without one are handed back (``held``) for the driver to write under its snapshot's day."""
    return digest_inputs(_parent(name), [(_base(name), data, checksum)], root, settings, place)


def digest_inputs(
    parent: str,
    members: list[tuple[str, Any, bytes | None]],
    root: Path,
    settings: Settings | None,
    place: Place | None = None,
) -> dict[str, Any]:
    """:func:`digest_input` of several inputs of one folder, read together (read_inputs)."""
    import pyarrow.compute as pc

    from analyzer.fleet.read_input import read_inputs

    tables = read_inputs(parent, members, place=place, settings=settings)
    bundles = tables[BUNDLE]
    where: dict[str, tuple[str, str]] = {}
    for row in bundles.to_pylist():
        if row["collected_at"] is not None:
            where[row["bundle_hash"]] = (
                row["cluster"] or "unknown",
                row["collected_at"].strftime("%Y-%m-%d"),
            )
    held: dict[str, pa.Table] = {}
    tally = Tally()
    for table, rows in tables.items():
        if table in _SMALL or rows.num_rows == 0:
            continue
        hashes = pc.unique(rows.column("bundle_hash")).to_pylist()
        for h in hashes:
            mine = rows if len(hashes) == 1 else rows.filter(pc.equal(rows.column("bundle_hash"), h))
            if h in where:
                tally.write(root, table, mine, *where[h], stem=h)
            else:
                held[table] = mine if table not in held else _concat([held[table], mine])
    out: dict[str, Any] = {
        "name": parent,
        "inputs": len(members),
        **{t: tables[t] for t in _SMALL},
        _HELD: held,
        "tally": tally,
    }
    return out


def _unread_table(unread: list[tuple[str, str]]) -> pa.Table:
    import pyarrow as pa

    return pa.table({"path": pa.array([p for p, _ in unread], pa.string()),
                     "reason": pa.array([r for _, r in unread], pa.string())})  # fmt: skip


def _unread_only(name: str, unread: list[tuple[str, str]]) -> dict[str, Any]:
    import pyarrow as pa

    from analyzer.fleet.read_input import BUNDLE_COLUMNS

    empty = pa.table({c: pa.array([], pa.string()) for c in (*BUNDLE_COLUMNS, *PLACE_COLUMNS)})
    return {
        "name": name,
        "inputs": len(unread),
        BUNDLE: empty,
        FINDINGS: pa.table({"bundle_hash": pa.array([], pa.string())}),
        OUTCOMES: pa.table({"rule": pa.array([], pa.string())}),
        UNREAD: _unread_table(unread),
        _HELD: {},
    }


def ingest_dataset(
    paths: list[str],
    root: Path,
    *,
    engine: str = "local",
    jobs: int | None = None,
    ray_address: str | None = None,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> FleetIngest:
    """Ingest the inputs under paths into the dataset at root (made when missing)."""
    from analyzer.fleet.inputs import list_inputs
    from analyzer.judge.settings import load_settings

    settings = settings or load_settings()
    _check_root(root)
    remote = [p for p in paths if _is_uri(p)]
    if remote and engine != "ray":
        raise DatasetError(f"{remote[0]}: an object-store prefix is read with --engine ray")
    listing = list_inputs([Path(p) for p in paths if not _is_uri(p)])
    tasks = [Task(i.path, os.path.abspath(i.path), i.is_dir, i.checksum, i.place()) for i in listing.items]
    result = FleetIngest(unread=list(listing.skipped), inputs=len(tasks))
    if not tasks and not remote:
        from analyzer.errors import no_usable_bundle

        raise no_usable_bundle(result.unread or [(p, "no bundle found") for p in paths])
    if engine == "ray":
        with _ray_session(jobs, ray_address) as ray:
            answers = _ray_answers(tasks, remote, root, settings, jobs, ray_address, progress)
            return finish(answers, root, paths, settings, result, map_parts=_ray_map(ray))
    answers = _local_answers(tasks, root, settings, jobs, progress)
    return finish(answers, root, paths, settings, result, map_parts=_pool_map(jobs))


#: How a driver judges snapshots: a map of judge_part over the parts (in order).
MapParts = Callable[[Callable[[Any], Any], list[Any]], list[Any]]


def _pool_map(jobs: int | None) -> MapParts:
    """Snapshots judged by local processes, several at a time (one at a time here for one snapshot)."""

    def run(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        workers = min(jobs or min(os.cpu_count() or 1, 8), len(items))
        if workers <= 1:
            return [fn(i) for i in items]
        context = multiprocessing.get_context(
            "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        )
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(fn, items))

    return run


def _ray_map(ray: Any) -> MapParts:
    """Snapshots judged as Ray tasks, spread over the cluster (here for one snapshot)."""

    def run(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        if len(items) <= 1:
            return [fn(i) for i in items]
        remote = ray.remote(fn)
        return list(ray.get([remote.remote(i) for i in items]))

    return run


def finish(
    answers: Iterable[dict[str, Any]],
    root: Path,
    paths: list[str],
    settings: Settings | None = None,
    result: FleetIngest | None = None,
    map_parts: MapParts | None = None,
) -> FleetIngest:
    """The driver's part, whoever ran the workers (a local pool, Ray, Spark's ``mapInArrow``): the
    answers of :func:`digest_input` grouped into snapshots, each judged by the cross-node rules over the
    dataset and written, and the schema document brought up to date.  ``paths`` are the paths given
    (a snapshot's ``sources``); ``map_parts`` spreads the snapshots' judging (default: one after
    another here)."""
    from analyzer.judge.settings import load_settings

    settings = settings or load_settings()
    result = result or FleetIngest()
    groups = _gather(answers, result)
    result.snapshots = _judge_snapshots(groups, root, paths, settings, result.tally, map_parts)
    if not result.snapshots:
        from analyzer.errors import no_usable_bundle

        raise no_usable_bundle(result.unread or [(p, "no bundle read") for p in paths])
    from analyzer.fleet.dataset import update_schema_doc

    update_schema_doc(root, result.tally.added, result.tally.samples)
    return result


def _check_root(root: Path) -> None:
    from analyzer.history.export import SCHEMA_FILE

    if root.exists() and not root.is_dir():
        raise DatasetError(f"{root} is a file, not a dataset directory")
    if root.is_dir() and any(root.iterdir()) and not (root / SCHEMA_FILE).is_file():
        raise DatasetError(
            f"{root} is not empty and holds no hptriage dataset (no {SCHEMA_FILE}): give a new or empty"
            " directory, or one an earlier ingest --parquet or export wrote"
        )
    if root.is_dir() and (root / SCHEMA_FILE).is_file():
        from analyzer.fleet.dataset import open_dataset

        open_dataset(root).close()  # the schema version is checked before any work


def _is_uri(path: str) -> bool:
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isalnum() and head != "file"


# --- engines ---------------------------------------------------------------------------------------


def _local_answers(
    tasks: list[Task],
    root: Path,
    settings: Settings,
    jobs: int | None,
    progress: Callable[[int, int], None] | None,
) -> Iterator[dict[str, Any]]:
    """The tasks, in batches (:func:`batches`), read by a pool of local processes (in this one for
    jobs=1 or a single batch), a bounded number in flight so memory stays flat."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    workers = jobs or min(os.cpu_count() or 1, 8)
    # batches small enough that every worker has several
    units = batches(tasks, max(1, min(BATCH, len(tasks) // (workers * 4))))
    done = 0

    def said(answer: dict[str, Any]) -> dict[str, Any]:
        nonlocal done
        done += answer.get("inputs", 1)
        if progress:
            progress(min(done, len(tasks)), len(tasks))
        return answer

    if workers <= 1 or len(units) <= 1:
        for unit in units:
            yield said(run_tasks(unit, str(root), settings))
        return
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        queue = iter(units)
        in_flight: set[Future[dict[str, Any]]] = set()
        for unit in queue:
            in_flight.add(pool.submit(run_tasks, unit, str(root), settings))
            if len(in_flight) >= workers * 2:
                break
        while in_flight:
            finished, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                yield said(future.result())
                nxt = next(queue, None)
                if nxt is not None:
                    in_flight.add(pool.submit(run_tasks, nxt, str(root), settings))


def _ray_answers(
    tasks: list[Task],
    remote: list[str],
    root: Path,
    settings: Settings,
    jobs: int | None,
    address: str | None,
    progress: Callable[[int, int], None] | None,
) -> Iterator[dict[str, Any]]:
    """The tasks on Ray Data: files through ``read_binary_files`` (local paths and object-store prefixes),
    folders (an unpacked bundle, an ``extra/`` folder) through ``from_items``, each mapped by the same
    step as the local pool; the answers stream back as the blocks finish."""
    import pickle

    import pyarrow as pa
    import ray

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    names = {t.path: t for t in tasks}
    out = str(root.resolve())

    def read_files(batch: pa.Table) -> pa.Table:
        """A block of files: those of one folder read together, one answer per folder."""
        groups: dict[tuple[str, Place | None], list[tuple[str, Any, bytes | None]]] = {}
        for path, data in zip(
            batch.column("path").to_pylist(), batch.column("bytes").to_pylist(), strict=True
        ):
            task = names.get(path) or names.get("/" + path.lstrip("/")) or Task(_uri_name(path, remote), path)
            checksum = _sidecar(path) if task.checksum or not names else None
            groups.setdefault((_parent(task.name), task.place), []).append((_base(task.name), data, checksum))
        answers = [
            pickle.dumps(digest_inputs(parent, members, Path(out), settings, place))
            for (parent, place), members in groups.items()
        ]
        return pa.table({"answer": pa.array(answers, pa.binary())})

    def read_dir(row: dict[str, Any]) -> dict[str, Any]:
        return {"answer": pickle.dumps(run_task(names[row["path"]], out, settings))}

    total = len(tasks)
    done = 0
    size = max(1, min(BATCH, len(tasks) // ((jobs or os.cpu_count() or 1) * 4)))
    files = [t.path for t in tasks if not t.is_dir] + remote
    dirs = [{"name": t.name, "path": t.path} for t in tasks if t.is_dir]
    streams = []
    if files:
        raw = ray.data.read_datasource(_raw_files(files))
        streams.append(raw.map_batches(read_files, batch_size=size, batch_format="pyarrow"))
    if dirs:
        streams.append(ray.data.from_items(dirs).map(read_dir))
    for stream in streams:
        for row in stream.iter_rows():
            answer = pickle.loads(row["answer"])  # noqa: S301 - the answer of our own worker
            done += answer.get("inputs", 1)
            if progress:
                progress(min(done, total), max(total, done))
            yield answer


@contextlib.contextmanager
def _ray_session(jobs: int | None, address: str | None) -> Iterator[Any]:
    """Ray, started for the ingest (a local Ray of ``jobs`` CPUs, or the cluster at ``address``) and
    stopped after it; one already running in this process is used as it is."""
    # Ray Data's lines per dataset run stay out of the terminal (a user's own setting wins)
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    try:
        import ray
    except ImportError as exc:
        raise EngineMissing(
            "the ray engine needs Ray, which is not installed: pip install 'hptriage[ray]'"
        ) from exc
    started = not ray.is_initialized()
    if started:
        ray.init(
            address=address,
            num_cpus=None if address else (jobs or os.cpu_count() or 1),
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
        )
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _raw_files(paths: list[str]) -> Any:
    """``read_binary_files`` with the bytes as they lie: Ray's reader un-gzips a file whose name ends in
    .gz (Arrow's compression detection), and a bundle's hash and checksum are of the file itself."""
    import pyarrow as pa
    from ray.data.datasource import FileBasedDatasource

    class RawFiles(FileBasedDatasource):
        def _open_input_source(self, filesystem: Any, path: str, **open_args: Any) -> pa.NativeFile:
            return filesystem.open_input_stream(path, compression=None)

        def _read_stream(self, f: pa.NativeFile, path: str) -> Iterator[pa.Table]:
            yield pa.table({"bytes": pa.array([f.readall()], pa.binary())})

        def _rows_per_file(self) -> int:
            return 1

    return RawFiles(paths, include_paths=True)


def _uri_name(path: str, remote: list[str]) -> str:
    """The name of a file Ray listed under an object-store prefix: its URI."""
    for prefix in remote:
        scheme, _, rest = prefix.partition("://")
        if path.startswith(rest.rstrip("/")):
            return f"{scheme}://{path}"
    return path


def _sidecar(path: str) -> bytes | None:
    try:
        with open(path + ".sha256", "rb") as fh:
            return fh.read(4096)
    except OSError:
        return None


# --- the driver ------------------------------------------------------------------------------------


@dataclass
class _Group:
    """What the workers said about one folder's inputs."""

    folder: str
    bundles: list[dict[str, Any]] = field(default_factory=list)
    findings: list[pa.Table] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    held: dict[str, list[pa.Table]] = field(default_factory=dict)


def _gather(answers: Iterable[dict[str, Any]], result: FleetIngest) -> dict[str, _Group]:
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
            for table, rows in answer[_HELD].items():
                group.held.setdefault(table, []).append(rows)
    return groups


def _judge_snapshots(
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
    known = _known(root)
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
        return hashlib.sha256("\n".join(self.hashes).encode()).hexdigest()[:16]

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
            rows = _concat(parts)
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
        from analyzer.judge.engine import run_rules
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
            _, judged = run_rules(con, here, settings)
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
        findings = _concat([cross_rows, *local], like=cross_rows)
        outcomes = _merge_outcomes(
            [
                {"rule": o.rule, "outcome": o.outcome, "findings": o.findings, "reason": o.reason}
                for o in judged
            ]
            + [o for o in local_outcomes if o["rule"] not in again]
        )
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
    """The fact rows of the given bundles, read from their files in the dataset into the analysis
    tables (bundle_id as stored; the node table's cluster from its partition).  Files are found by one
    listing per table and partition."""
    from analyzer.history.ingest import STORE_TABLES
    from analyzer.store.tables import all_schemas

    by_partition: dict[tuple[str, str], set[str]] = {}
    for h, place in places.items():
        by_partition.setdefault(place, set()).add(f"{h}_0.parquet")
    for table in all_schemas():
        if table in STORE_TABLES or not (root / table).is_dir():
            continue
        files = []
        for (cluster, day), wanted in by_partition.items():
            folder = root / table / f"cluster={partition_value(cluster)}" / f"collection_date={day}"
            try:
                files += [str(folder / n) for n in sorted(set(os.listdir(folder)) & wanted)]
            except FileNotFoundError:
                continue
        if not files:
            continue
        have = {r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}  # fmt: skip
        scan = "read_parquet([{}], hive_partitioning = true, union_by_name = true)".format(
            ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        )
        got = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
        columns = ", ".join(f'"{c}"' for c in sorted(have & got - {"collection_date"}))
        con.execute(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM {scan}')


def _merge_outcomes(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One outcome per rule: the worst (error, fail, pass, skipped), findings summed, reasons joined."""
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for o in outcomes:
        by_rule.setdefault(o["rule"], []).append(o)
    merged = []
    for rule, outs in by_rule.items():
        best = min(outs, key=lambda o: _RANK.get(o["outcome"], len(_RANK)))
        reasons = sorted({o["reason"] for o in outs if o["outcome"] == best["outcome"] and o["reason"]})
        merged.append({
            "rule": rule, "outcome": best["outcome"], "findings": sum(o["findings"] or 0 for o in outs),
            "reason": "; ".join(reasons) or None,
        })  # fmt: skip
    return merged


def _concat(tables: list[pa.Table], like: pa.Table | None = None) -> pa.Table:
    import pyarrow as pa

    tables = [t for t in tables if t.num_rows] or ([like] if like is not None else tables[:1])
    return pa.concat_tables(tables, promote_options="permissive")


__all__ = ["ENGINES", "PARTITIONS", "EngineMissing", "FleetIngest", "Task", "digest_input", "finish", "ingest_dataset",
           "run_task"]  # fmt: skip
