"""PyTorch flight-recorder dumps: one rank's last collectives, per process group, with their state.

PyTorch's ProcessGroupNCCL keeps the last ``TORCH_NCCL_TRACE_BUFFER_SIZE`` (``TORCH_FR_BUFFER_SIZE``)
collectives of a rank in memory and, on a watchdog timeout, writes them to one file per rank::

    TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \\
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/fsx/fr/job-48213_rank_ torchrun ... train.py

(default prefix ``/tmp/nccl_trace_rank_``, ``TORCH_FR_DUMP_TEMP_FILE`` in newer releases; the rank is the
number the file name ends with, as PyTorch's ``fr_trace`` analyzer reads it).  The file is a pickle
(protocol 2, written by ``torch::jit::Pickler`` from plain dicts, lists, tuples, strings, numbers, booleans
and None); ``dump_nccl_trace_json`` (``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``, the control plane's
``dump_nccl_trace_json`` handler) writes the same document as JSON, its counters as strings.

Sample (hand-written: the JSON form of the flight-recorder tutorial's example dump, one entry)::

    {"version": "2.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
     "pg_status": {"0": {"last_enqueued_collective": "2", "last_started_collective": "-1",
     "last_completed_collective": "2"}}, "entries": [{"record_id": 0, "pg_id": 0,
     "process_group": ["0", "default_pg"], "collective_seq_id": 1, "p2p_seq_id": 0, "op_id": 1,
     "profiling_name": "nccl:all_reduce", "time_created_ns": 1724779239936775119, "input_sizes": [[3, 4]],
     "input_dtypes": ["Float"], "output_sizes": [[3, 4]], "output_dtypes": ["Float"], "state": "completed",
     "time_discovered_started_ns": 0, "time_discovered_completed_ns": 1724779239975811724, "retired": true,
     "timeout_ms": 600000, "is_p2p": false}]}

A dump is untrusted input written on another machine: it is never loaded with ``pickle.load``.  Its
opcodes are first listed (``pickletools.genops``, which decodes and runs nothing): an opcode that names
or calls anything (``GLOBAL``, ``STACK_GLOBAL``, ``REDUCE``, ``BUILD``, ``INST``, ``OBJ``, ``NEWOBJ``,
``PERSID``, ``EXT*``) or makes bytes or sets refuses the file, with the opcode named; then an
``Unpickler`` whose ``find_class`` and ``persistent_load`` refuse everything builds the values, and a walk
checks that they are dicts, lists, tuples, strings, numbers, booleans and None only.  Files over
MAX_DUMP_BYTES, and more than MAX_ENTRIES entries, are refused too.

Every version of the layout is read by key (``version`` "1.x" to "2.10"): entries with ``record_id``,
``pg_id``, ``process_group`` (name, description), ``collective_seq_id``, ``p2p_seq_id``, ``op_id``,
``profiling_name`` (``nccl:all_reduce``, ``nccl:send 1->2``), ``time_created_ns``, ``input_sizes`` /
``output_sizes`` / ``*_dtypes``, ``state`` (scheduled, started, completed),
``time_discovered_started_ns`` / ``time_discovered_completed_ns`` (None, or 0 in the JSON form, when
not seen), ``retired``, ``timeout_ms`` (2.2+), ``is_p2p``, ``duration_ms`` (with
``TORCH_NCCL_ENABLE_TIMING``), ``frames``, ``thread_name`` (2.8+); ``pg_config`` (each group's name,
description and ``ranks`` as the text ``"[0, 1]"``); ``pg_status`` (2.3+: per group id, its last
enqueued, started and completed collective); ``comm_lib_version`` / ``nccl_version``.  Times are
nanoseconds since the epoch (``c10::getTime``, the system clock): UTC.

A dump cut short (a job killed while writing) keeps what is known (its rank, from the file name) and says
so (``status`` cut): its entries cannot be read.  A dump without entries is ``empty``.

Schema
------
``fr_dump`` (one row per file): ``rank`` int — global rank, from the file name's last number (null when
it ends in none); ``format`` str — pickle or json; ``version`` str — the dump's format version;
``status`` str — ok, empty (no entries) or cut (the file ends before its end); ``entries`` int;
``groups`` int — process groups in ``pg_config``; ``comm_lib_version`` str; ``first_created_ns`` int,
``last_created_ns`` int — the first and last entry's creation time; ``last_activity_ns`` int — the latest
time the dump records (created, started or completed); ``timeout_ms`` int — the smallest entry timeout;
``bytes`` int — the file's size.

``fr_entry`` (one row per entry): ``rank`` int; ``entry`` int — its place in ``entries`` (1 = oldest);
``record_id`` int; ``pg_id`` int; ``pg_name`` str; ``pg_desc`` str; ``collective_seq_id`` int;
``p2p_seq_id`` int; ``op_id`` int; ``profiling_name`` str — as printed; ``op`` str — the operation
(``all_reduce``, ``send``); ``is_p2p`` bool; ``state`` str; ``time_created_ns`` int;
``time_started_ns`` int, ``time_completed_ns`` int — when the CPU saw it start and complete (null when
not seen); ``duration_ms`` float; ``timeout_ms`` int; ``retired`` bool; ``input_sizes`` str,
``output_sizes`` str — the sizes as JSON text (``[[3, 4]]``); ``input_dtypes`` str, ``output_dtypes``
str — comma-joined; ``numel_in`` int, ``numel_out`` int — elements in, out; ``frame`` str — the
innermost frame of the stack recorded (``all_reduce at .../distributed_c10d.py:2696``);
``thread_name`` str.

``fr_group`` (one row per process group of ``pg_config``): ``rank`` int; ``pg_name`` str; ``pg_desc``
str; ``ranks`` str — as printed; ``size`` int — ranks in it (null when ``ranks`` is not a list of
numbers).

``fr_pg_status`` (one row per group of ``pg_status``): ``rank`` int; ``pg_id`` int; ``pg_name`` str —
from the entries of that id; ``last_enqueued`` int, ``last_started`` int, ``last_completed`` int
(-1: none).

A bad entry (not a dict, a field of the wrong type) keeps what it says and is a ParseIssue whose
``line_no`` is 0 (a dump has no lines) and whose reason names the entry.

Examples
--------
>>> r = parse(SAMPLE, filename="extra/nccl_trace_rank_1")
>>> d = r.rows("fr_dump")[0]
>>> d["rank"], d["format"], d["version"], d["status"], d["entries"]
(1, 'json', '2.5', 'ok', 1)
>>> e = r.rows("fr_entry")[0]
>>> e["pg_desc"], e["collective_seq_id"], e["op"], e["state"], e["time_started_ns"], e["numel_in"]
('default_pg', 1, 'all_reduce', 'completed', None, 12)
>>> r.rows("fr_pg_status")[0]["last_completed"], r.rows("fr_group")[0]["size"]
(2, 2)
"""

