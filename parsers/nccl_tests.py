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

Accepted: the new layout (``root`` and ``#wrong`` columns) and the old one (no ``root``, a float
``error`` column); ``N/A`` cells; integer times above 10 ms; extra trailing columns (bitwise check,
timestamps) are ignored.  Paste artefacts: markdown ``> `` and stripped ``#``, ``[1,0]<stdout>:``
prefixes, indentation, ``...`` lines, NCCL log lines from several hosts interleaved with the table,
a log cut mid-table (``truncated``).

Schema
------
``nccl_run`` (exactly one row):

- ``line`` int — line of the ``nThread`` header (else the first rank/result line, else 1)
- ``collective`` str — ``all_reduce``, ``all_gather``, ... from the banner or command line; null if absent
- ``nthread``, ``ngpus`` int; ``min_bytes``, ``max_bytes`` int, bytes; ``step`` str as printed (``2(factor)``)
- ``iters``, ``warmup_iters`` int; ``check`` int — the ``validation:`` flag
- ``n_ranks`` int — rank lines printed; ``n_hosts`` int; ``hosts`` str — distinct hosts, comma-joined,
  in rank order
- ``nccl_version`` str — ``2.18.3`` (from ``NCCL version`` or ``nccl-library=21803``)
- ``net_transport`` str — ``ofi-efa``, ``ofi-tcp``, ``ofi``, ``socket``, ``ib``; null when the log does not say
- ``net_provider`` str — libfabric provider named by aws-ofi-nccl (``efa``, ``tcp;ofi_rxm``)
- ``avg_busbw_gbps`` float, GB/s — the ``# Avg bus bandwidth`` line (averages tiny sizes in: use results)
- ``oob_values`` int — ``# Out of bounds values``; ``truncated`` bool — no ``Avg bus bandwidth`` line

``nccl_rank`` (one row per ``Rank`` line): ``line`` int, ``rank`` int, ``group`` int (null on old
output), ``pid`` int, ``host`` str, ``device`` int, ``bus_id`` str (``dddd:bb:dd.f`` when printed as a
PCI address, else as printed, e.g. ``0x10``), ``gpu_name`` str.

``nccl_result`` (one row per size): ``line`` int, ``size_bytes`` int, ``count`` int, ``dtype`` str,
``redop`` str, ``root`` int (null on the old layout); for out-of-place (``oop_``) and in-place (``ip_``):
``time_us`` float, µs; ``algbw_gbps`` / ``busbw_gbps`` float, GB/s; ``wrong`` int (null for ``N/A``
and on the old layout); ``error`` float (old layout only).

``nccl_log_event`` (NCCL WARN lines, error lines, and the first INFO line of each informative kind per
host): ``line`` int, ``host`` str, ``level`` str (INFO/WARN/ERROR; ERROR = a non-NCCL line matching an
error pattern), ``code`` str, ``message`` str.  Codes follow rules-facts §5: TCP_FALLBACK, OFI_EFA,
NCCL_VERSION, WATCHDOG_TIMEOUT, TIMEOUT_RENDEZVOUS, SYSTEM_ERROR, CUDA_ERROR, CONNECT_FAIL,
CONN_REFUSED, EFA_INIT_FAIL, OFI_LOAD_FAIL, RDMA_REG_FAIL, ... and WARN for any other warning.
``NET/Socket : Using`` lines count as TCP_FALLBACK only when the run's transport resolved to socket.

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

import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import pci_address, strip_prefix, to_float, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nccl-tests",
    title="nccl-tests output (all_reduce_perf, ...) with NCCL log lines",
    commands=("mpirun ... all_reduce_perf -b 8 -e 16G -f 2 -g 1",),
    tables=("nccl_run", "nccl_rank", "nccl_result", "nccl_log_event"),
    versions_seen=("nccl-tests 2019 (error column)", "nccl-tests 2.x (root, #wrong)", "NCCL 2.7-2.23"),
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
        "line:int collective:str nthread:int ngpus:int min_bytes:int max_bytes:int step:str iters:int "
        "warmup_iters:int check:int n_ranks:int n_hosts:int hosts:str nccl_version:str net_transport:str "
        "net_provider:str avg_busbw_gbps:float oob_values:int truncated:bool"
    ),
    "nccl_rank": _cols("line:int rank:int group:int pid:int host:str device:int bus_id:str gpu_name:str"),
    "nccl_result": _cols(
        "line:int size_bytes:int count:int dtype:str redop:str root:int "
        + " ".join(f"{side}_{col}" for side in ("oop", "ip") for col in _SIDE_COLS.split())
    ),
    "nccl_log_event": _cols("line:int host:str level:str code:str message:str"),
}

