"""Shared memory (``/dev/shm``): its size and use, and NCCL segments left in it.

Commands the collector runs (one file)::

    df -P -B1 /dev/shm; echo '--- ls -la /dev/shm'; ls -la /dev/shm

Sample (hand-written, in collector.sh's format; see tests/fixtures/shm/PROVENANCE.md)::

    Filesystem        1-blocks      Used   Available Capacity Mounted on
    tmpfs          33554432000 9637888 33544794112       1% /dev/shm
    --- ls -la /dev/shm
    total 9412
    drwxrwxrwt  2 root   root         60 Dec  2 09:27 .
    drwxr-xr-x 17 root   root       3280 Dec  2 09:20 ..
    -rw-------  1 ubuntu ubuntu  9637888 Dec  2 09:27 nccl-5XyQ1b

The df part is read by :mod:`parsers.df`, so any df style works (``-h`` as in a pod's
``shm 64M 0 64M 0% /dev/shm``, ``-T`` which gives the type).  Without ``-T`` the type is taken as
``tmpfs`` when the device is ``tmpfs`` or ``shm`` (Docker and Kubernetes name their shm mount so).

Schema
------
``shm`` (one row, for the ``/dev/shm`` line of df, else for the only df line):

- ``line`` int — line of the df row (of the marker line when df printed none)
- ``device`` str — df's Filesystem column (``tmpfs``, ``shm``, ``none``)
- ``fstype`` str — ``tmpfs`` when known, else null
- ``size_bytes``, ``used_bytes``, ``avail_bytes`` int, bytes
- ``use_pct`` float, percent
- ``entries`` int — entries in the listing, without ``.`` and ``..`` (null without a listing)
- ``nccl_files`` int — entries named ``nccl-*`` (null without a listing)
- ``nccl_bytes`` int, bytes — their total size

Examples
--------
>>> row = parse(SAMPLE).rows("shm")[0]
>>> row["fstype"], row["size_bytes"], row["use_pct"], row["nccl_files"], row["nccl_bytes"]
('tmpfs', 33554432000, 1.0, 1, 9637888)
>>> parse("shm 64M 0 64M 0% /dev/shm").rows("shm")[0]["size_bytes"]
67108864
"""

from __future__ import annotations

import re
from typing import Any

from parsers import df
from parsers._base import (
    CollectorError,
    Column,
    NoData,
    ParseError,
    ParseResult,
    ParserInfo,
    require_text,
    sample_of,
)
from parsers._text import strip_prefix

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="shm",
    title="Shared memory /dev/shm (df and listing)",
    commands=("df -P -B1 /dev/shm; echo '--- ls -la /dev/shm'; ls -la /dev/shm",),
    tables=("shm",),
    versions_seen=("GNU coreutils df and ls",),
)

SCHEMA = {
    "shm": (
        Column("line", "int", "line of the df row"),
        Column("device", "str", "df Filesystem column"),
        Column("fstype", "str", "file-system type, when known"),
        Column("size_bytes", "int", "size, bytes"),
        Column("used_bytes", "int", "used, bytes"),
        Column("avail_bytes", "int", "available, bytes"),
        Column("use_pct", "float", "Use%, percent"),
        Column("entries", "int", "entries in the listing"),
        Column("nccl_files", "int", "nccl-* entries"),
        Column("nccl_bytes", "int", "total size of nccl-* entries, bytes"),
    )
}

_MARKER = re.compile(r"^-{3}\s*ls\b.*(?:/dev/shm)?\s*$")
#: ``-rw------- 1 user group 9637888 Dec  2 09:27 name`` (any date style: name is the last field).
_LS = re.compile(r"^[-dlcbpsD][-rwxsStTl]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+)\s+.*\s(?P<name>\S+)$")
_SHM_ROW = re.compile(r"^\S+\s+(?:\S+\s+){3,4}\d+%\s+/dev/shm\s*$")


def detect(text: str) -> int:
    """Confidence that text is the shm probe (df of /dev/shm, maybe with its listing)."""
    lines = [strip_prefix(line).strip() for line in text.splitlines() if line.strip()]
    if any(_MARKER.match(line) and "/dev/shm" in line for line in lines):
        return 90
    rows = [line for line in lines if not df.HEADER.match(line)]
    if len(rows) == 1 and _SHM_ROW.match(rows[0]):
        return 85  # df of /dev/shm alone; a whole df listing has more rows
    return 0


def parse(text: str) -> ParseResult:
    if not text.strip():
        raise NoData("empty input")
    result = ParseResult()
    lines = text.splitlines()
    split = next((i for i, line in enumerate(lines) if _MARKER.match(strip_prefix(line).strip())), len(lines))
    df_text, shift = "\n".join(lines[:split]), 0
    if split == len(lines) and not any(df.HEADER.match(strip_prefix(x)) for x in lines):
        df_text, shift = "Filesystem Size Used Avail Use% Mounted on\n" + df_text, -1  # a bare df -h row
    row = _df_row(df_text, shift, result) if df_text.strip() else None
    counts = _listing(lines, split + 1, result) if split < len(lines) else None
    if row is None and counts is None:
        errors = [x.strip() for x in lines if re.match(r"^\s*(?:df|ls):", strip_prefix(x))]
        if errors:
            raise CollectorError(errors[0][:300])
        require_text(text)
        raise ParseError("no df row for /dev/shm and no listing")
    if row is None:
        row = {c.name: None for c in SCHEMA["shm"]}
        row["line"] = split + 1
    row.update(counts or {})
    result.add("shm", row)
    return result


def _df_row(df_text: str, shift: int, result: ParseResult) -> dict[str, Any] | None:
    try:
        parsed = df.parse(df_text)
    except (ParseError, CollectorError):
        return None
    for issue in parsed.issues:
        result.issue(issue.line_no + shift, issue.line, issue.reason)
    rows = [r for r in parsed.rows("filesystem_usage") if r["error"] is None]
    chosen = [r for r in rows if r["mountpoint"] == "/dev/shm"] or rows[:1]
    if not chosen:
        return None
    r = chosen[0]
    fstype = r["fstype"] or ("tmpfs" if r["device"] in ("tmpfs", "shm") else None)
    row: dict[str, Any] = {c.name: None for c in SCHEMA["shm"]}
    row.update({k: r[k] for k in ("device", "size_bytes", "used_bytes", "avail_bytes", "use_pct")})
    row.update(line=r["line"] + shift, fstype=fstype)
    return row


def _listing(lines: list[str], start: int, result: ParseResult) -> dict[str, Any] | None:
    """Count entries and nccl-* segments in an ``ls -la`` listing; None when ls printed none."""
    entries = nccl_files = nccl_bytes = 0
    seen = False
    for no, raw in enumerate(lines[start:], start=start + 1):
        line = strip_prefix(raw).strip()
        m = _LS.match(line)
        if m is None:
            if line.startswith("total "):
                seen = True
            elif line and not line.startswith("ls:"):
                result.issue(no, raw, "not an ls -la line")
            continue
        seen = True
        if m.group("name") in (".", ".."):
            continue
        entries += 1
        if m.group("name").startswith("nccl-"):
            nccl_files += 1
            nccl_bytes += int(m.group("size"))
    if not seen:
        return None
    return {"entries": entries, "nccl_files": nccl_files, "nccl_bytes": nccl_bytes}
