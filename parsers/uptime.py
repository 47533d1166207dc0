"""Host uptime and load averages from ``/proc/uptime``, ``uptime`` or ``/proc/loadavg``.

Commands the collector runs::

    cat /proc/uptime

Sample (hand-written; no real capture is in the samples, see tests/fixtures/uptime/PROVENANCE.md)::

    350735.47 234388.90

Formats read, one row per line: ``/proc/uptime`` (seconds up, idle seconds summed over CPUs),
``uptime`` (`` 10:14:06 up 4 days,  1:24,  2 users,  load average: 0.31, 0.42, 0.40``; also the
macOS ``load averages: 0.31 0.42 0.40`` form, locale decimal commas and a ``host:`` prefix from pdsh),
``uptime -p`` (``up 4 days, 1 hour, 24 minutes``) and ``/proc/loadavg`` (``0.31 0.42 0.40 1/234 5678``).
``uptime`` prints minutes at best, so its ``uptime_s`` is rounded to the minute.

Schema
------
``host_uptime`` (one row per line read):

- ``line`` int — line of the row
- ``uptime_s`` float, seconds — time since boot (null for ``/proc/loadavg``)
- ``idle_s`` float, seconds — idle time summed over all CPUs (``/proc/uptime`` only)
- ``load1``, ``load5``, ``load15`` float — load averages (null for ``/proc/uptime``)
- ``source`` str — ``proc_uptime``, ``uptime`` or ``loadavg``

Examples
--------
>>> parse(SAMPLE).rows("host_uptime")[0]["uptime_s"]
350735.47
>>> up = " 10:14:06 up 4 days,  1:24,  2 users,  load average: 0.31, 0.42, 0.40"
>>> row = parse(up).rows("host_uptime")[0]
>>> row["uptime_s"], row["load1"], row["load15"]
(350640.0, 0.31, 0.4)
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import strip_prefix, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="uptime",
    title="Host uptime and load (/proc/uptime, uptime)",
    commands=("cat /proc/uptime", "uptime", "uptime -p", "cat /proc/loadavg"),
    tables=("host_uptime",),
    versions_seen=("Linux /proc/uptime", "procps uptime", "/proc/loadavg"),
)

SCHEMA = {
    "host_uptime": (
        Column("line", "int", "line of the row"),
        Column("uptime_s", "float", "seconds since boot"),
        Column("idle_s", "float", "idle seconds summed over CPUs"),
        Column("load1", "float", "1-minute load average"),
        Column("load5", "float", "5-minute load average"),
        Column("load15", "float", "15-minute load average"),
        Column("source", "str", "proc_uptime, uptime or loadavg"),
    )
}

_PROC_UPTIME = re.compile(r"^(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)$")
_LOADAVG = re.compile(r"^(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+\d+/\d+\s+\d+$")
_UP = re.compile(r"\bup\s+(?P<span>.*?)(?:,\s*\d+\s+users?|,?\s*load averages?:|$)")
_LOAD = re.compile(r"load averages?:\s*(?P<loads>.*)$")
_PART = re.compile(r"(\d+)\s*(year|week|day|hour|hr|minute|min|second|sec)s?\b")
_UNIT_S = {"year": 31536000, "week": 604800, "day": 86400, "hour": 3600, "hr": 3600}
_UNIT_S.update({"minute": 60, "min": 60, "second": 1, "sec": 1})


def detect(text: str) -> int:
    """Confidence that text is an uptime or load-average capture."""
    lines = [strip_prefix(line).strip() for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > 50:
        return 0
    if all(_UP.search(line) and ("load average" in line or line.startswith("up ")) for line in lines):
        return 85
    if all(_PROC_UPTIME.match(line) or _LOADAVG.match(line) for line in lines):
        return 60
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).strip()
        if not line:
            continue
        row = _row(line)
        if row is None:
            result.issue(no, raw, "not /proc/uptime, uptime or /proc/loadavg output")
            continue
        row["line"] = no
        result.add("host_uptime", row)
    if not result.rows("host_uptime"):
        raise ParseError("no uptime or load-average line found")
    return result


def _row(line: str) -> dict[str, Any] | None:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["host_uptime"]}
    if m := _PROC_UPTIME.match(line):
        row.update(uptime_s=float(m.group(1)), idle_s=float(m.group(2)), source="proc_uptime")
        return row
    if m := _LOADAVG.match(line):
        row.update(
            load1=float(m.group(1)), load5=float(m.group(2)), load15=float(m.group(3)), source="loadavg"
        )
        return row
    up = _UP.search(line)
    if up is None:
        return None
    row.update(uptime_s=_span_s(up.group("span")), source="uptime")
    if load := _LOAD.search(line):
        loads = [to_float(v) for v in re.split(r",?\s+", load.group("loads").strip())]
        if len(loads) != 3 or None in loads:
            return None
        row.update(load1=loads[0], load5=loads[1], load15=loads[2])
    return None if row["uptime_s"] is None else row


def _span_s(span: str) -> float | None:
    """Seconds in '4 days,  1:24', '35 min', '1 week, 2 days, 3 hours, 4 minutes'."""
    total, found = 0, False
    for part in span.split(","):
        part = part.strip()
        if hm := re.fullmatch(r"(\d+):(\d\d)", part):
            total += int(hm.group(1)) * 3600 + int(hm.group(2)) * 60
            found = True
        elif pm := _PART.fullmatch(part):
            total += int(pm.group(1)) * _UNIT_S[pm.group(2)]
            found = True
        elif part:
            return None
    return float(total) if found else None
