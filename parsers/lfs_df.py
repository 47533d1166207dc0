"""Lustre per-target usage from ``lfs df`` (MDTs, OSTs and the file-system summary).

Commands the collector runs::

    lfs df -h

Sample (lines of tests/fixtures/lfs-df/fsx-workshop-mnt-fsx-3ost.txt)::

    UUID                       bytes        Used   Available Use% Mounted on
    fsx-MDT0000_UUID          102.8G        4.4G       98.5G   4% /mnt/fsx[MDT:0]
    fsx-OST0000_UUID            1.1T        4.5M        1.1T   0% /mnt/fsx[OST:0]
    fsx-OST0002_UUID            1.1T      187.0M        1.1T   0% /mnt/fsx[OST:2]

    filesystem_summary:         3.3T      196.0M        3.3T   0% /mnt/fsx

Also read: plain ``lfs df`` (``1K-blocks``), ``lfs df -i``/``-ih`` (``Inodes IUsed IFree IUse%``),
several file systems in one output (one summary each), the status letters ``-v`` appends after the
mount path (``D`` degraded, ``R`` read-only, ``N`` no-precreate, ``S``/``I`` out of space/inodes,
``f`` flash) and ``OST0003 : inactive device`` lines.  ``-H`` (SI units) prints the same header as
``-h`` and cannot be told apart: sizes are always read as powers of 1024.

Schema
------
``lustre_target`` (one row per MDT/OST line and per ``filesystem_summary:``):

- ``line`` int — line of the row
- ``fsname`` str — file-system name (``fsx``, FSx ids like ``oyuutbev``); for a summary, that of
  the targets above it
- ``uuid`` str — target UUID as printed (``fsx-OST0002_UUID``; null for the summary)
- ``target_type`` str — ``MDT``, ``OST`` or ``summary``
- ``target_index`` int — index from the UUID (hex ``OST000a`` = 10), else from ``[OST:n]``
- ``size_bytes``, ``used_bytes``, ``avail_bytes`` int, bytes — null with ``-i``
- ``use_pct`` float, percent
- ``inodes_total``, ``inodes_used``, ``inodes_free`` int; ``inode_use_pct`` float — ``-i`` only
- ``mountpoint`` str — without the ``[OST:2]`` suffix
- ``flags`` str — status letters printed after the mount path (``DR``), else null
- ``status`` str — ``inactive device`` or another message printed instead of numbers, else null

Examples
--------
>>> rows = parse(SAMPLE).rows("lustre_target")
>>> [(r["target_type"], r["target_index"], r["used_bytes"]) for r in rows]
[('MDT', 0, 4724464025), ('OST', 0, 4718592), ('OST', 2, 196083712), ('summary', None, 205520896)]
>>> rows[2]["uuid"], rows[2]["fsname"], rows[2]["mountpoint"], rows[3]["size_bytes"]
('fsx-OST0002_UUID', 'fsx', '/mnt/fsx', 3628388371660)
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import human_to_bytes, percent, strip_prefix

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="lfs-df",
    title="Lustre target usage (lfs df)",
    commands=("lfs df -h",),
    tables=("lustre_target",),
    versions_seen=("Lustre 2.10-2.15 clients (FSx for Lustre, IML)",),
)

SCHEMA = {
    "lustre_target": (
        Column("line", "int", "line of the row"),
        Column("fsname", "str", "file-system name"),
        Column("uuid", "str", "target UUID as printed"),
        Column("target_type", "str", "MDT, OST or summary"),
        Column("target_index", "int", "target index"),
        Column("size_bytes", "int", "size, bytes"),
        Column("used_bytes", "int", "used, bytes"),
        Column("avail_bytes", "int", "available, bytes"),
        Column("use_pct", "float", "Use%, percent"),
        Column("inodes_total", "int", "inodes (-i)"),
        Column("inodes_used", "int", "inodes used (-i)"),
        Column("inodes_free", "int", "inodes free (-i)"),
        Column("inode_use_pct", "float", "IUse%, percent (-i)"),
        Column("mountpoint", "str", "mount point without [OST:n]"),
        Column("flags", "str", "status letters (D, R, N, S, I, f)"),
        Column("status", "str", "message printed instead of numbers"),
    )
}

_HEADER = re.compile(
    r"^UUID\s+(?P<unit>bytes|1K-blocks|Inodes)\s+I?Used\s+(?:Avail(?:able)?|I?Free)\s+I?Use%\s+Mounted on$"
)
_TARGET = re.compile(r"^(?:(?P<fs>\S+)-)?(?P<type>MDT|OST|MGT)(?P<idx>[0-9a-fA-F]{4})(?:_UUID)?$")
_ROW = re.compile(
    r"^(?P<name>\S+?):?\s+(?P<size>\S+)\s+(?P<used>\S+)\s+(?P<avail>\S+)\s+(?P<pct>\d+%|-)\s+"
    r"(?P<mount>.+?)(?:\[(?P<btype>MDT|OST):(?P<bidx>\d+)\])?(?:\s+(?P<flags>[DNRSIf]+))?$"
)
_STATUS = re.compile(r"^(?P<name>\S+)\s*:\s+(?P<msg>\D.*)$")


def detect(text: str) -> int:
    """Confidence that text is lfs df output."""
    if re.search(r"^\s*UUID\s+(?:bytes|1K-blocks|Inodes)\s+I?Used\s", text, re.MULTILINE):
        return 85
    if re.search(r"\S+-(?:OST|MDT)[0-9a-f]{4}_UUID\s.*\[(?:OST|MDT):\d+\]", text):
        return 80
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    unit: str | None = None
    fsname: str | None = None
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).strip()
        if not line or set(line) <= set("-=.…[]"):
            continue
        if m := _HEADER.match(line):
            unit, fsname = m.group("unit"), None
            continue
        row = _row(no, line, unit)
        if row is None:
            result.issue(no, raw, "not an lfs df target or summary line")
            continue
        if row["target_type"] == "summary":
            row["fsname"] = fsname
            fsname = None  # the next file system's targets follow
        else:
            fsname = row["fsname"] = row["fsname"] or fsname
        result.add("lustre_target", row)
    if unit is None and not result.rows("lustre_target"):
        raise ParseError("no lfs df header ('UUID bytes Used ...') or target line found")
    return result


def _row(no: int, line: str, unit: str | None) -> dict[str, Any] | None:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["lustre_target"]}
    row["line"] = no
    m = _ROW.match(line)
    if m is None:
        s = _STATUS.match(line)
        if s is None or not _name(row, s.group("name")):
            return None
        row["status"] = s.group("msg").strip()
        return row
    if not _name(row, m.group("name")):
        return None
    if row["target_index"] is None and m.group("bidx"):
        row["target_index"] = int(m.group("bidx"))
    row["mountpoint"], row["flags"] = m.group("mount").strip(), m.group("flags")
    cells = (m.group("size"), m.group("used"), m.group("avail"))
    if unit == "Inodes":
        values = [human_to_bytes(c) for c in cells]
        keys = ("inodes_total", "inodes_used", "inodes_free", "inode_use_pct")
    else:
        values = [int(c) * 1024 if unit == "1K-blocks" and c.isdigit() else human_to_bytes(c) for c in cells]
        keys = ("size_bytes", "used_bytes", "avail_bytes", "use_pct")
    if None in values:
        return None
    row.update(zip(keys, [*values, percent(m.group("pct"))], strict=True))
    return row


def _name(row: dict[str, Any], name: str) -> bool:
    """Fill uuid, fsname, target type and index from the first cell; False when it is neither."""
    name = name.rstrip(":")
    if name == "filesystem_summary":
        row["target_type"] = "summary"
        return True
    t = _TARGET.match(name)
    if t is None:
        return False
    row.update(uuid=name, fsname=t.group("fs"), target_type=t.group("type"))
    row["target_index"] = int(t.group("idx"), 16)
    return True
