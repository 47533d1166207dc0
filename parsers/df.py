"""File-system usage from ``df`` (``-P``, ``-T``, ``-h``, ``-H``, ``-k``, 1K-blocks, ``-B1``, ``-i``).

Commands whose output it reads (collector.sh runs ``df -P -T`` and ``df -P -i`` as this kind, and keeps
``df -h`` for people with kind ``-``)::

    df -P -T
    df -P -i         # inodes: same table, inode columns
    df -h            # -H (powers of 1000) read too: see below

Sample (lines of tests/fixtures/df/hyperpod-workshop-controller-opt-sagemaker-fsx.txt)::

    Filesystem                 Size  Used Avail Use% Mounted on
    /dev/root                  146G   59G   87G  41% /
    tmpfs                      3.8G     0  3.8G   0% /dev/shm
    /dev/nvme1n1               500G  711M  500G   1% /opt/sagemaker
    10.1.71.197@tcp:/oyuutbev  1.2T  5.5G  1.2T   1% /fsx

Columns are found by the header (``Size``/``Avail`` = human sizes; ``1K-blocks``, ``1024-blocks``,
``1B-blocks``, ``1-blocks``, ``512-blocks``, ``1M-blocks``, ``1kB-blocks`` = that many bytes per unit, ``kB``
meaning 1000; ``Inodes``/``IUsed``/``IFree``/``IUse%`` with ``-i``, human counts with ``-ih``; ``Use%`` or
``Capacity``), and each row is read from the ``Use%`` cell outwards, so a device name that pushes the
columns out of alignment, or one that wraps onto its own line (``df`` without ``-P``), still parses.

``-h`` and ``-H`` print the same header; ``-h`` means powers of 1024, ``-H`` (``--si``) powers of 1000.
Which one is decided, first match wins, by: the ``command`` given to :func:`parse`; a ``filename`` named
after its flags (``df-H.txt``, ``df_-hT.txt``); a ``df -H`` command line pasted above the
header; a cell with a lowercase ``k`` (only ``-H`` writes kilo so); else powers of 1024 (collector.sh runs
``df -h``).  A row keeps each cell as printed (``size_printed``...) beside the bytes, with the size column's
header and the powers used.

How the output travelled is taken off first by ``parsers._text.clean_lines`` (launcher tags, prompts,
``^Z``, fences, glued backticks, ``...`` elisions, ``<-----`` annotations, CRLF); a launcher's tag (pdsh
``node-1: ``, kubectl ``--prefix`` ``[pod/name/ctr] ``, ``srun -l`` rank) is kept in ``host``, each host read
on its own (interleaved output, wrapped names).  A paste prefix in front of the header (``# ``) is removed
from every line; a df command line or a prompt left alone (``dragon@smaug:~$``) is skipped.  Rows met
without a header (a ``df | grep /$`` excerpt) are read when they have the shape of a row: digits as
1K-blocks (df's default, ``unit_bytes`` 1024, ``size_header`` null), a letter as a human size.  A ``df:
/fsx: ...`` error line (a hung or stale mount) becomes a row carrying ``error``.  A line that looks like
data but does not read is an issue at its line; no row at all is a ParseError saying what was expected
and what was seen.

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
- ``host`` str — the launcher tag of the line: pdsh host, kubectl pod, srun rank (null without one)
- ``size_header`` str — the size column's header as printed (``Size``, ``1K-blocks``, ``Inodes``; null
  for rows read without a header)
- ``unit_bytes`` int — bytes per block of a ``*-blocks`` column (null for human sizes)
- ``human_base`` int — 1024 (``-h``) or 1000 (``-H``), the powers of a human cell's unit letter
- ``size_printed``, ``used_printed``, ``avail_printed``, ``use_printed`` str — the cells as printed
- ``inodes_printed``, ``iused_printed``, ``ifree_printed``, ``iuse_printed`` str — the same with ``-i``

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
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from parsers._text import Cleaned, clean_lines, percent, split_flat_table, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="df",
    title="File-system usage (df)",
    commands=("df -P -T", "df -P -i", "df -h", "df -H", "df -k", "df -Th", "df -ih"),
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
        Column("host", "str", "pdsh/kubectl host prefix of the line"),
        Column("size_header", "str", "the size column's header as printed (Size, 1K-blocks, Inodes)"),
        Column("unit_bytes", "int", "bytes per block of a *-blocks column"),
        Column("human_base", "int", "1024 (-h) or 1000 (-H): powers of a human size's unit letter"),
        Column("size_printed", "str", "Size / *-blocks cell as printed"),
        Column("used_printed", "str", "Used cell as printed"),
        Column("avail_printed", "str", "Avail / Available cell as printed"),
        Column("use_printed", "str", "Use% / Capacity cell as printed"),
        Column("inodes_printed", "str", "Inodes cell as printed (-i)"),
        Column("iused_printed", "str", "IUsed cell as printed (-i)"),
        Column("ifree_printed", "str", "IFree cell as printed (-i)"),
        Column("iuse_printed", "str", "IUse% cell as printed (-i)"),
    )
}

HEADER = re.compile(
    r"^(?P<prefix>.*?)Filesystem\s+(?P<type>Type\s+)?(?P<size>Size|Inodes|\S*-blocks)\s+"
    r"\S+\s+\S+\s+(?:Use%|Capacity|IUse%)\s+Mounted on\s*$"
)
_BLOCKS = re.compile(r"^(\d+)([kKMGTPEZY]?)(i?B)?-blocks$")
_PCT = re.compile(r"^(?:\d+%|-)$")
_DF_ERROR = re.compile(r"^df: (?:[‘'`]?(?P<path>/[^:’']*)[’'`]?: )?(?P<msg>.+)$")
_LUSTRE_NID = re.compile(r"@(?:tcp|o2ib|efa|kfi)\d*[:,]", re.IGNORECASE)
_NETWORK_TYPES = re.compile(
    r"^(?:lustre|nfs\d*|cifs|smb\d*|ceph|glusterfs|fuse\.(?:sshfs|s3fs|glusterfs|ceph.*)|wekafs|gpfs|beegfs|9p)$"
)
#: A df command line in a paste: ``df``, ``sudo df -PT /fsx``, ``→ df | grep /$``, ``/root # df -kP``.
_DF_CMD = re.compile(r"(?:^|[\s$#>|;&(/])df(?:\s|$)")
#: A use% cell (a command line has none).
_PCT_CELL = re.compile(r"\s(?:\d+%|-)\s+/")
#: A prompt with no command after it (``dragon@smaug:~$``, ``[root@x ~]#``, ``$``), left by a paste.
_BARE_PROMPT = re.compile(r"^(?:[\w.-]+@[\w.-]+(?::\S*)?\s?[$#]|\[[^\]]*\]\s?[$#]|[$#>→➜])$")
#: A df command line pasted with its output (``$ df -H``, ``[root@x ~]# df -hT /fsx``).
_COMMAND = re.compile(r"(?:^|[\s$#>])df(?P<args>(?:\s+-{1,2}[\w-]+(?:=\S+)?)+)")
#: A capture file named after its flags (``df-H.txt``, ``cmd/df_-hT.txt``).
_NAME_FLAGS = re.compile(r"(?:^|[/\\])df[-_]+-?(?P<flags>[aBhHiklmPTx]{1,6})(?:\.\w+)?$")
_HUMAN = re.compile(r"^([0-9]+(?:[.,][0-9]+)?)([kKMGTPEZY]?)$")
_POWERS = "_KMGTPEZY"


#: The header of a df table wherever it stands in a line (a table whose newlines were lost).
_FLAT_HEADER = re.compile(
    r"Filesystem\s+(?:Type\s+)?(?:Size|Inodes|\S*-blocks)\s+\S+\s+\S+\s+(?:Use%|Capacity|IUse%)\s+Mounted\s+on"
)


def _unflattened(lines: list[str]) -> Iterator[tuple[int, str]]:
    """(index, line) of every line, a table that lost its newlines (text out of a PDF) given back as its
    header and rows, all under the index of the one line that holds them."""
    for index, line in enumerate(lines):
        if len(line) > 60 and line.count("%") >= 2 and (rows := split_flat_table(line, _FLAT_HEADER)):
            yield from ((index, row) for row in rows)
        else:
            yield index, line


def detect(text: str) -> int:
    """Confidence that text is df output."""
    head = "\n".join(text.splitlines()[:60])
    cleaned = clean_lines(head)
    lines = cleaned.lines
    if any(
        "Filesystem" in line and (HEADER.match(line) or _FLAT_HEADER.match(line.lstrip())) for line in lines
    ):
        return 80
    # a grep'd excerpt: a df command line (`$ df | grep /$`) and a row that reads without a header
    if any(_is_df(cmd) for _, cmd in cleaned.commands) or any(_is_df(ln) and len(ln) < 80 for ln in lines):
        for line in lines:
            tokens = line.split()
            if (fmt := _headerless(tokens, 1024)) and _row(0, tokens, fmt, None):
                return 60
    return 0


def human_base(command: str | None) -> int | None:
    """Powers that ``Size`` cells use by the command's flags: 1000 for ``-H``/``--si``, 1024 for ``-h``.

    >>> human_base("df -H"), human_base("df -PhT /fsx"), human_base("df --si"), human_base("df -P")
    (1000, 1024, 1000, None)
    """
    m = _COMMAND.search(command or "")
    if not m:
        return None
    base = None
    for arg in m.group("args").split():
        if arg in ("--si", "--si=yes"):
            base = 1000
        elif arg == "--human-readable":
            base = 1024
        elif re.match(r"^-[A-Za-z]+$", arg):
            for flag in arg[1:]:
                base = 1000 if flag == "H" else 1024 if flag == "h" else base
    return base


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse df output; ``command`` (the command line that produced it), else a ``filename`` named after
    its flags (``df-H.txt``), decides ``-H`` from ``-h``.

    >>> text = "Filesystem Size Used Avail Use% Mounted on\\n/dev/root 2.0G 1.0G 1.0G 50% /\\n"
    >>> parse(text, command="df -H").rows("filesystem_usage")[0]["size_bytes"]
    2000000000
    >>> parse(text, command="df -h").rows("filesystem_usage")[0]["size_bytes"]
    2147483648
    >>> parse(text, filename="cmd/df-H.txt").rows("filesystem_usage")[0]["size_bytes"]
    2000000000
    """
    if not command and (m := _NAME_FLAGS.search(filename or "")):
        command = f"df -{m.group('flags')}"
    if not text.strip():
        raise NoData("empty input")
    cleaned = clean_lines(text)
    if cleaned.hosts:  # a kubectl tag alone on a blank line ("[pod/x/c]" once its space is stripped)
        tags = {f"[{h}]" for h in cleaned.hosts if h}
        cleaned.lines[:] = ["" if line in tags else line for line in cleaned.lines]
    reader = _Reader(cleaned, text.splitlines(), human_base(command), _si_hint(cleaned.lines))
    for index, line in _unflattened(cleaned.lines):
        reader.line(index, line)
    return reader.finish(text)


