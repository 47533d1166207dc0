"""Job logs for the rules: PyTorch's watchdog timeouts as hangs, ranks mapped to hosts and nodes.

A *job* is the job logs of one folder of one input (a cluster's ``extra/``, a node bundle's ``extra/``, a
folder below either): a Slurm job's ``.out`` and ``.err``, its pods' logs, torchelastic's per-rank files.
Another job's logs belong in another folder.

Each rank's timeout is read from its lines (parsers/job_log.py): the timed-out work (collective, SeqNum,
timeout, how long it ran) from the watchdog's line; the group's counters (last enqueued, last completed)
from the status line the same rank printed for the same work; the process group from either.  A rank whose
watchdog line is not in the log but whose status line or the watchdog's exit is counts from those.

*Lag*: within one process group the log names (its GUID, else its id; PG 0 is the default group), the ranks
whose last completed work is below the most any rank of the group completed.  A rank without a status
line counts its timed-out SeqNum minus one as completed.  The last *enqueued* work is no lag: healthy ranks
run ahead of the GPU by different amounts.  Works of groups the log does not name are never compared (one
rank's SeqNum 96125 in one group and another's 64088 in another say nothing of each other).  A rank that
printed no timeout but whose flight-recorder dump line says its last enqueued work is below the SeqNum the
others timed out on never entered that collective: it is named too.

Ranks are mapped to hosts by the line's own host (NCCL's ``host:pid:tid``, Ray's ip), else torchelastic's
failure summary, else NCCL's ``Init COMPLETE`` line of the job's widest communicator (``nranks`` the most
seen: its ranks are the global ranks); hosts are mapped to nodes with :mod:`analyzer.judge.hosts`.

>>> began({"ts": None, "time_text": "E626 06:24:44.903881913", "ran_for_ms": 600020})
'06-26 06:14:44'
>>> began({"ts": "2025-02-18T12:54:00", "time_text": "2025-02-18 12:54", "ran_for_ms": 600045, "utc_offset": None})
'2025-02-18 12:43:59'
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from analyzer.judge.engine import Context
from analyzer.judge.hosts import HostIndex

#: (bundle_id, folder, global rank) -> host
RankHosts = dict[tuple[str, str, int], str]


@dataclass
class RankTimeout:
    """One rank's timed-out work, with its group's counters where the rank printed them."""

    bundle_id: str
    source_file: str
    line: int
    rank: int | None
    pg_rank: int | None
    group: str | None  # the process group's key (None: the log does not say which)
    group_label: str | None
    op: str | None = None
    seq: int | None = None
    timeout_ms: int | None = None
    ran_for_ms: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    status_line: int | None = None
    time_text: str | None = None
    ts: str | None = None
    utc_offset: str | None = None
    host: str | None = None
    node: str | None = None

    @property
    def completed(self) -> int | None:
        """Its last completed work: as printed, else the SeqNum before the one that timed out."""
        if self.last_completed is not None:
            return self.last_completed
        return self.seq - 1 if self.seq is not None else None

    @property
    def who(self) -> str:
        """``rank 3``, or ``group rank 3`` when only the rank in its process group is printed."""
        return f"rank {self.rank}" if self.rank is not None else f"group rank {self.pg_rank}"

    def where(self) -> str:
        """``rank 3 on host-a (node-1)``: its host and node where known."""
        if self.node and self.host and self.node != self.host:
            return f"{self.who} on {self.host} ({self.node})"
        return f"{self.who} on {self.node or self.host}" if self.node or self.host else self.who


@dataclass
class Silent:
    """A rank that printed no timeout, with the counters its flight-recorder dump line gives."""

    rank: int | None
    pg_rank: int | None
    group: str | None
    last_enqueued: int | None
    last_completed: int | None
    source_file: str
    line: int
    host: str | None = None
    node: str | None = None

    @property
    def who(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"group rank {self.pg_rank}"


@dataclass
class Hang:
    """The watchdog timeouts of one job (the logs of one folder of one input)."""

    bundle_id: str
    folder: str
    timeouts: list[RankTimeout] = field(default_factory=list)
    lagging: list[RankTimeout] = field(default_factory=list)  # the least completed first
    not_entered: list[Silent] = field(default_factory=list)
    #: groups whose ranks timed out on works the log names no group of (not compared)
    unnamed_groups: bool = False

    @property
    def works(self) -> list[tuple[str | None, str | None, int | None, list[RankTimeout]]]:
        """The timed-out works: (group label, collective, SeqNum, its ranks), the most ranks first (of as
        many, the one printed first)."""
        by: dict[tuple[str | None, int | None], list[RankTimeout]] = defaultdict(list)
        for t in self.timeouts:
            by[(t.group, t.seq)].append(t)
        out = []
        for members in by.values():
            ops = list(dict.fromkeys(t.op for t in members if t.op))
            label = next((t.group_label for t in members if t.group_label), None)
            out.append((label, "/".join(ops) or None, members[0].seq, members))
        return sorted(out, key=lambda w: (-len(w[3]), min(t.line for t in w[3])))  # ties: the first printed

    @property
    def nodes(self) -> list[str]:
        """The nodes of the lagging ranks (and of the ranks that never entered), else of every timed-out rank."""
        suspects = [t.node for t in self.lagging] + [s.node for s in self.not_entered]
        if any(suspects):
            return sorted({n for n in suspects if n})
        return sorted({t.node for t in self.timeouts if t.node})

    @property
    def suspect_nodes(self) -> list[str]:
        return sorted({n for n in [t.node for t in self.lagging] + [s.node for s in self.not_entered] if n})


def began(row: Mapping[str, Any]) -> str | None:
    """When the timed-out work began: the line's time minus how long it ran (``ran_for_ms``).  A dated
    time gives ``YYYY-mm-dd HH:MM:SS`` (in the log's zone, said after it when printed), glog's time
    without a year ``mm-dd HH:MM:SS``; None when the line has no time."""
    ran = row.get("ran_for_ms")
    if ran is None:
        return None
    if row.get("ts"):
        start = datetime.fromisoformat(str(row["ts"])) - timedelta(milliseconds=int(ran))
        zone = row.get("utc_offset")
        return start.strftime("%Y-%m-%d %H:%M:%S") + (f" {zone}" if zone else "")
    m = re.match(r"[EWIF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?", row.get("time_text") or "")
    if m is None:
        return None
    try:  # the year is not printed: 2000 is a leap year, so 02-29 is a date
        stamp = datetime(
            2000, int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int((m[6] or "0").ljust(6, "0"))
        )
    except ValueError:
        return None
    return (stamp - timedelta(milliseconds=int(ran))).strftime("%m-%d %H:%M:%S")


def group_key(row: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A process group's key and label from a line: the default group (PG 0, ``default_pg``), else its GUID,
    else its id; (None, None) when the line names none."""
    pg_id, guid, name = row.get("pg_id"), row.get("pg_guid"), row.get("pg_name")
    if pg_id is None and guid is None and name is None:
        return None, None
    if name == "default_pg" or pg_id == "0" and guid in (None, "0"):
        return "default", "PG 0 (default_pg)"
    key = f"guid {guid}" if guid is not None else f"id {pg_id}"
    label = f"PG {pg_id}" + (f" GUID {guid}" if guid is not None else "") + (f" ({name})" if name else "")
    return key, label


def rank_hosts(ctx: Context) -> RankHosts:
    """Global rank -> host per job (bundle, folder): torchelastic's summary first, else NCCL's Init lines of
    the job's widest communicator."""

    def make() -> RankHosts:
        rows = ctx.rows(
            "SELECT bundle_id, source_file, source, rank, nranks, host FROM job_log_rank "
            "WHERE host IS NOT NULL AND rank IS NOT NULL ORDER BY bundle_id, source_file, line"
        )
        widest: dict[tuple[str, str], int] = {}
        for r in rows:
            key = (r["bundle_id"], posixpath.dirname(r["source_file"]))
            if r["source"] == "nccl-init" and r["nranks"]:
                widest[key] = max(widest.get(key, 0), r["nranks"])
        out: RankHosts = {}
        for r in rows:
            key = (r["bundle_id"], posixpath.dirname(r["source_file"]))
            if r["source"] == "torchelastic":
                out[key + (r["rank"],)] = r["host"]
        for r in rows:
            key = (r["bundle_id"], posixpath.dirname(r["source_file"]))
            if r["source"] == "nccl-init" and r["nranks"] == widest.get(key):
                out.setdefault(key + (r["rank"],), r["host"])
        return out

    hosts: RankHosts = ctx.memo("job.rank_hosts", make)
    return hosts


def job_nodes(ctx: Context, index: HostIndex) -> set[str]:
    """The nodes the job logs name a host of (their lines' hosts, their ranks' hosts): the nodes they cover."""
    rows = ctx.rows(
        "SELECT DISTINCT host FROM job_log_event WHERE host IS NOT NULL "
        "UNION SELECT DISTINCT host FROM job_log_rank WHERE host IS NOT NULL"
    )
    return {n for r in rows if (n := index.match(r["host"]))}


def host_of(row: Mapping[str, Any], hosts: RankHosts) -> str | None:
    """The host a job-log row's line names, else the one its global rank ran on (:func:`rank_hosts`)."""
    if row.get("host"):
        return str(row["host"])
    if row.get("rank") is None:
        return None
    return hosts.get((row["bundle_id"], posixpath.dirname(row["source_file"]), row["rank"]))


_EVENTS = """
    SELECT bundle_id, source_file, line, kind, rank, pg_rank, pg_id, pg_guid, pg_name, op_type, seq_num,
           timeout_ms, ran_for_ms, last_enqueued, last_completed, time_text, ts, utc_offset, host
    FROM job_log_event
    WHERE kind IN ('watchdog_timeout', 'pg_status', 'process_group_error', 'dump_signal')
    ORDER BY bundle_id, source_file, line
"""


def hangs(ctx: Context, index: HostIndex) -> list[Hang]:
    """Every job's watchdog timeouts, lag and hosts worked out (one :class:`Hang` per job that timed out)."""
    hosts = rank_hosts(ctx)
    rows = ctx.rows(_EVENTS)
    jobs: dict[tuple[str, str], Hang] = {}
    for r in rows:
        r["ts"] = r["ts"].isoformat() if isinstance(r["ts"], datetime) else r["ts"]
    _timeouts(rows, jobs)
    for hang in jobs.values():
        for t in hang.timeouts:
            t.host = t.host or host_of(vars(t), hosts)
            t.node = index.match(t.host)
        _lag(hang)
        _not_entered(hang, rows, hosts, index)
    return [h for h in jobs.values() if h.timeouts]


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return ("rank", row["rank"]) if row["rank"] is not None else ("group rank", row["pg_rank"])


def _timeouts(rows: list[dict[str, Any]], jobs: dict[tuple[str, str], Hang]) -> None:
    seen: dict[tuple[Any, ...], RankTimeout] = {}
    latest: dict[tuple[Any, ...], RankTimeout] = {}  # each rank's latest timeout
    for r in rows:
        job = (r["bundle_id"], posixpath.dirname(r["source_file"]))
        hang = jobs.setdefault(job, Hang(*job))
        group, label = group_key(r)
        who = (*job, r["source_file"], *_key(r))
        if r["kind"] == "watchdog_timeout" or r["kind"] == "process_group_error" and r["seq_num"] is not None:
            if who + (r["seq_num"],) in seen:
                continue  # the watchdog's exit repeats the timeout its watchdog line said
            t = RankTimeout(
                r["bundle_id"], r["source_file"], r["line"], r["rank"], r["pg_rank"], group, label,
                r["op_type"], r["seq_num"], r["timeout_ms"], r["ran_for_ms"], time_text=r["time_text"],
                ts=r["ts"], utc_offset=r["utc_offset"], host=r["host"],
            )  # fmt: skip
            seen[who + (r["seq_num"],)] = latest[who] = t
            hang.timeouts.append(t)
        elif r["kind"] == "pg_status":
            found = seen.get(who + (r["seq_num"],))
            if r["seq_num"] is None:  # a status line cut before its work: the rank's latest timeout's
                found = latest.get(who)
                if found is None:
                    continue
            if found is None:  # the rank's watchdog line is not in the log: its status says it timed out
                found = RankTimeout(
                    r["bundle_id"], r["source_file"], r["line"], r["rank"], r["pg_rank"], group, label,
                    seq=r["seq_num"], time_text=r["time_text"], ts=r["ts"], utc_offset=r["utc_offset"],
                    host=r["host"],
                )  # fmt: skip
                seen[who + (r["seq_num"],)] = latest[who] = found
                hang.timeouts.append(found)
            if found.status_line is None and r["seq_num"] is not None:
                found.status_line = r["line"]
                found.last_enqueued, found.last_completed = r["last_enqueued"], r["last_completed"]
            if found.group is None:
                found.group, found.group_label = group, label


def _lag(hang: Hang) -> None:
    groups: dict[str, list[RankTimeout]] = defaultdict(list)
    for t in hang.timeouts:
        if t.group is None:
            hang.unnamed_groups = hang.unnamed_groups or len({x.seq for x in hang.timeouts}) > 1
            continue
        groups[t.group].append(t)
    for members in groups.values():
        done = [t.completed for t in members if t.completed is not None]
        if not done:
            continue
        top = max(done)
        hang.lagging += [t for t in members if t.completed is not None and t.completed < top]
    hang.lagging.sort(key=lambda t: (t.completed if t.completed is not None else 0, t.rank or 0))


def _not_entered(hang: Hang, rows: list[dict[str, Any]], hosts: RankHosts, index: HostIndex) -> None:
    """Ranks with a dump line and no timeout whose last enqueued work is below the group's timed-out SeqNum."""
    timed_out = {(t.group, t.rank if t.rank is not None else ("pg", t.pg_rank)) for t in hang.timeouts}
    first_seq: dict[str | None, int] = {}
    for t in hang.timeouts:
        if t.seq is not None:
            first_seq[t.group] = min(first_seq.get(t.group, t.seq), t.seq)
    for r in rows:
        if r["kind"] != "dump_signal" or r["last_enqueued"] is None:
            continue
        if (r["bundle_id"], posixpath.dirname(r["source_file"])) != (hang.bundle_id, hang.folder):
            continue
        group, _ = group_key(r)
        rank_id = r["rank"] if r["rank"] is not None else ("pg", r["pg_rank"])
        if group is None or (group, rank_id) in timed_out or group not in first_seq:
            continue
        if r["last_enqueued"] < first_seq[group] and all(s.line != r["line"] for s in hang.not_entered):
            host = host_of(r, hosts)
            hang.not_entered.append(
                Silent(r["rank"], r["pg_rank"], group, r["last_enqueued"], r["last_completed"],
                       r["source_file"], r["line"], host, index.match(host))
            )  # fmt: skip