_HEADER = re.compile(
    r"nThread (?P<nthread>\d+) nGpus (?P<ngpus>\d+) minBytes (?P<min_bytes>\d+) maxBytes (?P<max_bytes>\d+) "
    r"step: (?P<step>\S+) warmup iters: (?P<warmup_iters>\d+) iters: (?P<iters>\d+)"
    r"(?: agg iters: \d+)? validation: (?P<check>\d+)"
)
_RANK = re.compile(
    r"Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)"
)
_ROW = re.compile(r"^\d+\s+\d+\s+[A-Za-z]\w*\s+\S+")
_NCCL = re.compile(
    r"^(?:(?P<host>[\w.-]+):\d+:\d+\s+\[\d+\]\s+)?(?:.*?\s)?NCCL (?P<level>INFO|WARN|ERROR)\b\s*(?P<msg>.*)"
)
_COLLECTIVE = re.compile(r"\b([a-z][a-z_]*?)_perf(?:_mpi)?\b")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_LIB_CODE = re.compile(r"nccl-library=(\d{5,})")
_PROVIDER = re.compile(r"NET/OFI (?:Using provider:?|Selected [Pp]rovider is:?)\s*(\S+)")
_NETWORK = re.compile(r"Using network (AWS Libfabric|Libfabric|Socket|IB)\b", re.IGNORECASE)
_VIA = re.compile(r"via NET/(AWS Libfabric|Libfabric|Socket|IB)\b", re.IGNORECASE)
#: (pattern, code) — first match wins; substrings from rules-facts §5, matched case-insensitively.
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
        (r"Test (?:NCCL|CUDA) failure", "TEST_FAILURE"),
    )
)
_TCP = re.compile(r"NET/OFI Using TCP|Using network Socket|via NET/Socket", re.IGNORECASE)
_SOCKET_INIT = re.compile(r"NET/Socket\s*: Using")
_OFI_EFA = re.compile(
    r"NET/OFI (?:Using provider|Selected provider is):? ?efa\b|(?:Using network|via NET/)(?:AWS )?Libfabric",
    re.IGNORECASE,
)


def detect(text: str) -> int:
    """Confidence that text is nccl-tests output or an NCCL log."""
    if re.search(r"nThread \d+ nGpus \d+ minBytes", text):
        return 90
    if re.search(r"Avg bus bandwidth|out-of-place\s+in-place|size\s+count\s+type\s+redop", text):
        return 85
    if re.search(r"Rank\s+\d+ (?:Group\s+\d+\s+)?Pid\s+\d+ on ", text):
        return 80
    return 60 if re.search(r"\bNCCL (?:INFO|WARN)\b", text) else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    state = _State()
    for no, raw in enumerate(text.splitlines(), start=1):
        state.line(no, _clean(raw), raw)
    return state.finish(text)


def _clean(raw: str) -> str:
    line = raw.strip()
    for _ in range(3):
        line, before = strip_prefix(line).strip(), line
        if line == before:
            break
    return line


def _error_code(text: str) -> str | None:
    return next((code for pattern, code in _ERRORS if pattern.search(text)), None)


