"""Read every node bundle in parallel and load the rows into DuckDB as results arrive.

Every input is accounted for in the LoadSummary (and in the ``input_issue`` and ``bundle_checksum``
tables), besides the parse problems:

* ``unread_inputs``: what was not read, with the path as the user gave it (or ``bundle.tar.gz!member``)
  and why: a missing path, a file or directory that is no bundle, a loose file beside the bundles, a
  refused member, a damaged archive, a bundle whose reading failed, a node bundle without meta.env
  (read all the same), a file of a bundle or ``extra/`` folder that no parser recognises.
* ``not_parsed``: files read and kept for people but parsed by no parser (kind ``-`` in manifest.tsv,
  the collector's ``redaction.txt``), each bundle path with why and on how many nodes: nothing in them
  was judged.
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

Clusters and snapshots: every bundle belongs to a cluster folder (see :mod:`analyzer.intake.bundle`) and to a
cluster, named by meta.env ``cluster`` (a node without one takes the name most of its folder's nodes
give, else the folder's name).  One cluster's bundles in one folder are a *part*; the rules judge each
part on its own (``parts``), so nccl-tests runs, peers and drift are never pooled across folders or
clusters.  Parts of one cluster make one snapshot when they hold no node twice and were collected within
``SNAPSHOT_GAP`` of each other (one collection written to two folders); otherwise they are snapshots
of their own, and only the newest snapshot of each cluster is read: the others are listed in
``not_judged`` (``hptriage diff`` compares them).  A folder holding only an ``extra/`` joins the nodes of
its cluster (or of the one cluster given).  Same-named nodes of two clusters that meta.env names
differently are two nodes, shown as ``<node>@<cluster>``; two bundles claiming one node otherwise are a
node conflict (above).  With several ``extra/`` folders, their files are named ``<folder>/extra/<file>``.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.intake.bundle import (
    Discovery,
    ExtraSource,
    NodeSource,
    content_digest,
    discover,
    listing,
    node_name,
)
from analyzer.intake.meta import KNOWN_META, Meta, parse_meta
from analyzer.intake.read_node import NodeData, bundle_id_for, read_extra, read_node_safely
from analyzer.intake.records import UnreadInput
from analyzer.intake.safe_read import Limits
from analyzer.store.deferred import Deferred
from analyzer.store.packed import Packed
from analyzer.store.tables import CORE_TABLES, BatchWriter, keep_pandas_out, release_memory

if TYPE_CHECKING:
    import duckdb

#: Below this many node bundles, parse in this process (a pool costs more than it saves).
INLINE_BELOW = 3
#: Most node bundles one worker task reads (its rows come back as one batch per table).  A worker's
#: peak memory grows with it (~60 MiB of Python and Arrow, plus ~4 MiB a bundle while a task's rows are
#: gathered, merged and pickled): 16 keeps each worker near 150 MiB (benchmarks/RESULTS.md, "Memory").
CHUNK_NODES = 16
#: Files of an extra/ folder per worker share (a few ring logs stay in one task).
EXTRA_FILES_PER_PART = 32
#: Parts of one cluster collected within this of each other (and holding no node twice) are one snapshot.
SNAPSHOT_GAP = timedelta(hours=1)


@dataclass
class LoadSummary:
    #: one entry per node bundle read: {"bundle_id", "node", "source", "type": "node"}, and
    #: "content_digest" when its NodeSource asked for it (bundle.content_digest, from the one read)
    bundles: list[dict[str, str]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    problems: int = 0
    #: cluster-wide extra/ folders read: {"bundle_id", "node": "", "source", "type": "cluster"}
    extras: list[dict[str, str]] = field(default_factory=list)
    #: inputs, or members of them, that were not read
    unread_inputs: list[UnreadInput] = field(default_factory=list)
    #: {"path", "same_as"}: inputs identical to one analyzed (analyzed once)
    duplicates: list[dict[str, str]] = field(default_factory=list)
    #: {"node", "bundles": [{"path", "shown_as", "collected_at"}, ...]}: different bundles, one node
    node_conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: {"path", "sha256_file", "status": ok|mismatch|unreadable, "expected", "actual", "reason"}
    checksums: list[dict[str, str | None]] = field(default_factory=list)
    #: files read and kept for people, parsed by no parser: {"path" (in the bundle), "reason", "nodes"}
    not_parsed: list[dict[str, Any]] = field(default_factory=list)
    #: the parts read, each judged on its own: {"cluster", "folder", "collected_at", "nodes",
    #: "bundle_ids"} (bundle_ids: its node bundles and extra/ folders)
    parts: list[dict[str, Any]] = field(default_factory=list)
    #: older snapshots of a cluster given beside a newer one, not read: {"cluster", "folders",
    #: "collected_at", "nodes", "newest": {"folders", "collected_at"}}
    not_judged: list[dict[str, Any]] = field(default_factory=list)
    #: the long tables held back from the store (load's ``defer``), else None
    deferred: Deferred | None = None


@dataclass
class Part:
    """One cluster's bundles found in one folder."""

    cluster: str
    folder: str
    nodes: list[int] = field(default_factory=list)  # indices into Discovery.nodes
    extras: list[ExtraSource] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    first: datetime | None = None  # the earliest and latest collected_at of its nodes
    last: datetime | None = None


