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
``shm 64M 0 64M 0% /dev/shm``, ``-T`` which gives the type, busybox ``df -hT`` with ``64.0M``).  Without
``-T`` the type is taken as ``tmpfs`` when the device is ``tmpfs`` or ``shm`` (Docker and Kubernetes name
their shm mount so).  The listing starts after the ``--- ls`` marker, after a pasted ``$ ls -la /dev/shm``
prompt line, or at the first line when the file is a bare ``ls -la`` listing (then only the listing
columns are filled).  Travel noise (launcher tags, prompts, markdown quotes, fences) is taken off by
``parsers._text.clean_lines``; a listing line that does not read (an entry, a ``total`` line that is not
``total <number>``) is a ParseIssue, and so is each data line of a df part that df cannot read.

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
- ``mountpoint`` str — df's Mounted on column
- ``size_printed``, ``used_printed``, ``avail_printed``, ``use_printed`` str — df's cells as printed
- ``listing_line`` int — line of the listing's first entry (or ``total``), null without a listing
- ``entry_names`` str — JSON list of the listing's entry names (without ``.`` and ``..``), else null
- ``host`` str — launcher tag of the df row (pdsh host, srun rank, pod), else null

Examples
--------
>>> row = parse(SAMPLE).rows("shm")[0]
>>> row["fstype"], row["size_bytes"], row["use_pct"], row["nccl_files"], row["nccl_bytes"]
('tmpfs', 33554432000, 1.0, 1, 9637888)
>>> parse("shm 64M 0 64M 0% /dev/shm").rows("shm")[0]["size_bytes"]
67108864
"""

from __future__ import annotations

import json
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
from parsers._text import clean_head, clean_lines

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
        Column("mountpoint", "str", "df Mounted on column"),
        Column("size_printed", "str", "df size cell as printed"),
        Column("used_printed", "str", "df used cell as printed"),
        Column("avail_printed", "str", "df avail cell as printed"),
        Column("use_printed", "str", "df Use% cell as printed"),
        Column("listing_line", "int", "line of the listing's first entry"),
        Column("entry_names", "str", "JSON list of the listing's entry names"),
        Column("host", "str", "launcher tag of the df row"),
    )
}

_MARKER = re.compile(r"^-{3}\s*ls\b.*(?:/dev/shm)?\s*$")
#: ``-rw------- 1 user group 9637888 Dec  2 09:27 name`` (any date style: name is the last field).
_LS = re.compile(r"^[-dlcbpsD][-rwxsStTl]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+)\s+.*\s(?P<name>\S+)$")
#: ``total 18824`` (``ls -lah``: ``total 19M``, ``total 1.5G``)
_TOTAL = re.compile(r"^total\s+\d+(?:[.,]\d+)?[KMGTP]?$")
_DATA = re.compile(r"\d")
_SHM_ROW = re.compile(r"^\S+\s+(?:\S+\s+){3,4}\d+%\s+/dev/shm\s*$")


def detect(text: str) -> int:
    """Confidence that text is the shm probe (df of /dev/shm, maybe with its listing, or its listing)."""
    cleaned = clean_head(text)
    lines = [line.strip() for line in cleaned.lines if line.strip()]
    if any(_MARKER.match(line) and "/dev/shm" in line for line in lines):
        return 90
    rows = [line for line in lines if not df.HEADER.match(line)]
    if len(rows) == 1 and _SHM_ROW.match(rows[0]):
        return 85  # df of /dev/shm alone; a whole df listing has more rows
    listed = [m.group("name") for line in rows if (m := _LS.match(line))]
    if listed and len(listed) * 2 >= len(rows):
        if any("/dev/shm" in cmd and re.match(r"ls\b", cmd) for _, cmd in cleaned.commands):
            return 85
        if sum(name.startswith("nccl-") for name in listed) * 2 >= len(listed):
            return 70  # a bare listing of NCCL segments: /dev/shm
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    if not text.strip():
        raise NoData("empty input")
    result = ParseResult()
    cleaned = clean_lines(text)
    lines = [line.strip() for line in cleaned.lines]
    raw = text.splitlines()
    split, start = _split(lines, dict(cleaned.commands))
    df_text, shift = "\n".join(lines[:split]), 0
    if start == len(lines) and not any(df.HEADER.match(x) for x in lines):
        df_text, shift = "Filesystem Size Used Avail Use% Mounted on\n" + df_text, -1  # a bare df -h row
    row = _df_row(df_text, shift, raw, result) if df_text.strip() else None
    counts = _listing(lines, raw, start, result) if start < len(lines) else None
    if row is None and counts is None:
        errors = [x for x in lines if re.match(r"^(?:df|ls):", x)]
        if errors:
            raise CollectorError(errors[0][:300])
        require_text(text)
        seen = next((x[:80] for x in lines if x), "")
        raise ParseError(f"expected a df row for /dev/shm or an ls -la listing of it; saw {seen!r}")
    if row is None:
        row = {c.name: None for c in SCHEMA["shm"]}
        row["line"] = min(split + 1, len(lines))
    if row["host"] is None and cleaned.hosts:
        row["host"] = cleaned.hosts[row["line"] - 1]
    row.update(counts or {})
    result.add("shm", row)
    return result


def _split(lines: list[str], commands: dict[int, str]) -> tuple[int, int]:
    """(end of the df part, index of the first listing line): the ``--- ls`` marker or an ``ls`` prompt
    line splits them; a bare listing is all listing; else all df."""
    for i, line in enumerate(lines):
        if _MARKER.match(line) or re.match(r"(?:sudo\s+)?ls\b", commands.get(i + 1, "")):
            return i, i + 1
    data = [x for x in lines if x]
    if data and all(_LS.match(x) or x.startswith("total ") for x in data):  # a bad total is reported
        return 0, 0
    return len(lines), len(lines)


def _df_row(df_text: str, shift: int, raw: list[str], result: ParseResult) -> dict[str, Any] | None:
    try:
        parsed = df.parse(df_text)
    except (ParseError, CollectorError) as exc:
        for no, line in enumerate(df_text.splitlines(), start=1 + shift):
            if 0 < no <= len(raw) and _DATA.search(line) and not df.HEADER.match(line.strip()):
                result.issue(no, raw[no - 1], f"df part not read: {str(exc)[:160]}")
        return None
    for issue in parsed.issues:
        no = issue.line_no + shift
        result.issue(no, raw[no - 1] if 0 < no <= len(raw) else issue.line, issue.reason)
    rows = [r for r in parsed.rows("filesystem_usage") if r["error"] is None]
    chosen = [r for r in rows if r["mountpoint"] == "/dev/shm"] or rows[:1]
    if not chosen:
        return None
    r = chosen[0]
    fstype = r["fstype"] or ("tmpfs" if r["device"] in ("tmpfs", "shm") else None)
    row: dict[str, Any] = {c.name: None for c in SCHEMA["shm"]}
    keep = ("device", "size_bytes", "used_bytes", "avail_bytes", "use_pct", "mountpoint", "host")
    row.update({k: r.get(k) for k in keep + ("size_printed", "used_printed", "avail_printed", "use_printed")})
    row.update(line=r["line"] + shift, fstype=fstype)
    return row


def _listing(lines: list[str], raw: list[str], start: int, result: ParseResult) -> dict[str, Any] | None:
    """Count entries and nccl-* segments in an ``ls -la`` listing; None when ls printed none."""
    entries = nccl_files = nccl_bytes = 0
    names: list[str] = []
    first: int | None = None
    for no, line in enumerate(lines[start:], start=start + 1):
        m = _LS.match(line)
        if m is None:
            if _TOTAL.match(line):
                first = first or no
            elif line and not line.startswith("ls:"):
                result.issue(no, raw[no - 1], "not an ls -la line")
            continue
        first = first or no
        if m.group("name") in (".", ".."):
            continue
        entries += 1
        names.append(m.group("name"))
        if m.group("name").startswith("nccl-"):
            nccl_files += 1
            nccl_bytes += int(m.group("size"))
    if first is None:
        return None
    return {
        "entries": entries,
        "nccl_files": nccl_files,
        "nccl_bytes": nccl_bytes,
        "listing_line": first,
        "entry_names": json.dumps(names),
    }