@dataclass
class _HostState:
    """What one host's lines have set: the header's format, a wrapped device name, the last df command."""

    fmt: dict[str, Any] | None = None
    pending: tuple[int, str, str] | None = None  # (line, device name, raw line) awaiting its values
    cmd: str | None = None


@dataclass
class _Reader:
    """The state of one df capture, read line by line (hosts of a launcher's output kept apart)."""

    cleaned: Cleaned
    raw_lines: list[str]
    given: int | None  # 1000 or 1024 from the command line, if it says
    si_hint: bool
    result: ParseResult = field(default_factory=ParseResult)
    states: dict[str | None, _HostState] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    commands: dict[int, str] = field(default_factory=dict)  # line -> the command of a prompt line

    def __post_init__(self) -> None:
        self.commands = dict(self.cleaned.commands)

    def line(self, index: int, line: str) -> None:
        no = index + 1
        hosts = self.cleaned.hosts
        host = hosts[index] if hosts else None
        state = self.states.setdefault(host, _HostState())
        if not line:
            if no in self.commands and _is_df(self.commands[no]):  # a prompt line: `$ df -H`
                state.cmd = self.commands[no]
            return
        if "Filesystem" in line and (m := HEADER.match(line)):
            base = self.given or human_base(state.cmd) or (1000 if self.si_hint else 1024)
            state.fmt = {"prefix": m.group("prefix"), "type": bool(m.group("type")), "size": m.group("size"),
                         "base": base}  # fmt: skip
            return
        fmt = state.fmt
        if fmt and fmt["prefix"].strip() and line.startswith(fmt["prefix"].rstrip()):
            line = line[len(fmt["prefix"].rstrip()) :]
        line = line.strip()
        if not line or (line[-1] in "$#>→➜" and _BARE_PROMPT.match(line)):
            return
        raw = self.raw_lines[index]
        if line.startswith("df:") and (m := _DF_ERROR.match(line)):
            self.errors.append(line)
            if m.group("path"):
                self.result.add("filesystem_usage", _error_row(no, m.group("path"), line, host))
            else:
                self.result.issue(no, raw, "df error naming no mount point")
        elif _is_df(line) and not _PCT_CELL.search(line):  # a command line pasted with its output
            state.cmd = line
        elif fmt is None:
            self._headerless(no, raw, line, state, host)
        else:
            self._row(no, raw, line, state, fmt, host)

    def _headerless(self, no: int, raw: str, line: str, state: _HostState, host: str | None) -> None:
        """A row met before any header: read as a grep'd excerpt when its cells allow."""
        fmt = _headerless(line.split(), self.given or human_base(state.cmd) or 1024)
        row = _row(no, line.split(), fmt, host) if fmt else None
        if row is None:
            self.result.issue(no, raw, "line before the df header (Filesystem ... Mounted on)")
        else:
            self.result.add("filesystem_usage", row)

    def _row(
        self, no: int, raw: str, line: str, state: _HostState, fmt: dict[str, Any], host: str | None
    ) -> None:
        """A row under a header, or the values of a device name wrapped onto the line before."""
        pending, result = state.pending, self.result
        row = _row(no, line.split(), fmt, host)
        if row is None and pending is not None:  # the values of a wrapped device name
            row = _row(pending[0], f"{pending[1]} {line}".split(), fmt, host)
        elif pending is not None:
            result.issue(pending[0], pending[2], "device name without its values")
        state.pending = None
        if row is not None:
            result.add("filesystem_usage", row)
        elif len(line.split()) == 1:
            state.pending = (no, line, raw)
        else:
            result.issue(no, raw, "expected device, sizes, use% and mount point")

    def finish(self, text: str) -> ParseResult:
        result = self.result
        for state in self.states.values():
            if state.pending is not None:
                no, _, raw = state.pending
                result.issue(no, raw, "device name without its values (truncated)")
        if result.rows("filesystem_usage"):
            return result
        if self.errors:
            raise CollectorError(self.errors[0][:300])
        require_text(text)
        seen = next((ln.strip() for ln in self.cleaned.lines if ln.strip()), "")[:120]
        if not any(state.fmt for state in self.states.values()):
            raise ParseError(
                f"expected a df header line ('Filesystem ... Mounted on') or df rows; saw {seen!r}"
            )
        if result.issues:
            first = result.issues[0]
            raise ParseError(
                "expected df rows (device, sizes, use% and mount point) under the header; "
                f"{len(result.issues)} line(s) not understood, first at line {first.line_no}: {first.line[:120]!r}"
            )
        raise NoData("a df header without rows")