from __future__ import annotations

import io
import json
import math
import pickle
import pickletools
import re
from collections.abc import Mapping
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="flight-recorder",
    title="PyTorch flight-recorder dump (one rank's collectives: pickle or JSON)",
    commands=(
        "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 torchrun ... "
        "(writes /tmp/nccl_trace_rank_<rank>)",
        "torch._C._distributed_c10d._dump_nccl_trace_json()",
    ),
    tables=("fr_dump", "fr_entry", "fr_group", "fr_pg_status"),
    versions_seen=(
        "TraceUtils.h / NCCLUtils.hpp 2.0-2.4 (PyTorch 2.3-2.5)",
        "FlightRecorder.hpp 2.5-2.10 (PyTorch 2.6 and after)",
        "JSON form (dump_nccl_trace_json)",
    ),
    not_collected_because=(
        "a job's dumps are written by the job on a timeout, one per rank: the user adds them "
        "(collector.sh --add /tmp/nccl_trace_rank_3, a cluster bundle's extra/), recognised by content"
    ),
)


def _cols(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*item.split(":")) for item in spec.split())


SCHEMA = {
    "fr_dump": _cols(
        "rank:int format:str version:str status:str entries:int groups:int comm_lib_version:str "
        "first_created_ns:int last_created_ns:int last_activity_ns:int timeout_ms:int bytes:int"
    ),
    "fr_entry": _cols(
        "rank:int entry:int record_id:int pg_id:int pg_name:str pg_desc:str collective_seq_id:int "
        "p2p_seq_id:int op_id:int profiling_name:str op:str is_p2p:bool state:str time_created_ns:int "
        "time_started_ns:int time_completed_ns:int duration_ms:float timeout_ms:int retired:bool "
        "input_sizes:str output_sizes:str input_dtypes:str output_dtypes:str numel_in:int numel_out:int "
        "frame:str thread_name:str"
    ),
    "fr_group": _cols("rank:int pg_name:str pg_desc:str ranks:str size:int"),
    "fr_pg_status": _cols(
        "rank:int pg_id:int pg_name:str last_enqueued:int last_started:int last_completed:int"
    ),
}

