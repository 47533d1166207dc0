"""nccl-tests results (all_reduce_perf and friends) and the NCCL log lines around them.

collector.sh runs no benchmark: the user adds (``--add``, or a cluster bundle's ``extra/``) the logs of::

    mpirun ... /opt/nccl-tests/build/all_reduce_perf -b 8 -e 16G -f 2 -g 1   # NCCL_DEBUG=INFO optional

Sample (hand-written: lines of the a3mega-h100 fixture and one NCCL WARN of the nccl-398 fixture)::

    # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
    #  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3
    #  Rank  8 Group  0 Pid   6733 on ztan-mig-gq73 device  0 [0000:04:00] NVIDIA H100 80GB HBM3
    ip-172-31-0-112:8166:8166 [7] ofi_init:700 NCCL WARN NET/OFI Only EFA provider is supported
      8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 70.742

Accepted: the new layout (``root`` and ``#wrong`` columns), the old one (no ``root``, a float ``error``
column) and the old rooted one (``root``, no ``redop``: broadcast, reduce); the table header, when seen,
names the columns of its rows.  ``N/A`` cells; integer times above 10 ms; extra trailing columns are kept
(``extra``).  Travel noise goes through ``parsers._text.clean_lines``: ``srun -l`` / pdsh / kubectl /
``[1,0]<stdout>:`` prefixes (indented too), prompt lines (their command names the collective), ``^Z``,
job-control lines, fences, glued backticks, ``...`` elisions, ``<-----`` annotations, CRLF, tabs; markdown
that ate the ``#``; NCCL log lines whose ``host:pid:tid [dev]`` follows other text (NCCL 2.26+'s
``[2026-01-05 08:14:03] `` wall-clock stamp on WARN lines, with subseconds or a zone too, a job tag stacked
behind a launcher tag, a log pipeline's stamp, a CloudWatch console's ``| stamp |`` or a stamp glued to
the host) keep their host, what came before it kept in ``prefix``; NCCL log lines from several hosts interleaved with the table; a log that starts at the
column header or at the rows (a grep'd excerpt); a log cut mid-table (``truncated``; the cut row keeps
its complete cells, the cells after them empty, and an issue says so; a cell the file's very end cuts is
left out); tags stacked before Open MPI's ``[1,0]<stdout>:`` (a Ray ``(head, rank=0, pid=3808)``, a job or
pod tag, a container log's stamp) and before nccl-tests' own ``#`` lines are taken off (kept in ``prefix``
on result rows).  Loud: a result row is known by its shape (two numbers, a dtype word such as ``float`` or
``bfloat16``, then a redop or a root), so one behind a prefix no launcher pattern takes off is still read
(the prefix kept in ``prefix``) and one whose size or count is not a number is a ParseIssue; a header,
rank, summary or NCCL log line (``host:pid:tid [dev]``) field that should be a number but is not is a
ParseIssue at its line (the rest of the line is still kept); unrecognised text before a rank line or the
``nThread`` header, a line that looks like a result, rank or header line but does not parse, and a
Channel/Ring line that does not parse or lacks its ``via``, are ParseIssues.

Several tests in one log are separate runs (``run``, 1-based): a new run starts at ``# nccl-tests
version`` / ``# Collective test starting`` / a ``nThread`` header once the current run has its header, at
rank lines or a column header once it has a table, and at rows after a ``# Avg bus bandwidth`` summary.

Schema
------
Every table has ``run`` int — the test within the file (1 for a log holding one test).

``nccl_run`` (one row per test):

- ``line`` int — line of the ``nThread`` header (else the first rank/result/event line of the run, else 1)
- ``collective`` str — ``all_reduce``, ``all_gather``, ... from the banner, ``Collective test concluded``,
  a command or prompt line; null if absent
- ``tests_version`` str — from ``# nccl-tests version 2.13.9 ...``
- ``nthread``, ``ngpus`` int; ``min_bytes``, ``max_bytes`` int, bytes; ``step`` str as printed (``2(factor)``)
- ``iters``, ``warmup_iters``, ``agg_iters`` int; ``check`` int — the ``validation:`` flag; ``graph`` int
- ``n_ranks`` int — rank lines printed; ``n_hosts`` int; ``hosts`` str — distinct hosts, comma-joined,
  in rank order
- ``nccl_version`` str — ``2.18.3`` (from ``NCCL version`` or ``nccl-library=21803``)
- ``net_transport`` str — ``ofi-efa``, ``ofi-tcp``, ``ofi``, ``socket``, ``ib``; null when the log does not
  say (a run whose own lines do not say takes what the file's other runs say)
- ``net_provider`` str — libfabric provider named by aws-ofi-nccl (``efa``, ``tcp;ofi_rxm``)
- ``avg_busbw_gbps`` float, GB/s — the ``# Avg bus bandwidth`` line (averages tiny sizes in: use results)
- ``nccl_log_lines`` int — NCCL's own log lines (``host:pid:tid [dev] NCCL INFO/WARN``) in the run; null
  when there are none (NCCL_DEBUG unset): then the log says nothing about NCCL warnings or transports
- ``oob_values`` int — ``# Out of bounds values``; ``n_results`` int — result rows of the run;
  ``error_code`` str — code of the run's first error event (a failed run: ``SYSTEM_ERROR``, ...);
  ``truncated`` bool — no ``Avg bus bandwidth`` line

``nccl_rank`` (one row per ``Rank`` line): ``line`` int, ``run`` int, ``rank`` int, ``group`` int (null on
old output), ``pid`` int, ``host`` str, ``device`` int, ``bus_id`` str (``dddd:bb:dd.f`` when printed as a
PCI address, else as printed, e.g. ``0x10``), ``gpu_name`` str.

``nccl_result`` (one row per size): ``line`` int, ``run`` int, ``size_bytes`` int, ``count`` int, ``dtype``
str, ``redop`` str (null when the layout has none), ``root`` int (null on the old layout); out-of-place
and in-place: ``oop_time_us``, ``ip_time_us`` float, µs; ``oop_algbw_gbps``, ``oop_busbw_gbps``,
``ip_algbw_gbps``, ``ip_busbw_gbps`` float, GB/s; ``oop_wrong``, ``ip_wrong`` int (``#wrong``; null for
``N/A`` and on the old layouts); ``oop_error``, ``ip_error`` float (old layouts only); ``extra`` str —
JSON object of cells after the two sides, under their header names (``colN`` when unnamed), else null;
``prefix`` str — text before the row that no launcher pattern took off, as printed (``[1,0]<stdout>:``
mangled, an unknown tag), else null.

``nccl_log_event`` (NCCL WARN lines, error lines, and the first INFO line of each informative kind per
host and run): ``line`` int, ``run`` int, ``host`` str (the log line's host, else a pdsh/kubectl tag),
``device`` int (the CUDA device NCCL prints after ``host:pid:tid``, ``[7]``; else null), ``level`` str (INFO/WARN/ERROR; ERROR = a non-NCCL line matching an error pattern), ``code`` str,
``message`` str, ``prefix`` str (what the line printed before its ``host:pid:tid [dev]``, as printed:
``[2026-01-05 08:14:03]``, a launcher or job tag, a log pipeline's stamp; else null), ``code_location``
str (the place in NCCL's or a net plugin's source the line names: ``misc/socket.cc:484`` or
``ofi_init:700`` before ``NCCL WARN``, ``[file.cc:123]``, or ``(file.cc:123)`` ending the message; else
null).  Codes follow
docs/sources.md#nccl-log-patterns: TCP_FALLBACK, OFI_EFA, NCCL_VERSION, WATCHDOG_TIMEOUT,
TIMEOUT_RENDEZVOUS, SYSTEM_ERROR, CUDA_ERROR, CONNECT_FAIL, CONN_REFUSED, EFA_INIT_FAIL, OFI_LOAD_FAIL,
RDMA_REG_FAIL, TEST_FAILURE, ... and WARN for any other warning.  ``NET/Socket : Using`` lines count as
TCP_FALLBACK only when the run's transport resolved to socket.

``nccl_transport`` (one row per NCCL ``Channel``/``Ring`` connection line): ``line`` int, ``run`` int,
``host`` str, ``channel`` int, ``conn`` int (the ``/N`` after the channel; null when not printed),
``src_rank`` / ``dst_rank`` int, ``src_dev`` / ``dst_dev`` str — as printed in the brackets (a device
index ``7``, or a busId ``201d0`` on older NCCL; null when not printed), ``direction`` str (``send``,
``receive``, null), ``transport`` str — normalised (``P2P/IPC``, ``P2P/CUMEM``, ``P2P/direct``, ``SHM``,
``NET/IB/0``, ``NET/Socket/1``, ``NET/OFI/0`` for ``NET/OFI``, ``NET/Libfabric`` and ``NET/AWS
Libfabric``), ``via`` str — the text after ``via`` as printed (``NET/AWS Libfabric/0/GDRDMA``), ``prefix``
str (as in ``nccl_log_event``).

Examples
--------
>>> r = parse(SAMPLE)
>>> run = r.rows("nccl_run")[0]
>>> run["n_hosts"], run["hosts"], run["avg_busbw_gbps"], run["truncated"], run["step"]
(2, 'ztan-mig-235z,ztan-mig-gq73', 70.742, False, '2(factor)')
>>> row = r.rows("nccl_result")[0]
>>> row["size_bytes"], row["oop_time_us"], row["ip_busbw_gbps"], row["oop_wrong"]
(8589934592, 47535.0, 337.35, 0)
>>> [(e["host"], e["level"], e["code"]) for e in r.rows("nccl_log_event")]
[('ip-172-31-0-112', 'WARN', 'EFA_INIT_FAIL')]
"""  # noqa: E501

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines, pci_address, to_float, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nccl-tests",
    title="nccl-tests output (all_reduce_perf, ...) with NCCL log lines",
    commands=("mpirun ... all_reduce_perf -b 8 -e 16G -f 2 -g 1",),
    tables=("nccl_run", "nccl_rank", "nccl_result", "nccl_log_event", "nccl_transport"),
    versions_seen=(
        "nccl-tests 2019 (error column; broadcast with root and no redop)",
        "nccl-tests 2.x (root, #wrong)",
        "NCCL 2.7-2.23 (Ring/Channel lines: P2P/IPC, P2P/CUMEM, P2P/direct pointer, SHM, NET/IB, NET/Socket,"
        " NET/AWS Libfabric, NET/Libfabric, NET/OFI)",
    ),
    not_collected_because=(
        "it runs no benchmark (it is read-only and bounded in time); nccl-tests logs come from the"
        " user's --add files or a cluster bundle's extra/, recognised by content"
    ),
)