@dataclass
class Plan:
    """What discovery found, grouped: node names and clusters, duplicates dropped, parts and snapshots."""

    metas: list[Meta | None]
    names: list[str]  # node name per Discovery.nodes index
    named: list[str | None]  # the cluster meta.env names, per node
    kept: list[int]  # node indices left after dropping duplicates
    parts: list[Part]
    #: cluster -> its snapshots, oldest first, each a list of part indices
    snapshots: dict[str, list[list[int]]]
    #: {"path", "same_as"}: bundles and extra/ folders identical to one kept
    duplicates: list[dict[str, str]] = field(default_factory=list)
    #: locations of the node bundles in some part (the others were duplicates)
    located: set[Path] = field(default_factory=set)

    def newest(self) -> list[int]:
        """The parts of each cluster's newest snapshot, in part order."""
        return sorted(i for snaps in self.snapshots.values() for i in snaps[-1])


def load(
    con: duckdb.DuckDBPyConnection,
    inputs: list[Path],
    workdir: Path,
    limits: Limits,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    found: Discovery | None = None,
    plan: Plan | None = None,
    part: int | None = None,
    account: bool = True,
    defer: bool | Deferred = False,
) -> LoadSummary:
    """Discover, read and store every bundle; returns what was loaded and what was not.

    Of several snapshots of one cluster only the newest is read.  ``ingest`` passes the discovery and
    plan it made and one ``part`` to read alone; ``account`` False leaves out what belongs to no part
    (inputs not read, duplicates, loose files), which it records once.  ``defer``: the long tables are
    held back (``summary.deferred``) until a query names one (``analyzer.store.deferred``); a Deferred
    given holds them (several loads into one store share one)."""
    found = found if found is not None else discover(inputs, workdir, limits)
    held = defer if isinstance(defer, Deferred) else Deferred() if defer else None
    run = _Load(BatchWriter(con, deferred=held), LoadSummary(deferred=held), found, limits)
    if account:
        run.account_found()
    plan = plan if plan is not None else make_plan(found, limits)
    if account:
        run.summary.duplicates += plan.duplicates
    chosen = plan.newest() if part is None else [part]
    if part is None:
        run.summary.not_judged = _not_judged(plan)
    sources, extras = run.scope(plan, chosen)
    # a compressed holder's tables are packed by the workers (inline, here: as they are added)
    packed = held.tables if held is not None and held.compress else frozenset()
    for chunk in _read_all(sources, extras, limits, jobs, packed):
        run.take(chunk, progress, len(sources))
    run.checksums(plan, chosen, account)
    run.input_issues(account)
    run.writer.flush()
    release_memory()  # the batches read and inserted: not kept in the RSS through the rules and reports
    return run.summary


