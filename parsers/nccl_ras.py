"""NCCL RAS status (``ncclras``, NCCL 2.24+): which ranks and processes are missing, dead or behind.

NCCL's RAS threads watch every process of a job; the ``ncclras`` client (or ``echo status | nc localhost
28028``) asks them for the job's state while it runs or hangs::

    ncclras > ras-$(hostname)-$(date +%s).txt          # -v: verbose, -f json (NCCL 2.28.7+), -m: monitor

Sample (lines of tests/fixtures/nccl-ras/nccl-1911-mismatch-allgather-counts.txt)::

    Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
        #  in group  per comm  per node  per comm  in group
        0         1         4         8        32        32   RUNNING  MISMATCH

    #0-0 (fa93daea854b060b) MISMATCH
      Communicator ranks have different AllGather operation counts
      30 ranks have launched up to operation 640
      2 ranks have launched up to operation 641
      Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124

What is read (NVIDIA/nccl src/ras/client_support.cc, 2.24 to 2.30; docs: troubleshooting/ras.rst): the
versions (``NCCL version 2.26.2 compiled with CUDA 12.6``), the job summary (nodes, processes, GPUs; the
per-node variant and its outlier nodes), the communicators table, and each block of the Errors and
Warnings sections: ``INCOMPLETE`` (processes, and per communicator the ranks, RAS got no data from),
``DEAD`` (processes RAS declared dead after 60 s unreachable), ``#G-C (hash) ERROR`` (initialization and
asynchronous errors per rank), ``TIMEOUT``, ``#G-C (hash) MISMATCH`` (ranks with different status or
operation counts: each ``N ranks have launched up to operation X`` group and the ranks RAS lists of it).
The older ``The missing ranks: 21,30-31`` and ``The unknown ranks:`` lines give ranks without processes.
The JSON form (``-f json``) gives the same per communicator (``missing_ranks`` with ``unresponsive`` and
``considered_dead``, each rank's ``async_error`` and ``collective_counts``); monitor mode's
``[2025-12-19 13:07:07] PEER_DEAD: Process ... on node ... managing GPU 1`` lines are dead processes with
their time.  Lines of other text are skipped; in a file of RAS output alone they are ParseIssues.

Schema
------
``ras_report`` (one row per report): ``line`` int; ``format`` str — text, json or monitor;
``nccl_version`` str, ``cuda_version`` str — as the version line prints them (the JSON's
``cuda_runtime_version``); ``nodes`` int, ``processes`` int, ``gpus`` int — the job summary's totals;
``collect_s`` float — how long the communicators' data took (``Communicators... (2.05s)``);
``timeouts`` int — RAS's own communication timeouts while gathering; ``time`` str — the JSON's
``timestamp`` as printed.

``ras_comm`` (one row per line of the communicators table, a JSON communicator): ``line`` int;
``group`` int; ``comms`` int; ``nodes`` int; ``ranks_per_node`` str (``7-8``); ``ranks_per_comm`` int;
``ranks_in_group`` int; ``status`` str (RUNNING, INIT, FINALIZE, ABORT, NOCOMM); ``errors`` str (OK,
MISMATCH, INCOMPLETE, ERROR, comma-joined); ``comm_hash`` str (JSON form).

``ras_peer`` (one row per rank or process a block names): ``line`` int; ``problem`` str — missing (no
data from it: unresponsive), dead, count (a member of an operation-count group), status (a member of a
status group), error, outlier_node (a node whose process count differs); ``comm`` str — ``#0-0``, null
for a process; ``comm_hash`` str; ``rank`` int — the rank in that communicator; ``gpu`` str; ``pid``
int; ``host`` str — the node's address as RAS prints it; ``operation`` str — AllGather, collective
(before 2.26); ``count`` int — operations launched; ``status`` str — a status group's status, an error
reported; ``group_size`` int — ranks in that group; ``ts`` ts — a monitor event's time.

``ras_count`` (one row per ``N ranks have launched up to operation X``): ``line`` int; ``comm`` str;
``comm_hash`` str; ``operation`` str; ``count`` int (0: ``have not launched any operations``);
``ranks`` int.

Examples
--------
>>> r = parse(SAMPLE)
>>> [(c["count"], c["ranks"]) for c in r.rows("ras_count")]
[(640, 30), (641, 2)]
>>> p = r.rows("ras_peer")[0]
>>> p["problem"], p["comm"], p["rank"], p["gpu"], p["pid"], p["host"], p["operation"], p["count"]
('count', '#0-0', 12, '4', 323032, '10.137.190.124', 'AllGather', 641)
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nccl-ras",
    title="NCCL RAS status (ncclras client: missing, dead and lagging ranks)",
    commands=("ncclras", "ncclras -v", "ncclras -f json", "echo verbose status | nc localhost 28028"),
    tables=("ras_report", "ras_comm", "ras_peer", "ras_count"),
    versions_seen=(
        "NCCL 2.24-2.25 (collective operation counts)",
        "NCCL 2.26-2.30 (per operation type)",
        "NCCL 2.28.7+ JSON",
        "NCCL 2.29+ monitor mode",
    ),
    not_collected_because=(
        "the RAS client asks a running job's NCCL: the user runs ncclras on a job's node while it hangs and "
        "adds its output (collector.sh --add, a cluster bundle's extra/)"
    ),
    empty_means_none=("ras_peer",),
)


def _cols(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*item.split(":")) for item in spec.split())


SCHEMA = {
    "ras_report": _cols("line:int format:str nccl_version:str cuda_version:str nodes:int processes:int gpus:int collect_s:float "
                        "timeouts:int time:str"),
    "ras_comm": _cols("line:int group:int comms:int nodes:int ranks_per_node:str ranks_per_comm:int "
                      "ranks_in_group:int status:str errors:str comm_hash:str"),
    "ras_peer": _cols("line:int problem:str comm:str comm_hash:str rank:int gpu:str pid:int host:str "
                      "operation:str count:int status:str group_size:int ts:ts"),
    "ras_count": _cols("line:int comm:str comm_hash:str operation:str count:int ranks:int"),
}  # fmt: skip

_VERSION = re.compile(r"^NCCL version (\S+) compiled with CUDA(?:\s+(\S+))?")
_TOTALS = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
_TOTALS3 = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$")
_COMMS = re.compile(r"^Communicators\.\.\.\s*\((\d+(?:\.\d+)?)s\)")
_TABLE_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+([A-Z]+)\s+([A-Z,]+)\s*$"
)
_BLOCK = re.compile(r"^#(\d+-\d+) \(([0-9a-f]+)\) ([A-Z,]+)\s*$")
_PROCESS = re.compile(r"^Process (\d+) on node (\S+) managing GPUs? (.+?)\s*$")
_RANK = re.compile(
    r"^Rank (\d+)(?: has launched up to operation (\d+)| has not launched any operations"
    r"| has status (\w+)| reported (.+?))?"
    r" -- (?:GPU (.+?) managed by process (\d+) on node (\S+)|\[process information not found\])\s*$"
)
_GROUP = re.compile(
    r"^(\d+) ranks? (?:have launched up to operation (\d+)|have not launched any operations|have status (\w+)"
    r"|reported (.+?))\s*$"
)
_DIFFERENT = re.compile(r"^Communicator ranks have different (?:(\w+) operation counts|(status))\s*$")
_RANK_LIST = re.compile(r"^The (missing|unknown) ranks?: ([\d,\s-]+)$")
_OUTLIER = re.compile(r"^Node (\S+) running process(?:es)? ([\d,]+)\s*$")
_MONITOR = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] (\w+): Process (\d+) on node (\S+) managing GPUs? (.+?)\s*$"
)
_TIMEOUT = re.compile(r"^Encountered (\d+) communication timeouts? while gathering")
#: Lines RAS prints that say nothing this parser keeps (headers, underlines, counts said again per block).
_KNOWN = re.compile(
    r"^(?:=+|Job summary|Errors|Warnings|Nodes\s+Processes.*|\(total\).*|per node.*|#\s+in group.*|"
    r"Group\s+Comms.*|CUDA runtime version.*|Processes\s+GPUs|The outlier nodes?:|INCOMPLETE|DEAD|TIMEOUT|"
    r"Missing communicator data from \d+ .*|\d+ job process(?:es are| is) considered dead.*|"
    r"(?:Initialization|Asynchronous) errors? on \d+ ranks?|No communicator data collected!|"
    r"RAS Monitor Mode.*|\[could not find information on \d+ process(?:es)?\]|"
    r"Gathering data about .*|Warning: .*|The missing process(?:es)?:|Collected data about .*|"
    r"Travel times .*|Minimum .*|From node .*|indicating that .*|Ordering of events .*|"
    r"The affected connections?:|SERVER PROTOCOL.*|OK)$"
)


#: Lines only RAS prints: a monitor event, a dead process's count, a communicator's block head.
_MARKS = re.compile(
    r"^\s*\[[\d :-]+\] PEER_\w+: Process \d+ on node|job process(?:es are| is) considered dead \(unreachable via"
    r" the RAS network\)|^\s*#\d+-\d+ \([0-9a-f]{16}\) (?:INCOMPLETE|MISMATCH|ERROR)|^\s*RAS Monitor Mode",
    re.M,
)


def detect(text: str) -> int:
    """The RAS client's report: its section heads and communicators table, its JSON, its monitor lines."""
    head = text[:65536]
    table = re.search(r"^\s*Group\s+Comms\s+Nodes", head, re.M) and re.search(
        r"^\s*(?:Job summary|Communicators\.\.\. \()", head, re.M
    )
    found = table or ('"missing_ranks_count"' in head and '"communicators"' in head) or _MARKS.search(head)
    if not found:
        return 0
    if re.search(r"ProcessGroupNCCL|WorkNCCL\(", head):
        return 50  # a job's log holding a RAS report: the job log's (parsers/job_log.py reads it too)
    return 80


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """A RAS report (text, JSON or monitor lines) as its tables."""
    del command, filename
    require_text(text)
    result = read(text, strict=True)
    if not result.rows("ras_report"):
        raise ParseError(
            "expected NCCL RAS output (ncclras): no job summary, communicators table or RAS event"
        )
    return result


