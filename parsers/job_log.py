"""Training job logs: PyTorch's NCCL watchdog, NCCL warnings and CUDA errors, rank by rank.

collector.sh runs no job: the user adds the job's own logs (``collector.sh --add slurm-48213.err``, a
cluster bundle's ``extra/``): a Slurm ``.out``/``.err``, pod and container logs, torchrun output::

    srun torchrun --nnodes 4 --nproc-per-node 8 train.py ... 2> slurm-48213.err

Sample (lines of tests/fixtures/job-log/basicsr-737-pg-guid-default-pg.txt)::

    [rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
    [rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.
    [rank2]:[E626 06:24:44.173689731 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 2] Exception (either

A job log is recognised by content: a line of PyTorch's ProcessGroupNCCL (``WorkNCCL(``, ``Watchdog caught
collective operation timeout``, ``ProcessGroupNCCL.cpp``), a PyTorch CUDA error (``CUDA error: <text>``,
older ``cuda runtime error (N) : <text>``), or torchelastic's failure summary (``Root Cause (first observed
failure)``, ``rank : 3 (local_rank: 3)``).  nccl-tests output keeps its own kind: its ``nThread`` header,
rank lines and result table score higher, and a log of NCCL's lines alone stays an NCCL log.

What is read, whatever the PyTorch version (1.8 to 2.7 and after):

- the watchdog's timeout: ``[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12345,
  OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000) ran for 600023 milliseconds before timing
  out.`` (no SeqNum, NumelIn, NumelOut before about 1.10; no timestamp before 2.2);
- the process group's status at the failure: ``Exception (either an error or timeout) detected by watchdog
  at work: N, last enqueued NCCL work: M, last completed NCCL work: K.``, ``Timeout at NCCL work: N, ...``
  and (2.6+) ``failure detected by watchdog at work sequence id: N PG status: last enqueued work: M, last
  completed work: K`` (``last started work`` too where printed);
- the flight-recorder dump lines (``Received a dump signal due to a collective timeout from rank 1 ...
  Last enqueued NCCL work: 77, last completed NCCL work: 77.``, ``First PG on this rank to signal
  dumping``), the heartbeat monitor (``watchdog got stuck for 480 seconds``, ``Terminating the process
  ... due to ProcessGroupNCCL watchdog hang``), the teardown (``Some NCCL operations have failed or timed
  out``, ``... watchdog thread terminated with exception: ...``) and PyTorch's NCCL errors (``NCCL error
  in: ..., unhandled system error``, ``ncclRemoteError``);
- CUDA errors, named from the catalog parsers/cuda_errors.toml (``cudaErrorECCUncorrectable``);
- NCCL's own lines (``host:pid:tid [dev] NCCL WARN ...``): WARN lines are events here too, and every NCCL
  line is also read as the nccl-tests parser reads an NCCL log (its ``nccl_run``, ``nccl_log_event``,
  ``nccl_transport`` rows), so the NCCL rules judge a job's NCCL lines as they judge any NCCL log; NCCL's
  ``comm 0x.. rank R nranks N cudaDev D ... - Init COMPLETE`` lines say which host each rank ran on;
- torchelastic's failure summary (``[7]: time / host / rank : 7 (local_rank: 7) / exitcode : -6 (pid:
  3438)``): each failed rank with its host;
- the remote peer a line accuses (the host printing it is a victim): libfabric's warnings and errors that
  name one (``libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> ... Peer host id:
  i-0ce6d3d57139f053c``, ``Peer EFA addr: fi_addr_efa://...``; their time is epoch seconds, UTC; their host
  is that of NCCL's lines of the same pid) and NCCL's WARN lines that name one (``Connection closed by
  remote peer node2<42830>``, ``peer 10.0.0.5<51234>``); libfabric's other warnings are no event.

Around each line: the rank from the launcher's ``[rank3]:`` (torchrun ``--log-line-prefix``, PyTorch 2.2+),
the local rank from torchrun's ``[default3]:`` (``--tee``), Slurm's ``srun -l`` task label ``3: ``, Ray's
``(Worker pid=4009, ip=10.0.0.5)``, the group rank from ``[Rank 3]`` / ``[PG ID 0 PG GUID 0(default_pg)
Rank 3]`` (in the default group, PG 0, the group rank is the global rank); the time from glog's
``E0114 09:12:40.118273`` (month and day, no year, no zone) or a stamp with its date (containerd's
``2024-05-01T12:00:00.123Z``, a log pipeline's ``2025-02-18 12:54``, NCCL's ``[2025-05-04 23:32:59]``,
torchelastic's ``2025-05-01_11:12:35``); what precedes PyTorch's own line (a launcher's label, a stamp, a
tqdm bar, a line number, a host tag) is kept as printed in ``prefix``.  A line wrapped by a terminal (the rest of ``WorkNCCL(...)`` or of the status
on the next line, which starts like no log line) is read with that next line.  A line cut short keeps
what it says, the rest empty, and is a ParseIssue: a watchdog line without ``ran for N milliseconds``, a
status line without its last completed work, a torchelastic entry without its rank; so is text among
PyTorch's own parts of a line that none of them reads (a mangled glog header) and a torchelastic field whose
value is not what torchelastic prints.  A field's number is
taken only when its end is printed (a cut ``SeqNum=158`` is not 158).

Schema
------
``job_log`` (one row per file): ``n_lines`` int; ``n_events`` int — rows of ``job_log_event``;
``nccl_log_lines`` int — NCCL's own log lines, null when none (NCCL_DEBUG unset: the log then says
nothing of NCCL's warnings); ``ranks`` int — distinct global ranks named; ``hosts`` str — distinct hosts
named (by PyTorch's, torchelastic's and NCCL's lines), comma-joined in order of appearance;
``world_size`` int — the most ``nranks`` of an NCCL communicator; ``nccl_version`` str.

``job_log_event`` (one row per event line):

- ``line`` int; ``kind`` str — watchdog_timeout, pg_status, dump_signal, watchdog_hang,
  process_group_error (teardown, the watchdog's exit, any other error of ProcessGroupNCCL), nccl_error
  (PyTorch's NCCL errors), nccl_warn (NCCL's WARN lines), cuda_error, rank_exit (torchelastic),
  fabric_error (libfabric's warning or error naming a remote peer)
- ``level`` str — glog's E/W/I/F, WARN for NCCL; ``code`` str — the CUDA error's name
  (cudaErrorIllegalAddress) of cuda_error, the NCCL code (docs/sources.md#nccl-log-patterns) of
  nccl_warn and nccl_error, else null
- ``time_text`` str — the line's time as printed; ``ts`` ts — that time when it prints its date with the
  year, as printed (no zone applied); ``utc_offset`` str — ``+00:00`` for Z/UTC, the printed offset, null
  when the log does not say (local time of an unknown zone)
- ``host`` str — the host the line names (NCCL's ``host:pid:tid``, torchelastic's host, Ray's ip);
  ``pid`` int; ``rank`` int — global rank; ``local_rank`` int; ``pg_rank`` int — rank in its process
  group; ``task`` int — srun -l label; ``device`` int — NCCL's CUDA device ``[N]``
- ``pg_id`` str, ``pg_guid`` str, ``pg_name`` str — the process group as printed (``0``, ``0``,
  ``default_pg``), null when not printed
- ``op_type`` str; ``seq_num`` int — the work's SeqNum (the status line's work); ``numel_in``,
  ``numel_out`` int; ``timeout_ms`` int, ms; ``ran_for_ms`` int, ms — how long the work ran (a watchdog
  hang: how long the watchdog was stuck)
- ``last_enqueued``, ``last_started``, ``last_completed`` int — the group's work counters (-1: none)
- ``peer_rank`` int — the rank a dump signal came from; ``peer`` str — the remote peer the line accuses, as
  printed: its instance id, else host name, else IP address, else EFA address (fabric_error, nccl_warn);
  ``exit_code`` int — torchelastic's exitcode
- ``prefix`` str — what came before PyTorch's own line, as printed: a launcher's label or tag (srun's
  ``3:``, Ray's ``(Worker pid=4009)``, a host tag), a log pipeline's or container runtime's stamp, a tqdm
  bar, a line number
- ``message`` str — the event's text, from its message on

``job_log_rank`` (one row per rank identity a line gives): ``line`` int; ``source`` str — nccl-init (NCCL's
``ncclCommInitRank``/``ncclCommSplit`` ... ``Init COMPLETE`` line) or torchelastic; ``rank`` int (in the
communicator for nccl-init); ``nranks`` int; ``local_rank`` int; ``device`` int — cudaDev; ``host`` str;
``pid`` int; ``bus_id`` str; ``comm_id`` str; ``exit_code`` int.

``nccl_run``, ``nccl_log_event``, ``nccl_transport``: NCCL's lines of the log, as parsers/nccl_tests.py
reads them (the same columns; their lines are the job log's).

``ras_report``, ``ras_comm``, ``ras_peer``, ``ras_count``: a RAS report printed inside the log
(NVIDIA/nccl#1730 prints the ``ncclras`` report before the watchdog's lines), as parsers/nccl_ras.py reads
one among other text (from its version, ``Job summary`` or ``Communicators...`` head on; the same columns,
the job log's line numbers).

Examples
--------
>>> r = parse(SAMPLE)
>>> [(e["kind"], e["rank"], e["pg_rank"], e["seq_num"], e["last_completed"]) for e in r.rows("job_log_event")]
[('watchdog_timeout', 1, 1, 808, None), ('pg_status', 1, 1, 808, 807), ('pg_status', 2, 2, None, None)]
>>> e = r.rows("job_log_event")[0]
>>> e["op_type"], e["timeout_ms"], e["ran_for_ms"], e["time_text"], e["pg_name"]
('ALLREDUCE', 600000, 600020, 'E626 06:24:44.903881913', None)
>>> [(i.line_no, i.reason) for i in r.issues]
[(3, 'pg_status line cut: seq_num, last_enqueued, last_completed unknown')]
"""  # noqa: E501

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from parsers import nccl_ras, nccl_tests
from parsers._base import Column, ParseError, ParseResult, ParserFailure, ParserInfo, require_text, sample_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SAMPLE = sample_of(__doc__)