@dataclass
class _Load:
    """One load under way: where its rows go, what it has read (by location and by the name shown), and
    which part each bundle belongs to."""

    writer: BatchWriter
    summary: LoadSummary
    found: Discovery
    limits: Limits
    taken: set[str] = field(default_factory=set)  # node names given out
    read_as: dict[Path, tuple[str, str]] = field(default_factory=dict)  # location -> (bundle_id, node)
    by_display: dict[str, tuple[str, str]] = field(default_factory=dict)  # display -> (bundle_id, node)
    part_of: dict[Path, int] = field(default_factory=dict)  # node bundle location -> index in parts
    cluster_of: dict[Path, str] = field(default_factory=dict)
    done: int = 0

    def account_found(self) -> None:
        """What discovery met that belongs to no part: inputs not read, duplicates, its problems."""
        summary = self.summary
        summary.unread_inputs = list(self.found.unread)
        summary.duplicates = list(self.found.duplicates)
        for path, problem in self.found.problems:
            self.writer.add("parse_problems", "", None, [_problem(path, problem)])
            summary.problems += 1

    def scope(self, plan: Plan, chosen: list[int]) -> tuple[list[NodeSource], list[ExtraSource]]:
        """The node bundles (named) and extra/ folders of the chosen parts, each part's entry begun."""
        found, summary = self.found, self.summary
        sources = _name(found, plan, chosen, summary)
        self.part_of = {found.nodes[i].location: n for n, p in enumerate(chosen) for i in plan.parts[p].nodes}
        self.cluster_of = {
            found.nodes[i].location: plan.parts[p].cluster for p in chosen for i in plan.parts[p].nodes
        }
        extras = _label([e for p in chosen for e in plan.parts[p].extras])
        part_of_extra = {e.location: n for n, p in enumerate(chosen) for e in plan.parts[p].extras}
        summary.parts = [
            {"cluster": plan.parts[p].cluster, "folder": plan.parts[p].folder,
             "collected_at": _iso(plan.parts[p].last), "nodes": [], "bundle_ids": []}
            for p in chosen
        ]  # fmt: skip
        self.taken = {s.node_name for s in sources if s.node_name}
        for extra in extras:
            summary.extras.append(
                {"bundle_id": _cluster_id(extra), "node": "", "source": extra.display, "type": "cluster"}
            )
            summary.parts[part_of_extra[extra.location]]["bundle_ids"].append(_cluster_id(extra))
        return sources, extras

    def take(self, chunk: Chunk, progress: Callable[[int, int], None] | None, total: int) -> None:
        """One task's bundles into the store: each read as its node, an extra/ share as the cluster's."""
        dropped: list[str] = []  # bundle ids whose rows in the chunk are replaced by a re-read
        for source, data in chunk.items:
            if source is None:  # a share of a cluster's extra/ folder
                self._extra(data)
                continue
            if not source.node_name and data.node in self.taken and not data.failed:
                dropped.append(data.bundle_id)
                data = _reread_as_unique(source, data, self.limits, self.taken, self.summary, self.by_display)
            self._node(source, data)
            self.done += 1
            if progress:
                progress(self.done, total)
        for table, batch in chunk.arrow.items():
            self.writer.add_arrow(table, _without(batch, dropped) if dropped else batch)

    def _extra(self, data: NodeData) -> None:
        if data.failed:
            data.unread.append(UnreadInput(data.display, f"reading failed: {data.failed}"))
            self.writer.add("parse_problems", "", None, [_problem(data.display, data.unread[-1].reason)])
            self.summary.problems += 1
        _store(self.writer, data, self.summary, is_node=False)

    def _node(self, source: NodeSource, data: NodeData) -> None:
        summary, writer = self.summary, self.writer
        if data.failed:
            reason = f"reading failed: {data.failed}"
            summary.unread_inputs.append(UnreadInput(source.display, reason))
            writer.add("parse_problems", "", None, [_problem(source.display, reason)])
            summary.problems += 1
            _issues(writer, "", None, "unread", summary.unread_inputs[-1:])
            return
        self.taken.add(data.node)
        _store(writer, data, summary, cluster=self.cluster_of.get(source.location))
        if source.location in self.part_of:
            scope = summary.parts[self.part_of[source.location]]
            scope["bundle_ids"].append(data.bundle_id)
            scope["nodes"].append(data.node)
        self.read_as[source.location] = (data.bundle_id, data.node)
        self.by_display[source.display] = (data.bundle_id, data.node)

    def checksums(self, plan: Plan, chosen: list[int], account: bool) -> None:
        """Each checked tarball's digest row, under the bundle analyzed for it (a duplicate's: its copy's)."""
        found = self.found
        twin_of = {d["path"]: d["same_as"] for d in self.summary.duplicates}
        chosen_nodes = {found.nodes[i].location for p in chosen for i in plan.parts[p].nodes}
        for location, entry in found.checksums:
            if location not in chosen_nodes and not (account and location not in plan.located):
                continue  # a bundle of another part (or of an older snapshot): recorded with it
            bundle_id, node = self.read_as.get(location, ("", None))
            twin, hops = twin_of.get(str(entry["path"])), 0
            while not bundle_id and twin is not None and hops < 10:  # a duplicate: the copy analyzed
                bundle_id, node = self.by_display.get(twin, ("", None))
                twin, hops = twin_of.get(twin), hops + 1
            self.writer.add("bundle_checksum", bundle_id, node, [entry])
            self.summary.checksums.append(entry)

    def input_issues(self, account: bool) -> None:
        """The input_issue rows: inputs not read, duplicates, bundles that claim one node."""
        writer, summary = self.writer, self.summary
        if account:
            _issues(writer, "", None, "unread", self.found.unread)
        duplicates = [_issue(d["path"], "duplicate", same_as=d["same_as"]) for d in summary.duplicates]
        writer.add("input_issue", "", None, duplicates)
        for conflict in summary.node_conflicts:
            claim = f"{len(conflict['bundles'])} different bundles claim node {conflict['node']!r}"
            for b in conflict["bundles"]:
                row = _issue(
                    b["path"], "node-conflict", reason=f"{claim}; this one is shown as {b['shown_as']!r}"
                )
                bundle_id = self.by_display.get(b["path"], ("", ""))[0]
                writer.add("input_issue", bundle_id, b["shown_as"], [row])