def read(text: str, *, strict: bool) -> ParseResult:
    """The RAS reports within a text; ``strict``: other lines are ParseIssues (a file of RAS output)."""
    stripped = text.lstrip()
    if stripped.startswith("{") and '"communicators"' in text[:65536]:
        return _json(text)
    result = ParseResult()
    state: dict[str, Any] = {}
    report: dict[str, Any] | None = None
    lines = text.splitlines()
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            state.pop("group", None)
            continue
        version = _VERSION.match(line)
        starts = version or line == "Job summary" or _COMMS.match(line)
        monitor = _MONITOR.match(line) or line.startswith("RAS Monitor Mode")
        if (report is None and (starts or monitor)) or (
            report is not None
            and (
                (version and report["nccl_version"])
                or (line == "Job summary" and report["nodes"] is not None)
            )
        ):
            report = _new_report(result, no, "monitor" if monitor else "text")
        if version and report is not None:
            report["nccl_version"], report["cuda_version"] = version[1], version[2]
        if report is None:  # no report begun: in a file of RAS output alone, any line of RAS's begins one
            if not strict:
                continue
            pending: dict[str, Any] = {c.name: None for c in SCHEMA["ras_report"]}
            pending.update(line=no, format="text")
            if _line(line, no, raw, pending, state, result):
                report = pending
                result.tables.setdefault("ras_report", []).insert(0, report)
            else:
                result.issue(no, raw, "text before the RAS report")
            continue
        if not _line(line, no, raw, report, state, result) and strict:
            result.issue(no, raw, "not a line of the NCCL RAS report")
    return result


