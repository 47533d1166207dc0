"""File-system usage from ``df`` (``-P``, ``-T``, ``-h``, 1K-blocks, ``-B1``, ``-i``).

Commands whose output it reads (collector.sh runs ``df -P -T`` and ``df -P -i`` as this kind, and keeps
``df -h`` for people with kind ``-``)::

    df -P -T
    df -P -i         # inodes: same table, inode columns
    df -h

Sample (lines of tests/fixtures/df/hyperpod-workshop-controller-opt-sagemaker-fsx.txt)::

    Filesystem                 Size  Used Avail Use% Mounted on
    /dev/root                  146G   59G   87G  41% /
    tmpfs                      3.8G     0  3.8G   0% /dev/shm
    /dev/nvme1n1               500G  711M  500G   1% /opt/sagemaker
    10.1.71.197@tcp:/oyuutbev  1.2T  5.5G  1.2T   1% /fsx

Columns are found by the header (``Size``/``Avail`` = human sizes, powers of 1024; ``1K-blocks``,
``1024-blocks``, ``1B-blocks``, ``1-blocks``, ``512-blocks``, ``1M-blocks`` = that many bytes per
unit; ``Inodes``/``IUsed``/``IFree``/``IUse%`` with ``-i``; ``Use%`` or ``Capacity``), and each row
is read from the ``Use%`` cell outwards, so a device name that pushes the columns out of alignment,
or one that wraps onto its own line (``df`` without ``-P``), still parses.  A paste prefix in front of
the header (``# ``, indentation) is removed from every line.  A ``df: /fsx: ...`` error line (a hung or
stale mount) becomes a row carrying ``error``.

Schema
------
``filesystem_usage`` (one row per mounted file system):

- ``line`` int — line of the row (of its first line when wrapped)
- ``device`` str — the Filesystem column as printed (``10.1.71.197@tcp:/oyuutbev``)
- ``fstype`` str — the Type column (``-T`` only, else null)
- ``size_bytes``, ``used_bytes``, ``avail_bytes`` int, bytes — null for ``-`` or with ``-i``
- ``use_pct`` float, percent — Use% / Capacity
- ``inodes_total``, ``inodes_used``, ``inodes_free`` int; ``inode_use_pct`` float — ``-i`` only
- ``mountpoint`` str
- ``is_lustre`` bool — device ``<nid>@tcp:/``, ``@o2ib``, ``@efa``... or fstype ``lustre``
- ``is_network`` bool — a client mount of Lustre, NFS/SMB/FUSE-network types, or a ``host:/path``/``//host``
  device (a Lustre server's own targets, ``mgspool/mgt``, are not)
- ``error`` str — the ``df:`` message for a mount df could not read (other columns null)

Examples
--------
>>> rows = parse(SAMPLE).rows("filesystem_usage")
>>> [(r["mountpoint"], r["use_pct"], r["is_lustre"]) for r in rows]
[('/', 41.0, False), ('/dev/shm', 0.0, False), ('/opt/sagemaker', 1.0, False), ('/fsx', 1.0, True)]
>>> rows[3]["size_bytes"], rows[2]["used_bytes"]
(1319413953331, 745537536)
"""

from __future__ import annotations

import re
from typing import Any

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
from parsers._text import human_to_bytes, percent, strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="df",
    title="File-system usage (df)",
    commands=("df -P -T", "df -P -i", "df -h"),
    tables=("filesystem_usage",),
    versions_seen=("GNU coreutils df: -h, -Th, -P, 1K-blocks, -B1, -i",),
)

SCHEMA = {
    "filesystem_usage": (
        Column("line", "int", "line of the row"),
        Column("device", "str", "Filesystem column as printed"),
        Column("fstype", "str", "Type column (-T)"),
        Column("size_bytes", "int", "size, bytes"),
        Column("used_bytes", "int", "used, bytes"),
        Column("avail_bytes", "int", "available, bytes"),
        Column("use_pct", "float", "Use% / Capacity, percent"),
        Column("inodes_total", "int", "inodes (-i)"),
        Column("inodes_used", "int", "inodes used (-i)"),
        Column("inodes_free", "int", "inodes free (-i)"),
        Column("inode_use_pct", "float", "IUse%, percent (-i)"),
        Column("mountpoint", "str", "mount point"),
        Column("is_lustre", "bool", "a Lustre mount"),
        Column("is_network", "bool", "a network file system"),
        Column("error", "str", "df error message for this mount"),
    )
}

HEADER = re.compile(
    r"^(?P<prefix>.*?)Filesystem\s+(?P<type>Type\s+)?(?P<size>Size|Inodes|\S*-blocks)\s+"
    r"\S+\s+\S+\s+(?:Use%|Capacity|IUse%)\s+Mounted on\s*$"
)
_BLOCKS = re.compile(r"^(\d+)([KMGTPE]?)B?-blocks$", re.IGNORECASE)
_PCT = re.compile(r"^(?:\d+%|-)$")
_DF_ERROR = re.compile(r"^df: (?:[‘'`]?(?P<path>/[^:’']*)[’'`]?: )?(?P<msg>.+)$")
_LUSTRE_NID = re.compile(r"@(?:tcp|o2ib|efa|kfi)\d*[:,]", re.IGNORECASE)
_NETWORK_TYPES = re.compile(
    r"^(?:lustre|nfs\d*|cifs|smb\d*|ceph|glusterfs|fuse\.(?:sshfs|s3fs|glusterfs|ceph.*)|wekafs|gpfs|beegfs|9p)$"
)