_SIDE_COLS = "time_us:float:µs algbw_gbps:float:GB/s busbw_gbps:float:GB/s wrong:int error:float"


def _cols(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*item.split(":")) for item in spec.split())


SCHEMA = {
    "nccl_run": _cols(
        "line:int run:int collective:str tests_version:str nthread:int ngpus:int min_bytes:int max_bytes:int "
        "step:str iters:int warmup_iters:int agg_iters:int check:int graph:int n_ranks:int n_hosts:int "
        "hosts:str nccl_version:str net_transport:str net_provider:str avg_busbw_gbps:float:GB/s "
        "oob_values:int n_results:int error_code:str truncated:bool nccl_log_lines:int"
    ),
    "nccl_rank": _cols(
        "line:int run:int rank:int group:int pid:int host:str device:int bus_id:str gpu_name:str"
    ),
    "nccl_result": _cols(
        "line:int run:int size_bytes:int count:int dtype:str redop:str root:int "
        + " ".join(f"{side}_{col}" for side in ("oop", "ip") for col in _SIDE_COLS.split())
        + " extra:str prefix:str"
    ),
    "nccl_log_event": _cols(
        "line:int run:int host:str device:int level:str code:str message:str prefix:str code_location:str"
    ),
    "nccl_transport": _cols(
        "line:int run:int host:str channel:int conn:int src_rank:int src_dev:str dst_rank:int dst_dev:str "
        "direction:str transport:str via:str prefix:str"
    ),
}

