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
``f`` flash) and ``OST0003 : inactive device`` lines, old clients' ``filesystem summary:`` (a space),
outputs without any summary line (``lfs df | grep OST``), ``-iH`` inode counts with unit letters
(``932.2k``), a ``[OST:0x1a]`` suffix written in hex.  Prose pasted between blocks (``and``) is skipped;
a skipped line with digits or a target word is a ParseIssue.  ``-H`` (SI units) prints the same header
as ``-h``: sizes are read as powers of 1000 only when a prompt line of the capture shows ``lfs df -H``,
else as powers of 1024.  Travel noise (launcher prefixes, prompts, fences, ``<---`` annotations,
CRLF) is taken off by ``parsers._text.clean_lines``; a line that is not a header, target or summary
is a ParseIssue.

Schema
------
``lustre_target`` (one row per MDT/OST line and per ``filesystem_summary:``):

- ``line`` int — line of the row
- ``fsname`` str — file-system name (``fsx``, FSx ids like ``oyuutbev``); for a summary, that of
  the targets above it
- ``uuid`` str — target UUID as printed (``fsx-OST0002_UUID``; null for the summary)
- ``target_type`` str — ``MDT``, ``OST`` or ``summary``
- ``target_index`` int — index from the UUID (hex ``OST000a`` = 10), else from ``[OST:n]`` (decimal, or
  hex when written ``0x1a``)
- ``size_bytes``, ``used_bytes``, ``avail_bytes`` int, bytes — null with ``-i``
- ``use_pct`` float, percent
- ``inodes_total``, ``inodes_used``, ``inodes_free`` int; ``inode_use_pct`` float — ``-i`` only
- ``mountpoint`` str — without the ``[OST:2]`` suffix
- ``mount_target`` str — that suffix as printed (``[OST:2]``, ``[OST:0x1a]``), else null
- ``flags`` str — status letters printed after the mount path (``DR``), else null
- ``status`` str — ``inactive device`` or another message printed instead of numbers, else null
- ``size_header`` str — the size column's header as printed (``bytes``, ``1K-blocks``, ``Inodes``)
- ``size_printed``, ``used_printed``, ``avail_printed``, ``use_printed`` str — the four cells as
  printed (``1.1T``, ``4.5M``, ``1.1T``, ``0%``; with ``-i`` the Inodes/IUsed/IFree/IUse% cells)
- ``human_base`` int — 1024 (``-h``) or 1000 (``-H``) for a size with a unit letter, else null
- ``host`` str — launcher tag of the line (pdsh host, srun rank, pod), else null

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
from collections.abc import Iterator
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines, percent, split_flat_table, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="lfs-df",
    title="Lustre target usage (lfs df)",
    commands=("lfs df -h", "lfs df", "lfs df -i", "lfs df -H"),
    tables=("lustre_target",),
    versions_seen=(
        "Lustre 2.10-2.15 clients (FSx for Lustre, IML)",
        "Cray Sonexion client, 1K-blocks, 'filesystem summary:' (pytokio fixture)",
        "Lustre 2.10 client with inactive OSTs (IML docs), 2.15 'lfs df -i' (GSI vagrant notes)",
    ),
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
        Column("mount_target", "str", "the [MDT:0] / [OST:3] / [OST:0x1a] suffix as printed"),
        Column("flags", "str", "status letters (D, R, N, S, I, f)"),
        Column("status", "str", "message printed instead of numbers"),
        Column("size_header", "str", "size column header as printed (bytes, 1K-blocks, Inodes)"),
        Column("size_printed", "str", "size / Inodes cell as printed"),
        Column("used_printed", "str", "Used / IUsed cell as printed"),
        Column("avail_printed", "str", "Available / IFree cell as printed"),
        Column("use_printed", "str", "Use% / IUse% cell as printed"),
        Column("human_base", "int", "1024 (-h) or 1000 (-H) for a size with a unit letter"),
        Column("host", "str", "launcher tag of the line"),
    )
}

_HEADER = re.compile(
    r"^UUID\s+(?P<unit>bytes|1K-blocks|Inodes)\s+I?Used\s+(?:Avail(?:able)?|I?Free)\s+I?Use%\s+Mounted on$"
)
_TARGET = re.compile(r"^(?:(?P<fs>\S+)-)?(?P<type>MDT|OST|MGT)(?P<idx>[0-9a-fA-F]{4})(?:_UUID)?$")
_ROW = re.compile(
    r"^(?P<name>\S+?):?\s+(?P<size>\S+)\s+(?P<used>\S+)\s+(?P<avail>\S+)\s+(?P<pct>\d+%|-)\s+"
    r"(?P<mount>.+?)(?P<bracket>\[(?P<btype>MDT|OST):(?P<bidx>0x[0-9a-fA-F]+|\d+)\])?(?:\s+(?P<flags>[DNRSIf]+))?$"
)
_STATUS = re.compile(r"^(?P<name>\S+)\s*:\s+(?P<msg>\D.*)$")


def detect(text: str) -> int:
    """Confidence that text is lfs df output (a grep'd excerpt of target lines is still recognised)."""
    if re.search(r"^\S*\s*UUID\s+(?:bytes|1K-blocks|Inodes)\s+I?Used\s", text, re.MULTILINE) or (
        _FLAT_HEADER.search(text[:4096]) and re.search(r"_UUID\s", text[:4096])
    ):
        return 85
    if re.search(r"\S+-(?:OST|MDT)[0-9a-fA-F]{4}_UUID\s.*\[(?:OST|MDT):(?:0x[0-9a-fA-F]+|\d+)\]", text):
        return 80
    if re.search(r"^\S*\s*filesystem[_ ]summary:\s+\S+\s+\S+\s+\S+\s+\d+%", text, re.MULTILINE):
        return 70
    return 0