def _is_df(line: str) -> bool:
    """A df command line: ``df -h``, ``sudo df -PT /fsx``, ``df | grep /$``."""
    return "df" in line and bool(_DF_CMD.search(line))


def _headerless(tokens: list[str], base: int) -> dict[str, Any] | None:
    """The format of a df row met without a header (a grep'd excerpt): sizes as digits are read as
    1K-blocks (df's default), with a letter as human sizes; a Type column when a word precedes them."""
    if len(tokens) < 6:
        return None
    typed = len(tokens) >= 7 and not _PCT.match(tokens[4]) and _PCT.match(tokens[5]) is not None
    cells = tokens[1 + typed : 4 + typed]
    if not all(_HUMAN.match(c) or c == "-" for c in cells) or not _PCT.match(tokens[4 + typed]):
        return None
    digits = all(c.isdigit() or c == "-" for c in cells)
    return {"prefix": "", "type": typed, "size": None, "base": base, "unit": 1024 if digits else None}


def _si_hint(lines: list[str]) -> bool:
    """``df -H`` writes kilo as ``k``; ``df -h`` never does (it writes ``K``)."""
    for line in lines:
        tokens = line.split()
        pct_at = next((i for i, t in enumerate(tokens) if i >= 4 and _PCT.match(t)), None)
        if pct_at is not None and any(re.match(r"^\d+(?:[.,]\d)?k$", t) for t in tokens[pct_at - 3 : pct_at]):
            return True
    return False