def make_plan(found: Discovery, limits: Limits) -> Plan:
    """Name each node bundle and its cluster, drop bundles identical to an earlier one, and group the
    rest (with the extra/ folders) into parts and snapshots."""
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
    plan = Plan(metas, names, [m.get("cluster") if m is not None else None for m in metas], [], [], {})
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
                plan.duplicates.append({"path": source.display, "same_as": same_as})
                dropped.add(i)
            else:
                first_with[digest] = i
    plan.kept = [i for i in range(len(found.nodes)) if i not in dropped]
    _group(found, plan, limits)
    return plan


def _group(found: Discovery, plan: Plan, limits: Limits) -> None:
    """Parts (cluster x folder) and, per cluster, snapshots (see the module docstring)."""
    in_folder: dict[str, Counter[str]] = defaultdict(Counter)
    for i in plan.kept:
        if name := plan.named[i]:
            in_folder[found.nodes[i].folder][name] += 1

    def cluster_of(folder: str) -> str:
        named = in_folder.get(folder)
        return named.most_common(1)[0][0] if named else found.folders.get(folder) or folder or "cluster"

    index: dict[tuple[str, str], Part] = {}
    for i in plan.kept:
        folder = found.nodes[i].folder
        cluster = plan.named[i] or cluster_of(folder)
        part = index.setdefault((cluster, folder), Part(cluster, folder))
        part.nodes.append(i)
        part.names.add(plan.names[i])
        when = _when(plan.metas[i])
        if when is not None:
            part.first = min(part.first or when, when)
            part.last = max(part.last or when, when)
        plan.located.add(found.nodes[i].location)
    loose: list[ExtraSource] = []
    for extra in found.extras:
        cluster = cluster_of(extra.folder)
        if (cluster, extra.folder) in index:
            index[(cluster, extra.folder)].extras.append(extra)
        else:
            loose.append(extra)
    plan.parts = list(index.values())
    by_cluster: dict[str, list[int]] = defaultdict(list)
    for n, part in enumerate(plan.parts):
        by_cluster[part.cluster].append(n)
    for cluster, members in by_cluster.items():
        plan.snapshots[cluster] = _snapshots(plan.parts, members)
    only = next(iter(plan.snapshots)) if len(plan.snapshots) == 1 else None
    for extra in loose:  # a folder with only an extra/: with the nodes of its cluster, or of the only one
        cluster = cluster_of(extra.folder)
        home = cluster if cluster in plan.snapshots else only
        if home is None:
            plan.parts.append(Part(cluster, extra.folder, extras=[extra]))
            plan.snapshots.setdefault(cluster, []).append([len(plan.parts) - 1])
            continue
        newest = plan.snapshots[home][-1]
        largest = max(newest, key=lambda n: len(plan.parts[n].nodes))
        plan.parts[largest].extras.append(extra)
    for snap in (snap for snaps in plan.snapshots.values() for snap in snaps):
        parts = [plan.parts[n] for n in snap]  # identical extra/ folders of one snapshot: read once
        extras = [e for part in parts for e in part.extras]
        kept = set(map(id, _unique_extras(extras, limits, plan.duplicates)))
        for part in parts:
            part.extras = [e for e in part.extras if id(e) in kept]


