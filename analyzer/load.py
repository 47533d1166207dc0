"""Read every node bundle in parallel and load the rows into DuckDB as results arrive."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.bundle import Discovery, NodeSource, discover
from analyzer.meta import KNOWN_META
from analyzer.read_node import NodeData, bundle_id_for, read_extra, read_node
from analyzer.safe_read import Limits
from analyzer.store import CORE_TABLES, BatchWriter

if TYPE_CHECKING:
    import duckdb

#: Below this many node bundles, parse in this process (a pool costs more than it saves).
INLINE_BELOW = 3


@dataclass
class LoadSummary:
    bundles: list[dict[str, str]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    problems: int = 0


def load(
    con: duckdb.DuckDBPyConnection,
    inputs: list[Path],
    workdir: Path,
    limits: Limits,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LoadSummary:
    """Discover, read and store every bundle; returns what was loaded."""
    found = discover(inputs, workdir, limits)
    writer = BatchWriter(con)
    summary = LoadSummary()
    for path, problem in found.problems:
        writer.add("parse_problems", "", None, [_problem(path, problem)])
        summary.problems += 1
    total = len(found.nodes)
    for done, data in enumerate(_read_all(found.nodes, limits, jobs), start=1):
        _store(writer, data, summary)
        if progress:
            progress(done, total)
    for extra in found.extras:
        cluster_id = bundle_id_for("cluster", "", extra.display)
        data = read_extra(extra.location, extra.display, cluster_id, limits)
        summary.bundles.append(
            {"bundle_id": cluster_id, "node": "", "source": extra.display, "type": "cluster"}
        )
        _store(writer, data, summary, is_node=False)
    writer.flush()
    return summary


def _read_all(nodes: list[NodeSource], limits: Limits, jobs: int | None) -> Iterator[NodeData]:
    workers = jobs or min(os.cpu_count() or 1, 8)
    if len(nodes) < INLINE_BELOW or workers <= 1:
        for source in nodes:
            yield read_node(source, limits)
        return
    # Keep a bounded number of bundles in flight so memory stays flat on 1,000+ nodes.  Workers start
    # from a clean server process, never forked from this one: a fork after DuckDB has started threads
    # can crash the child.
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    finished: set[NodeSource] = set()
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            queue = iter(nodes)
            in_flight: dict[Future[NodeData], NodeSource] = {}
            for source in queue:
                in_flight[pool.submit(read_node, source, limits)] = source
                if len(in_flight) >= workers * 2:
                    break
            while in_flight:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    source = in_flight.pop(future)
                    result = future.result()
                    finished.add(source)
                    yield result
                    nxt = next(queue, None)
                    if nxt is not None:
                        in_flight[pool.submit(read_node, nxt, limits)] = nxt
    except BrokenProcessPool:
        # A worker died (killed, out of memory): read what is left here rather than lose it.
        for source in nodes:
            if source not in finished:
                yield read_node(source, limits)


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