def _row(no: int, tokens: list[str], fmt: dict[str, Any], host: str | None) -> dict[str, Any] | None:
    first = 4 + fmt["type"]  # index of the earliest possible Use% cell
    pct_at = next((i for i in range(first, len(tokens)) if _PCT.match(tokens[i])), None)
    if pct_at is None or pct_at + 1 >= len(tokens):
        return None
    size, used, avail = tokens[pct_at - 3 : pct_at]
    device = " ".join(tokens[: pct_at - 3 - fmt["type"]])
    fstype = tokens[pct_at - 4] if fmt["type"] else None
    row = _error_row(no, " ".join(tokens[pct_at + 1 :]), None, host)
    row.update(device=device, fstype=fstype, is_lustre=is_lustre(device, fstype), size_header=fmt["size"])
    row["is_network"] = _is_network(device, fstype) or bool(_LUSTRE_NID.search(device))
    unit, human = (
        (fmt["unit"], None if fmt["unit"] else fmt["base"])
        if "unit" in fmt
        else _unit(fmt["size"], fmt["base"])
    )
    row.update(unit_bytes=unit, human_base=human)
    values = [_count(v, unit, human) for v in (size, used, avail)]
    if any(v is None and t != "-" for v, t in zip(values, (size, used, avail), strict=True)):
        return None
    if fmt["size"] == "Inodes":
        row.update(inodes_printed=size, iused_printed=used, ifree_printed=avail, iuse_printed=tokens[pct_at])
        row.update(inodes_total=values[0], inodes_used=values[1], inodes_free=values[2])
        row["inode_use_pct"] = percent(tokens[pct_at])
        return row
    row.update(size_printed=size, used_printed=used, avail_printed=avail, use_printed=tokens[pct_at])
    row.update(size_bytes=values[0], used_bytes=values[1], avail_bytes=values[2])
    row["use_pct"] = percent(tokens[pct_at])
    return row