def _text(value: Any) -> str | None:
    """A JSON value as text (a number as printed), None for none."""
    return None if value is None else str(value)


def _new_report(result: ParseResult, no: int, fmt: str) -> dict[str, Any]:
    report: dict[str, Any] = {c.name: None for c in SCHEMA["ras_report"]}
    report.update(line=no, format=fmt)
    result.add("ras_report", report)
    return report


def _line(
    line: str, no: int, raw: str, report: dict[str, Any], state: dict[str, Any], result: ParseResult
) -> bool:
    """Read one line into the report; False when it is no line of RAS's."""
    if _totals(line, report, state):
        return True
    state["last"] = line
    return (
        _collection(line, no, report, result)
        or _block(line, no, report, state, result)
        or _peers(line, no, state, result)
        or bool(_KNOWN.match(line))
    )


def _totals(line: str, report: dict[str, Any], state: dict[str, Any]) -> bool:
    """The version line and the totals (nodes, processes, GPUs) of the report."""
    if _VERSION.match(line):
        return True
    if m := _TOTALS.match(line):
        if report["nodes"] is None:
            report.update(nodes=int(m[1]), processes=int(m[4]), gpus=int(m[5]))
        return True
    if (m := _TOTALS3.match(line)) and state.get("block") is None:
        if "(total)" in state.get("last", ""):
            report.update(nodes=int(m[1]), processes=int(m[2]), gpus=int(m[3]))
        return True
    return False