class _State:
    """What one pass over the file has seen so far."""

    def __init__(self) -> None:
        self.result = ParseResult(tables={name: [] for name in SCHEMA})
        self.run: dict[str, Any] = {c.name: None for c in SCHEMA["nccl_run"]}
        self.net: dict[str, str] = {}
        self.socket_lines: list[dict[str, Any]] = []
        self.seen_info: set[tuple[str | None, str]] = set()
        self.layout: str | None = None
        self.hits = 0

    def line(self, no: int, line: str, raw: str) -> None:
        body = line.lstrip("#").strip()
        if not body or body in ("...", "…"):
            return
        self.hits += 1
        if m := _NCCL.match(line):
            self.nccl_line(no, m)
        elif _ROW.match(line):
            self.hits -= not self.result_row(no, line, raw)
        elif m := _HEADER.search(body):
            self.run.update({k: v if k == "step" else int(v) for k, v in m.groupdict().items()}, line=no)
        elif m := _RANK.match(body):
            bus = m["bus"].strip()
            self.result.add("nccl_rank", {
                "line": no, "rank": int(m["rank"]), "group": to_int(m["group"]), "pid": int(m["pid"]),
                "host": m["host"], "device": int(m["device"]),
                "bus_id": (pci_address(bus) if ":" in bus else None) or bus or None,
                "gpu_name": m["name"].strip() or None,
            })  # fmt: skip
        elif re.match(r"size\s+count\s+type", body):
            self.layout = "new" if " root " in f" {body} " else "old"
        elif m := re.match(r"Avg bus bandwidth\s*:\s*(\S+)", body):
            self.run["avg_busbw_gbps"] = to_float(m.group(1))
        elif m := re.match(r"Out of bounds values\s*:\s*(\d+)", body):
            self.run["oob_values"] = int(m.group(1))
        else:
            self.hits -= 1
            self.other_line(no, line, body)

    def event(self, no: int, host: str | None, level: str, code: str, msg: str) -> None:
        if level == "INFO":  # informative lines repeat per rank and channel: keep the first per host
            if (host, code) in self.seen_info:
                return
            self.seen_info.add((host, code))
        self.result.add(
            "nccl_log_event", {"line": no, "host": host, "level": level, "code": code, "message": msg}
        )

    def nccl_line(self, no: int, m: re.Match[str]) -> None:
        host, level, msg, net = m["host"], m["level"], m["msg"].strip(), self.net
        if v := _VERSION.search(msg):
            self.run["nccl_version"] = self.run["nccl_version"] or v.group(1)
        if p := _PROVIDER.search(msg):
            net.setdefault("provider", p.group(1).rstrip(",").lower())
        for key, pattern in (("network", _NETWORK), ("via", _VIA)):
            if n := pattern.search(msg):
                net.setdefault(key, n.group(1).lower())
        if re.search(r"NET/IB\s*: Using \[", msg):
            net.setdefault("ib", "yes")
        code = None if level == "INFO" else _error_code(m.group(0))
        if code is None:
            if _TCP.search(msg) or (p and "tcp" in p.group(1).lower()):
                code = "TCP_FALLBACK"
            elif _OFI_EFA.search(msg) and "tcp" not in net.get("provider", ""):
                code = "OFI_EFA"
            elif v:
                code = "NCCL_VERSION"
            elif _SOCKET_INIT.search(msg):
                self.socket_lines.append({"line": no, "host": host, "level": level, "message": msg})
            elif level != "INFO":
                code = "WARN"
        if code is not None:
            self.event(no, host, level, code, msg)

    def other_line(self, no: int, line: str, body: str) -> None:
        if self.run["collective"] is None and (c := _COLLECTIVE.search(body)):
            self.run["collective"] = c.group(1)
        if v := _VERSION.search(body):
            self.run["nccl_version"] = self.run["nccl_version"] or v.group(1)
        if v := _LIB_CODE.search(body):
            num = int(v.group(1))
            version = f"{num // 10000}.{num // 100 % 100}.{num % 100}"
            self.run["nccl_version"] = self.run["nccl_version"] or version
        if code := _error_code(line):
            host = re.match(r"([\w.-]+): Test (?:NCCL|CUDA) failure", body)
            self.event(no, host.group(1) if host else None, "ERROR", code, body)

    def result_row(self, no: int, line: str, raw: str) -> bool:
        tokens = line.split()
        new = self.layout == "new" or (
            self.layout is None and len(tokens) >= 13 and to_int(tokens[4]) is not None
        )
        rest = tokens[5:] if new else tokens[4:]
        if len(rest) < 8:
            self.result.issue(no, raw, f"incomplete result row ({len(tokens)} columns)")
            return False
        row: dict[str, Any] = {c.name: None for c in SCHEMA["nccl_result"]}
        row.update(line=no, size_bytes=int(tokens[0]), count=int(tokens[1]), dtype=tokens[2], redop=tokens[3])
        row["root"] = to_int(tokens[4]) if new else None
        for side, cells in (("oop", rest[0:4]), ("ip", rest[4:8])):
            values = [to_float(c) for c in cells]
            if any(v is None and c.upper() != "N/A" for v, c in zip(values, cells, strict=True)):
                self.result.issue(no, raw, f"non-numeric {side} cell in result row")
                return False
            for name, value in zip(("time_us", "algbw_gbps", "busbw_gbps"), values, strict=False):
                row[f"{side}_{name}"] = value
            row[f"{side}_wrong" if new else f"{side}_error"] = to_int(cells[3]) if new else values[3]
        self.result.add("nccl_result", row)
        return True

    def transport(self) -> str | None:
        provider = self.net.get("provider", "")
        ofi = "ofi-tcp" if "tcp" in provider else "ofi-efa" if "efa" in provider or not provider else "ofi"
        names = {"aws libfabric": ofi, "libfabric": ofi, "socket": "socket", "ib": "ib"}
        if "network" in self.net:
            return names[self.net["network"]]
        if provider:
            return ofi
        if "via" in self.net:
            return names[self.net["via"]]
        return "ib" if "ib" in self.net else "socket" if self.socket_lines else None

    def finish(self, text: str) -> ParseResult:
        result, run = self.result, self.run
        if not (self.hits or self.net or self.socket_lines or result.rows("nccl_log_event")):
            if re.search(r"error while loading shared libraries|cannot open shared object", text):
                raise CollectorError(text.strip().splitlines()[0][:300])
            raise ParseError("no nccl-tests header, rank line, result row or NCCL log line found")
        transport = self.transport()
        if transport == "socket":  # NET/Socket was not just initialised: it carried the traffic
            for ev in self.socket_lines:
                self.event(ev["line"], ev["host"], ev["level"], "TCP_FALLBACK", ev["message"])
            result.tables["nccl_log_event"].sort(key=lambda e: e["line"])
        ranks = result.rows("nccl_rank")
        hosts = list(dict.fromkeys(r["host"] for r in ranks))
        firsts = [
            t[0]["line"] for t in (ranks, result.rows("nccl_result"), result.rows("nccl_log_event")) if t
        ]
        run.update(line=run["line"] or min(firsts, default=1), n_ranks=len(ranks), n_hosts=len(hosts))
        run.update(
            hosts=",".join(hosts) or None, net_transport=transport, net_provider=self.net.get("provider")
        )
        run["truncated"] = run["avg_busbw_gbps"] is None
        result.add("nccl_run", run)
        return result