def _error_row(no: int, mountpoint: str, error: str | None, host: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["filesystem_usage"]}
    row.update(line=no, mountpoint=mountpoint, error=error, is_lustre=False, is_network=False, host=host)
    return row


def _unit(size_label: str, base: int) -> tuple[int | None, int | None]:
    """(bytes per block, None) for a ``*-blocks`` column; (None, 1024 or 1000) for human cells.

    >>> _unit("1K-blocks", 1024), _unit("1kB-blocks", 1024), _unit("1M-blocks", 1024), _unit("Size", 1000)
    ((1024, None), (1000, None), (1048576, None), (None, 1000))
    """
    m = _BLOCKS.match(size_label)
    if not m:
        return None, base
    power = _POWERS.index(m.group(2).upper() or "_")
    return int(m.group(1)) * (1000 if m.group(3) == "B" else 1024) ** power, None


def _count(value: str, unit: int | None, base: int | None) -> int | None:
    """A cell as a number: blocks x unit, or a human size ('1.2T', '4.1k') in powers of ``base``."""
    if unit is not None and value.isdigit():
        return int(value) * unit
    m = _HUMAN.match(value)
    if not m:
        return None
    number = to_float(m.group(1))
    if number is None:
        return None
    return int(number * (base or 1024) ** _POWERS.index(m.group(2).upper() or "_"))


def is_lustre(device: str | None, fstype: str | None) -> bool:
    """True for a Lustre device ('10.1.71.197@tcp:/oyuutbev') or fstype 'lustre'."""
    return fstype == "lustre" or bool(device and _LUSTRE_NID.search(device))


def _is_network(device: str, fstype: str | None) -> bool:
    if fstype == "lustre":  # a server's own targets (mgspool/mgt) are local
        return ":/" in device
    if fstype:
        return bool(_NETWORK_TYPES.match(fstype))
    return bool(re.match(r"^(?:[^/\s:]+:/|//)", device))