def _snapshots(parts: list[Part], members: list[int]) -> list[list[int]]:
    """One cluster's parts grouped into snapshots, oldest first; a part with no collection time joins
    the newest."""
    spans = {n: span for n in members if (span := _span(parts[n])) is not None}
    timed = list(spans)
    root = {n: n for n in timed}

    def find(n: int) -> int:
        while root[n] != n:
            n = root[n]
        return n

    for x, a in enumerate(timed):
        for b in timed[x + 1 :]:
            (first_a, last_a), (first_b, last_b) = spans[a], spans[b]
            gap = max(first_a, first_b) - min(last_a, last_b)
            if not parts[a].names & parts[b].names and gap <= SNAPSHOT_GAP:
                root[find(b)] = find(a)
    snaps: dict[int, list[int]] = defaultdict(list)
    for n in timed:
        snaps[find(n)].append(n)
    ordered = sorted(snaps.values(), key=lambda snap: (max(spans[n][1] for n in snap), snap[0]))
    untimed = [n for n in members if n not in spans]
    if untimed:
        if ordered:
            ordered[-1] = sorted(ordered[-1] + untimed)
        else:
            ordered = [untimed]
    return ordered


def _span(part: Part) -> tuple[datetime, datetime] | None:
    """When the part's nodes were collected, the earliest and the latest; None when no meta.env said."""
    return (part.first, part.last) if part.first is not None and part.last is not None else None


def _not_judged(plan: Plan) -> list[dict[str, Any]]:
    """The older snapshots of each cluster (not read), each with the newest one that was."""
    out = []
    for cluster, snaps in plan.snapshots.items():
        newest = snaps[-1]
        for snap in snaps[:-1]:
            out.append(
                {
                    "cluster": cluster,
                    "folders": [plan.parts[n].folder for n in snap],
                    "collected_at": _iso(max(span[1] for n in snap if (span := _span(plan.parts[n])))),
                    "nodes": sum(len(plan.parts[n].nodes) for n in snap),
                    "newest": {
                        "folders": [plan.parts[n].folder for n in newest],
                        "collected_at": _iso(
                            max((span[1] for n in newest if (span := _span(plan.parts[n]))), default=None)
                        ),
                    },
                }
            )
    return out


