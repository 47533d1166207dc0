"""Read every node bundle in parallel and load the rows into DuckDB as results arrive.

Every input is accounted for in the LoadSummary (and in the ``input_issue`` and ``bundle_checksum``
tables), besides the parse problems:

* ``unread_inputs``: what was not read, with the path as the user gave it (or ``bundle.tar.gz!member``)
  and why: a missing path, a file or directory that is no bundle, a refused member, a damaged archive,
  a bundle whose reading failed.
* ``duplicates``: an input identical to one already taken is analyzed once.  Identical means the same
  file or directory (resolved path), a byte-identical tarball (size, then SHA-256 of the bytes), or the
  same content in another form (a directory and a tarball of it, or two tarballs compressed
  differently): SHA-256 over (path, SHA-256 of bytes) of every readable file, computed only for bundles
  whose meta.env is byte-identical, so unrelated bundles cost nothing.
* ``node_conflicts``: different bundles claiming one node are all kept; the first (in input order)
  keeps the name, the others are shown as ``<node>#2``, ``<node>#3``.
* ``checksums``: each ``<tarball>.sha256`` beside a tarball, verified; a mismatching bundle is still
  analyzed.
* ``extras``: cluster-wide ``extra/`` folders read (not bundles: not in ``bundles`` nor ``nodes``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.bundle import Discovery, ExtraSource, NodeSource, content_digest, discover, listing, node_name
from analyzer.meta import KNOWN_META, Meta, parse_meta
from analyzer.read_node import NodeData, bundle_id_for, read_extra, read_node_safely
from analyzer.safe_read import Limits
from analyzer.store import CORE_TABLES, BatchWriter

if TYPE_CHECKING:
    import duckdb

#: Below this many node bundles, parse in this process (a pool costs more than it saves).
INLINE_BELOW = 3
#: Most node bundles one worker task reads (its rows come back as one batch per table).
CHUNK_NODES = 32
#: Files of an extra/ folder per worker share (a few ring logs stay in one task).
EXTRA_FILES_PER_PART = 32


@dataclass
class LoadSummary:
    #: one entry per node bundle read: {"bundle_id", "node", "source", "type": "node"}
    bundles: list[dict[str, str]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    problems: int = 0
    #: cluster-wide extra/ folders read: {"bundle_id", "node": "", "source", "type": "cluster"}
    extras: list[dict[str, str]] = field(default_factory=list)
    #: {"path", "reason"}: inputs, or members of them, that were not read
    unread_inputs: list[dict[str, str]] = field(default_factory=list)
    #: {"path", "same_as"}: inputs identical to one analyzed (analyzed once)
    duplicates: list[dict[str, str]] = field(default_factory=list)
    #: {"node", "bundles": [{"path", "shown_as", "collected_at"}, ...]}: different bundles, one node
    node_conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: {"path", "sha256_file", "status": ok|mismatch|unreadable, "expected", "actual", "reason"}
    checksums: list[dict[str, str | None]] = field(default_factory=list)
    #: {"path", "reason"}: loose files beside the bundles that are no bundle (a README), not read
    ignored: list[dict[str, str]] = field(default_factory=list)


def load(
    con: duckdb.DuckDBPyConnection,
    inputs: list[Path],
    workdir: Path,
    limits: Limits,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LoadSummary:
    """Discover, read and store every bundle; returns what was loaded and what was not."""
    found = discover(inputs, workdir, limits)
    writer = BatchWriter(con)
    summary = LoadSummary(
        unread_inputs=list(found.unread), duplicates=list(found.duplicates), ignored=list(found.ignored)
    )
    for path, problem in found.problems:
        writer.add("parse_problems", "", None, [_problem(path, problem)])
        summary.problems += 1
    sources = _plan(found, limits, summary)
    taken = {s.node_name for s in sources if s.node_name}
    read_as: dict[Path, tuple[str, str]] = {}  # location -> (bundle_id, node)
    by_display: dict[str, tuple[str, str]] = {}  # display -> (bundle_id, node)
    total = len(sources)
    extras = _unique_extras(found.extras, limits, summary)
    for extra in extras:
        summary.extras.append(
            {"bundle_id": _cluster_id(extra), "node": "", "source": extra.display, "type": "cluster"}
        )
    done = 0
    for chunk in _read_all(sources, extras, limits, jobs):
        dropped: list[str] = []  # bundle ids whose rows in the chunk are replaced by a re-read
        for source, data in chunk.items:
            if source is None:  # a share of a cluster's extra/ folder
                if data.failed:
                    data.unread.append({"path": data.display, "reason": f"reading failed: {data.failed}"})
                    writer.add(
                        "parse_problems", "", None, [_problem(data.display, data.unread[-1]["reason"])]
                    )
                    summary.problems += 1
                _store(writer, data, summary, is_node=False)
                continue
            if not source.node_name and data.node in taken and not data.failed:
                dropped.append(data.bundle_id)
                data = _reread_as_unique(source, data, limits, taken, summary, by_display)
            if data.failed:
                reason = f"reading failed: {data.failed}"
                summary.unread_inputs.append({"path": source.display, "reason": reason})
                writer.add("parse_problems", "", None, [_problem(source.display, reason)])
                summary.problems += 1
                _issues(writer, "", None, "unread", [{"path": source.display, "reason": reason}])
            else:
                taken.add(data.node)
                _store(writer, data, summary)
                read_as[source.location] = (data.bundle_id, data.node)
                by_display[source.display] = (data.bundle_id, data.node)
            done += 1
            if progress:
                progress(done, total)
        for table, batch in chunk.arrow.items():
            writer.add_arrow(table, _without(batch, dropped) if dropped else batch)
    twin_of = {d["path"]: d["same_as"] for d in summary.duplicates}
    for location, entry in found.checksums:
        bundle_id, node = read_as.get(location, ("", None))
        twin, hops = twin_of.get(str(entry["path"])), 0
        while not bundle_id and twin is not None and hops < 10:  # a duplicate: the copy analyzed
            bundle_id, node = by_display.get(twin, ("", None))
            twin, hops = twin_of.get(twin), hops + 1
        writer.add("bundle_checksum", bundle_id, node, [entry])
        summary.checksums.append(entry)
    _issues(writer, "", None, "unread", found.unread)
    _issues(writer, "", None, "ignored", summary.ignored)
    _issues(writer, "", None, "duplicate", summary.duplicates)
    for conflict in summary.node_conflicts:
        claim = f"{len(conflict['bundles'])} different bundles claim node {conflict['node']!r}"
        for b in conflict["bundles"]:
            reason = f"{claim}; this one is shown as {b['shown_as']!r}"
            entry = {"path": b["path"], "reason": reason}
            bundle_id = by_display.get(b["path"], ("", ""))[0]
            _issues(writer, bundle_id, b["shown_as"], "node-conflict", [entry])
    writer.flush()
    return summary


def _plan(found: Discovery, limits: Limits, summary: LoadSummary) -> list[NodeSource]:
    """Drop bundles identical to an earlier one; give bundles that claim the same node distinct names."""
    metas: list[Meta | None] = []
    names: list[str] = []
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, source in enumerate(found.nodes):
        head = found.heads.get(source.location)
        raw = head.meta if head is not None else None
        meta = parse_meta(raw.decode("utf-8", errors="replace")) if raw is not None else None
        metas.append(meta)
        names.append(node_name(meta, head.top if head is not None else None, source.location))
        key = ("meta", hashlib.sha256(raw).hexdigest()) if raw is not None else ("name", names[i])
        groups[key].append(i)
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        first_with: dict[str, int] = {}
        for i in members:
            source = found.nodes[i]
            digest = content_digest(source.location, source.is_tar, limits)
            if digest in first_with:
                same_as = found.nodes[first_with[digest]].display
                summary.duplicates.append({"path": source.display, "same_as": same_as})
                dropped.add(i)
            else:
                first_with[digest] = i
    kept = [i for i in range(len(found.nodes)) if i not in dropped]
    by_name: dict[str, list[int]] = defaultdict(list)
    for i in kept:
        by_name[names[i]].append(i)
    shown = {i: names[i] for i in kept}
    taken = set(by_name)
    for name, members in by_name.items():
        if len(members) < 2:
            continue
        for i in members[1:]:
            shown[i] = _unique(name, taken)
            taken.add(shown[i])
        summary.node_conflicts.append(
            {
                "node": name,
                "bundles": [
                    {
                        "path": found.nodes[i].display,
                        "shown_as": shown[i],
                        "collected_at": metas[i].get("collected_at") if metas[i] is not None else None,
                    }
                    for i in members
                ],
            }
        )
    # Name the node for the reader where discovery saw meta.env (or had to rename it); otherwise the
    # reader takes the name from what it finds, and a clash is caught when the result arrives.
    return [
        replace(found.nodes[i], node_name=shown[i] if metas[i] is not None or shown[i] != names[i] else "")
        for i in kept
    ]


def _unique(name: str, taken: set[str]) -> str:
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"


def _reread_as_unique(
    source: NodeSource,
    data: NodeData,
    limits: Limits,
    taken: set[str],
    summary: LoadSummary,
    by_display: dict[str, tuple[str, str]],
) -> NodeData:
    """A bundle whose node name showed up only while reading it, and clashes: read it again renamed.

    (Rare: discovery could not read its meta.env, the reader could.)"""
    shown = _unique(data.node, taken)
    conflict = next((c for c in summary.node_conflicts if c["node"] == data.node), None)
    if conflict is None:
        conflict = {"node": data.node, "bundles": []}
        summary.node_conflicts.append(conflict)
        for display, (_bundle_id, node) in by_display.items():
            if node == data.node:  # the bundle that has the name already
                conflict["bundles"].append({"path": display, "shown_as": node, "collected_at": None})
    conflict["bundles"].append(
        {"path": source.display, "shown_as": shown, "collected_at": data.meta.get("collected_at")}
    )
    return read_node_safely(replace(source, node_name=shown), limits)


def _unique_extras(extras: list[ExtraSource], limits: Limits, summary: LoadSummary) -> list[ExtraSource]:
    """extra/ folders with identical files (a cluster given twice by two paths) are read once.

    Folders are compared by their (path, size) listing first; file contents only on a tie."""
    if len(extras) < 2:
        return extras
    digests: dict[Path, str] = {}

    def digest(extra: ExtraSource) -> str:
        if extra.location not in digests:
            digests[extra.location] = content_digest(extra.location, False, limits)
        return digests[extra.location]

    by_listing: dict[tuple[tuple[str, int], ...], list[ExtraSource]] = defaultdict(list)
    out: list[ExtraSource] = []
    for extra in extras:
        same_listing = by_listing[listing(extra.location)]
        twin = next((e for e in same_listing if digest(e) == digest(extra)), None)
        if twin is not None:
            summary.duplicates.append({"path": extra.display, "same_as": twin.display})
            continue
        same_listing.append(extra)
        out.append(extra)
    return out


@dataclass
class Chunk:
    """What one task returns: the node bundles (or the share of an extra/ folder, source None) it read,
    each NodeData without its rows, and the rows of all of them merged per table (one Arrow table each,
    so the parent unpickles and inserts few large batches instead of many small ones)."""

    items: list[tuple[NodeSource | None, NodeData]]
    arrow: dict[str, Any]


Task = tuple[str, Any]


def read_chunk(task: Task, limits: Limits) -> Chunk:
    """Run one task in a worker: ("nodes", [NodeSource, ...]) or ("extra", (ExtraSource, part, parts))."""
    import pyarrow as pa

    what, arg = task
    items: list[tuple[NodeSource | None, NodeData]]
    if what == "nodes":
        items = [(source, read_node_safely(source, limits)) for source in arg]
    else:
        extra, part, parts = arg
        items = [(None, read_extra_safely(extra, limits, part, parts))]
    tables: dict[str, list[Any]] = {}
    for _, data in items:
        for table, batch in data.arrow.items():
            tables.setdefault(table, []).append(batch)
        data.arrow = {}
    merged = {t: pa.concat_tables(b).combine_chunks() if len(b) > 1 else b[0] for t, b in tables.items()}
    return Chunk(items, merged)


def read_extra_safely(extra: ExtraSource, limits: Limits, part: int, parts: int) -> NodeData:
    """read_extra, but an unexpected error becomes a failed NodeData instead of ending the analysis."""
    try:
        return read_extra(extra.location, extra.display, _cluster_id(extra), limits, part, parts)
    except Exception as exc:  # a reader bug or an OS error must not lose the other inputs
        return NodeData(
            bundle_id=_cluster_id(extra),
            node="",
            display=extra.display,
            failed=f"{type(exc).__name__}: {exc}",
        )


def _cluster_id(extra: ExtraSource) -> str:
    return bundle_id_for("cluster", "", extra.display)


def _without(batch: Any, bundle_ids: list[str]) -> Any:
    """The rows of a merged batch that do not belong to the given bundles."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pc.invert(pc.is_in(batch.column("bundle_id"), value_set=pa.array(bundle_ids, pa.string())))
    return batch.filter(keep)


