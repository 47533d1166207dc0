"""Mounted file systems from ``/proc/mounts`` or the ``mount`` command.

Commands the collector runs::

    cat /proc/mounts

Sample (hand-written, with the mounts of the real HyperPod df fixture)::

    /dev/root / ext4 rw,relatime,discard,errors=remount-ro 0 0
    tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
    /dev/nvme1n1 /opt/sagemaker ext4 rw,relatime 0 0
    10.1.71.197@tcp:/oyuutbev /fsx lustre rw,flock,lazystatfs,encrypt 0 0

Formats read: ``/proc/mounts`` / ``/proc/self/mounts`` / ``/etc/mtab`` (six fields; ``\\040``-style
octal escapes in paths are decoded), ``/proc/self/mountinfo``, ``mount`` output (``dev on /path type
fstype (opts)``, with ``mount -l``'s ``[LABEL]``), the BSD/macOS ``mount`` form (``dev on /path (fstype,
opts)``) and ``findmnt`` (list ``-l`` or tree, columns by its header, ``-o`` lists too).  How the output
travelled is taken off by ``parsers._text.clean_lines`` (launcher tags kept in ``host``, prompts, fences,
elisions, annotations, CRLF); the command line pasted with it is skipped.  A line that is none of these
is an issue; no mount at all is a ParseError saying what was expected and what was seen.  No public
capture of a HyperPod node's mount table was found; the tests use a hand-written one with HyperPod's
usual mounts, and jc's real util-linux captures.

Schema
------
``mount`` (one row per mount):

- ``line`` int — line of the mount
- ``device`` str — mount source (``10.1.71.197@tcp:/oyuutbev``, ``/dev/nvme1n1``, ``tmpfs``)
- ``mountpoint`` str
- ``fstype`` str
- ``options`` str — comma-separated mount options as printed
- ``read_only`` bool — options include ``ro``
- ``is_lustre`` bool — fstype ``lustre`` or a Lustre NID device (``@tcp:/``, ``@o2ib``...)
- ``freq``, ``passno`` int — the 5th and 6th fields of /proc/mounts (findmnt FREQ, PASSNO); null otherwise
- ``label`` str — ``mount -l``'s ``[LABEL]`` (findmnt LABEL)
- ``format`` str — ``proc_mounts``, ``mountinfo``, ``mount``, ``bsd_mount`` or ``findmnt``
- ``host`` str — launcher tag of the line (pdsh host, srun rank, pod), null without one
- ``extra`` str — JSON object of the other printed fields (findmnt's other columns; mountinfo's ids,
  root, optional fields and super options)

Examples
--------
>>> rows = parse(SAMPLE).rows("mount")
>>> [(r["mountpoint"], r["is_lustre"]) for r in rows]
[('/', False), ('/dev/shm', False), ('/opt/sagemaker', False), ('/fsx', True)]
>>> rows[3]["device"], rows[3]["fstype"], rows[2]["fstype"]
('10.1.71.197@tcp:/oyuutbev', 'lustre', 'ext4')
>>> parse("10.1.71.197@tcp:/oyuutbev on /fsx type lustre (ro,flock)").rows("mount")[0]["read_only"]
True
"""

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines
from parsers.df import is_lustre

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="mounts",
    title="Mount table (/proc/mounts, mount)",
    commands=("cat /proc/mounts", "mount"),
    tables=("mount",),
    versions_seen=("Linux /proc/mounts", "util-linux mount", "BSD/macOS mount"),
)

SCHEMA = {
    "mount": (
        Column("line", "int", "line of the mount"),
        Column("device", "str", "mount source"),
        Column("mountpoint", "str", "mount point"),
        Column("fstype", "str", "file-system type"),
        Column("options", "str", "mount options, comma separated"),
        Column("read_only", "bool", "mounted read-only"),
        Column("is_lustre", "bool", "a Lustre mount"),
        Column("freq", "int", "dump frequency, 5th field of /proc/mounts"),
        Column("passno", "int", "fsck pass, 6th field of /proc/mounts"),
        Column("label", "str", "[LABEL] after the options of mount -l"),
        Column("format", "str", "proc_mounts, mount, bsd_mount, findmnt or mountinfo"),
        Column("host", "str", "launcher tag of the line (pdsh host, srun rank, pod)"),
        Column("extra", "str", "JSON object of other printed fields (findmnt columns, mountinfo ids)"),
    )
}