def _when(meta: Meta | None) -> datetime | None:
    """meta.env collected_at as naive UTC, or None."""
    text = meta.get("collected_at") if meta is not None else None
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(timezone.utc).replace(tzinfo=None) if when.tzinfo else when


def _iso(when: datetime | None) -> str | None:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else None


def _name(found: Discovery, plan: Plan, chosen: list[int], summary: LoadSummary) -> list[NodeSource]:
    """The node bundles of the chosen parts, each with a distinct name: two bundles claiming one node
    are a node conflict (the later shown as ``<node>#2``), except that the nodes of clusters meta.env
    names differently are told apart by their cluster (``<node>@<cluster>``)."""
    members_of = [i for p in chosen for i in plan.parts[p].nodes]
    order = {i: n for n, i in enumerate(plan.kept)}
    members_of.sort(key=order.__getitem__)
    names, metas = plan.names, plan.metas
    by_name: dict[str, list[int]] = defaultdict(list)
    for i in members_of:
        by_name[names[i]].append(i)
    shown = {i: names[i] for i in members_of}
    taken = set(by_name)
    for name, members in by_name.items():
        if len(members) < 2:
            continue
        clusters: dict[str | None, list[int]] = defaultdict(list)
        for i in members:
            clusters[plan.named[i]].append(i)
        if len(clusters) > 1 and None not in clusters:
            sets = [(f"{name}@{cluster}", group) for cluster, group in clusters.items()]
        else:
            sets = [(name, members)]
        for base, group in sets:
            shown[group[0]] = base
            taken.add(base)
            if len(group) < 2:
                continue
            for i in group[1:]:
                shown[i] = _unique(base, taken)
                taken.add(shown[i])
            summary.node_conflicts.append(
                {
                    "node": base,
                    "bundles": [
                        {
                            "path": found.nodes[i].display,
                            "shown_as": shown[i],
                            "collected_at": (metas[i] or Meta()).get("collected_at"),
                        }
                        for i in group
                    ],
                }
            )
    # Name the node for the reader where discovery saw meta.env (or had to rename it); otherwise the
    # reader takes the name from what it finds, and a clash is caught when the result arrives.
    return [
        replace(found.nodes[i], node_name=shown[i] if metas[i] is not None or shown[i] != names[i] else "")
        for i in members_of
    ]