#: NCCL's tables, read from the log's NCCL lines by the nccl-tests parser.
NCCL_TABLES = ("nccl_run", "nccl_log_event", "nccl_transport")
#: NCCL RAS's tables, read from a RAS report printed inside the log by the RAS parser.
RAS_TABLES = ("ras_report", "ras_comm", "ras_peer", "ras_count")

INFO = ParserInfo(
    kind="job-log",
    title="Training job log (PyTorch NCCL watchdog, NCCL and CUDA errors, torchelastic failures)",
    commands=("srun ... torchrun ... train.py > slurm-<job>.out 2> slurm-<job>.err", "kubectl logs <pod>"),
    tables=("job_log", "job_log_event", "job_log_rank", *NCCL_TABLES, *RAS_TABLES),
    versions_seen=(
        "PyTorch 1.8-1.9 (WorkNCCL(OpType=.., Timeout(ms)=..) without SeqNum)",
        "PyTorch 1.10-2.1 ([E ProcessGroupNCCL.cpp:N] [Rank N], no timestamp)",
        "PyTorch 2.2-2.5 ([rankN]:[E0114 hh:mm:ss.n ...], [PG N Rank N], [PG N (default_pg) Rank N])",
        "PyTorch 2.6+ ([PG ID N PG GUID N(name) Rank N], failure detected by watchdog at work sequence id)",
        "launchers: torchrun [rankN]:, srun -l, Ray workers, a log pipeline's stamp, milabench host tags",
    ),
    not_collected_because=(
        "a job's logs are the user's: they come from collector.sh --add or a cluster bundle's extra/, "
        "recognised by content"
    ),
    empty_means_none=("job_log_event",),
)