#: A dump bigger than this is refused (2000 entries with their stacks take a few MB).
MAX_DUMP_BYTES = 128 * 1024**2
#: Entries read of one dump (PyTorch keeps 2000 by default).
MAX_ENTRIES = 200_000
#: Values (containers and scalars) a dump may hold, all told.
MAX_VALUES = 50_000_000

#: The opcodes of plain values: containers, strings, numbers, booleans, None, the memo and the stack.
_PLAIN_OPCODES = frozenset(
    [
        "PROTO",
        "FRAME",
        "STOP",
        "MARK",
        "POP",
        "POP_MARK",
        "DUP",
        "EMPTY_DICT",
        "DICT",
        "SETITEM",
        "SETITEMS",
        "EMPTY_LIST",
        "LIST",
        "APPEND",
        "APPENDS",
        "EMPTY_TUPLE",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "UNICODE",
        "BINUNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE8",
        "STRING",
        "BINSTRING",
        "SHORT_BINSTRING",
        "INT",
        "BININT",
        "BININT1",
        "BININT2",
        "LONG",
        "LONG1",
        "LONG4",
        "FLOAT",
        "BINFLOAT",
        "NONE",
        "NEWTRUE",
        "NEWFALSE",
        "PUT",
        "BINPUT",
        "LONG_BINPUT",
        "MEMOIZE",
        "GET",
        "BINGET",
        "LONG_BINGET",
    ]
)
_PLAIN = (dict, list, tuple, str, int, float, bool, type(None))
_RANK_IN_NAME = re.compile(r"(\d+)(?:\.(?:pkl|pickle|json|bin|dump))?$")


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that finds no class and loads no persistent id: plain values or nothing."""

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102
        raise pickle.UnpicklingError(f"refused: the pickle names {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102
        raise pickle.UnpicklingError("refused: the pickle asks for a persistent object")


def detect(text: str) -> int:
    """A flight-recorder dump: a pickle naming its keys, or JSON with ``pg_config`` and ``version``."""
    head = text[:65536]
    if head[:1] == "\x80" and len(head) > 2 and 2 <= ord(head[1]) <= 5:
        return 90 if re.search(r"entries|pg_config|profiling_name", head) else 0
    stripped = head.lstrip()
    if stripped[:1] == "{" and '"pg_config"' in head and '"version"' in head:
        return 85 if '"entries"' in head or '"pg_status"' in head else 0
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """One dump as its tables (see the module text)."""
    del command
    result = ParseResult()
    if text[:1] == "\x80":
        try:
            data = text.encode("latin-1")  # the reader hands a pickle's bytes over as Latin-1, one to one
        except UnicodeEncodeError:
            raise ParseError(
                "a pickle read as UTF-8 text: its bytes are lost; read the file as it is"
            ) from None
        fmt = "pickle"
    else:
        require_text(text)
        data, fmt = text.encode("utf-8"), "json"
    if len(data) > MAX_DUMP_BYTES:
        raise ParseError(f"refused: {len(data)} bytes, more than a flight-recorder dump ({MAX_DUMP_BYTES})")
    rank = _rank_of(filename)
    dump: dict[str, Any] = {c.name: None for c in SCHEMA["fr_dump"]}
    dump.update(rank=rank, format=fmt, bytes=len(data))
    doc, cut = _load_pickle(data) if fmt == "pickle" else _load_json(text)
    if cut is not None:
        dump.update(status="cut", entries=0)
        result.add("fr_dump", dump)
        result.issue(0, "", f"dump cut: {cut}; its entries cannot be read")
        return result
    if not isinstance(doc, dict) or not ({"entries", "pg_config", "pg_status"} & set(doc)):
        keys = sorted(str(k) for k in doc)[:8] if isinstance(doc, dict) else type(doc).__name__
        raise ParseError(
            f"not a flight-recorder dump: expected a dict with entries and pg_config, got {keys}"
        )
    if rank is None:
        said = f"the file name {filename!r} ends in no rank number" if filename else "no file name"
        result.issue(0, "", f"{said}: the dump's rank is unknown")
    _document(doc, dump, result)
    return result


def _rank_of(filename: str | None) -> int | None:
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    m = _RANK_IN_NAME.search(name)
    return int(m[1]) if m else None


def _load_pickle(data: bytes) -> tuple[Any, str | None]:
    """The dump's values, or (None, why it is cut); refuses a pickle of anything but plain values."""
    last = 0
    try:
        for op, arg, pos in pickletools.genops(io.BytesIO(data)):
            last = pos or last
            if op.name not in _PLAIN_OPCODES:
                what = f" {arg!r}" if isinstance(arg, str) and op.name in ("GLOBAL", "INST") else ""
                raise ParseError(
                    f"refused: pickle opcode {op.name}{what} at byte {pos} (a flight-recorder dump holds "
                    "plain values only: dicts, lists, tuples, strings, numbers, booleans, None)"
                )
    except ValueError as exc:  # genops: the stream ends inside an opcode or before STOP
        return None, f"the pickle ends after byte {last} of {len(data)} ({exc})"
    try:
        doc = _PlainUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError) as exc:
        raise ParseError(f"refused: not a pickle of plain values ({exc})") from exc
    _check_plain(doc)
    return doc, None