def _label(extras: list[ExtraSource]) -> list[ExtraSource]:
    """With several extra/ folders, each file is named after its folder: ``<folder>/extra/<file>``, the
    folder by its own name, or as given where two share a name."""
    if len(extras) < 2:
        return extras
    heads = [
        e.display.rstrip("/").removesuffix("extra").rstrip("/!") or str(e.location.parent) for e in extras
    ]
    short = [re.split(r"[/!]", h.rstrip("/!"))[-1] or h for h in heads]
    return [
        replace(e, label=f"{s if short.count(s) == 1 else h}/extra")
        for e, h, s in zip(extras, heads, short, strict=True)
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


def _unique_extras(
    extras: list[ExtraSource], limits: Limits, duplicates: list[dict[str, str]]
) -> list[ExtraSource]:
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
            duplicates.append({"path": extra.display, "same_as": twin.display})
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


def read_chunk(task: Task, limits: Limits, held: frozenset[str] = frozenset()) -> Chunk:
    """Run one task in a worker: ("nodes", [NodeSource, ...]) or ("extra", (ExtraSource, part, parts));
    the tables in ``held`` are packed as the load's Deferred keeps them (compressed here, in parallel,
    and sent as a few bytes instead of their rows)."""
    import pyarrow as pa

    from analyzer.store.packed import pack

    release_memory()  # what the worker's previous task left in its heap (its rows are sent by now)

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
    merged: dict[str, Any] = {
        t: pa.concat_tables(b).combine_chunks() if len(b) > 1 else b[0] for t, b in tables.items()
    }
    for table in held & merged.keys():
        merged[table] = pack(merged[table])
    return Chunk(items, merged)


def read_extra_safely(extra: ExtraSource, limits: Limits, part: int, parts: int) -> NodeData:
    """read_extra, but an unexpected error becomes a failed NodeData instead of ending the analysis."""
    try:
        return read_extra(
            extra.location, extra.display, _cluster_id(extra), limits, part, parts, prefix=extra.label
        )
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
    """The rows of a merged batch (or a packed one) that do not belong to the given bundles."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(batch, Packed):
        batch = batch.table()
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
    nodes: list[NodeSource],
    extras: list[ExtraSource],
    limits: Limits,
    jobs: int | None,
    packed: frozenset[str] = frozenset(),
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
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=keep_pandas_out
        ) as pool:
            queue = iter(enumerate(tasks))
            in_flight: dict[Future[Chunk], int] = {}
            for i, task in queue:
                in_flight[pool.submit(read_chunk, task, limits, packed)] = i
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
                        in_flight[pool.submit(read_chunk, nxt[1], limits, packed)] = nxt[0]
    except BrokenProcessPool:
        # A worker died (killed, out of memory): read what is left here rather than lose it.
        for i, task in enumerate(tasks):
            if i not in finished:
                yield read_chunk(task, limits)


def _store(
    writer: BatchWriter,
    data: NodeData,
    summary: LoadSummary,
    is_node: bool = True,
    cluster: str | None = None,
) -> None:
    bid, node = data.bundle_id, data.node
    if is_node:
        meta = data.meta
        writer.add("node", bid, node, [_node_row(data.display, meta, cluster)])
        summary.bundles.append({"bundle_id": bid, "node": node, "source": data.display, "type": "node"})
        if data.content_digest is not None:
            summary.bundles[-1]["content_digest"] = data.content_digest
        summary.nodes.append(node)
    for table, batch in data.arrow.items():
        writer.add_arrow(table, batch)
    summary.problems += len(data.problems)
    summary.unread_inputs.extend(data.unread)
    for path, reason in data.not_parsed:  # one entry per (path, reason), with the nodes counted
        entry = next((e for e in summary.not_parsed if e["path"] == path and e["reason"] == reason), None)
        if entry is None:
            summary.not_parsed.append({"path": path, "reason": reason, "nodes": 1})
        else:
            entry["nodes"] += 1
    _issues(writer, bid, node or None, "unread", data.unread)


def _issues(
    writer: BatchWriter,
    bundle_id: str,
    node: str | None,
    issue: str,
    entries: Sequence[UnreadInput],
) -> None:
    writer.add("input_issue", bundle_id, node, [_issue(e.path, issue, reason=e.reason) for e in entries])


def _issue(
    path: str, issue: str, *, reason: str | None = None, same_as: str | None = None
) -> dict[str, object]:
    """A row of the input_issue table."""
    return {"path": path, "issue": issue, "reason": reason, "same_as": same_as}


def _node_row(display: str, meta: dict[str, str], cluster: str | None = None) -> dict[str, object]:
    # every node-table column that meta.env fills under the same name
    columns = {c.name for c in CORE_TABLES["node"]} & set(KNOWN_META)
    row: dict[str, object] = {
        key: meta.get(key) or None for key in sorted(columns - {"collected_at", "nproc"})
    }
    nproc = meta.get("nproc", "")
    row.update(
        source=display,
        cluster=meta.get("cluster") or cluster,  # else the cluster folder's name
        collected_at=meta.get("collected_at"),
        nproc=int(nproc) if nproc.isdigit() else None,
        meta_json=json.dumps(meta, sort_keys=True),
    )
    return row


def _problem(path: str, error: str) -> dict[str, object]:
    return {"file": path, "kind": None, "error": error, "line": None, "text": None}


__all__ = ["Discovery", "LoadSummary", "load"]