def _cols(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*item.split(":")) for item in spec.split())


SCHEMA = {
    "job_log": _cols(
        "n_lines:int n_events:int nccl_log_lines:int ranks:int hosts:str world_size:int nccl_version:str"
    ),
    "job_log_event": _cols(
        "line:int kind:str level:str code:str time_text:str ts:ts utc_offset:str host:str pid:int rank:int "
        "local_rank:int pg_rank:int task:int device:int pg_id:str pg_guid:str pg_name:str op_type:str "
        "seq_num:int numel_in:int numel_out:int timeout_ms:int ran_for_ms:int last_enqueued:int "
        "last_started:int last_completed:int peer_rank:int peer:str exit_code:int prefix:str message:str"
    ),
    "job_log_rank": _cols(
        "line:int source:str rank:int nranks:int local_rank:int device:int host:str pid:int bus_id:str "
        "comm_id:str exit_code:int"
    ),
    **{table: nccl_tests.SCHEMA[table] for table in NCCL_TABLES},
    **{table: nccl_ras.SCHEMA[table] for table in RAS_TABLES},
}

# --- recognising a job log -------------------------------------------------------------------------------
_C10D = re.compile(
    r"WorkNCCL\(|Watchdog caught collective operation timeout|ProcessGroupNCCL(?:\.cpp|'s watchdog)|"
    r"NCCL watchdog thread terminated"
)
_CUDA = re.compile(r"\bCUDA error: \S|\bcuda runtime error \(\d+\) : \S")
_ELASTIC = re.compile(r"Root Cause \(first observed failure\)|^\s+rank\s+: \d+ \(local_rank: \d+\)", re.M)


#: torchrun's ``[rank3]:`` at the start of lines (PyTorch 2.2+), its elastic agent's own log lines
_TORCHRUN = re.compile(r"^\[(?:rank|default)\d+\]:|torch\.distributed\.(?:elastic|run)\b", re.M)


def detect(text: str) -> int:
    """Confidence that text is a training job's log (above an NCCL log's 60, below nccl-tests' own 80+)."""
    if _C10D.search(text):
        return 75
    if _ELASTIC.search(text):
        return 72
    if _CUDA.search(text):
        return 65
    if (m := _FABRIC.search(text)) and _ACCUSED.search(m["msg"]):
        return 63  # libfabric's error naming the peer it failed with: a job's (or NCCL's plugin's) stderr
    return 62 if len(_TORCHRUN.findall(text[:65536], 0)) >= 2 else 0


# --- the parts of a line -----------------------------------------------------------------------------------
_RANK = re.compile(r"\[rank(\d+)\]:")
_ROLE = re.compile(r"\[default(\d+)\]:")
_TASK = re.compile(r"^\s*(\d{1,5}): ")
_RAY = re.compile(r"\(\w+ pid=(\d+)(?:, ip=([\d.]+))?\)")
#: glog's header: ``[E0114 09:12:40.118273412 ProcessGroupNCCL.cpp:616]`` (PyTorch's c10 logger, bracketed)
#: or ``E0517 08:24:03.805000 140617718325696 torch/.../api.py:826]``; before 2.2 ``[E ProcessGroupNCCL.cpp:737]``
_GLOG = re.compile(
    r"\[?(?P<level>[EWIF])(?P<md>\d{3,4}) (?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)(?:\s+\d+)?\s+[\w./-]+:\d+\]"
    r"|\[(?P<level0>[EWIF]) [\w./-]+\.(?:cpp|cc|h):\d+\]"
)
#: ``[Rank 3]``, ``[PG 1 Rank 0]``, ``[PG 0 (default_pg) Rank 7]``, ``[PG ID 0 PG GUID 0(default_pg) Rank 1]``
_TAG = re.compile(
    r"\[(?:PG (?:ID )?(?P<pg_id>\d+)(?: PG GUID (?P<guid>\d*)(?:\((?P<name>[^)]*)\))?| \((?P<name2>[^)]*)\))? )?"
    r"Rank (?P<pg_rank>\d+)\]"
)
_STAMP = re.compile(
    r"(?P<y>(?:19|20)\d\d)[-/](?P<mo>\d\d)[-/](?P<d>\d\d)[T _](?P<h>\d\d):(?P<mi>\d\d)"
    r"(?::(?P<s>\d\d)(?:[.,](?P<f>\d{1,9}))?)?(?:\s?(?P<z>Z|UTC|GMT|[+-]\d\d:?\d\d)(?![\w:]))?"
)
#: NCCL's own line: ``host:pid:tid [dev] [location] NCCL INFO|WARN msg`` (anywhere in the line).
_NCCL_LINE = re.compile(r"\bNCCL (?:INFO|WARN|ERROR)\b")
_NCCL_SOURCE = re.compile(
    r"(?:^|(?<=[\s\]|>']))(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
    r"(?:(?P<at>\S+) )?NCCL (?P<level>INFO|WARN|ERROR)\b\s*(?P<msg>.*)"
)
_NCCL_INIT = re.compile(
    r"\bcomm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<dev>\d+)"
    r"(?: nvmlDev \d+)?(?: busId (?P<bus>[0-9a-fA-F:.]+))?.*?(?:commId (?P<comm_id>0x[0-9a-f]+))?"
    r" - Init (?:COMPLETE|START)"
)
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
#: libfabric's log line: ``libfabric:<pid>:<epoch s>:<prov>:<subsys>:<func>():<line><warn> msg``
_FABRIC = re.compile(
    r"(?:^|(?<=\s))libfabric:(?P<pid>\d+):(?P<epoch>\d{9,11}):[^<\n]*<(?P<level>warn|error)>[ \t]*(?P<msg>[^\n]*)"
)
#: a libfabric line whose header is mangled: its message is kept, its pid and time unknown
_FABRIC_ANY = re.compile(r"libfabric\S*?<(?P<level>warn|error)>[ \t]*(?P<msg>[^\n]*)")
#: The remote peer a line accuses (the host printing it is a victim): libfabric's EFA errors (``Peer host id:
#: i-0ce6d3d57139f053c``, ``Peer EFA addr: fi_addr_efa://[fe80::..]:0:947699476``), NCCL's socket and IB
#: lines (``Connection closed by remote peer node2<42830>``, ``peer 10.0.0.5<51234>``).
_ACCUSED = re.compile(
    r"Peer host id: (?P<iid>i-[0-9a-f]{8,17})\b|Connection closed by remote peer (?P<host>[\w.-]+?)(?:<\d+>)?(?:\s|$)"
    r"|\bpeer (?:address )?(?P<addr>\d{1,3}(?:\.\d{1,3}){3})(?:<\d+>)?|Peer EFA addr: (?P<efa>fi_addr_efa://\S+)"
)