def _collection(line: str, no: int, report: dict[str, Any], result: ParseResult) -> bool:
    """The collection time and a row of the communicators table."""
    if m := _COMMS.match(line):
        report["collect_s"] = float(m[1])
        report["format"] = "text"
        return True
    if m := _TABLE_ROW.match(line):
        result.add("ras_comm", {
            "line": no, "group": int(m[1]), "comms": int(m[2]), "nodes": int(m[3]), "ranks_per_node": m[4],
            "ranks_per_comm": int(m[5]), "ranks_in_group": int(m[6]), "status": m[7], "errors": m[8],
            "comm_hash": None,
        })  # fmt: skip
        return True
    return False


def _block(line: str, no: int, report: dict[str, Any], state: dict[str, Any], result: ParseResult) -> bool:
    """A block's heading (INCOMPLETE, DEAD, a communicator), its end, timeouts, what differs, a group."""
    if line in ("INCOMPLETE", "DEAD", "The outlier node:", "The outlier nodes:", "TIMEOUT"):
        state.update(block=line.split()[-1].rstrip(":").upper(), comm=None, hash=None, op=None, group=None)
    elif line in ("Errors", "Warnings") or line.startswith("="):
        state.update(block=None, comm=None, hash=None)
    elif m := _BLOCK.match(line):
        state.update(block=m[3].split(",")[0], comm=f"#{m[1]}", hash=m[2], op=None, group=None)
    elif m := _TIMEOUT.match(line):
        report["timeouts"] = (report["timeouts"] or 0) + int(m[1])
    elif m := _DIFFERENT.match(line):
        state["op"] = m[1] or "status"
    elif m := _GROUP.match(line):
        count = int(m[2]) if m[2] else 0 if "not launched" in line else None
        state["group"] = {"size": int(m[1]), "count": count, "status": m[3] or m[4]}
        if count is not None:
            result.add("ras_count", {"line": no, "comm": state.get("comm"), "comm_hash": state.get("hash"),
                                     "operation": state.get("op"), "count": count, "ranks": int(m[1])})  # fmt: skip
    else:
        return False
    return True


def _peers(line: str, no: int, state: dict[str, Any], result: ParseResult) -> bool:
    """A peer named by a line: the monitor's, a missing or dead process, an outlier node, a rank."""
    if m := _MONITOR.match(line):
        ts = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").isoformat()
        problem = "dead" if m[2] == "PEER_DEAD" else m[2].lower()
        _peer(result, no, problem, state, pid=int(m[3]), host=m[4], gpu=m[5], ts=ts, status=m[2])
    elif m := _PROCESS.match(line):
        problem = "dead" if state.get("block") == "DEAD" else "missing"
        _peer(result, no, problem, {**state, "comm": None, "hash": None}, pid=int(m[1]), host=m[2], gpu=m[3])
    elif m := _OUTLIER.match(line):
        for pid in m[2].split(","):
            _peer(result, no, "outlier_node", {}, pid=int(pid), host=m[1])
    elif m := _RANK.match(line):
        _rank(line, no, m, state, result)
    elif m := _RANK_LIST.match(line):
        problem = "missing" if m[1] == "missing" else "status"
        for rank in _ranks(m[2]):
            _peer(result, no, problem, state, rank=rank, status="UNKNOWN" if m[1] == "unknown" else None)
    else:
        return False
    return True


def _rank(line: str, no: int, m: re.Match[str], state: dict[str, Any], result: ParseResult) -> None:
    group = state.get("group") or {}
    problem = {"INCOMPLETE": "missing", "ERROR": "error"}.get(state.get("block") or "")
    if problem is None:
        problem = "status" if state.get("op") == "status" else "count"
    count = int(m[2]) if m[2] else 0 if "not launched" in line else group.get("count")
    status = m[3] or m[4] or group.get("status")
    _peer(result, no, problem, state, rank=int(m[1]), gpu=m[5], pid=int(m[6]) if m[6] else None, host=m[7],
          count=count if problem == "count" else None, status=status, group_size=group.get("size"))  # fmt: skip


def _ranks(text: str) -> list[int]:
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if "-" in part:
            a, _, b = part.partition("-")
            if a.isdigit() and b.isdigit() and int(b) - int(a) < 100_000:
                out += range(int(a), int(b) + 1)
        elif part.isdigit():
            out.append(int(part))
    return out