#: The ``nThread`` header: fields are taken as printed (``\S+``) and checked after, so a mangled number is loud.
_HEADER = re.compile(
    r"nThread\s+(?P<nthread>\S+)\s+nGpus\s+(?P<ngpus>\S+)\s+minBytes\s+(?P<min_bytes>\S+)\s+maxBytes\s+"
    r"(?P<max_bytes>\S+)\s+step:\s*(?P<step>\S+)\s+warmup iters:\s*(?P<warmup_iters>\S+)\s+iters:\s*"
    r"(?P<iters>\S+)(?:\s+agg iters:\s*(?P<agg_iters>\S+))?\s+validation:\s*(?P<check>\S+)"
    r"(?:\s+graph:\s*(?P<graph>\S+))?"
)
_BANNER = re.compile(r"^nccl-tests version (\S+)|^Collective test starting:?\s*(\S+)?")
#: A rank line, its numbers taken as printed and checked after (a mangled one is an issue, the row is kept).
_RANK = re.compile(
    r"\bRank\s+(?P<rank>\S+)(?:\s+Group\s+(?P<group>\S+))?\s+Pid\s+(?P<pid>\S+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\S+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)"
)
#: Something that means to be a rank line: ``Rank N ... Pid`` or ``Rank N`` opening the line.
_RANKISH = re.compile(r"^Rank\s+\S+|\bRank\s+\S+.*\bPid\b")
#: A ``[N] `` rank tag before nccl-tests' own lines (a launcher clean_lines does not know).
_RANK_TAG = re.compile(r"^\[\d{1,5}\]\s+(?=#|\d)")
_ROW = re.compile(r"^\d+\s+\d+\s+[A-Za-z]\w*\s+\S+")
#: Open MPI's ``[1,0]<stdout>:`` behind another tag (a job or pod tag, a log pipeline's stamp).
_STACKED_MPI = re.compile(r"^.{0,160}?\[\d+,\d+\]<std(?:out|err)>: ?")
#: nccl-tests' own ``#`` summary and table-header lines, found behind a prefix no launcher pattern takes off
#: (the ``nThread`` header and rank lines are read behind any prefix, which is said: see ``header``, ``rank``).
_OWN_HASH = re.compile(
    r"#\s*(?:Avg bus bandwidth|Out of bounds|size\s+count|\(B\)|\s+out-of-place|"
    r"Using devices|nccl-tests version|Collective test|Errors with asterisks)"
)
#: A line that starts like a result row (two numbers) but is not one: loud, never dropped.
_ROWISH = re.compile(r"^\d+\s+\d+(?:\s+\S+)+")
#: Where the ``host:pid:tid [cudaDev]`` of an NCCL log line may start: at the line's start or after a
#: blank, ``|``, ``]`` or ``>``, after ``>:`` (``[1,0]<stdout>:`` behind another tag) and, numbers only,
#: after a stamp a log console glued on (``2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79``).
_SOURCE_AT = r"(?:(?<![^\s|\]>])|(?<=>:))"
#: ``[prefix] host:pid:tid [cudaDev] ... NCCL INFO|WARN msg``, numbers as numbers; the prefix, what no
#: launcher pattern took off: NCCL's own wall-clock stamp (``[2026-01-05 08:14:03] ``, on WARN lines since
#: 2.26; any strftime format with ``%Nf`` subseconds), a job tag, a log pipeline's stamp.
_NCCL_SOURCE = re.compile(
    rf"^(?P<pre>.*?)(?:{_SOURCE_AT}|(?<=:\d\d))(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>\d*)\]\s+"
    r"(?:(?P<between>.*?)\s)?NCCL (?P<level>INFO|WARN|ERROR)\b\s*(?P<msg>.*)"
)
#: The same with pid, tid and device taken as printed and checked after (a mangled number is loud), or
#: without any ``host:pid:tid [cudaDev]`` (``NCCL version`` lines, a log cut down to its messages).
_NCCL = re.compile(
    rf"^(?:(?P<pre>.*?){_SOURCE_AT}(?P<host>[\w.-]+):(?P<pid>[^\s:]+):(?P<tid>\S+?)\s+\[(?P<dev>[^\]\s]*)\]\s+)?"
    r"(?:(?P<between>.*?)\s)?NCCL (?P<level>INFO|WARN|ERROR)\b\s*(?P<msg>.*)"
)
#: The place in NCCL's (or a plugin's) source a WARN line names, just before ``NCCL WARN``
#: (``misc/socket.cc:484``, ``ofi_init:700``, ``[transport/net_ib.cc:123]``) or at the end of it
#: (``... (init.cc:1234)``).
_CODE_AT = re.compile(r"(?:^|\s)\[?(?P<at>[\w./-]+:\d+)\]?$")
_CODE_END = re.compile(r"\s\((?P<at>[\w./-]+\.(?:cc|cu|cpp|c|h):\d+)\)$")
#: ``Channel 00/0 : 7[7] -> 8[0] [send] via NET/OFI/0/GDRDMA``; ``Ring 00 : 15 -> 0 [send] via NET/Socket/0``.
_CHANNEL = re.compile(
    r"^(?:Channel|Ring)\s+(?P<ch>\d+)(?:/(?P<conn>\d+))?\s*:\s*(?P<src>\d+)(?:\[(?P<sdev>[^\]]*)\])?\s*->\s*"
    r"(?P<dst>\d+)(?:\[(?P<ddev>[^\]]*)\])?\s*(?:\[(?P<dir>send|receive|recv)\]\s*)?via\s+(?P<via>.*\S)"
)
_COLLECTIVE = re.compile(r"\b([a-z][a-z_]*?)_perf(?:_mpi)?\b")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_LIB_CODE = re.compile(r"nccl-library=(\d{5,})")
_PROVIDER = re.compile(r"NET/OFI (?:Using provider:?|Selected [Pp]rovider is:?)\s*(\S+)")
_NETWORK = re.compile(r"Using network (AWS Libfabric|Libfabric|Socket|IB)\b", re.IGNORECASE)
_VIA = re.compile(r"via NET/(AWS Libfabric|Libfabric|OFI|Socket|IB)\b", re.IGNORECASE)
#: (pattern, code) — first match wins; substrings from docs/sources.md#nccl-log-patterns, matched
#: case-insensitively.
_ERRORS = tuple(
    (re.compile(p, re.IGNORECASE), c)
    for p, c in (
        (r"watchdog (?:caught collective operation )?timeout", "WATCHDOG_TIMEOUT"),
        (r"timeout waiting for", "TIMEOUT_RENDEZVOUS"),
        (r"unhandled system error", "SYSTEM_ERROR"),
        (r"unhandled cuda error|cuda failure", "CUDA_ERROR"),
        (r"NCCL WARN Connect to", "CONNECT_FAIL"),
        (r"connection refused", "CONN_REFUSED"),
        (r"address already in use", "PORT_CONFLICT"),
        (r"network is unreachable", "NET_UNREACHABLE"),
        (r"fi_getinfo failed|only EFA provider is supported", "EFA_INIT_FAIL"),
        (r"ibv_reg_mr failed", "RDMA_REG_FAIL"),
        (r"no plugin found|could not find:? libnccl-net|libnccl-net[\w.-]*: cannot open", "OFI_LOAD_FAIL"),
        (r"failed to load nccl", "NCCL_LOAD_FAIL"),
        (r"NCCL_OFI_RDMA", "OFI_ERROR"),
        (r"peer access is not supported|P2P not supported between", "P2P_FAIL"),
        (r"call to ncclCommAbort|communicator was aborted", "NCCL_COMM_ABORT"),
        (r"NCCL function not found|incompatible NCCL version", "NCCL_VERSION_MISMATCH"),
        (r"could not find interface", "IFACE_NOT_FOUND"),
        (r"failed to extend /dev/shm", "SHM_FULL"),
        (r"CUDA out of memory|cudaMalloc failed", "CUDA_OOM"),
        (r"\bENOMEM\b", "ENOMEM"),
        (r"Test (?:NCCL |CUDA )?failure", "TEST_FAILURE"),
    )
)
#: Every error pattern at once: one search tells whether a line needs the ordered look-up at all.
_ANY_ERROR = re.compile("|".join(f"(?:{p.pattern})" for p, _ in _ERRORS), re.IGNORECASE)
_TCP = re.compile(r"NET/OFI Using TCP|Using network Socket|via NET/Socket", re.IGNORECASE)
_SOCKET_INIT = re.compile(r"NET/Socket\s*: Using")
_OFI_EFA = re.compile(
    r"NET/OFI (?:Using provider|Selected provider is):? ?efa\b|(?:Using network|via NET/)(?:AWS )?Libfabric",
    re.IGNORECASE,
)
#: The leading (key) columns a result row may have, by their header names.
_LEAD = {"size": "size_bytes", "count": "count", "type": "dtype", "redop": "redop", "root": "root"}
_NEW_LEAD = ("size", "count", "type", "redop", "root")
_OLD_LEAD = ("size", "count", "type", "redop")
_SIDE = ("time", "algbw", "busbw")
#: Data types and reduction ops nccl-tests and rccl-tests print in the ``type`` / ``redop`` columns.
_DTYPES = frozenset({
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "int", "char", "half", "float", "double",
    "bfloat16", "fp8_e4m3", "fp8_e5m2", "f8e4m3", "f8e5m2", "float16", "float32", "float64", "bf16", "fp16",
    "fp32", "fp64",
})  # fmt: skip
_REDOPS = frozenset({"sum", "prod", "max", "min", "avg", "none", "premulsum", "mulsum", "all"})
_ROW_START = re.compile(
    r"^[ \t]*(?:\S+:[ \t]*|\[[^\]]+\][ \t]*)?\d+[ \t]+\d+[ \t]+(?:float|half|bfloat16|double|u?int(?:8|32|64)|"
    r"int|char|fp8\w*|f8\w*)[ \t]+\S+[ \t]+(?:-?\d+[ \t]+)?[\d.]+[ \t]+[\d.]+",
    re.M,
)


