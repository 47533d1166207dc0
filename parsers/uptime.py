"""Host uptime and load averages from ``/proc/uptime``, ``uptime`` or ``/proc/loadavg``.

Commands the collector runs::

    cat /proc/uptime

Sample (hand-written; no real capture is in the samples, see tests/fixtures/uptime/PROVENANCE.md)::

    350735.47 234388.90

Formats read, one row per line: ``/proc/uptime`` (seconds up, idle seconds summed over CPUs),
``uptime`` (`` 10:14:06 up 4 days,  1:24,  2 users,  load average: 0.31, 0.42, 0.40``, ``up 16:03``,
``up 12 min``, ``up 2 days, 20 min``; also the macOS ``10:15  up 20 days, 19:45, 8 users, load averages:
1.63 0.65 0.44`` and ``up 1 day, 6 hrs`` forms, locale decimal commas and CJK full-width ``，`` ``：``),
``uptime -p`` (``up 4 days, 1 hour, 24 minutes``, also ``Up 3 hours, 26 minutes``), ``uptime -s``
(``2024-05-01 08:12:33``: the boot time, kept in ``since``; ``uptime_s`` stays null, the collection time
is not in the file) and ``/proc/loadavg`` (``0.31 0.42 0.40 1/234 5678``).  ``uptime`` prints minutes at
best, so its ``uptime_s`` is rounded to the minute.  Travel noise (launcher tags kept in ``host``,
prompts, markdown quotes, fences, glued backticks) is taken off by ``parsers._text.clean_lines``; a bare
``uptime`` command line is skipped; any other line is a ParseIssue.

Schema
------
``host_uptime`` (one row per line read):

- ``line`` int — line of the row
- ``uptime_s`` float, seconds — time since boot (null for ``/proc/loadavg``)
- ``idle_s`` float, seconds — idle time summed over all CPUs (``/proc/uptime`` only)
- ``load1``, ``load5``, ``load15`` float — load averages (null for ``/proc/uptime``)
- ``source`` str — ``proc_uptime``, ``uptime`` (also ``-p``), ``uptime_since`` (``-s``) or ``loadavg``
- ``up_text`` str — the time up as printed (``4 days,  1:24``; full-width commas made ASCII)
- ``users`` int — logged-in users (``uptime`` only)
- ``time_of_day`` str — the clock time ``uptime`` printed first (``10:14:06``); what stands before
  ``up`` when it is not a clock is kept here as printed, with a ParseIssue (a ``host:`` tag before the
  clock goes to ``host``, other words there are a ParseIssue)
- ``since`` str — boot time as printed by ``uptime -s``
- ``runnable``, ``entities`` int — ``/proc/loadavg`` 4th field (``1/234``: runnable / existing)
- ``last_pid`` int — ``/proc/loadavg`` 5th field
- ``host`` str — launcher tag of the line (pdsh host, srun rank, pod), else null

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
from parsers._text import clean_lines, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="uptime",
    title="Host uptime and load (/proc/uptime, uptime)",
    commands=("cat /proc/uptime", "uptime", "uptime -p", "uptime -s", "cat /proc/loadavg"),
    tables=("host_uptime",),
    versions_seen=("Linux /proc/uptime", "procps uptime (-p, -s)", "macOS uptime", "/proc/loadavg"),
)

SCHEMA = {
    "host_uptime": (
        Column("line", "int", "line of the row"),
        Column("uptime_s", "float", "seconds since boot"),
        Column("idle_s", "float", "idle seconds summed over CPUs"),
        Column("load1", "float", "1-minute load average"),
        Column("load5", "float", "5-minute load average"),
        Column("load15", "float", "15-minute load average"),
        Column("source", "str", "proc_uptime, uptime, uptime_since or loadavg"),
        Column("up_text", "str", "time up as printed"),
        Column("users", "int", "logged-in users"),
        Column("time_of_day", "str", "clock time printed by uptime"),
        Column("since", "str", "boot time printed by uptime -s"),
        Column("runnable", "int", "/proc/loadavg runnable entities"),
        Column("entities", "int", "/proc/loadavg existing entities"),
        Column("last_pid", "int", "/proc/loadavg last PID"),
        Column("host", "str", "launcher tag of the line"),
    )
}

_PROC_UPTIME = re.compile(r"^(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)$")
_LOADAVG = re.compile(r"^(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+)/(\d+)\s+(\d+)$")
_UP = re.compile(r"(?:^|\s)[uU]p\s+(?P<span>.*?)(?:,\s*(?P<users>\d+)\s+users?|,?\s*load averages?:|$)")
_CLOCK = re.compile(r"(?:^|\s)(\d{1,2}:\d\d(?::\d\d)?(?:\s*[AaPp][Mm])?)$")  # the text before "up"
_TAG = re.compile(r"^[\w.@-]+:$")  # pdsh's "host:"
_SINCE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d$")
_COMMAND = re.compile(r"^(?:sudo\s+)?(?:uptime(?:\s+-{1,2}[\w-]+)*|cat\s+/proc/(?:uptime|loadavg))$")
_FENCE = re.compile(r"^(?:```|~~~)\s*[\w+-]*$")  # clean_lines leaves '~~~ bash' (a space before the info)
_WIDE = str.maketrans({"，": ", ", "：": ": ", "\u3000": " "})
_LOAD = re.compile(r"load averages?:\s*(?P<loads>.*)$")
_PART = re.compile(r"(\d+)\s*(year|week|day|hour|hr|minute|min|second|sec)s?\b")
_UNIT_S = {"year": 31536000, "week": 604800, "day": 86400, "hour": 3600, "hr": 3600}
_UNIT_S.update({"minute": 60, "min": 60, "second": 1, "sec": 1})


def detect(text: str) -> int:
    """Confidence that text is an uptime or load-average capture."""
    lines = [line for line in _lines(text[:65536]) if line]
    if not lines or len(lines) > 50:
        return 0
    if all(_UP.search(line) and ("load average" in line or line.lower().startswith("up ")) for line in lines):
        return 85
    if all(_PROC_UPTIME.match(line) or _LOADAVG.match(line) or _SINCE.match(line) for line in lines):
        return 60
    return 0


def _lines(text: str) -> list[str]:
    """The lines of a capture without travel noise, command echoes and fences (line for line)."""
    out = []
    for line in clean_lines(text).lines:
        line = line.strip().translate(_WIDE)
        out.append("" if _COMMAND.match(line) or _FENCE.match(line) else line)
    return out


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult(tables={"host_uptime": []})
    cleaned = clean_lines(text)
    raw = text.splitlines()
    for no, line in enumerate(_lines(text), start=1):
        if not line:
            continue
        row = _row(line)
        if row is None:
            result.issue(no, raw[no - 1], "not /proc/uptime, uptime, uptime -p/-s or /proc/loadavg output")
            continue
        tag, odd = row.pop("_tag", None), row.pop("_odd", None)
        if odd:
            result.issue(no, raw[no - 1], f"words before 'up' that are not a clock: {odd!r}")
        row["line"] = no
        row["host"] = (cleaned.hosts[no - 1] if cleaned.hosts else None) or (tag[:-1] if tag else None)
        result.add("host_uptime", row)
    if not result.rows("host_uptime"):
        seen = next((line[:80] for line in _lines(text) if line), "")
        raise ParseError(
            "expected /proc/uptime ('350735.47 234388.90'), uptime ('10:14:06 up 4 days,  1:24, ... load "
            f"average: ...'), uptime -p/-s or /proc/loadavg; saw {seen!r}"
        )
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
        row.update(runnable=int(m.group(4)), entities=int(m.group(5)), last_pid=int(m.group(6)))
        return row
    if _SINCE.match(line):
        row.update(since=line, source="uptime_since")
        return row
    up = _UP.search(line)
    if up is None:
        return None
    span = up.group("span").strip().rstrip(",")
    row.update(uptime_s=_span_s(span), source="uptime", up_text=span)
    if up.group("users"):
        row["users"] = int(up.group("users"))
    before = line[: up.start()].strip()
    if clock := _CLOCK.search(before):
        row["time_of_day"] = clock.group(1)
        if tag := before[: clock.start()].strip():  # a launcher tag clean_lines left (a one-line pdsh file)
            row["_tag" if _TAG.match(tag) else "_odd"] = tag
    elif before:  # not a clock: kept as printed, and reported
        row.update(time_of_day=before, _odd=before)
    if load := _LOAD.search(line):
        loads = [to_float(v) for v in re.split(r",?\s+", load.group("loads").strip())]
        if len(loads) != 3 or None in loads:
            return None
        row.update(load1=loads[0], load5=loads[1], load15=loads[2])
    return None if row["uptime_s"] is None else row


def _span_s(span: str) -> float | None:
    """Seconds in '4 days,  1:24', '35 min', '1 week, 2 days, 3 hours, 4 minutes', '1 day, 6 hrs'."""
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
