"""A hung job traced to its ranks, their nodes, and those nodes' own evidence.

Three inputs say which ranks a hang is waiting for; each is read here and merged per incident:

- **flight-recorder dumps** (tables ``fr_*``, one dump per rank).  Per process group and collective
  sequence id, each rank's progress: the last collective it enqueued, started and completed.  The
  *wavefront* is the first collective not every rank completed (the least completed, plus one): the
  ranks that never enqueued it stopped first; the ranks that enqueued it but never started it come next
  (a GPU that no longer runs kernels); the others started it and wait.  A rank whose entry at a sequence
  id is another collective (another op or other sizes) than the others' is a *desync* (the odd rank, the
  one in the minority, has usually run one collective more).  Expected ranks come from ``pg_config``; a rank
  with no dump is itself a suspect (the rank stuck hardest often writes none), a cut or empty dump is
  named.  Dumps are one job's when they lie in one folder (a cluster's ``extra/`` folder), or in the node
  bundles' ``extra/`` of one part; within them, dumps whose last activity lies more than one watchdog
  timeout apart are different incidents (a job restarted after its first hang hangs again later).
- **job logs** (:mod:`analyzer.judge.signals.job`): the ranks whose last completed work lags, and the
  ranks a dump line says never entered the collective.
- **NCCL RAS reports** (tables ``ras_*``): ranks and processes RAS got no data from (``INCOMPLETE``),
  declared ``DEAD``, or that launched fewer operations than the others (alive but behind).

Ranks become hosts (the node bundle a dump lies in, the job log's rank-to-host lines, RAS's node
address) and hosts become nodes (:class:`analyzer.judge.hosts.HostIndex`, also by instance id).  The
hang began at the watchdog line's time minus "ran for", or at the wavefront collective's creation time
in the dumps; a suspect node's evidence is searched before that moment, not in a window before the
timeout line: kernel events of the fault families (:data:`FAULT_EVENTS`, every catalogued kernel
signature), failed probes, EFA ports not ACTIVE, and lines of any log that accuse the node as a remote
peer (``Connection closed by remote peer <host>``, libfabric's ``Peer host id: i-...``, ``peer <ip><port>``;
the job log's ``peer`` column, NCCL logs' WARN messages): such a line is evidence against the peer it names
(matched by instance id, address or host name), never against the host that printed it.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from analyzer.judge.engine import Context
from analyzer.judge.hosts import HostIndex, instance_id
from analyzer.judge.signals import job
from analyzer.judge.signals.kernel_time import KernelClock, stamp_sql
from parsers._kernel_catalog import BY_ID

#: kernel_event types that are a fault of the node's GPUs, memory, network or kernel.
FAULT_EVENTS = (
    "xid", "sxid", "fallen_off_bus", "gpu_lost", "gsp_timeout", "gsp_rpc_failed", "gpu_init_failed",
    "memory_error", "bus_timeout", "mmu_error", "nvlink_error", "efa_error", "oom_kill", "hung_task",
    "soft_lockup", "kernel_panic", "mce", "nmi", "link_down",
)  # fmt: skip
#: A remote peer a log line accuses: NCCL's socket and IB lines, libfabric's EFA errors.
_PEER = re.compile(
    r"Connection closed by remote peer (?P<host>[\w.-]+?)(?:<\d+>)?(?:\s|$)|Peer host id: (?P<iid>i-[0-9a-f]+)"
    r"|\bpeer (?:address )?(?P<addr>\d{1,3}(?:\.\d{1,3}){3})(?:<\d+>)?"
)


@dataclass
class Suspect:
    """A rank (or a process RAS names) the hang waits for, with why and where it ran."""

    rank: int | None
    why: str  # no dump, never enqueued, never started, desync, lagging, never entered, missing, dead, behind
    detail: str
    host: str | None = None
    node: str | None = None
    pid: int | None = None
    evidence: list[tuple[str, int | None, str | None]] = field(default_factory=list)

    @property
    def who(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"process {self.pid}"


@dataclass
class Incident:
    """One hang of one job: the collective the ranks wait on, the suspects, what each input said."""

    bundle_id: str
    folder: str
    sources: list[str] = field(default_factory=list)  # flight recorder, job log, NCCL RAS
    group: str | None = None  # the process group, as the inputs name it
    op: str | None = None
    seq: int | None = None
    began: datetime | None = None  # UTC, naive
    began_text: str | None = None  # as the inputs give it (a log's time without year or zone)
    suspects: list[Suspect] = field(default_factory=list)
    desync: list[str] = field(default_factory=list)
    ranks_with_dumps: list[int] = field(default_factory=list)
    expected_ranks: list[int] = field(default_factory=list)
    bad_dumps: list[str] = field(default_factory=list)  # "rank 5: cut", "rank 6: empty"
    waiting: list[int] = field(default_factory=list)  # ranks that started the collective and wait
    timeout: job.Hang | None = None
    evidence: list[tuple[str, int | None, str | None]] = field(default_factory=list)

    @property
    def suspect_nodes(self) -> list[str]:
        return list(dict.fromkeys(s.node for s in self.suspects if s.node))


@dataclass
class NodeEvidence:
    """One fact of a node's bundle, with when it happened relative to the hang's start."""

    node: str
    what: str
    source_file: str
    line: int | None
    when: datetime | None  # UTC, naive; None: undated (a probe's answer, a port's state at collection)
    relation: str  # before, after, at collection, time unknown


def incidents(ctx: Context, index: HostIndex, gap_s: float) -> list[Incident]:
    """Every hang of the store's jobs: flight-recorder incidents, with job-log hangs and RAS reports of
    the same job merged in; a job log or RAS report with no dump is an incident of its own."""
    out = _dump_incidents(ctx, index, gap_s)
    for hang in job.hangs(ctx, index):
        mine = next((i for i in out if i.bundle_id == hang.bundle_id and i.folder == hang.folder), None)
        if mine is None:
            mine = Incident(hang.bundle_id, hang.folder)
            out.append(mine)
        _merge_log(mine, hang)
    for report in _ras(ctx, index):
        mine = next((i for i in out if i.bundle_id == report.bundle_id and i.folder == report.folder), None)
        if mine is None and len(out) == 1:
            mine = out[0]  # one hang and one RAS report in this part: the report is of that job
        if mine is None:
            out.append(report)
        else:
            mine.sources.append("NCCL RAS")
            known = {(s.rank, s.pid, s.node) for s in mine.suspects}
            mine.suspects += [s for s in report.suspects if (s.rank, s.pid, s.node) not in known]
    return out


# --- flight-recorder dumps ------------------------------------------------------------------------------
def _dump_incidents(ctx: Context, index: HostIndex, gap_s: float) -> list[Incident]:
    dumps = ctx.rows(
        "SELECT bundle_id, node, source_file, rank, status, entries, last_activity_ns, timeout_ms FROM fr_dump "
        "ORDER BY bundle_id, source_file"
    )
    if not dumps:
        return []
    entries = ctx.rows(
        "SELECT bundle_id, source_file, rank, pg_name, pg_desc, collective_seq_id, profiling_name, op, is_p2p, "
        "state, input_sizes, time_created_ns, entry FROM fr_entry WHERE NOT coalesce(is_p2p, false) "
        "ORDER BY bundle_id, source_file, entry"
    )
    groups = ctx.rows("SELECT bundle_id, source_file, pg_name, pg_desc, ranks FROM fr_group")
    by_file: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        by_file[(e["bundle_id"], e["source_file"])].append(e)
    jobs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for d in dumps:  # a cluster's extra/ folder is one job; the node bundles' dumps of a part are one job
        key = (d["bundle_id"], posixpath.dirname(d["source_file"])) if not d["node"] else ("", "node bundles")
        jobs[key].append(d)
    hosts = job.rank_hosts(ctx)
    out = []
    for (bundle_id, folder), members in jobs.items():
        for part in _split_by_time(members, gap_s):
            out.append(_wavefront(bundle_id, folder, part, by_file, groups, hosts, index))
    return out


def _split_by_time(dumps: list[dict[str, Any]], gap_s: float) -> list[list[dict[str, Any]]]:
    """Dumps of one job as incidents: those whose last activity lies within one watchdog timeout of the
    previous one are the same hang (a second hang needs the first's timeout to pass, then a restart)."""
    dated = sorted((d for d in dumps if d["last_activity_ns"]), key=lambda d: d["last_activity_ns"])
    parts: list[list[dict[str, Any]]] = []
    for d in dated:
        gap = (d["timeout_ms"] or gap_s * 1000) / 1000
        if parts and (d["last_activity_ns"] - parts[-1][-1]["last_activity_ns"]) / 1e9 <= gap:
            parts[-1].append(d)
        else:
            parts.append([d])
    undated = [d for d in dumps if not d["last_activity_ns"]]  # cut and empty dumps: named with the latest
    if parts:
        parts[-1] += undated
    elif undated:
        parts.append(undated)
    return parts


def _ranks_of(text: str | None) -> list[int]:
    return (
        [int(x) for x in re.findall(r"\d+", text or "")]
        if text and re.fullmatch(r"\[[\d,\s]*\]", text)
        else []
    )


def _wavefront(
    bundle_id: str,
    folder: str,
    dumps: list[dict[str, Any]],
    by_file: dict[tuple[str, str], list[dict[str, Any]]],
    groups: list[dict[str, Any]],
    hosts: job.RankHosts,
    index: HostIndex,
) -> Incident:
    inc = Incident(bundle_id, folder, sources=["flight recorder"])
    files = {(d["bundle_id"], d["source_file"]) for d in dumps}
    where: dict[int, tuple[str | None, str | None, str]] = {}  # rank -> (host, node, dump file)
    for d in dumps:
        if d["rank"] is None:
            continue
        node = d["node"] or None
        host = node or _host_of_rank(hosts, d["rank"])
        where[d["rank"]] = (host, node or index.match(host), d["source_file"])
        if d["status"] != "ok":
            inc.bad_dumps.append(f"rank {d['rank']}: {d['status']}")
    # progress per (group, rank)
    progress: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    ops: dict[tuple[str, int], dict[int, tuple[str, str]]] = defaultdict(dict)  # (group, seq) -> rank -> op
    labels: dict[str, str] = {}
    first_seen: dict[tuple[str, int], int] = {}
    for key in sorted(files):
        for e in by_file.get(key, []):
            rank, seq = e["rank"], e["collective_seq_id"]
            if rank is None or seq is None or seq <= 0:
                continue
            g = e["pg_name"] or "?"
            labels[g] = f"PG {g}" + (
                f" ({e['pg_desc']})" if e["pg_desc"] and e["pg_desc"] != "undefined" else ""
            )
            p = progress[g].setdefault(rank, {"enqueued": -1, "started": -1, "completed": -1, "at": {}})
            p["enqueued"] = max(p["enqueued"], seq)
            if e["state"] in ("started", "completed"):
                p["started"] = max(p["started"], seq)
            if e["state"] == "completed":
                p["completed"] = max(p["completed"], seq)
            p["at"][seq] = e
            ops[(g, seq)][rank] = (e["profiling_name"] or "?", e["input_sizes"] or "")
            if e["time_created_ns"]:
                first_seen[(g, seq)] = min(
                    first_seen.get((g, seq), e["time_created_ns"]), e["time_created_ns"]
                )
    expected: set[int] = set()
    for grp in groups:
        if (grp["bundle_id"], grp["source_file"]) in files:
            expected |= set(_ranks_of(grp["ranks"]))
    inc.expected_ranks = sorted(expected | set(where))
    inc.ranks_with_dumps = sorted(r for r in where if r in {d["rank"] for d in dumps if d["status"] == "ok"})
    for rank in sorted(expected - set(where)):
        host = _host_of_rank(hosts, rank)
        inc.suspects.append(
            Suspect(rank, "no dump", "wrote no flight-recorder dump", host, index.match(host))
        )
    for rank, (host, node, file) in sorted(where.items()):
        if rank not in inc.ranks_with_dumps:
            status = next(d["status"] for d in dumps if d["rank"] == rank)
            inc.suspects.append(Suspect(rank, f"{status} dump", f"its dump is {status}", host, node, None,
                                        [(file, None, f"flight-recorder dump of rank {rank}: {status}")]))  # fmt: skip
    if not progress:
        return inc
    # the group whose wavefront is lowest relative to its ranks: the default group first, then the largest
    g = max(progress, key=lambda k: (len(progress[k]), k == "0"))
    ranks = progress[g]
    wave = min(p["completed"] for p in ranks.values()) + 1
    inc.group, inc.seq = labels.get(g), wave
    names = Counter(ops[(g, wave)][r][0] for r in ops.get((g, wave), {}))
    inc.op = names.most_common(1)[0][0].split(":", 1)[-1] if names else None
    if (g, wave) in first_seen:
        inc.began = datetime.fromtimestamp(first_seen[(g, wave)] / 1e9, tz=timezone.utc).replace(tzinfo=None)
        inc.began_text = inc.began.strftime("%Y-%m-%dT%H:%M:%SZ")
    for rank, p in sorted(ranks.items()):
        host, node, file = where.get(rank, (None, None, ""))
        last = p["at"].get(p["enqueued"])
        tail = f"its dump's last collective is SeqNum {p['enqueued']}" + (
            f" ({last['profiling_name']}, {last['state']})" if last else ""
        )
        if p["enqueued"] < wave:
            inc.suspects.append(Suspect(rank, "never enqueued", f"never enqueued SeqNum {wave}: {tail}", host, node,
                                        None, [(file, None, f"rank {rank}: {tail}")]))  # fmt: skip
        elif p["started"] < wave:
            inc.suspects.append(Suspect(rank, "never started",
                                        f"enqueued SeqNum {wave} but never started it (scheduled)", host, node,
                                        None, [(file, None, _entry_text(rank, p['at'][wave]))]))  # fmt: skip
        elif p["completed"] < wave:
            inc.waiting.append(rank)
    # a desync: the ranks of one sequence id issued different collectives
    for seq in sorted({s for (grp, s) in ops if grp == g}):
        calls = ops[(g, seq)]
        kinds = Counter(calls.values())
        if len(kinds) < 2 or seq > wave:
            continue
        common = kinds.most_common(1)[0][0]
        for rank, call in sorted(calls.items()):
            if call != common:
                host, node, file = where.get(rank, (None, None, ""))
                inc.desync.append(
                    f"SeqNum {seq}: rank {rank} issued {call[0]} {call[1]} where {kinds[common]} rank(s) issued "
                    f"{common[0]} {common[1]}"
                )
                inc.suspects.append(Suspect(rank, "desync", f"issued {call[0]} at SeqNum {seq} where the others "
                                            f"issued {common[0]}", host, node, None,
                                            [(file, None, _entry_text(rank, ranks[rank]['at'][seq]))]))  # fmt: skip
        break
    waiting = inc.waiting[:1]
    for rank in waiting:
        _, _, file = where.get(rank, (None, None, ""))
        inc.evidence.append((file, None, _entry_text(rank, ranks[rank]["at"][wave])))
    return inc


def _entry_text(rank: int, e: dict[str, Any]) -> str:
    return (
        f"rank {rank}, entry {e['entry']}: {e['profiling_name']} SeqNum {e['collective_seq_id']} "
        f"{e['input_sizes'] or ''} {e['state']}".replace("  ", " ")
    )


def _host_of_rank(hosts: job.RankHosts, rank: int) -> str | None:
    found = {h for (_, _, r), h in hosts.items() if r == rank}
    return next(iter(found)) if len(found) == 1 else None


# --- job logs -----------------------------------------------------------------------------------------------
def _merge_log(inc: Incident, hang: job.Hang) -> None:
    inc.sources.append("job log")
    inc.timeout = hang
    label, op, seq, _ = hang.works[0]
    if inc.seq is None:
        inc.group, inc.op, inc.seq = label, op, seq
    starts = [(b, t) for t in hang.timeouts if (b := job.began(vars(t)))]
    if starts and inc.began_text is None:
        text, first = min(starts, key=lambda s: s[0])
        inc.began_text = text
        inc.began = _log_time(first)
    known = {(s.rank, s.why) for s in inc.suspects}
    for t in hang.lagging:
        if (t.rank, "lagging") not in known:
            lines: list[tuple[str, int | None, str | None]] = [(t.source_file, t.line, None)]
            if t.status_line:
                lines.append((t.source_file, t.status_line, None))
            inc.suspects.append(Suspect(t.rank, "lagging", f"timed out on SeqNum {t.seq} having completed "
                                        f"{t.completed}, behind the others", t.host, t.node, None, lines))  # fmt: skip
    for s in hang.not_entered:
        inc.suspects.append(Suspect(s.rank, "never entered", f"never entered SeqNum {seq} (last enqueued "
                                    f"{s.last_enqueued})", s.host, s.node, None, [(s.source_file, s.line, None)]))  # fmt: skip
    for t in hang.timeouts[:2]:
        inc.evidence.append((t.source_file, t.line, None))


def _log_time(t: job.RankTimeout) -> datetime | None:
    """The hang's start in UTC from a rank's timeout line with a dated stamp (its offset applied; a stamp
    without one taken as UTC); None for glog's time, which prints no year and no zone."""
    if t.ran_for_ms is None:
        return None
    if t.ts:
        at = datetime.fromisoformat(str(t.ts))
        if t.utc_offset:
            sign = -1 if t.utc_offset.startswith("-") else 1
            hh, mm = t.utc_offset[1:].split(":")
            at -= sign * timedelta(hours=int(hh), minutes=int(mm))
        return at - timedelta(milliseconds=t.ran_for_ms)
    return None


# --- NCCL RAS -----------------------------------------------------------------------------------------------
def _ras(ctx: Context, index: HostIndex) -> list[Incident]:
    peers = ctx.rows(
        "SELECT bundle_id, node, source_file, line, problem, comm, rank, gpu, pid, host, operation, count, ts "
        "FROM ras_peer ORDER BY line, rank, pid, bundle_id, source_file"  # an order redaction keeps
    )
    if not peers:
        return []
    counts = ctx.rows(
        "SELECT bundle_id, source_file, comm, operation, max(count) AS top FROM ras_count GROUP BY ALL"
    )
    top = {(c["bundle_id"], c["source_file"], c["comm"], c["operation"]): c["top"] for c in counts}
    out: dict[tuple[str, str], Incident] = {}
    for p in peers:
        folder = posixpath.dirname(p["source_file"])
        inc = out.setdefault((p["bundle_id"], folder), Incident(p["bundle_id"], folder, sources=["NCCL RAS"]))
        node = index.match(p["host"])
        where = f" of {p['comm']}" if p["comm"] else ""
        if p["problem"] in ("missing", "dead"):
            what = (
                "declared dead by NCCL RAS"
                if p["problem"] == "dead"
                else f"missing from NCCL RAS{where} (unresponsive)"
            )
            inc.suspects.append(Suspect(p["rank"], p["problem"], what, p["host"], node, p["pid"],
                                        [(p["source_file"], p["line"], None)]))  # fmt: skip
        elif p["problem"] == "count" and p["count"] is not None:
            most = top.get((p["bundle_id"], p["source_file"], p["comm"], p["operation"]))
            if most is not None and p["count"] < most:
                inc.suspects.append(Suspect(p["rank"], "behind", f"launched {p['operation']} up to {p['count']} "
                                            f"where others reached {most} (alive, behind){where}", p["host"], node,
                                            p["pid"], [(p["source_file"], p["line"], None)]))  # fmt: skip
    return [i for i in out.values() if i.suspects]


# --- the suspect node's own evidence ----------------------------------------------------------------------
def node_index(ctx: Context) -> HostIndex:
    """Nodes indexed by name, hostname and instance id (libfabric names a peer by its instance id)."""
    rows = ctx.rows("SELECT bundle_id, node, hostname, instance_id FROM node")
    return HostIndex([{**r, "aliases": [r["instance_id"]] if r.get("instance_id") else []} for r in rows])


def node_evidence(
    ctx: Context, nodes: Iterable[str], began: datetime | None, index: HostIndex
) -> list[NodeEvidence]:
    """What each node's bundle shows of a fault: kernel fault events (dated where the log or the bundle's
    uptime allows), failed probes, EFA ports not ACTIVE, and other logs' lines accusing it as a peer."""
    wanted = sorted(set(nodes))
    if not wanted:
        return []
    marks = ", ".join("?" for _ in wanted)
    clock = KernelClock.load(ctx)
    out: list[NodeEvidence] = []
    for r in ctx.rows(
        f"SELECT bundle_id, node, source_file, line, event_type, xid, message, signature, {stamp_sql()} AS stamp "
        f"FROM kernel_event WHERE node IN ({marks}) AND (event_type IN {FAULT_EVENTS} OR signature IS NOT NULL) "
        "AND coalesce(boot, 0) = 0 AND NOT (event_type = 'pcie_aer' AND lower(coalesce(severity, '')) LIKE 'correct%') "
        "ORDER BY node, source_file, line",
        *wanted,
    ):
        if r["signature"] and r["signature"] in BY_ID and BY_ID[r["signature"]].severity == "info":
            continue  # a corrected error, a notice: the catalog says it is no fault
        t = clock.at(r["bundle_id"], r["stamp"])
        what = (
            f"Xid {r['xid']}"
            if r["event_type"] in ("xid", "sxid") and r["xid"] is not None
            else r["event_type"]
        )
        if r["signature"] and r["event_type"] not in FAULT_EVENTS:
            what = f"{r['event_type']} ({r['signature']})"
        out.append(NodeEvidence(r["node"], what, r["source_file"], r["line"], t.utc, _relation(t.utc, began)))
    for r in ctx.rows(
        f"SELECT node, family, answer, source_file, line FROM probe_answer WHERE node IN ({marks}) "
        "ORDER BY node, source_file, line",
        *wanted,
    ):
        out.append(NodeEvidence(r["node"], f"failed probe: {r['family']} ({r['answer']})", r["source_file"],
                                r["line"], None, "at collection"))  # fmt: skip
    for r in ctx.rows(
        f"SELECT node, device, port, state, source_file, line FROM efa_port WHERE node IN ({marks}) "
        "AND is_efa AND upper(coalesce(state, '')) NOT LIKE '%ACTIVE%' ORDER BY node, source_file, line",
        *wanted,
    ):
        out.append(NodeEvidence(r["node"], f"EFA {r['device']} port {r['port']} {r['state']}", r["source_file"],
                                r["line"], None, "at collection"))  # fmt: skip
    for r in ctx.rows(
        "SELECT node, host, source_file, line, message, ts, utc_offset, peer FROM job_log_event "
        "WHERE peer IS NOT NULL UNION ALL SELECT node, NULL, source_file, line, message, NULL, NULL, NULL "
        "FROM nccl_log_event WHERE level = 'WARN'"
    ):
        peer = r["peer"]  # the job log's parser read it (NCCL's WARN lines, libfabric's EFA errors)
        if peer is None and (m := _PEER.search(r["message"] or "")):
            peer = m["host"] or m["addr"] or m["iid"]
        if peer is None:
            continue
        accused = index.match(peer) or index.match(instance_id(peer))
        if accused in wanted and index.match(r["host"]) != accused:  # a printer accusing itself is no peer
            when = _utc(r["ts"], r["utc_offset"])
            printer = r["host"] or r["node"] or "a job log"
            out.append(NodeEvidence(accused, f"named as the remote peer ({peer}) by {printer}",
                                    r["source_file"], r["line"], when, _relation(when, began)))  # fmt: skip
    order = {"before": 0, "time unknown": 1, "at collection": 2, "after": 3}
    out.sort(key=lambda e: (e.node, order[e.relation], -(e.when.timestamp() if e.when else 0)))
    return out


def _utc(ts: Any, offset: str | None) -> datetime | None:
    """A log line's stamp in UTC (naive), None when the log does not say its zone (not guessed)."""
    if not isinstance(ts, datetime) or not offset:
        return None
    sign = -1 if offset.startswith("-") else 1
    hh, mm = offset[1:].split(":")
    return ts - sign * timedelta(hours=int(hh), minutes=int(mm))


def _relation(when: datetime | None, began: datetime | None) -> str:
    if when is None or began is None:
        return "time unknown"
    return "before" if when <= began else "after"


def dumps_said(inc: Incident) -> str | None:
    """``dumps from 3 of 4 ranks (rank 2 wrote none; rank 5: cut)``, None without dumps."""
    if "flight recorder" not in inc.sources:
        return None
    missing = [s.rank for s in inc.suspects if s.why == "no dump"]
    text = f"dumps from {len(inc.ranks_with_dumps)} of {len(inc.expected_ranks) or '?'} ranks"
    notes = (
        [f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} wrote none"]
        if missing
        else []
    )
    notes += inc.bad_dumps
    return text + (f" ({'; '.join(notes)})" if notes else "")