def detect(text: str) -> int:
    """Confidence that text is df output."""
    lines = [strip_prefix(line) for line in text.splitlines()[:20]]
    return 80 if any(HEADER.match(line) for line in lines) else 0


def parse(text: str) -> ParseResult:
    if not text.strip():
        raise NoData("empty input")
    result = ParseResult()
    fmt: dict[str, Any] | None = None
    pending: tuple[int, str] | None = None  # a device name that wrapped onto its own line
    errors: list[str] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).rstrip()
        if m := HEADER.match(line):
            fmt = {"prefix": m.group("prefix"), "type": bool(m.group("type")), "size": m.group("size")}
            continue
        if fmt and fmt["prefix"].strip() and line.startswith(fmt["prefix"].rstrip()):
            line = line[len(fmt["prefix"].rstrip()) :]
        line = line.strip()
        if not line or set(line) <= set("[.…]"):
            continue
        if m := _DF_ERROR.match(line):
            errors.append(line)
            if m.group("path"):
                result.add("filesystem_usage", _error_row(no, m.group("path"), line))
            continue
        if fmt is None:
            result.issue(no, raw, "line before the df header")
            continue
        row = _row(no, line.split(), fmt)
        if row is None and pending is not None:  # the values of a wrapped device name
            row = _row(pending[0], f"{pending[1]} {line}".split(), fmt)
        elif pending is not None:
            result.issue(pending[0], pending[1], "device name without its values")
        pending = None
        if row is not None:
            result.add("filesystem_usage", row)
        elif len(line.split()) == 1:
            pending = (no, line)
        else:
            result.issue(no, raw, "expected device, sizes, use% and mount point")
    if pending is not None:
        result.issue(pending[0], pending[1], "device name without its values (truncated)")
    if fmt is None:
        if errors:
            raise CollectorError(errors[0][:300])
        require_text(text)
        raise ParseError("no df header line ('Filesystem ... Mounted on') found")
    return result


def _row(no: int, tokens: list[str], fmt: dict[str, Any]) -> dict[str, Any] | None:
    first = 4 + fmt["type"]  # index of the earliest possible Use% cell
    pct_at = next((i for i in range(first, len(tokens)) if _PCT.match(tokens[i])), None)
    if pct_at is None or pct_at + 1 >= len(tokens):
        return None
    size, used, avail = tokens[pct_at - 3 : pct_at]
    device = " ".join(tokens[: pct_at - 3 - fmt["type"]])
    fstype = tokens[pct_at - 4] if fmt["type"] else None
    row = _error_row(no, " ".join(tokens[pct_at + 1 :]), None)
    row.update(device=device, fstype=fstype, is_lustre=is_lustre(device, fstype))
    row["is_network"] = _is_network(device, fstype) or bool(_LUSTRE_NID.search(device))
    if fmt["size"] == "Inodes":
        row.update(inodes_total=to_int(size), inodes_used=to_int(used), inodes_free=to_int(avail))
        row["inode_use_pct"] = percent(tokens[pct_at])
        return row
    values = [_bytes(v, fmt["size"]) for v in (size, used, avail)]
    if any(v is None and t != "-" for v, t in zip(values, (size, used, avail), strict=True)):
        return None
    row.update(size_bytes=values[0], used_bytes=values[1], avail_bytes=values[2])
    row["use_pct"] = percent(tokens[pct_at])
    return row


def _error_row(no: int, mountpoint: str, error: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["filesystem_usage"]}
    row.update(line=no, mountpoint=mountpoint, error=error, is_lustre=False, is_network=False)
    return row


def _bytes(value: str, size_label: str) -> int | None:
    """A size cell in bytes: human ('1.2T') under Size, else count x block size."""
    m = _BLOCKS.match(size_label)
    if m and value.isdigit():
        return int(value) * int(m.group(1)) * 1024 ** "_KMGTPE".index(m.group(2).upper() or "_")
    return human_to_bytes(value)


def is_lustre(device: str | None, fstype: str | None) -> bool:
    """True for a Lustre device ('10.1.71.197@tcp:/oyuutbev') or fstype 'lustre'."""
    return fstype == "lustre" or bool(device and _LUSTRE_NID.search(device))


def _is_network(device: str, fstype: str | None) -> bool:
    if fstype == "lustre":  # a server's own targets (mgspool/mgt) are local
        return ":/" in device
    if fstype:
        return bool(_NETWORK_TYPES.match(fstype))
    return bool(re.match(r"^(?:[^/\s:]+:/|//)", device))