def _load_json(text: str) -> tuple[Any, str | None]:
    start = text.find("{")
    if start < 0:
        raise ParseError("not a flight-recorder dump: neither a pickle nor a JSON document")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text[start:].rstrip()) - 1:
            return None, f"the JSON ends at character {exc.pos} ({exc.msg})"
        raise ParseError(
            f"not a flight-recorder dump: JSON not readable at character {exc.pos}: {exc.msg}"
        ) from exc
    return doc, None


def _check_plain(doc: Any) -> None:
    """Every value is a dict, list, tuple, str, int, float, bool or None (shared values walked once)."""
    stack, seen, count = [doc], set(), 0
    while stack:
        value = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ParseError(f"refused: more than {MAX_VALUES} values in one dump")
        if not isinstance(value, _PLAIN):
            raise ParseError(f"refused: the dump holds a {type(value).__name__}, not a plain value")
        if isinstance(value, (dict, list, tuple)):
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, dict):
                stack.extend(value.keys())
                stack.extend(value.values())
            else:
                stack.extend(value)


def _int(value: Any) -> int | None:
    """An int from a number or a number's text (the JSON form prints counters as strings)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _document(doc: Mapping[str, Any], dump: dict[str, Any], result: ParseResult) -> None:
    rank = dump["rank"]
    dump["version"] = str(doc["version"]) if doc.get("version") is not None else None
    lib = doc.get("comm_lib_version", doc.get("nccl_version"))
    dump["comm_lib_version"] = str(lib) if lib not in (None, "") else None
    config = doc.get("pg_config")
    if isinstance(config, dict):
        dump["groups"] = len(config)
        for key, info in config.items():
            if not isinstance(info, dict):
                result.issue(0, "", f"pg_config {key!r}: not a dict")
                continue
            ranks = info.get("ranks")
            text = ranks if isinstance(ranks, str) else json.dumps(ranks) if isinstance(ranks, list) else None
            members = (
                re.findall(r"-?\d+", text or "") if text and re.fullmatch(r"\[[\d,\s]*\]", text) else None
            )
            result.add("fr_group", {
                "rank": rank, "pg_name": str(info.get("name", key)), "pg_desc": _str(info.get("desc")),
                "ranks": text, "size": len(members) if members is not None else None,
            })  # fmt: skip
    entries = doc.get("entries")
    names: dict[int, str] = {}
    if entries is None:
        entries = []
    elif not isinstance(entries, list):
        result.issue(0, "", f"entries: a {type(entries).__name__}, not a list")
        entries = []
    if len(entries) > MAX_ENTRIES:
        raise ParseError(f"refused: {len(entries)} entries, more than {MAX_ENTRIES}")
    times: list[int] = []
    for n, raw in enumerate(entries, 1):
        if not isinstance(raw, dict):
            result.issue(0, "", f"entry {n}: a {type(raw).__name__}, not a dict")
            continue
        row = _entry(rank, n, raw, result)
        result.add("fr_entry", row)
        if row["pg_id"] is not None and row["pg_name"] is not None:
            names.setdefault(row["pg_id"], row["pg_name"])
        times += [t for t in (row["time_created_ns"], row["time_started_ns"], row["time_completed_ns"]) if t]
    rows = result.rows("fr_entry")
    created = [r["time_created_ns"] for r in rows if r["time_created_ns"]]
    timeouts = [r["timeout_ms"] for r in rows if r["timeout_ms"]]
    dump.update(
        entries=len(rows), status="ok" if rows else "empty",
        first_created_ns=min(created, default=None), last_created_ns=max(created, default=None),
        last_activity_ns=max(times, default=None), timeout_ms=min(timeouts, default=None),
    )  # fmt: skip
    status = doc.get("pg_status")
    if isinstance(status, dict):
        for key, counters in status.items():
            if not isinstance(counters, dict):
                result.issue(0, "", f"pg_status {key!r}: not a dict")
                continue
            pg_id = _int(key)
            result.add("fr_pg_status", {
                "rank": rank, "pg_id": pg_id, "pg_name": names.get(pg_id) if pg_id is not None else None,
                "last_enqueued": _int(counters.get("last_enqueued_collective")),
                "last_started": _int(counters.get("last_started_collective")),
                "last_completed": _int(counters.get("last_completed_collective")),
            })  # fmt: skip
    result.add("fr_dump", dump)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


def _sizes(row: dict[str, Any], side: str, e: Mapping[str, Any], bad: list[str]) -> None:
    """An entry's input or output tensor sizes (as JSON and as a count of elements) and dtypes; sizes that
    are no lists of whole numbers are named in ``bad``."""
    sizes = e.get(f"{side}_sizes")
    ok = isinstance(sizes, list) and all(
        isinstance(s, list) and all(_int(d) is not None for d in s) for s in sizes
    )
    if sizes is not None and not ok:
        bad.append(f"{side}_sizes")
    row[f"{side}_sizes"] = json.dumps(sizes, separators=(", ", ": ")) if ok else None
    row[f"numel_{'in' if side == 'input' else 'out'}"] = (
        sum(math.prod(int(d) for d in s) for s in sizes) if ok and sizes else None
    )
    dtypes = e.get(f"{side}_dtypes")
    row[f"{side}_dtypes"] = ",".join(str(d) for d in dtypes) if isinstance(dtypes, list) and dtypes else None


def _entry(rank: int | None, n: int, e: Mapping[str, Any], result: ParseResult) -> dict[str, Any]:
    bad: list[str] = []

    def num(key: str, zero_is_none: bool = False) -> int | None:
        value = e.get(key)
        got = _int(value)
        if value is not None and got is None:
            bad.append(key)
        return None if zero_is_none and got == 0 else got

    group = e.get("process_group")
    pg_name = pg_desc = None
    if isinstance(group, (list, tuple)) and len(group) == 2:
        pg_name, pg_desc = _str(group[0]), _str(group[1])
    elif group is not None:
        bad.append("process_group")
    name = _str(e.get("profiling_name"))
    op = name.split(":", 1)[-1].split(" ", 1)[0] if name else None
    duration = e.get("duration_ms")
    row: dict[str, Any] = {
        "rank": rank, "entry": n, "record_id": num("record_id"), "pg_id": num("pg_id"), "pg_name": pg_name,
        "pg_desc": pg_desc, "collective_seq_id": num("collective_seq_id"), "p2p_seq_id": num("p2p_seq_id"),
        "op_id": num("op_id"), "profiling_name": name, "op": op or None,
        "is_p2p": e["is_p2p"] if isinstance(e.get("is_p2p"), bool) else None,
        "state": _str(e.get("state")), "time_created_ns": num("time_created_ns"),
        "time_started_ns": num("time_discovered_started_ns", zero_is_none=True),
        "time_completed_ns": num("time_discovered_completed_ns", zero_is_none=True),
        "duration_ms": float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool)
        else None,
        "timeout_ms": num("timeout_ms"), "retired": e["retired"] if isinstance(e.get("retired"), bool) else None,
        "thread_name": _str(e.get("thread_name")) or None,
    }  # fmt: skip
    for side in ("input", "output"):
        _sizes(row, side, e, bad)
    frames = e.get("frames")
    top = frames[0] if isinstance(frames, list) and frames and isinstance(frames[0], dict) else None
    row["frame"] = (
        f"{top.get('name')} at {top.get('filename')}:{top.get('line')}" if top is not None else None
    )
    if bad:
        result.issue(0, "", f"entry {n}: {', '.join(bad)} not understood")
    return row