_PROC = re.compile(r"^(?P<dev>\S+) (?P<mnt>/\S*) (?P<type>\S+) (?P<opts>\S+) (?P<freq>\d+) (?P<passno>\d+)$")
_MOUNT = re.compile(
    r"^(?P<dev>.+?) on (?P<mnt>/.*?) type (?P<type>\S+) \((?P<opts>[^)]*)\)(?: \[(?P<label>[^\]]*)\])?$"
)
_BSD = re.compile(r"^(?P<dev>.+?) on (?P<mnt>/.*?) \((?P<type>[^,)]+)(?:, (?P<opts>[^)]*))?\)$")
#: /proc/self/mountinfo: id parent major:minor root mountpoint options [optional...] - type source super-options
_MOUNTINFO = re.compile(
    r"^(?P<id>\d+) (?P<parent>\d+) (?P<majmin>\d+:\d+) (?P<root>\S+) (?P<mnt>/\S*) (?P<opts>\S+)"
    r"(?P<optional>(?: \S+:\S+)*) - (?P<type>\S+) (?P<dev>\S+) (?P<sopts>\S+)$"
)
#: A prompt with no command after it, left by a paste.
_BARE_PROMPT = re.compile(r"^(?:[\w.-]+@[\w.-]+(?::\S*)?\s?[$#]|\[[^\]]*\]\s?[$#]|[$#>→➜])$")
#: The command of a mount table pasted with its output.
_MOUNT_CMD = re.compile(
    r"^(?:\S*[$#>→]\s*)?(?:sudo\s+)?(?:findmnt|mount|cat\s+/proc/(?:self/)?mount\w*|cat\s+/etc/mtab)(?:\s|$)"
)
_OCTAL = re.compile(r"\\([0-7]{3})")
#: findmnt's header: TARGET SOURCE FSTYPE OPTIONS by default, any -o list of its column names.
_FINDMNT_COLS = frozenset(
    [
        "TARGET",
        "SOURCE",
        "SOURCES",
        "FSTYPE",
        "OPTIONS",
        "VFS-OPTIONS",
        "FS-OPTIONS",
        "LABEL",
        "UUID",
        "PARTLABEL",
        "PARTUUID",
        "MAJ:MIN",
        "ACTION",
        "OLD-TARGET",
        "OLD-OPTIONS",
        "SIZE",
        "AVAIL",
        "USED",
        "USE%",
        "FSROOT",
        "TID",
        "ID",
        "OPT-FIELDS",
        "PROPAGATION",
        "FREQ",
        "PASSNO",
    ]
)
#: The tree findmnt draws in front of a target (UTF-8 and --ascii).
_TREE = re.compile(r"^[\s│├└─|`-]*")


def detect(text: str) -> int:
    """Confidence that text is a mount table (/proc/mounts, mountinfo, mount, findmnt)."""
    lines = [ln.strip() for ln in clean_lines("\n".join(text.splitlines()[:60])).lines if ln.strip()]
    if not lines:
        return 0
    if _findmnt_header(lines[0]):
        return 75
    hits = sum(1 for line in lines if _match(line))
    if hits >= 2 and hits >= len(lines) * 0.8:
        return 75
    return 40 if hits >= 1 and hits == len(lines) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult()
    cleaned = clean_lines(text)
    if cleaned.hosts:  # a kubectl tag alone on a blank line ("[pod/x/c]" once its space is stripped)
        tags = {f"[{h}]" for h in cleaned.hosts if h}
        cleaned.lines[:] = ["" if line in tags else line for line in cleaned.lines]
    raw_lines = text.splitlines()
    hosts = cleaned.hosts
    columns: dict[str | None, list[str]] = {}  # per host: findmnt's header
    for index, line in enumerate(cleaned.lines):
        line = line.strip()
        if not line or (line[-1] in "$#>→➜" and _BARE_PROMPT.match(line)):
            continue
        no, host = index + 1, hosts[index] if hosts else None
        if cols := _findmnt_header(line):
            columns[host] = cols
            continue
        if (m := _match(line)) is not None:
            result.add("mount", _row(no, m, host))
        elif host in columns and (row := _findmnt_row(no, line, columns[host], host)) is not None:
            result.add("mount", row)
        elif _MOUNT_CMD.match(line):
            continue  # the command line pasted with its output: `$ findmnt -l`, `cat /proc/mounts`
        else:
            expected = "findmnt columns " + " ".join(columns[host]) if host in columns else "a mount line"
            result.issue(
                no, raw_lines[index], f"expected {expected} (/proc/mounts, mountinfo, mount or findmnt)"
            )
    if not result.rows("mount"):
        seen = next((ln.strip() for ln in cleaned.lines if ln.strip()), "")[:120]
        raise ParseError(
            "expected /proc/mounts ('dev /mnt type opts 0 0'), mountinfo, 'mount' ('dev on /mnt type t (opts)') "
            f"or findmnt (TARGET SOURCE FSTYPE OPTIONS) lines; saw {seen!r}"
        )
    return result


