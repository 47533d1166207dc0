"""Flight-recorder dumps written at test time, from the documented layout, as PyTorch writes them.

No real dump is public and none is kept in the repository: the tests write each dump into their temporary
folder.  :func:`jit_pickle` emits the opcodes ``torch::jit::Pickler`` emits for the plain values of a
dump (torch/csrc/jit/serialization/pickler.cpp, as ``pickle_str`` in FlightRecorder.hpp calls it:
protocol 2, no type tags): ``PROTO 2``; a dict as ``EMPTY_DICT`` then ``MARK`` key value ... ``SETITEMS``;
a list as ``EMPTY_LIST MARK ... APPENDS``; a tuple of two as ``TUPLE2``; ints as ``BININT1`` / ``BININT2``
/ ``BININT`` / ``LONG1`` of 8 bytes; a float as big-endian ``BINFLOAT``; strings as ``BINUNICODE``
memoized by value (``BINPUT``, then ``BINGET``); a container shared by several entries (the stack frames
all entries refer to) memoized by identity; ``NEWTRUE``/``NEWFALSE``/``NONE``; ``STOP``.

:func:`entry` and :func:`dump` build the dict of one rank's dump in a version's layout (FlightRecorder.hpp,
TraceUtils.h of PyTorch 2.3-2.5: the keys each version writes).
"""

from __future__ import annotations

import struct
from typing import Any

NS = 1_000_000_000


def jit_pickle(value: Any) -> bytes:
    """The bytes ``torch::jit::Pickler`` writes for a dump of plain values."""
    out = bytearray(b"\x80\x02")
    memo: dict[Any, int] = {}
    shared: dict[int, int] = {}
    counts: dict[int, int] = {}

    def count(v: Any) -> None:
        if isinstance(v, (dict, list)):
            counts[id(v)] = counts.get(id(v), 0) + 1
            if counts[id(v)] == 1:
                for item in v.items() if isinstance(v, dict) else v:
                    if isinstance(item, tuple):
                        count(item[0])
                        count(item[1])
                    else:
                        count(item)
        elif isinstance(v, tuple):
            for item in v:
                count(item)

    def put() -> int:
        n = len(memo) + len(shared)
        out.extend(b"q" + bytes([n]) if n < 256 else b"r" + struct.pack("<I", n))
        return n

    def get(n: int) -> None:
        out.extend(b"h" + bytes([n]) if n < 256 else b"j" + struct.pack("<I", n))

    def push(v: Any) -> None:
        if isinstance(v, (dict, list)) and counts.get(id(v), 0) > 1:
            if id(v) in shared:
                get(shared[id(v)])
                return
            impl(v)
            shared[id(v)] = put()
            return
        impl(v)

    def impl(v: Any) -> None:
        if v is None:
            out.extend(b"N")
        elif v is True or v is False:
            out.extend(b"\x88" if v else b"\x89")
        elif isinstance(v, int):
            if 0 <= v <= 0xFF:
                out.extend(b"K" + bytes([v]))
            elif 0 <= v <= 0xFFFF:
                out.extend(b"M" + struct.pack("<H", v))
            elif -(2**31) <= v < 2**31:
                out.extend(b"J" + struct.pack("<i", v))
            else:
                out.extend(b"\x8a\x08" + struct.pack("<q", v))
        elif isinstance(v, float):
            out.extend(b"G" + struct.pack(">d", v))
        elif isinstance(v, str):
            if v in memo:
                get(memo[v])
                return
            data = v.encode("utf-8")
            out.extend(b"X" + struct.pack("<I", len(data)) + data)
            memo[v] = len(memo) + len(shared)
            out.extend(b"q" + bytes([memo[v]]) if memo[v] < 256 else b"r" + struct.pack("<I", memo[v]))
        elif isinstance(v, tuple):
            for item in v:
                push(item)
            out.extend({0: b")", 1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(v)] if len(v) <= 3 else b"t")
        elif isinstance(v, dict):
            out.extend(b"}")
            if v:
                out.extend(b"(")
                for k, item in v.items():
                    push(k)
                    push(item)
                out.extend(b"u")
        elif isinstance(v, list):
            out.extend(b"]")
            if v:
                out.extend(b"(")
                for item in v:
                    push(item)
                out.extend(b"e")
        else:  # pragma: no cover - the dumps hold nothing else
            raise TypeError(type(v))

    count(value)
    push(value)
    out.extend(b".")
    return bytes(out)


def entry(
    seq: int,
    *,
    record: int | None = None,
    op: str = "all_reduce",
    state: str = "completed",
    created: float = 1_700_000_000.0,
    pg: tuple[str, str] = ("0", "default_pg"),
    pg_id: int = 0,
    size: int = 1024,
    version: str = "2.10",
    frames: list[dict[str, Any]] | None = None,
    timeout_ms: int = 600_000,
) -> dict[str, Any]:
    """One entry of ``entries`` in a version's layout (timeout_ms from 2.2, thread fields from 2.8)."""
    started = int(created * NS) + 1_000_000 if state in ("started", "completed") else None
    completed = int(created * NS) + 5_000_000 if state == "completed" else None
    e: dict[str, Any] = {}
    if frames is not None:
        e["frames"] = frames
    e.update(record_id=seq if record is None else record, pg_id=pg_id, process_group=pg)
    if _at_least(version, "2.8"):
        e.update(thread_name="pt_main_thread", thread_id="140213541811008")
    e.update(
        collective_seq_id=seq, p2p_seq_id=0, op_id=seq, profiling_name=f"nccl:{op}",
        time_created_ns=int(created * NS), input_sizes=[[size]], input_dtypes=["Float"],
        output_sizes=[[size]], output_dtypes=["Float"], state=state, time_discovered_started_ns=started,
        time_discovered_completed_ns=completed, retired=state == "completed",
    )  # fmt: skip
    if _at_least(version, "2.2"):
        e["timeout_ms"] = timeout_ms
    e["is_p2p"] = False
    return e


def dump(
    entries: list[dict[str, Any]],
    *,
    version: str = "2.10",
    ranks: str = "[0, 1, 2, 3]",
    status: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One rank's dump: ``version``, ``pg_config``, ``pg_status`` (2.3+), ``comm_lib_version`` (2.8+),
    ``entries`` (first before 2.3, as TraceUtils.h inserted them)."""
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": ranks}}
    if not _at_least(version, "2.3"):
        return {"entries": entries, "version": version, "pg_config": config}
    d: dict[str, Any] = {"version": version, "pg_config": config}
    if _at_least(version, "2.8"):
        d["comm_lib_version"] = "2.26.2"
    done = [e["collective_seq_id"] for e in entries if e["state"] == "completed"]
    started = [e["collective_seq_id"] for e in entries if e["state"] in ("started", "completed")]
    d["pg_status"] = {
        "0": status
        or {
            "last_enqueued_collective": max((e["collective_seq_id"] for e in entries), default=-1),
            "last_started_collective": max(started, default=-1),
            "last_completed_collective": max(done, default=-1),
        }
    }
    d["entries"] = entries
    return d


def _at_least(version: str, than: str) -> bool:
    return tuple(int(x) for x in version.split(".")) >= tuple(int(x) for x in than.split("."))
