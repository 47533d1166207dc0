"""The workers' side of ``ingest --parquet``: inputs of one folder read together
(:func:`analyzer.fleet.read_input.read_inputs`), the fact rows of every bundle whose collection time is
known written straight into the dataset (one file per table and batch, named by its bundles' content
hashes: :class:`Written`), and only the small rest (bundle rows, the node-local rules' findings and
outcomes, what could not be read, what was written) handed back as the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.fleet.dataset import Tally
from analyzer.fleet.read_input import (
    BUNDLE,
    FINDINGS,
    OUTCOMES,
    PLACE_COLUMNS,
    UNREAD,
    Place,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from analyzer.judge.settings import Settings


#: Keys of a worker's answer besides the tables read_input returns.
HELD, WRITTEN = "held", "written"
SMALL = (BUNDLE, FINDINGS, OUTCOMES, UNREAD)


@dataclass(frozen=True)
class Task:
    """One input for a worker: ``name`` as the user gave it, ``path`` where to read it, ``place`` the
    cluster folder it belongs to (default: the folder it lies in)."""

    name: str
    path: str
    is_dir: bool = False
    checksum: str | None = None
    place: Place | None = None


#: Inputs of one folder read together by one worker: one store, one run of the node-local rules and one
#: file per fact table for all of them (a p5 bundle's cost: 115 ms alone, ~61 ms in a batch of 32, ~54 ms
#: in one of 64; the worker's peak RSS ~330 and ~400 MiB).
BATCH = 64


@dataclass(frozen=True)
class Written:
    """The fact files a worker wrote for the bundles of one partition of a batch: one file per table,
    ``<table>/cluster=<cluster>/collection_date=<day>/<stem>_0.parquet``, holding these bundles' rows."""

    cluster: str
    day: str
    stem: str
    hashes: tuple[str, ...]


def batch_stem(hashes: list[str]) -> str:
    """The name of a batch's fact files: the bundle's own hash for one bundle, else a hash of the
    bundles' hashes, so that writing the same bundles again replaces the same files.

    >>> batch_stem(["ab" * 32]) == "ab" * 32, batch_stem(["b", "a"]) == batch_stem(["a", "b"])
    (True, True)
    """
    if len(hashes) == 1:
        return hashes[0]
    from analyzer.history.ingest import contents_id

    return "batch-" + contents_id(hashes, 32)


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
        members.append((base_of(task.name), data, checksum))
    parent = folder_of(tasks[0].name)
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
        groups.setdefault((folder_of(task.name), task.place), []).append(task)
    return [g[i : i + size] for g in groups.values() for i in range(0, len(g), size)]


def folder_of(name: str) -> str:
    return name.rstrip("/").rpartition("/")[0]


def base_of(name: str) -> str:
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
    return digest_inputs(folder_of(name), [(base_of(name), data, checksum)], root, settings, place)


def digest_inputs(
    parent: str,
    members: list[tuple[str, Any, bytes | None]],
    root: Path,
    settings: Settings | None,
    place: Place | None = None,
) -> dict[str, Any]:
    """:func:`digest_input` of several inputs of one folder, read together (read_inputs)."""
    import pyarrow as pa
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
    together: dict[tuple[str, str], list[str]] = {}  # (cluster, day) -> the bundles written there
    for h, partition in where.items():
        together.setdefault(partition, []).append(h)
    written = [Written(*at, batch_stem(hashes), tuple(sorted(hashes))) for at, hashes in together.items()]
    for table, rows in tables.items():
        if table in SMALL or rows.num_rows == 0:
            continue
        column = rows.column("bundle_hash")
        undated = [h for h in pc.unique(column).to_pylist() if h not in where]
        for batch in written:
            whole = len(written) == 1 and not undated  # every row of the table goes to this batch's file
            mine = rows if whole else rows.filter(pc.is_in(column, pa.array(batch.hashes, pa.string())))
            if mine.num_rows:
                tally.write(root, table, mine, batch.cluster, batch.day, stem=batch.stem)
        if undated:
            mine = rows.filter(pc.is_in(column, pa.array(undated, pa.string())))
            held[table] = mine if table not in held else concat_tables([held[table], mine])
    out: dict[str, Any] = {
        "name": parent,
        "inputs": len(members),
        **{t: tables[t] for t in SMALL},
        HELD: held,
        WRITTEN: written,
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
        HELD: {},
        WRITTEN: [],
    }


def concat_tables(tables: list[pa.Table], like: pa.Table | None = None) -> pa.Table:
    import pyarrow as pa

    tables = [t for t in tables if t.num_rows] or ([like] if like is not None else tables[:1])
    return pa.concat_tables(tables, promote_options="permissive")