def detect(text: str) -> int:
    """Confidence that text is nccl-tests output or an NCCL log (a grep'd excerpt or a prefixed capture too)."""
    if re.search(r"nThread\s+\S+\s+nGpus\s+\S+\s+minBytes", text):
        return 90
    if re.search(
        r"Avg bus bandwidth|out-of-place\s+in-place|size\s+count\s+type\s+(?:redop|root)|nccl-tests version",
        text,
    ):
        return 85
    if re.search(r"Rank\s+\d+ (?:Group\s+\d+\s+)?Pid\s+\d+ on ", text):
        return 80
    if len(_ROW_START.findall(text[:200000])) >= 2:
        return 70  # result rows alone (a grep'd excerpt of the table)
    return 60 if re.search(r"\bNCCL (?:INFO|WARN)\b", text) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse; ``command`` (the manifest's) or a prompt line's command names the collective when the log
    does not."""
    require_text(text)
    raw_lines = text.splitlines()
    # clean_lines takes an mpirun tag off only at column 0: indentation (a doc paste) goes first
    cleaned = clean_lines("\n".join(line.lstrip(" \t") for line in raw_lines))
    state = _State()
    state.last_no = max((i for i, line in enumerate(raw_lines, start=1) if line.strip()), default=0)
    state.text_ends_line = text.endswith(("\n", "\r"))
    commands = [command] if command else []
    for no, cmd in cleaned.commands:
        state.commands[no] = cmd
    for line in cleaned.lines:
        if "<std" in line and (m := _STACKED_MPI.match(line.strip())):
            state.stacked[m.group(0).strip()] = state.stacked.get(m.group(0).strip(), 0) + 1
    for no, line, tag in cleaned.numbered():
        state.line(no, line.strip(), raw_lines[no - 1] if no <= len(raw_lines) else line, tag)
    result = state.finish(text)
    for cmd in commands + list(state.commands.values()):
        if c := _COLLECTIVE.search(cmd):
            for run in result.rows("nccl_run"):
                run["collective"] = run["collective"] or c.group(1)
            break
    return result


def _error_code(text: str) -> str | None:
    if not _ANY_ERROR.search(text):
        return None  # the common case: one search instead of the ordered look-up
    return next((code for pattern, code in _ERRORS if pattern.search(text)), None)


def transport_name(via: str) -> str:
    """The transport of a ``via`` text, without its flags: 'P2P/IPC', 'P2P/CUMEM', 'SHM', 'NET/OFI/0'.

    >>> transport_name("P2P/IPC/read"), transport_name("NET/AWS Libfabric/1(2)/GDRDMA/Shared")
    ('P2P/IPC', 'NET/OFI/1')
    >>> transport_name("direct shared memory"), transport_name("SHM/direct/direct"), transport_name("NET/IB/0")
    ('SHM', 'SHM', 'NET/IB/0')
    >>> transport_name("P2P/direct pointer"), transport_name("NET/Socket/1")
    ('P2P/direct', 'NET/Socket/1')
    """
    parts = [p.strip() for p in via.split("/")]
    head = parts[0].upper()
    if head == "SHM" or "shared memory" in via.lower():
        return "SHM"
    if head == "P2P" and len(parts) > 1 and parts[1].split():
        return f"P2P/{parts[1].split()[0]}"
    if head == "NET" and len(parts) > 1:
        name = "OFI" if parts[1].lower() in ("aws libfabric", "libfabric", "ofi") else parts[1]
        index = re.match(r"\d+", parts[2]) if len(parts) > 2 else None
        return f"NET/{name}/{index.group(0)}" if index else f"NET/{name}"
    return parts[0]


class _Run:
    """One test of the file: a banner or header block and what follows it until the next one."""

    def __init__(self, number: int) -> None:
        self.row: dict[str, Any] = {c.name: None for c in SCHEMA["nccl_run"]}
        self.row["run"] = number
        self.phase = 0  # 1 banner, 2 nThread header, 3 rank lines, 4 table, 5 summary
        self.lead: tuple[str, ...] | None = None  # leading columns named by the table header
        self.last: tuple[str, str] = ("wrong", "wrong")  # name of each side's 4th column
        self.trailing: list[str] = []  # header names after the two sides
        self.net: dict[str, str] = {}
        self.socket_lines: list[dict[str, Any]] = []
        self.results = 0
        self.content = False


class _State:
    """What one pass over the file has seen so far."""

    def __init__(self) -> None:
        self.result = ParseResult(tables={name: [] for name in SCHEMA})
        self.runs = [_Run(1)]
        self.seen_info: set[tuple[int, str | None, str]] = set()
        self.hits = 0
        self.raw = ""
        self.commands: dict[int, str] = {}
        self.stacked: dict[str, int] = {}  # tags stacked before [1,0]<stdout>:, and how many lines carry each
        self.last_no = 0  # the file's last line that is not blank
        self.text_ends_line = True  # whether the file's last line ends with a newline

    @property
    def cur(self) -> _Run:
        return self.runs[-1]

    def start(self, phase: int, after: int) -> _Run:
        """The run a block opening ``phase`` belongs to: a new one when the current run is past ``after``."""
        if self.cur.phase >= after:
            self.runs.append(_Run(len(self.runs) + 1))
        self.cur.phase = max(self.cur.phase, phase)
        self.cur.content = True
        return self.cur

    def line(self, no: int, line: str, raw: str, tag: str | None) -> None:
        self.raw = raw
        line, stacked = self.untag(no, line, raw)
        body = line.lstrip("#").strip()
        if not body:
            return
        self.hits += 1
        # cheap substring and first-character tests first: one specific regex per line, not a cascade
        if self.data_line(no, line, raw, stacked, tag) or self.comment_line(no, line, body, raw, tag):
            return
        self.hits -= 1
        self.other_line(no, line, body, tag)
        if body[0].isdigit() and _ROWISH.match(body) or "Rank" in body and _RANKISH.search(body):
            self.result.issue(no, raw, "line looks like a result or rank line but does not parse")

    def untag(self, no: int, line: str, raw: str) -> tuple[str, str | None]:
        """The line without the tags no launcher pattern took off (a rank tag, a job tag before Open MPI's,
        a prefix before nccl-tests' own '#'), and the stacked tags it had."""
        if line.startswith("[") and (m := _RANK_TAG.match(line)):  # "[0] #  Rank ...": a rank tag
            line = line[m.end() :]
        stacked = None  # tags stacked before nccl-tests' own text that no launcher pattern took off
        if "<std" in line and (m := _STACKED_MPI.match(line)):  # a job tag, then Open MPI's [1,0]<stdout>:
            stacked, line = line[: m.end()].strip(), line[m.end() :].lstrip()
            if self.stacked.get(stacked, 0) < 2 and ("Rank" in line or "nThread" in line):
                # a tag no other line carries is no tag of the capture: said (rows keep it in ``prefix``)
                self.result.issue(no, raw, f"unrecognised text before Open MPI's tag: {stacked!r}")
        if (
            line[:1] != "#"
            and "#" in line
            and (m := _OWN_HASH.search(line))
            and "NCCL " not in line[: m.start()]
        ):
            stacked, line = line[: m.start()].strip(), line[m.start() :]  # "<tag> #  Avg bus bandwidth ..."
        return line, stacked

    def data_line(self, no: int, line: str, raw: str, stacked: str | None, tag: str | None) -> bool:
        """An NCCL log line or a result row (by its first cell, or by its shape behind a prefix)."""
        if "NCCL " in line and (m := _NCCL_SOURCE.match(line) or _NCCL.match(line)):
            self.nccl_line(no, m, tag)
        elif line[0].isdigit() and _ROW.match(line):
            self.hits -= not self.result_row(no, line, raw, stacked or None)
        elif split := _row_at(line):  # a result row by its shape, behind a prefix no launcher took off
            self.hits -= not self.result_row(no, split[1], raw, split[0] or None)
        else:
            return False
        return True

    def comment_line(self, no: int, line: str, body: str, raw: str, tag: str | None) -> bool:
        """The banner, the nThread header, a rank line, the table header, the summary lines."""
        if body[0] in "nC" and (m := _BANNER.match(body)):
            run = self.start(1, 2).row
            if m.group(1):
                run["tests_version"] = m.group(1)
            if m.group(2) and (c := _COLLECTIVE.search(m.group(2))):
                run["collective"] = c.group(1)
            self.other_line(no, line, body, tag)
        elif "nThread" in body and "nGpus" in body:
            self.header(no, body, raw)
        elif "Rank" in body and (m := _RANK.search(body)):
            self.rank(no, body, m, raw)
        elif body.startswith("size") and re.match(r"size\s+count\s+type", body):
            self.table_header(body)
        elif body.startswith("Avg bus bandwidth") and (m := re.match(r"Avg bus bandwidth\s*:\s*(\S+)", body)):
            self.cur.row["avg_busbw_gbps"] = self.number(no, raw, "Avg bus bandwidth", m.group(1), to_float)
            self.cur.phase = 5
        elif body.startswith("Out of bounds") and (m := re.match(r"Out of bounds values\s*:\s*(\S+)", body)):
            self.cur.row["oob_values"] = self.number(no, raw, "Out of bounds values", m.group(1), to_int)
        else:
            return False
        return True

    def number(self, no: int, raw: str, name: str, printed: str | None, convert: Any) -> Any:
        """``printed`` read by ``convert``; a value that should be a number but is not is a ParseIssue."""
        if printed is None:
            return None
        value = convert(printed)
        if value is None and printed.upper() != "N/A":
            self.result.issue(no, raw, f"non-numeric {name} {printed!r}")
        return value

    def header(self, no: int, body: str, raw: str) -> None:
        m = _HEADER.search(body)
        if m is None:
            self.result.issue(no, raw, "line looks like the nThread header but does not parse")
            return
        if prefix := body[: m.start()].strip(" \t#"):
            self.result.issue(no, raw, f"unrecognised text before the nThread header: {prefix!r}")
        run = self.start(2, 2).row
        for key, printed in m.groupdict().items():
            number = key != "step"
            run[key] = self.number(no, raw, f"nThread header {key}", printed, to_int) if number else printed
        run["line"] = no

    def rank(self, no: int, body: str, m: re.Match[str], raw: str) -> None:
        run = self.start(3, 4)
        bus = m["bus"].strip()
        num = {k: self.number(no, raw, f"rank {k}", m[k], to_int) for k in ("rank", "group", "pid", "device")}
        self.result.add("nccl_rank", {
            "line": no, "run": run.row["run"], "rank": num["rank"], "group": num["group"], "pid": num["pid"],
            "host": m["host"], "device": num["device"],
            "bus_id": (pci_address(bus) if ":" in bus else None) or bus or None,
            "gpu_name": m["name"].strip() or None,
        })  # fmt: skip
        if prefix := body[: m.start()].strip(" \t#"):  # no launcher pattern took it off: said, not dropped
            self.result.issue(no, raw, f"unrecognised text before a rank line: {prefix!r}")

    def table_header(self, body: str) -> None:
        run = self.cur
        if run.results:
            run = self.start(4, 4)
        run.phase, run.content = max(run.phase, 4), True
        names = [n.lstrip("#") for n in body.split()]
        first = names.index("time") if "time" in names else len(names)
        run.lead = tuple(n for n in names[:first] if n in _LEAD) or None
        sides = names[first:]
        fourth = [n for n in sides if n not in _SIDE]
        run.last = (
            (fourth[0] if fourth else "wrong"),
            (fourth[1] if len(fourth) > 1 else fourth[0] if fourth else "wrong"),
        )
        run.trailing = sides[8:]

    def event(
        self,
        no: int,
        host: str | None,
        level: str,
        code: str,
        msg: str,
        prefix: str | None = None,
        code_location: str | None = None,
        device: int | None = None,
    ) -> None:
        run = self.cur.row["run"]
        if level == "INFO":  # informative lines repeat per rank and channel: keep the first per host
            if (run, host, code) in self.seen_info:
                return
            self.seen_info.add((run, host, code))
        elif self.cur.row["error_code"] is None and code not in ("WARN",):
            self.cur.row["error_code"] = code
        self.result.add(
            "nccl_log_event",
            {
                "line": no,
                "run": run,
                "host": host,
                "device": device,
                "level": level,
                "code": code,
                "message": msg,
                "prefix": prefix,
                "code_location": code_location,
            },
        )

    def nccl_line(self, no: int, m: re.Match[str], tag: str | None) -> None:
        host, level, msg = m["host"] or _host_tag(tag), m["level"], m["msg"].strip()
        prefix = None  # what the line printed before its host (tags, stamps), as printed
        if m["host"]:
            at = self.raw.find(f"{m['host']}:{m['pid']}:")
            prefix = (self.raw[:at] if at >= 0 else m["pre"] or "").strip() or None
        self.cur.content = True
        self.cur.row["nccl_log_lines"] = (self.cur.row["nccl_log_lines"] or 0) + 1
        if m["host"] and not all(f.isdigit() for f in (m["pid"], m["tid"], m["dev"] or "0")):
            odd = f"{m['host']}:{m['pid']}:{m['tid']} [{m['dev']}]"
            self.result.issue(no, self.raw, f"NCCL log line with a non-numeric pid, tid or device: {odd!r}")
        low = msg.lower()  # substring tests first: most INFO lines need none of the regexes below
        version, provider = self.net_facts(msg, low)
        if msg[:1] in ("C", "R"):
            self.connection(no, msg, host, prefix)
        code = None if level == "INFO" else _error_code(m.group(0))
        if code is None:
            code = self.info_code(no, msg, low, level, host, prefix, version is not None, provider)
        if code is not None:
            device = int(m["dev"]) if m["dev"] and m["dev"].isdigit() else None  # host:pid:tid [cudaDev]
            self.event(no, host, level, code, msg, prefix, _code_location(m["between"], msg), device)

    def net_facts(self, msg: str, low: str) -> tuple[re.Match[str] | None, str | None]:
        """What an NCCL line says of the run: its version, the OFI provider, the network, IB in use; the
        version's match and the provider as printed."""
        net = self.cur.net
        v = _VERSION.search(msg) if "version" in msg else None
        if v:
            self.cur.row["nccl_version"] = self.cur.row["nccl_version"] or v.group(1)
        p = _PROVIDER.search(msg) if "NET/OFI" in msg else None
        if p:
            net.setdefault("provider", p.group(1).rstrip(",").lower())
        for key, pattern in (("network", _NETWORK), ("via", _VIA)):
            if key in low and (n := pattern.search(msg)):
                net.setdefault(key, n.group(1).lower())
        if "NET/IB" in msg and re.search(r"NET/IB\s*: Using \[", msg):
            net.setdefault("ib", "yes")
        return v, p.group(1) if p else None

    def connection(self, no: int, msg: str, host: str | None, prefix: str | None) -> None:
        """A ``Channel``/``Ring`` connection line: a transport row, or an issue when it does not read."""
        if c := _CHANNEL.match(msg):
            self.result.add("nccl_transport", {
                "line": no, "run": self.cur.row["run"], "host": host, "channel": int(c["ch"]),
                "conn": to_int(c["conn"]), "src_rank": int(c["src"]), "src_dev": c["sdev"],
                "dst_rank": int(c["dst"]), "dst_dev": c["ddev"],
                "direction": {"recv": "receive"}.get(c["dir"], c["dir"]),
                "transport": transport_name(c["via"]), "via": c["via"], "prefix": prefix,
            })  # fmt: skip
        elif re.match(r"(?:Channel|Ring)\s+\d+", msg) and "->" in msg:
            cut = not re.search(r"\bvia\s+\S", msg)  # with a via, a field before it is not what it should be
            why = "without a readable 'via' (cut?)" if cut else "does not parse"
            self.result.issue(no, self.raw, f"Channel/Ring connection line {why}")

    def info_code(
        self,
        no: int,
        msg: str,
        low: str,
        level: str,
        host: str | None,
        prefix: str | None,
        version: bool,
        provider: str | None,
    ) -> str | None:
        """The code of a line without an error code of its own: TCP fallback, OFI over EFA, the version, a
        warning; NET/Socket lines kept until the run's transport is known."""
        net = self.cur.net
        if ("tcp" in low or "socket" in low) and _TCP.search(msg) or (provider and "tcp" in provider.lower()):
            return "TCP_FALLBACK"
        if (
            ("net/ofi" in low or "libfabric" in low)
            and _OFI_EFA.search(msg)
            and "tcp" not in net.get("provider", "")
        ):
            return "OFI_EFA"
        if version:
            return "NCCL_VERSION"
        if "NET/Socket" in msg and _SOCKET_INIT.search(msg):
            self.cur.socket_lines.append(
                {"line": no, "host": host, "level": level, "message": msg, "prefix": prefix}
            )
            return None
        return "WARN" if level != "INFO" else None

    def other_line(self, no: int, line: str, body: str, tag: str | None) -> None:
        run = self.cur.row
        if run["collective"] is None and "_perf" in body and (c := _COLLECTIVE.search(body)):
            run["collective"] = c.group(1)
        if "NCCL version" in body and (v := _VERSION.search(body)):
            run["nccl_version"] = run["nccl_version"] or v.group(1)
        if "nccl-library=" in body and (v := _LIB_CODE.search(body)):
            num = int(v.group(1))
            version = f"{num // 10000}.{num // 100 % 100}.{num % 100}"
            run["nccl_version"] = run["nccl_version"] or version
        if code := _error_code(line):
            host = re.match(
                r"(?:\.\.\s*)?([\w.-]+)(?::\s*|\s+pid\s+\d+:\s*)Test (?:NCCL |CUDA )?failure", body
            )
            self.cur.content = True
            self.hits += 1
            self.event(no, host.group(1) if host else _host_tag(tag), "ERROR", code, body)

    def result_row(self, no: int, line: str, raw: str, prefix: str | None = None) -> bool:
        run = self.cur
        if run.phase == 5:  # rows after a summary without a new header: another test
            run = self.start(4, 4)
        run.phase, run.content = max(run.phase, 4), True
        tokens = line.split()
        lead = run.lead
        if lead is None:
            lead = _NEW_LEAD if len(tokens) >= 13 and to_int(tokens[4]) is not None else _OLD_LEAD
        rest = tokens[len(lead) :]
        cut = len(rest) < 8
        if cut:
            if no == self.last_no and not self.text_ends_line:
                tokens, rest = tokens[:-1], rest[:-1]  # the last cell of a cut file may itself be cut
            if len(tokens) < len(lead):
                self.result.issue(no, raw, f"incomplete result row ({len(tokens)} columns)")
                return False
            self.result.issue(
                no,
                raw,
                f"result row cut after {len(tokens)} complete columns: the cells after them are empty",
            )
            rest = rest + ["N/A"] * (8 - len(rest))
        row: dict[str, Any] = {c.name: None for c in SCHEMA["nccl_result"]}
        row.update(line=no, run=run.row["run"], prefix=prefix)
        for name, cell in zip(lead, tokens, strict=False):
            col = _LEAD[name]
            row[col] = to_int(cell) if col in ("size_bytes", "count", "root") else cell
        if row["size_bytes"] is None or row["count"] is None:
            lead_cells = f"size {tokens[0]!r}, count {tokens[1]!r}"
            self.result.issue(no, raw, f"line looks like a result row but does not parse: {lead_cells}")
            return False
        for side, cells, last in (("oop", rest[0:4], run.last[0]), ("ip", rest[4:8], run.last[1])):
            values = [to_float(c) for c in cells]
            if any(v is None and c.upper() != "N/A" for v, c in zip(values, cells, strict=True)):
                self.result.issue(no, raw, f"non-numeric {side} cell in result row")
                return False
            for name, value in zip(("time_us", "algbw_gbps", "busbw_gbps"), values, strict=False):
                row[f"{side}_{name}"] = value
            if last == "error" or (run.lead is None and lead == _OLD_LEAD):
                row[f"{side}_error"] = values[3]
            else:
                row[f"{side}_wrong"] = to_int(cells[3])
        if extra := rest[8:]:
            names = run.trailing + [f"col{len(tokens) - len(extra) + i + 1}" for i in range(len(extra))]
            row["extra"] = json.dumps(dict(zip(names, extra, strict=False)))
        self.result.add("nccl_result", row)
        run.results += 1
        return True

    @staticmethod
    def transport(net: dict[str, str], socket_lines: list[dict[str, Any]]) -> str | None:
        provider = net.get("provider", "")
        ofi = "ofi-tcp" if "tcp" in provider else "ofi-efa" if "efa" in provider or not provider else "ofi"
        names = {"aws libfabric": ofi, "libfabric": ofi, "ofi": ofi, "socket": "socket", "ib": "ib"}
        if "network" in net:
            return names[net["network"]]
        if provider:
            return ofi
        if "via" in net:
            return names[net["via"]]
        return "ib" if "ib" in net else "socket" if socket_lines else None

    def finish(self, text: str) -> ParseResult:
        result = self.result
        if (
            not self.hits
            and not any(r.net or r.socket_lines for r in self.runs)
            and not result.rows("nccl_log_event")
        ):
            if re.search(r"error while loading shared libraries|cannot open shared object", text):
                raise CollectorError(text.strip().splitlines()[0][:300])
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")[:120]
            raise ParseError(
                "expected nccl-tests output (a '# nThread ... nGpus' header, '#  Rank N ... Pid' lines, a"
                f" 'size count type' table) or NCCL INFO/WARN lines; first line seen: {first!r}"
            )
        runs = [r for r in self.runs if r.content] or self.runs[:1]
        if len(runs) < len(self.runs):  # renumber when an empty run was opened and never filled
            renumber = {r.row["run"]: i for i, r in enumerate(runs, start=1)}
            for table in SCHEMA:
                for row in result.tables[table]:
                    row["run"] = renumber.get(row["run"], row["run"])
            for i, r in enumerate(runs, start=1):
                r.row["run"] = i
        self.transports(runs)
        result.tables["nccl_log_event"].sort(key=lambda e: e["line"])
        self.run_rows(runs)
        return result

    def transports(self, runs: list[_Run]) -> None:
        """Each run's network transport and provider: its own lines', else the file's."""
        file_net = {k: v for r in runs for k, v in reversed(list(r.net.items()))}
        file_socket = [s for r in runs for s in r.socket_lines]
        for r in runs:
            own = self.transport(r.net, r.socket_lines)
            transport = own or self.transport(file_net, file_socket)
            if transport == "socket":  # NET/Socket was not just initialised: it carried the traffic
                for ev in r.socket_lines:
                    self.cur_run_event(r, ev)
            r.row.update(
                net_transport=transport, net_provider=r.net.get("provider") or file_net.get("provider")
            )

    def run_rows(self, runs: list[_Run]) -> None:
        """The nccl_run rows: each run's first line, its ranks and hosts, its results, whether it was cut."""
        result = self.result
        ranks_of: dict[int, list[dict[str, Any]]] = {}
        for k in result.rows("nccl_rank"):
            ranks_of.setdefault(k["run"], []).append(k)
        first_line: dict[int, int] = {}  # run -> first rank/result/event line, one pass per table
        for table in ("nccl_rank", "nccl_result", "nccl_log_event"):
            for x in result.rows(table):
                first_line[x["run"]] = min(first_line.get(x["run"], x["line"]), x["line"])
        for r in runs:
            number = r.row["run"]
            ranks = ranks_of.get(number, [])
            hosts = list(dict.fromkeys(k["host"] for k in ranks))
            run = r.row
            run.update(line=run["line"] or first_line.get(number, 1), n_ranks=len(ranks), n_hosts=len(hosts))
            run.update(hosts=",".join(hosts) or None, n_results=r.results)
            run["truncated"] = run["avg_busbw_gbps"] is None
            result.add("nccl_run", run)

    def cur_run_event(self, run: _Run, ev: dict[str, Any]) -> None:
        key = (run.row["run"], ev["host"], "TCP_FALLBACK")
        if key in self.seen_info:
            return
        self.seen_info.add(key)
        self.result.add("nccl_log_event", {
            "line": ev["line"], "run": run.row["run"], "host": ev["host"], "device": None, "level": ev["level"],
            "code": "TCP_FALLBACK", "message": ev["message"], "prefix": ev["prefix"], "code_location": None,
        })  # fmt: skip


def _row_at(line: str) -> tuple[str, str] | None:
    """(prefix, row) when ``line`` has the shape of a result row: a dtype word third (``float``, ``bfloat16``),
    two number-like cells before it, a redop or a root after it; the prefix is the text before, as printed.

    >>> _row_at("[1,0]<out>:  8  2  float  sum  -1  1.2"), _row_at("8q 2 half 0 45.82")
    (('[1,0]<out>:', '8  2  float  sum  -1  1.2'), ('', '8q 2 half 0 45.82'))
    >>> _row_at("size count type redop root") is None, _row_at("a b float x") is None
    (True, True)
    """
    tokens = line.split()
    for i in range(2, min(len(tokens) - 1, 6)):
        if tokens[i].lower() not in _DTYPES:
            continue
        a, b, after = tokens[i - 2], tokens[i - 1], tokens[i + 1]
        if not (_has_digit(a) and _has_digit(b) and (after.lower() in _REDOPS or _has_digit(after))):
            return None
        row = line.split(None, i - 2)[-1] if i > 2 else line
        return line[: len(line) - len(row)].strip(), row
    return None


def _code_location(between: str | None, msg: str) -> str | None:
    """The source place an NCCL log line names: before ``NCCL WARN`` or, in parentheses, at its end.

    >>> _code_location("misc/socket.cc:484", "x"), _code_location(None, "Call to connect failed (net.cc:77)")
    ('misc/socket.cc:484', 'net.cc:77')
    >>> _code_location("[transport/net_ib.cc:123]", "x"), _code_location("some text", "x") is None
    ('transport/net_ib.cc:123', True)
    """
    if between and (m := _CODE_AT.search(between.strip())):
        return m.group("at")
    m = _CODE_END.search(msg)
    return m.group("at") if m else None


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _host_tag(tag: str | None) -> str | None:
    """A launcher tag that names a host (pdsh ``node1: ``, a pod), not an srun rank number."""
    if not tag or tag.isdigit() or "," in tag:
        return None
    return tag.split("/")[-2] if tag.count("/") >= 1 else tag  # kubectl: pod/NAME/container -> NAME