def _peer(result: ParseResult, no: int, problem: str, state: dict[str, Any], **values: Any) -> None:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["ras_peer"]}
    row.update(line=no, problem=problem, comm=state.get("comm"), comm_hash=state.get("hash"))
    if problem == "count":
        row["operation"] = state.get("op")
    row.update(values)
    result.add("ras_peer", row)


def _json(text: str) -> ParseResult:
    """The JSON form (``ncclras -f json``, NCCL 2.28.7+)."""
    result = ParseResult()
    start = text.find("{")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise ParseError(f"RAS JSON not readable at character {exc.pos}: {exc.msg}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("communicators"), list):
        raise ParseError("expected the RAS JSON document: no communicators list")
    line_of = _line_finder(text)
    ras: dict[str, Any] = doc["ras"] if isinstance(doc.get("ras"), dict) else {}
    result.add("ras_report", {
        "line": text.count("\n", 0, start) + 1, "format": "json", "nccl_version": doc.get("nccl_version"),
        "cuda_version": _text(doc.get("cuda_runtime_version")),
        "nodes": None, "processes": None, "gpus": None, "collect_s": ras.get("collection_time_sec"),
        "timeouts": ras.get("timeouts_count"), "time": doc.get("timestamp"),
    })  # fmt: skip
    for n, comm in enumerate(doc["communicators"]):
        if isinstance(comm, dict):
            _json_comm(result, n, comm, line_of(f'"{comm.get("hash")}"'))
    return result


def _json_comm(result: ParseResult, n: int, comm: dict[str, Any], at: int) -> None:
    """One communicator of the JSON form: its row, its missing and failed ranks, its diverging counts."""
    name, chash = f"#{n}", str(comm.get("hash", "")).removeprefix("0x") or None
    ranks = [r for r in comm.get("ranks") or [] if isinstance(r, dict)]
    missing = [r for r in comm.get("missing_ranks") or [] if isinstance(r, dict)]
    result.add("ras_comm", {
        "line": at, "group": n, "comms": 1, "nodes": len({r.get("host") for r in ranks + missing}),
        "ranks_per_node": None, "ranks_per_comm": comm.get("size"), "ranks_in_group": comm.get("size"),
        "status": None, "errors": "INCOMPLETE" if missing else "OK", "comm_hash": chash,
    })  # fmt: skip
    state = {"comm": name, "hash": chash}
    for r in missing:
        status: dict[str, Any] = r["status"] if isinstance(r.get("status"), dict) else {}
        _peer(result, at, "dead" if status.get("considered_dead") else "missing", state, rank=r.get("rank"),
              gpu=str(r.get("cuda_dev")), pid=r.get("pid"), host=r.get("host"),
              status="unresponsive" if status.get("unresponsive") else None)  # fmt: skip
    counts: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in ranks:
        status = r["status"] if isinstance(r.get("status"), dict) else {}
        if status.get("async_error") not in (None, 0) or status.get("init_state") not in (None, 0, 7):
            _peer(result, at, "error", state, rank=r.get("rank"), gpu=str(r.get("cuda_dev")), pid=r.get("pid"),
                  host=r.get("host"), status=f"async_error {status.get('async_error')}")  # fmt: skip
        for op, value in (r.get("collective_counts") or {}).items():
            if isinstance(value, int):
                counts.setdefault(op, {}).setdefault(value, []).append(r)
    _json_counts(result, at, state, counts)


def _json_counts(
    result: ParseResult, at: int, state: dict[str, Any], counts: dict[str, dict[int, list[dict[str, Any]]]]
) -> None:
    """Each operation whose ranks counted differently: a row per count, and the ranks off the common one."""
    for op, by_count in counts.items():
        if len(by_count) < 2:
            continue
        common = max(by_count, key=lambda c: len(by_count[c]))
        for count, members in sorted(by_count.items()):
            result.add("ras_count", {"line": at, "comm": state["comm"], "comm_hash": state["hash"], "operation": op,
                                     "count": count, "ranks": len(members)})  # fmt: skip
            if count == common:
                continue
            for r in members:
                _peer(result, at, "count", {**state, "op": op}, rank=r.get("rank"), gpu=str(r.get("cuda_dev")),
                      pid=r.get("pid"), host=r.get("host"), count=count, group_size=len(members))  # fmt: skip


def _line_finder(text: str) -> Any:
    def find(needle: str) -> int:
        at = text.find(needle)
        return text.count("\n", 0, at) + 1 if at >= 0 else 1

    return find