_SUMMARY = re.compile(r"^filesystem summary:")
_DATA_LIKE = re.compile(r"\d|UUID|\b(?:OST|MDT)|(?i:summary)")
_H_FLAG = re.compile(r"\blfs\s+df\b.*\s-[a-zA-Z]*H")
_HUMAN = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMGTPE]?)$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult()
    cleaned = clean_lines(text)
    raw_lines = text.splitlines()
    base = 1000 if any(_H_FLAG.search(cmd) for _, cmd in cleaned.commands) else 1024
    unit: str | None = _unit_of_command(cleaned.commands)
    warned = False
    fsname: str | None = None
    tags = {f"{h}:" for h in cleaned.hosts or () if h}  # 'srun -l' prints an empty line as '0: '
    for no, line, host in _unflattened(cleaned.numbered()):
        raw = raw_lines[no - 1]
        line = line.strip()
        if not line or set(line) <= set("-=.…[]") or line in tags:
            continue
        if m := _HEADER.match(line):
            unit, fsname = m.group("unit"), None
            continue
        row = _row(no, _SUMMARY.sub("filesystem_summary:", line), unit, base)
        if row is None:
            if _DATA_LIKE.search(line):  # prose between pasted blocks ('and', 'Can also use:') is no data
                result.issue(no, raw, "not an lfs df header, target or summary line")
            continue
        row["host"] = host
        if unit is None and row["size_bytes"] is None and row["inodes_total"] is None and not warned:
            warned = True
            result.issue(
                no,
                raw,
                "no lfs df header or command: unit of plain numbers unknown (1K-blocks or"
                " inodes), printed cells kept",
            )
        if row["target_type"] == "summary":
            row["fsname"] = fsname
            fsname = None  # the next file system's targets follow
        else:
            fsname = row["fsname"] = row["fsname"] or fsname
        result.add("lustre_target", row)
    if not result.rows("lustre_target"):
        if unit is None:
            raise ParseError(
                "expected an lfs df header ('UUID bytes|1K-blocks|Inodes Used ...') or target lines"
                f" ('fsname-OST0000_UUID ...'); first line seen: {text.strip().splitlines()[0][:120]!r}"
            )
        if not result.issues:
            raise ParseError("lfs df header without any MDT/OST or summary line")
    return result


#: The header of an lfs df table wherever it stands in a line (a table whose newlines were lost).
_FLAT_HEADER = re.compile(
    r"UUID\s+(?:bytes|1K-blocks|Inodes)\s+I?Used\s+(?:Avail(?:able)?|I?Free)\s+I?Use%\s+Mounted\s+on"
)


def _unflattened(
    numbered: Iterator[tuple[int, str, str | None]],
) -> Iterator[tuple[int, str, str | None]]:
    """Every line, a table that lost its newlines (text out of a PDF) given back as its header and rows,
    all under the number of the one line that holds them."""
    for no, line, host in numbered:
        rows = split_flat_table(line, _FLAT_HEADER) if len(line) > 60 and line.count("%") >= 2 else None
        if rows:
            yield from ((no, row, host) for row in rows)
        else:
            yield no, line, host


def _unit_of_command(commands: list[tuple[int, str]]) -> str | None:
    """The size column an ``lfs df`` prompt line implies: Inodes (-i), bytes (-h/-H), else 1K-blocks."""
    for _, cmd in commands:
        if m := re.search(r"\blfs\s+df\b((?:\s+-\w+)*)", cmd):
            flags = "".join(f.lstrip("-") for f in m.group(1).split())
            return "Inodes" if "i" in flags else "bytes" if ("h" in flags or "H" in flags) else "1K-blocks"
    return None


def _size(cell: str, unit: str | None, base: int) -> tuple[int | None, int | None]:
    """(value, human base used) of one cell: 1K-blocks x1024, '1.1T' in powers of base, plain counts."""
    if unit == "1K-blocks" and cell.isdigit():
        return int(cell) * 1024, None
    m = _HUMAN.match(cell)
    if m is None or (unit is None and not m.group(2)):  # no header: a plain number has no known unit
        return None, None
    number = to_float(m.group(1))
    if number is None:
        return None, None
    letter = m.group(2).upper()
    return int(number * base ** _POWERS[letter]), (base if letter else None)


def _row(no: int, line: str, unit: str | None, base: int = 1024) -> dict[str, Any] | None:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["lustre_target"]}
    row["line"] = no
    row["size_header"] = unit
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
        bidx = m.group("bidx")
        row["target_index"] = int(bidx, 16) if bidx.startswith("0x") else int(bidx)
    row["mount_target"] = m.group("bracket")
    row["mountpoint"], row["flags"] = m.group("mount").strip(), m.group("flags")
    cells = (m.group("size"), m.group("used"), m.group("avail"))
    row.update(zip(("size_printed", "used_printed", "avail_printed"), cells, strict=True))
    row["use_printed"] = m.group("pct")
    known = unit or ("bytes" if any(c[-1:].isalpha() for c in cells) else None)  # '1.1T': -h, header lost
    sized = [_size(c, known, base) for c in cells]
    values = [v for v, _ in sized]
    bases = {b for _, b in sized if b}
    row["human_base"] = bases.pop() if bases else None
    if unit == "Inodes":
        keys = ("inodes_total", "inodes_used", "inodes_free", "inode_use_pct")
    else:
        keys = ("size_bytes", "used_bytes", "avail_bytes", "use_pct")
    if None in values and known is not None:
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