def accused_peer(message: str) -> str | None:
    """The remote peer a line accuses, as printed: its instance id, host name or address, else None.

    >>> accused_peer("socketProgress: Connection closed by remote peer node2<42830>")
    'node2'
    >>> accused_peer("Invalid address My host id: i-0db7083f3fcbebb65 Peer host id: i-0ce6d3d57139f053c (7)")
    'i-0ce6d3d57139f053c'
    """
    found = list(_ACCUSED.finditer(message))
    for key in ("iid", "host", "addr", "efa"):  # the instance id names the node best, its EFA address least
        for m in found:
            if m[key]:
                return str(m[key])
    return None


# --- the events -------------------------------------------------------------------------------------------
#: (kind, how its message begins): a line holding the beginning, or cut inside it, is that event.
_LEADS = (
    ("watchdog_timeout", "Watchdog caught collective operation timeout"),
    ("pg_status", "Exception (either an error or timeout) detected by watchdog at work"),
    ("pg_status", "failure detected by watchdog at work sequence id"),
    ("pg_status", "Timeout at NCCL work"),
)
_DUMP = re.compile(
    r"Received a dump signal|Observed flight recorder dump signal|to signal dumping|preparing to dump debug info|"
    r"flight recorder dumps to finish"
)
_HANG = re.compile(r"watchdog got stuck for (?P<secs>\d+) seconds|due to ProcessGroupNCCL watchdog hang")
_TEARDOWN = re.compile(
    r"thread terminated with exception|Some NCCL operations have failed or timed out|To avoid data inconsistency|"
    r"NCCL communicator was aborted|watchdog detected an exception"
)
_NCCL_ERROR = re.compile(
    r"\bNCCL error\b|\bnccl(?:System|Internal|Remote|UnhandledCuda|InvalidUsage|InvalidArgument)Error\b"
)
_NCCL_RESULT_CODES = {
    "ncclSystemError": "SYSTEM_ERROR",
    "ncclUnhandledCudaError": "CUDA_ERROR",
    "ncclRemoteError": "REMOTE_ERROR",
    "ncclInternalError": "INTERNAL_ERROR",
    "ncclInvalidUsage": "INVALID_USAGE",
    "ncclInvalidArgument": "INVALID_ARGUMENT",
}
_CUDA_ERROR = re.compile(
    r"\bCUDA error: (?P<text>.*\S)|\bcuda runtime error \((?P<num>\d+)\) : (?P<text0>.*?\S)(?: at \S+)?$"
)
_NUMBERS = {
    "seq_num": re.compile(r"SeqNum=(\d+)(?=[,)])"),
    "op_type": re.compile(r"OpType=(\w+)(?=[,)])"),
    "numel_in": re.compile(r"NumelIn=(\d+)(?=[,)])"),
    "numel_out": re.compile(r"NumelOut=(\d+)(?=[,)])"),
    "timeout_ms": re.compile(r"Timeout\(ms\)=(\d+)(?=\))"),
    "ran_for_ms": re.compile(r"ran for (\d+) milliseconds"),
}
_STATUS = {
    "seq_num": re.compile(r"(?:at work(?: sequence id)?|Timeout at NCCL work):\s*(\d+)(?=[,.\s]|$)", re.I),
    "last_enqueued": re.compile(r"last enqueued (?:NCCL )?work:\s*(-?\d+)(?=[,.\s]|$)", re.I),
    "last_started": re.compile(r"last started (?:NCCL )?work:\s*(-?\d+)(?=[,.\s]|$)", re.I),
    "last_completed": re.compile(r"last completed (?:NCCL )?work:\s*(-?\d+)(?=[,.\s]|$)", re.I),
}
_PEER = re.compile(r"from\s+rank (\d+)")
#: torchelastic's failure summary: ``[7]:`` then indented ``  host      : 472a4389fceb``.
_ELASTIC_HEAD = re.compile(r"^\s*\[(\d+)\]:\s*$")
_ELASTIC_FIELD = re.compile(r"^\s{2,}(time|host|rank|exitcode|error_file|traceback)\s*: ?(.*)$")
#: a field that can only be torchelastic's, read even without its ``[N]:`` line
_ELASTIC_ORPHAN = re.compile(r"^\s{2,}(?:exitcode|rank|time|host)\s{2,}: ")
#: an entry's ``[N]:`` line that is not one (mangled): said when fields follow it
_ELASTIC_BAD_HEAD = re.compile(r"^\s*\[[^\]\s]{1,12}\]:\s*$")
#: the values of the fields read
_ELASTIC_RANK = re.compile(r"(\d+)(?: \(local_rank: (\d+)\))?$")
_ELASTIC_EXIT = re.compile(r"(-?\d+)(?: \(pid: (\d+)\))?$")
#: a line of the job's own (PyTorch's, NCCL's, torchrun's, a glog header): the end of a RAS report printed in the log
_JOB_LINE = re.compile(
    r"ProcessGroupNCCL|WorkNCCL\(|\bNCCL (?:INFO|WARN|ERROR)\b|\[(?:rank|default)\d+\]:|^\s*\[?[EWIF]\d{4} \d\d:|"
    r"^\s*(?:Traceback|terminate called|```)"
)
#: the start of a line that is a log line of its own (so no terminal wrap of the line before)
_LOGLINE = re.compile(r"^\s*(?:\[|\(|\S+:\d+:\d+ \[|\d{4}-\d\d-\d\d|[EWIF]\d{4} |\S+ \[std(?:out|err)\])")