def _tasks(nodes: list[NodeSource], extras: list[ExtraSource], workers: int) -> list[Task]:
    """Node bundles in chunks (a few per worker and round, so progress still moves), then each extra/
    folder in shares when it is large enough to be worth spreading over the workers."""
    size = max(1, min(CHUNK_NODES, -(-len(nodes) // (workers * 4)))) if workers > 1 else max(1, len(nodes))
    tasks: list[Task] = [("nodes", nodes[i : i + size]) for i in range(0, len(nodes), size)]
    for extra in extras:
        try:
            files = sum(1 for _ in extra.location.rglob("*"))
        except OSError:
            files = 0
        parts = max(1, min(workers * 2, files // EXTRA_FILES_PER_PART)) if workers > 1 else 1
        tasks.extend(("extra", (extra, part, parts)) for part in range(parts))
    return tasks


def _read_all(
    nodes: list[NodeSource], extras: list[ExtraSource], limits: Limits, jobs: int | None
) -> Iterator[Chunk]:
    workers = jobs or min(os.cpu_count() or 1, 8)
    if len(nodes) < INLINE_BELOW or workers <= 1:
        for task in _tasks(nodes, extras, 1):
            yield read_chunk(task, limits)
        return
    tasks = _tasks(nodes, extras, workers)
    # Keep a bounded number of tasks in flight so memory stays flat on 1,000+ nodes.  Workers start
    # from a clean server process, never forked from this one: a fork after DuckDB has started threads
    # can crash the child.
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    finished: set[int] = set()
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            queue = iter(enumerate(tasks))
            in_flight: dict[Future[Chunk], int] = {}
            for i, task in queue:
                in_flight[pool.submit(read_chunk, task, limits)] = i
                if len(in_flight) >= workers * 2:
                    break
            while in_flight:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    i = in_flight.pop(future)
                    chunk = future.result()
                    finished.add(i)
                    yield chunk
                    nxt = next(queue, None)
                    if nxt is not None:
                        in_flight[pool.submit(read_chunk, nxt[1], limits)] = nxt[0]
    except BrokenProcessPool:
        # A worker died (killed, out of memory): read what is left here rather than lose it.
        for i, task in enumerate(tasks):
            if i not in finished:
                yield read_chunk(task, limits)


def _store(writer: BatchWriter, data: NodeData, summary: LoadSummary, is_node: bool = True) -> None:
    bid, node = data.bundle_id, data.node
    if is_node:
        meta = data.meta
        writer.add("node", bid, node, [_node_row(data.display, meta)])
        summary.bundles.append({"bundle_id": bid, "node": node, "source": data.display, "type": "node"})
        summary.nodes.append(node)
    for table, batch in data.arrow.items():
        writer.add_arrow(table, batch)
    summary.problems += len(data.problems)
    summary.unread_inputs.extend(data.unread)
    _issues(writer, bid, node or None, "unread", data.unread)


def _issues(
    writer: BatchWriter, bundle_id: str, node: str | None, issue: str, entries: list[dict[str, str]]
) -> None:
    rows = [
        {"path": e["path"], "issue": issue, "reason": e.get("reason"), "same_as": e.get("same_as")}
        for e in entries
    ]
    writer.add("input_issue", bundle_id, node, rows)


def _node_row(display: str, meta: dict[str, str]) -> dict[str, object]:
    # every node-table column that meta.env fills under the same name
    columns = {c.name for c in CORE_TABLES["node"]} & set(KNOWN_META)
    row: dict[str, object] = {
        key: meta.get(key) or None for key in sorted(columns - {"collected_at", "nproc"})
    }
    nproc = meta.get("nproc", "")
    row.update(
        source=display,
        collected_at=meta.get("collected_at"),
        nproc=int(nproc) if nproc.isdigit() else None,
        meta_json=json.dumps(meta, sort_keys=True),
    )
    return row


def _problem(path: str, error: str) -> dict[str, object]:
    return {"file": path, "kind": None, "error": error, "line": None, "text": None}


__all__ = ["Discovery", "LoadSummary", "load"]