def _match(line: str) -> re.Match[str] | None:
    if " on /" in line:
        return _MOUNT.match(line) or _BSD.match(line)
    if " - " in line and line[0].isdigit():
        return _MOUNTINFO.match(line)
    return _PROC.match(line)


def _findmnt_header(line: str) -> list[str] | None:
    if not line.startswith(("TARGET", "SOURCE")):
        return None
    tokens = line.split()
    if len(tokens) >= 2 and tokens[0] in ("TARGET", "SOURCE") and all(t in _FINDMNT_COLS for t in tokens):
        return tokens
    return None


def _findmnt_row(no: int, line: str, cols: list[str], host: str | None) -> dict[str, Any] | None:
    """A findmnt row (list or tree): cells split on blanks, the tree drawn before TARGET taken off."""
    tokens = _TREE.sub("", line).split()
    if len(tokens) != len(cols):
        return None
    cells = dict(zip(cols, tokens, strict=True))
    target = cells.get("TARGET", "")
    if not target.startswith("/"):
        return None
    options = cells.get("OPTIONS") or cells.get("VFS-OPTIONS") or ""
    row = _base(no, cells.get("SOURCE"), target, cells.get("FSTYPE"), options, "findmnt", host)
    known = {"TARGET", "SOURCE", "FSTYPE", "OPTIONS"}
    row["label"] = cells.get("LABEL")
    row["freq"], row["passno"] = _int(cells.get("FREQ")), _int(cells.get("PASSNO"))
    row["extra"] = json.dumps(
        {k: v for k, v in cells.items() if k not in known | {"LABEL", "FREQ", "PASSNO"}}
    )
    return row


def _row(no: int, m: re.Match[str], host: str | None) -> dict[str, Any]:
    groups = m.groupdict()
    fmt = "mountinfo" if "majmin" in groups else "proc_mounts" if "freq" in groups else "mount"
    if fmt == "mount" and "label" not in groups:
        fmt = "bsd_mount"
    options = (groups.get("opts") or "").replace(" ", "")
    row = _base(no, _unescape(groups["dev"]), _unescape(groups["mnt"]), groups["type"], options, fmt, host)
    row["label"] = groups.get("label")
    row["freq"], row["passno"] = _int(groups.get("freq")), _int(groups.get("passno"))
    if fmt == "mountinfo":
        extra = {k: groups[k] for k in ("id", "parent", "majmin", "root", "sopts")}
        extra["optional"] = groups["optional"].strip()
        row["extra"] = json.dumps(extra)
    return row


def _base(
    no: int, device: str | None, mountpoint: str, fstype: str | None, options: str, fmt: str, host: str | None
) -> dict[str, Any]:
    return {
        "line": no,
        "device": device,
        "mountpoint": mountpoint,
        "fstype": fstype,
        "options": options,
        "read_only": "ro" in options.split(","),
        "is_lustre": is_lustre(device, fstype),
        "freq": None,
        "passno": None,
        "label": None,
        "format": fmt,
        "host": host,
        "extra": "{}",
    }


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _unescape(value: str) -> str:
    """Decode the octal escapes /proc/mounts writes for space, tab, newline and backslash."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), value)