@dataclass(frozen=True)
class CudaError:
    name: str
    number: int
    text: str
    family: str


@dataclass(frozen=True)
class CudaFamily:
    id: str
    title: str
    severity: str
    reason: str
    owner: str
    target: str
    action: str


@functools.cache
def cuda_catalog() -> tuple[dict[str, CudaFamily], tuple[CudaError, ...]]:
    """The CUDA error catalog (parsers/cuda_errors.toml): its families and errors.

    >>> families, errors = cuda_catalog()
    >>> families["gpu_memory"].severity, next(e.name for e in errors if e.number == 214)
    ('critical', 'cudaErrorECCUncorrectable')
    """
    doc: dict[str, Any] = tomllib.loads(
        (Path(__file__).resolve().parent / "cuda_errors.toml").read_text("utf-8")
    )
    families = {fid: CudaFamily(fid, **f) for fid, f in doc["family"].items()}
    errors = tuple(CudaError(**e) for e in doc["error"])
    for e in errors:
        if e.family not in families:
            raise ValueError(f"cuda_errors.toml: {e.name} names no family {e.family!r}")
    return families, errors


def cuda_error(text: str | None, number: int | None = None) -> CudaError | None:
    """The catalog's error a CUDA error text (or number) names, else None.

    >>> cuda_error("an illegal memory access was encountered").name, cuda_error("x", 214).name
    ('cudaErrorIllegalAddress', 'cudaErrorECCUncorrectable')
    >>> cuda_error("something new") is None
    True
    """
    _, errors = cuda_catalog()
    for e in errors:
        if number is not None and e.number == number or text and text.startswith(e.text):
            return e
    return None


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse a job log (``command`` and ``filename`` are not needed)."""
    require_text(text)
    if not detect(text):
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")[:120]
        raise ParseError(
            "expected a training job's log (PyTorch ProcessGroupNCCL lines, a CUDA error, torchelastic's "
            f"failure summary); first line seen: {first!r}"
        )
    lines = text.splitlines()
    state = _State(lines)
    state.run()
    return state.finish()


class _State:
    """One pass over the lines."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.result = ParseResult(tables={name: [] for name in SCHEMA})
        self.nccl_lines = 0
        self.nccl_version: str | None = None
        self.elastic: dict[str, Any] | None = None  # the torchelastic entry being read
        self.root_next = False  # the next torchelastic entry is the root cause
        self.nccl_hosts: list[str] = []  # the hosts of NCCL's lines, in order
        self.pid_hosts: dict[int, str] = {}  # NCCL's lines' pid -> host (libfabric's lines print no host)

    def run(self) -> None:
        skip = 0
        for no, line in enumerate(self.lines, start=1):
            if skip:
                skip -= 1
                continue
            if self.elastic_line(no, line):
                continue
            if "libfabric" in line and (f := _FABRIC.search(line) or _FABRIC_ANY.search(line)):
                self.fabric(no, line, f)
                continue
            if "NCCL" in line and _NCCL_LINE.search(line):
                self.nccl_lines += 1
                self.nccl(no, line)
                continue
            if not ("CUDA" in line or "atchdog" in line or "NCCL" in line or "cuda runtime" in line):
                continue
            skip = self.event(no, line)
        self.end_elastic()

    # -- PyTorch's lines ----------------------------------------------------------------------------
    def event(self, no: int, line: str) -> int:
        """Read an event line; the number of following lines it took in (a terminal's wrap)."""
        kind, at = self.classify(line)
        if kind is None:
            return 0
        row = self.row(no, line, at, kind)
        taken = 0
        if kind in ("watchdog_timeout", "pg_status") and not self.complete(row):
            following = self.lines[no] if no < len(self.lines) else ""
            if following.strip() and not _LOGLINE.match(following):
                # a wrap keeps the space it broke at, or breaks inside a word: try both, keep the fuller
                glues = ("",) if line[-1:].isspace() or following[:1].isspace() else (" ", "")
                best = max(
                    (self.row(no, line + glue + following, at, kind) for glue in glues),
                    key=lambda r: sum(v is not None for v in r.values()),
                )
                if self.complete(best):
                    row, taken = best, 1
        if unread := row.pop("_unread", None):
            self.result.issue(no, line, f"text before the message not understood: {unread[:200]!r}")
        if kind == "watchdog_timeout" and row["ran_for_ms"] is None:
            self.cut(no, line, row, ("seq_num", "op_type", "timeout_ms", "ran_for_ms"))
        elif kind == "pg_status" and row["last_completed"] is None:
            self.cut(no, line, row, ("seq_num", "last_enqueued", "last_completed"))
        self.result.add("job_log_event", row)
        return taken

    def classify(self, line: str) -> tuple[str | None, int]:
        """The event a line holds and where its anchor (the words that name it) starts; (None, 0) for none."""
        if m := _CUDA_ERROR.search(line):
            return "cuda_error", m.start()
        for kind, lead in _LEADS:
            at = line.find(lead)
            if at >= 0:
                if kind == "watchdog_timeout" and (exit := _TEARDOWN.search(line, 0, at)):
                    return "process_group_error", exit.start()  # the timeout repeated by the watchdog's exit
                return kind, at
        for kind, pattern in (
            ("dump_signal", _DUMP),
            ("watchdog_hang", _HANG),
            ("process_group_error", _TEARDOWN),
        ):
            if m := pattern.search(line):
                return kind, m.start()
        if (m := _NCCL_ERROR.search(line)) and not line.lstrip().startswith(
            ("frame #", "Exception raised from")
        ):
            return "nccl_error", m.start()
        tags = list(_TAG.finditer(line))
        if tags and "ProcessGroupNCCL" in line:
            end = tags[-1].end()
            rest = line[end:].strip()
            at = end + line[end:].find(rest) if rest else len(line)
            for kind, lead in _LEADS:  # a line cut inside its message's first words
                if len(rest) >= 5 and lead.startswith(rest):
                    return kind, at
            glog = _GLOG.search(line)
            if glog and (glog["level"] or glog["level0"]) in ("E", "F") and rest:
                return "process_group_error", at
        return None, 0

    def row(self, no: int, line: str, anchor: int, kind: str) -> dict[str, Any]:
        """The event of a line: what its launcher, logger and group tag say, and its message's facts."""
        row: dict[str, Any] = {c.name: None for c in SCHEMA["job_log_event"]}
        row.update(line=no, kind=kind)
        head = line[:anchor]
        launcher: list[tuple[int, int]] = []  # what a launcher or a log pipeline put before the line
        logger: list[
            tuple[int, int]
        ] = []  # PyTorch's own: [rankN]:, [defaultN]:, glog's header, the group tag
        if m := _TASK.match(head):
            row["task"] = int(m[1])
            launcher.append((m.start(1), m.end()))
        if m := _RAY.search(head):
            row["pid"], row["host"] = int(m[1]), m[2]
            launcher.append(m.span())
        if m := _STAMP.search(head):
            self.stamp(row, m)
            launcher.append(m.span())
        for pattern, key in ((_RANK, "rank"), (_ROLE, "local_rank")):
            found = list(pattern.finditer(head))
            if found:
                row[key] = int(found[-1][1])
                logger.append(found[-1].span())
        if m := _GLOG.search(head):
            row["level"] = m["level"] or m["level0"]
            if m["md"] and row["ts"] is None:  # a dated stamp before it says the time with its year
                row["time_text"] = m.group(0).lstrip("[").split(" ", 1)[0] + " " + m["time"]
            logger.append(m.span())
        tags = list(_TAG.finditer(head))
        tag = tags[0] if tags else _TAG.search(line, anchor)
        if tags:
            logger.append((tags[0].start(), tags[-1].end()))
        if tag:
            row["pg_rank"] = int(tag["pg_rank"])
            row["pg_id"] = tag["pg_id"]
            row["pg_guid"] = tag["guid"] or None
            row["pg_name"] = tag["name"] or tag["name2"] or None
        if row["rank"] is None and row["pg_id"] == "0" and row["pg_rank"] is not None:
            row["rank"] = row["pg_rank"]  # in the default group (PG 0) the group rank is the global rank
        indent = len(head) - len(head.lstrip())
        begin = max((e for _, e in launcher + logger), default=indent)
        start = min((s for s, _ in logger), default=begin)
        row["prefix"] = line[:start].strip()[:500] or None
        covered = sorted(logger)
        at = start  # text among PyTorch's own parts that none of them reads (a mangled glog header): said
        rest = []
        for s_, e_ in covered:
            rest.append(line[at:s_])
            at = max(at, e_)
        rest.append(line[at:begin])
        row["_unread"] = " ".join(r.strip() for r in rest if r.strip()) or None
        message = line[begin:].strip() if begin <= anchor else line[anchor:].strip()
        row["message"] = message[:2000]
        self.details(row, message)
        return row

    @staticmethod
    def stamp(row: dict[str, Any], m: re.Match[str]) -> None:
        row["time_text"] = m.group(0).strip()
        try:
            micro = int((m["f"] or "0")[:6].ljust(6, "0"))
            ts = datetime(
                int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"] or 0), micro
            )
        except ValueError:  # a date that does not exist is no time
            return
        row["ts"] = ts.isoformat()
        zone = m["z"]
        if zone in ("Z", "UTC", "GMT"):
            row["utc_offset"] = "+00:00"
        elif zone:
            digits = zone.replace(":", "")
            row["utc_offset"] = f"{digits[:3]}:{digits[3:]}"

    def details(self, row: dict[str, Any], message: str) -> None:
        kind = row["kind"]
        if "WorkNCCL(" in message:
            for key, pattern in _NUMBERS.items():
                if m := pattern.search(message):
                    row[key] = m[1] if key == "op_type" else int(m[1])
        if kind in ("pg_status", "dump_signal") or "last enqueued" in message.lower():
            for key, pattern in _STATUS.items():
                if key == "seq_num" and row["seq_num"] is not None:
                    continue
                if m := pattern.search(message):
                    row[key] = int(m[1])
        if kind == "dump_signal" and (m := _PEER.search(message)):
            row["peer_rank"] = int(m[1])
        if kind == "watchdog_hang" and (m := _HANG.search(message)) and m["secs"]:
            row["ran_for_ms"] = int(m["secs"]) * 1000
        if kind == "cuda_error" and (m := _CUDA_ERROR.search(message)):
            number = int(m["num"]) if m["num"] else None
            found = cuda_error(m["text"] or m["text0"], number)
            row["code"] = found.name if found else None
        if kind == "nccl_error":
            code = nccl_tests._error_code(message)  # the NCCL log codes of docs/sources.md#nccl-log-patterns
            if code is None:
                named = re.search(r"\b(nccl\w+Error)\b", message)
                code = _NCCL_RESULT_CODES.get(named[1] if named else "", "NCCL_ERROR")
            row["code"] = code

    @staticmethod
    def complete(row: dict[str, Any]) -> bool:
        if row["kind"] == "watchdog_timeout":
            return row["ran_for_ms"] is not None
        return row["last_completed"] is not None

    def cut(self, no: int, line: str, row: dict[str, Any], fields: tuple[str, ...]) -> None:
        unknown = [f for f in fields if row[f] is None]
        self.result.issue(no, line, f"{row['kind']} line cut: {', '.join(unknown)} unknown")

    # -- NCCL's lines -------------------------------------------------------------------------------
    def nccl(self, no: int, line: str) -> None:
        if self.nccl_version is None and (v := _NCCL_VERSION.search(line)):
            self.nccl_version = v[1]
        m = _NCCL_SOURCE.search(line)
        if m is not None and (not self.nccl_hosts or self.nccl_hosts[-1] != m["host"]):
            self.nccl_hosts.append(m["host"])
        if m is not None:
            self.pid_hosts.setdefault(int(m["pid"]), m["host"])
        if m is None:
            if "NCCL WARN" in line:  # a WARN line whose host:pid:tid was not printed or was cut
                self.nccl_warn(no, line, None, line.index("NCCL WARN"))
            return
        msg = m["msg"].strip()
        if m["level"] == "INFO":
            if "Init" in msg and (i := _NCCL_INIT.search(msg)):
                self.result.add("job_log_rank", {
                    "line": no, "source": "nccl-init", "rank": int(i["rank"]), "nranks": int(i["nranks"]),
                    "local_rank": None, "device": int(i["dev"]), "host": m["host"], "pid": int(m["pid"]),
                    "bus_id": i["bus"], "comm_id": i["comm_id"] or i["comm"], "exit_code": None,
                })  # fmt: skip
            return
        self.nccl_warn(no, line, m, m.start())

    def nccl_warn(self, no: int, line: str, m: re.Match[str] | None, start: int) -> None:
        row: dict[str, Any] = {c.name: None for c in SCHEMA["job_log_event"]}
        code = (
            nccl_tests._error_code(line) or "WARN"
        )  # the NCCL log codes of docs/sources.md#nccl-log-patterns
        msg = m["msg"] if m else line[start:].removeprefix("NCCL WARN")
        row.update(line=no, kind="nccl_warn", level="WARN", code=code, message=msg.strip()[:2000])
        row["peer"] = accused_peer(msg)
        if m:
            row.update(host=m["host"], pid=int(m["pid"]), device=int(m["dev"]))
        head = line[:start]
        if s := _STAMP.search(head):
            self.stamp(row, s)
        if rank := _RANK.search(head):
            row["rank"] = int(rank[1])
        row["prefix"] = head.strip()[:500] or None
        self.result.add("job_log_event", row)

    def fabric(self, no: int, line: str, f: re.Match[str]) -> None:
        """libfabric's warning or error naming the remote peer it failed with (an EFA completion error, an
        unresponsive receiver): the peer is accused; the host (by NCCL's lines of the same pid) printed it."""
        peer = accused_peer(f["msg"])
        if peer is None:
            return  # libfabric's other warnings (a capability, a variable) accuse no one
        row: dict[str, Any] = {c.name: None for c in SCHEMA["job_log_event"]}
        row.update(line=no, kind="fabric_error", level=f["level"].upper(), peer=peer)
        row["message"] = f["msg"].strip()[:2000]
        if (
            "epoch" not in f.re.groupindex
        ):  # the header mangled: the accusation kept, its printer and time not
            self.result.issue(no, line, "libfabric line's header not understood: its pid and time unknown")
        else:
            row["pid"], row["time_text"] = int(f["pid"]), f["epoch"]
            row["ts"] = datetime.fromtimestamp(int(f["epoch"]), timezone.utc).replace(tzinfo=None).isoformat()
            row["utc_offset"] = "+00:00"  # seconds since the epoch: UTC
        row["prefix"] = line[: f.start()].strip()[:500] or None
        self.result.add("job_log_event", row)

    # -- torchelastic's failure summary -------------------------------------------------------------
    def elastic_line(self, no: int, line: str) -> bool:
        if m := _ELASTIC_HEAD.match(line) or _ELASTIC_BAD_HEAD.match(line):
            self.end_elastic()
            self.elastic = {"line": no, "first": no, "raw": line, "root": self.root_next}
            if not _ELASTIC_HEAD.match(line):
                self.elastic["bad_head"] = True
            self.root_next = False
            return True
        if "Root Cause (first observed failure)" in line:
            self.end_elastic()
            self.root_next = True
            return True
        m = _ELASTIC_FIELD.match(line)
        if m is None:
            self.end_elastic()
            return False
        if self.elastic is None:  # a field without its "[N]:": the summary cut at its start, or no summary
            if not _ELASTIC_ORPHAN.match(line):
                return False
            self.elastic = {"line": no, "first": no, "raw": line, "root": False}
        self.elastic[m[1]] = m[2].strip()
        self.elastic[f"{m[1]}@"] = (no, line)
        return True

    def end_elastic(self) -> None:
        entry, self.elastic = self.elastic, None
        if entry is None or not set(entry) & {"time", "host", "rank", "exitcode"}:
            return
        if entry.get("bad_head"):
            self.result.issue(
                entry["first"], entry["raw"], "torchelastic failure entry's [N]: line not understood"
            )
        row: dict[str, Any] = {c.name: None for c in SCHEMA["job_log_event"]}
        row.update(line=entry["first"], kind="rank_exit", host=entry.get("host") or None)
        for key, pattern in (("rank", _ELASTIC_RANK), ("exitcode", _ELASTIC_EXIT)):
            if key not in entry:
                continue
            if (v := pattern.match(entry[key])) is None:
                at, raw = entry[f"{key}@"]
                self.result.issue(at, raw, f"torchelastic {key} not understood: {entry[key]!r}")
            elif key == "rank":
                row["rank"], row["local_rank"] = int(v[1]), int(v[2]) if v[2] else None
            else:
                row["exit_code"], row["pid"] = int(v[1]), int(v[2]) if v[2] else None
        if entry.get("time") and (s := _STAMP.search(entry["time"])):
            self.stamp(row, s)
        parts = [f"exitcode {entry['exitcode']}" if entry.get("exitcode") else ""]
        parts.append(entry.get("traceback", ""))
        if entry.get("root"):
            parts.insert(0, "root cause (first observed failure)")
        row["message"] = "; ".join(p for p in parts if p) or None
        self.result.add("job_log_event", row)
        if row["rank"] is not None or row["host"] is not None:
            self.result.add("job_log_rank", {
                "line": entry["first"], "source": "torchelastic", "rank": row["rank"], "nranks": None,
                "local_rank": row["local_rank"], "device": None, "host": row["host"], "pid": row["pid"],
                "bus_id": None, "comm_id": None, "exit_code": row["exit_code"],
            })  # fmt: skip
        if row["rank"] is None:
            self.result.issue(
                entry["first"], entry["raw"], "torchelastic failure entry cut at its start: its rank unknown"
            )

    # -- the file ------------------------------------------------------------------------------------
    def finish(self) -> ParseResult:
        result = self.result
        if self.nccl_lines:
            self.nccl_tables()
        self.ras_tables()
        events = result.rows("job_log_event")
        for e in events:
            if e["kind"] == "fabric_error" and e["host"] is None:
                e["host"] = self.pid_hosts.get(e["pid"])
        ranks = {e["rank"] for e in events if e["rank"] is not None}
        ranks |= {
            r["rank"]
            for r in result.rows("job_log_rank")
            if r["source"] == "torchelastic" and r["rank"] is not None
        }
        hosts = (
            [e["host"] for e in events] + [r["host"] for r in result.rows("job_log_rank")] + self.nccl_hosts
        )
        world = [r["nranks"] for r in result.rows("job_log_rank") if r["nranks"]]
        result.add("job_log", {
            "n_lines": len(self.lines), "n_events": len(events),
            "nccl_log_lines": self.nccl_lines or None, "ranks": len(ranks),
            "hosts": ",".join(dict.fromkeys(h for h in hosts if h)) or None,
            "world_size": max(world) if world else None, "nccl_version": self.nccl_version,
        })  # fmt: skip
        result.tables["job_log_event"].sort(key=lambda e: e["line"])
        result.issues.sort(key=lambda i: i.line_no)
        return result

    def ras_tables(self) -> None:
        """A RAS report printed inside the log (NVIDIA/nccl#1730): from its head (``NCCL version .. compiled
        with CUDA``, ``Job summary``, ``Communicators... (Ns)``) to the next line of the job's own (PyTorch's,
        NCCL's, a launcher's), read as the RAS parser reads a file of RAS output: a line in it that RAS does
        not print is a ParseIssue, and row and issue line numbers are the log's."""
        lines, no = self.lines, 0
        while no < len(lines):
            line = lines[no].strip()
            if not (nccl_ras._VERSION.match(line) or line == "Job summary" or nccl_ras._COMMS.match(line)):
                no += 1
                continue
            end = no + 1
            while end < len(lines) and not _JOB_LINE.search(lines[end]):
                end += 1
            try:
                ras = nccl_ras.parse("\n".join(lines[no:end]))
            except ParserFailure as e:
                self.result.issue(no + 1, lines[no], f"RAS report not read: {e}")
                no = end
                continue
            for table in RAS_TABLES:
                for row in ras.rows(table):
                    self.result.add(table, {**row, "line": row["line"] + no})
            for issue in ras.issues:
                self.result.issue(issue.line_no + no, issue.line, issue.reason)
            no = end

    def nccl_tables(self) -> None:
        """NCCL's lines as the nccl-tests parser reads an NCCL log (the other lines blanked: same numbers)."""
        text = "\n".join(line if "NCCL" in line and _NCCL_LINE.search(line) else "" for line in self.lines)
        try:
            nccl = nccl_tests.parse(text)
        except ParserFailure:
            return  # NCCL lines that say nothing the NCCL parser keeps (no run, no event)
        for table in NCCL_TABLES:
            self.result.tables[table] = nccl.rows(table)
        for issue in nccl.issues:
            self.result.issue(issue.line_no, issue.line, issue.reason)
