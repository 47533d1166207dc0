"""Kernel events counted once, and the boot they are of.

One node's bundle can hold the same kernel message in several logs: an nvidia-bug-report's ``dmesg:``
section, its journal parts and ``/var/log/messages``; a collector's dmesg beside a journal.  An event is
the same event when it is on the same node, of the same type, code, device, process and text, comes
from another file of that node's bundle, and was stamped at the same time: wall times (``dmesg -T``,
ISO) or seconds since the same boot within a second of each other, a syslog stamp (no year) on the same
day within a second of a wall time, or the same stamp as printed.  Lines of one file are never merged
(the file itself says they are two events).  The copy kept is the one of the most recent boot (the
current boot's ``dmesg`` first), then the first file and line.

``boot`` (the dmesg parser's column: 0 current, -1 the boot before, null unknown) tells the rules
whether an event happened before the node's last reboot (:func:`previous_boot`): such findings say
"in a previous boot (boot -1)" and carry ``params["boot"]``.  A reboot is what the immediate action of
most Xids is, so it has been done since: :func:`previous_boot_severity` keeps a fault that points at
the hardware (Xid 48, 79, 94, 95, codes whose investigation is CONTACT_SUPPORT, a fatal SXid) at
warning and lowers the others to info.

>>> a = {"bundle_id": "b", "node": "n", "event_type": "xid", "xid": 79, "pci": "0000:04:00.0",
...      "gpu_index": None, "pid": None, "process": None, "message": "GPU has fallen off the bus",
...      "source_file": "n/cmd/dmesg.txt", "line": 3, "ts": None, "uptime_s": None,
...      "ts_raw": "Feb  4 10:11:12", "boot": 0}
>>> b = {**a, "source_file": "n/cmd/dmesg-2.txt", "line": 9, "ts_raw": "Feb 04 10:11:12", "boot": None}
>>> c = {**a, "line": 4}  # the same file: a second event
>>> [(r["source_file"], r["line"]) for r in distinct([b, a, c])]
[('n/cmd/dmesg.txt', 3), ('n/cmd/dmesg.txt', 4)]
>>> previous_boot([{"boot": -1}, {"boot": -2}]), previous_boot([{"boot": 0}, {"boot": None}])
([-2, -1], [])
>>> boot_words([-1]), boot_words([-2, -1])
('in a previous boot (boot -1)', 'in previous boots (boots -2, -1)')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from analyzer.judge.findings import Severity

#: the columns :func:`distinct` compares (``alias.`` before each with :func:`columns_sql`)
COLUMNS = (
    "bundle_id", "node", "source_file", "line", "event_type", "xid", "pci", "gpu_index", "pid", "process",
    "message", "ts", "uptime_s", "ts_raw", "boot",
)  # fmt: skip
#: Xids that point at the GPU's hardware: still a warning when logged before the last reboot
HARDWARE_XIDS = frozenset({48, 79, 94, 95})
#: the Xid catalog's investigatory buckets that mean the hardware when the Xid recurs
HARDWARE_INVESTIGATION = frozenset({"CONTACT_SUPPORT", "WORKFLOW_XID_48"})
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
_SYSLOG = re.compile(
    r"^(?P<mon>[A-Za-z]{3}|\d{1,2}月)\s+(?P<day>\d{1,2})\s+(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)"
)


def columns_sql(alias: str = "") -> str:
    """The columns :func:`distinct` needs, for a SELECT over kernel_event (``e.bundle_id, e.node, ...``)."""
    p = f"{alias}." if alias else ""
    return ", ".join(f'{p}"{c}"' for c in COLUMNS)


def _clock(row: Mapping[str, Any]) -> tuple[int, int, float] | None:
    """(month, day, seconds of the day) of a wall time or a syslog stamp (which has no year)."""
    ts = row.get("ts")
    if isinstance(ts, datetime):
        return ts.month, ts.day, ts.hour * 3600 + ts.minute * 60 + ts.second + ts.microsecond / 1e6
    m = _SYSLOG.match(str(row.get("ts_raw") or ""))
    if m is None:
        return None
    mon = m.group("mon")
    month = int(mon[:-1]) if mon.endswith("月") else _MONTHS.get(mon.lower(), 0)
    return month, int(m.group("day")), int(m.group("h")) * 3600 + int(m.group("m")) * 60 + float(m.group("s"))


def _stamps(row: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], float | None]]:
    """(bucket, value) of each way the row's time can be compared: value None compares by equality."""
    out: list[tuple[tuple[Any, ...], float | None]] = []
    if row.get("uptime_s") is not None:
        out.append((("up", row.get("boot")), float(row["uptime_s"])))
    if (clock := _clock(row)) is not None:
        out.append((("clock", clock[0], clock[1]), clock[2]))
    if row.get("ts_raw"):
        out.append((("raw", re.sub(r"\s+", " ", str(row["ts_raw"]).strip())), None))
    return out


def distinct(rows: Iterable[dict[str, Any]], within_s: float = 1.0) -> list[dict[str, Any]]:
    """The rows with every copy of an event found in another file of the same bundle left out (see the
    module text); the rows kept stay in their order."""
    rows = list(rows)
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i].get("boot") is None,
            -(rows[i].get("boot") or 0),
            str(rows[i].get("source_file") or ""),
            rows[i].get("line") or 0,
        ),
    )
    # key -> file -> bucket -> values seen (a value None: compared by the bucket alone)
    seen: dict[tuple[Any, ...], dict[str, dict[tuple[Any, ...], list[float | None]]]] = {}
    dropped: set[int] = set()
    for i in order:
        r = rows[i]
        key = tuple(r.get(c) for c in ("bundle_id", "node", "event_type", "xid", "pci", "gpu_index", "pid",
                                         "process")) + (re.sub(r"\s+", " ", str(r.get("message") or "")).strip(),)  # fmt: skip
        files = seen.setdefault(key, {})
        source = str(r.get("source_file") or "")
        stamps = _stamps(r)
        if any(
            bucket in others and any(v is None or x is None or abs(v - x) <= within_s for x in others[bucket])
            for file, others in files.items()
            if file != source
            for bucket, v in stamps
        ):
            dropped.add(i)
            continue
        mine = files.setdefault(source, {})
        for bucket, v in stamps:
            mine.setdefault(bucket, []).append(v)
    return [r for i, r in enumerate(rows) if i not in dropped]


def previous_boot(events: Iterable[Mapping[str, Any]]) -> list[int]:
    """The earlier boots (-1, -2 ...) the events are of, in order; [] when none is."""
    return sorted({int(e["boot"]) for e in events if e.get("boot") is not None and int(e["boot"]) < 0})


def boot_words(boots: list[int]) -> str:
    """How a message says the boots of events logged before the last reboot."""
    if len(boots) == 1:
        return f"in a previous boot (boot {boots[0]})"
    return f"in previous boots (boots {', '.join(str(b) for b in boots)})"


def previous_boot_severity(severity: Severity, hardware: bool) -> Severity:
    """The severity of a fault logged only before the node's last reboot: the reboot has done what a
    reset or restart would, so a fault that points at the hardware stays a warning (it may come back)
    and any other is info."""
    if severity in (Severity.CRITICAL, Severity.WARNING):
        return Severity.WARNING if hardware else Severity.INFO
    return severity


def previous_boot_action(action: str) -> str:
    """The route action of a fault logged only before the last reboot."""
    return f"the node rebooted since; if it recurs in this boot: {action}"
