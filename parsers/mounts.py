"""Mounted file systems from ``/proc/mounts`` or the ``mount`` command.

Commands the collector runs::

    cat /proc/mounts

Sample (hand-written, with the mounts of the real HyperPod df fixture)::

    /dev/root / ext4 rw,relatime,discard,errors=remount-ro 0 0
    tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
    /dev/nvme1n1 /opt/sagemaker ext4 rw,relatime 0 0
    10.1.71.197@tcp:/oyuutbev /fsx lustre rw,flock,lazystatfs,encrypt 0 0

Formats read: ``/proc/mounts`` / ``/proc/self/mounts`` / ``/etc/mtab`` (six fields; ``\\040``-style
octal escapes in paths are decoded), ``mount`` output (``dev on /path type fstype (opts)``) and the
BSD/macOS ``mount`` form (``dev on /path (fstype, opts)``).  No public capture of a HyperPod node's
mount table was found; the tests use a hand-written one with HyperPod's usual mounts.

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

import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import strip_prefix
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
    )
}

_PROC = re.compile(r"^(?P<dev>\S+) (?P<mnt>/\S*) (?P<type>\S+) (?P<opts>\S+) \d+ \d+$")
_MOUNT = re.compile(r"^(?P<dev>.+?) on (?P<mnt>/.*?) type (?P<type>\S+) \((?P<opts>[^)]*)\)$")
_BSD = re.compile(r"^(?P<dev>.+?) on (?P<mnt>/.*?) \((?P<type>[^,)]+)(?:, (?P<opts>[^)]*))?\)$")
_OCTAL = re.compile(r"\\([0-7]{3})")


def detect(text: str) -> int:
    """Confidence that text is a mount table."""
    lines = [strip_prefix(line).strip() for line in text.splitlines()[:50] if line.strip()]
    if not lines:
        return 0
    proc = sum(1 for line in lines if _PROC.match(line))
    mount = sum(1 for line in lines if _MOUNT.match(line) or _BSD.match(line))
    best = max(proc, mount)
    if best >= 2 and best >= len(lines) * 0.8:
        return 75
    return 40 if best >= 1 and best == len(lines) else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).strip()
        if not line or set(line) <= set("[.…]"):
            continue
        m = _PROC.match(line) or _MOUNT.match(line) or _BSD.match(line)
        if m is None:
            result.issue(no, raw, "not a /proc/mounts or mount line")
            continue
        result.add("mount", _row(no, m))
    if not result.rows("mount"):
        raise ParseError("no /proc/mounts or 'mount' lines found")
    return result


def _row(no: int, m: re.Match[str]) -> dict[str, Any]:
    device, fstype = _unescape(m.group("dev")), m.group("type")
    options = (m.group("opts") or "").replace(" ", "")
    return {
        "line": no,
        "device": device,
        "mountpoint": _unescape(m.group("mnt")),
        "fstype": fstype,
        "options": options,
        "read_only": "ro" in options.split(","),
        "is_lustre": is_lustre(device, fstype),
    }


def _unescape(value: str) -> str:
    """Decode the octal escapes /proc/mounts writes for space, tab, newline and backslash."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), value)
