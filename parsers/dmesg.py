"""Kernel log events: NVRM Xid, NVSwitch SXid, fallen-off-the-bus, PCIe AER, OOM, hangs.

Commands the collector runs (first that works)::

    TZ=UTC dmesg -T          # human timestamps, in UTC
    dmesg                    # raw seconds since boot
    journalctl -k -o short-iso --no-pager

Sample (hand-written: one event each from the nvsentinel-155, gpud-readme and ogkm-1150 fixtures)::

    [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
                   NVRM: (PCI ID: 10de:26b5) installed in this system has
                   NVRM: fallen off the bus and is not responding to commands.
    [Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008
    kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149

Timestamp styles accepted: ``[ 1843.308145]`` (seconds since boot), ``[Fri Aug 30 11:43:09 2024]``
(``-T``/``--ctime``), ``[  +0.000316]`` (``--reltime``, kept raw), syslog ``Aug 30 11:43:09 host kernel:``,
ISO journal ``2024-08-30T11:43:09+0000 host kernel:`` and a bare ``kernel:``.  Lines quoted by a
markdown ``> `` are unquoted.  Indented lines without a timestamp continue the message above.
Lines that are no event of interest are skipped silently: a kernel log is mostly noise.

Schema
------
``kernel_event`` (one row per event):

- ``line`` int — line of the event's first line in the file
- ``ts_raw`` str — the timestamp as printed (null when none)
- ``uptime_s`` float, seconds — seconds since boot when printed that way
- ``ts`` ts — wall-clock time when printed (``-T`` or ISO); host time, UTC when the collector ran it
- ``event_type`` str — xid, sxid, fallen_off_bus, pcie_aer, nvlink_error, efa_error, oom_kill,
  hung_task, soft_lockup, kernel_panic, mce, nmi, nvrm_driver_loaded (message = driver version),
  nvrm_message (another NVRM line naming a GPU)
- ``pci`` str — PCI address normalised to ``dddd:bb:dd.f``
- ``xid`` int — the Xid (or SXid) code
- ``caused_by_xid`` int — "caused by previous Xid N"
- ``pid`` int, ``process`` str — as printed (null for ``'<unknown>'``)
- ``severity`` str — AER severity (Corrected, Uncorrected (Fatal), ...) or SXid fatality
- ``message`` str — the text after the code, continuation lines joined
- ``raw`` str — the first line as printed

Examples
--------
>>> r = parse(SAMPLE)
>>> [(e["event_type"], e["pci"], e["xid"]) for e in r.rows("kernel_event")]
[('fallen_off_bus', '0000:b3:00.0', 79), ('xid', '0000:cb:00.0', 109), ('xid', '0000:dc:00.0', 45)]
>>> r.rows("kernel_event")[2]["caused_by_xid"], r.rows("kernel_event")[1]["process"]
(149, 'pt_main_thread')
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import pci_address, strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="dmesg",
    title="Kernel log (dmesg / journalctl -k)",
    commands=("TZ=UTC dmesg -T", "dmesg", "journalctl -k -o short-iso --no-pager"),
    tables=("kernel_event",),
    versions_seen=("util-linux dmesg raw/-T/--reltime", "syslog", "journald short-iso"),
)

SCHEMA = {
    "kernel_event": (
        Column("line", "int", "first line of the event"),
        Column("ts_raw", "str", "timestamp as printed"),
        Column("uptime_s", "float", "seconds since boot"),
        Column("ts", "ts", "wall-clock time (host clock)"),
        Column("event_type", "str", "xid, sxid, fallen_off_bus, pcie_aer, ..."),
        Column("pci", "str", "PCI address dddd:bb:dd.f"),
        Column("xid", "int", "Xid or SXid code"),
        Column("caused_by_xid", "int", "the earlier Xid this one follows from"),
        Column("pid", "int", "process id"),
        Column("process", "str", "process name"),
        Column("severity", "str", "AER severity or SXid fatality"),
        Column("message", "str", "message text"),
        Column("raw", "str", "first line as printed"),
    )
}

_STAMP = re.compile(
    r"""^(?:
        \[\s*(?P<up>\d+\.\d+)\]\s?                                   # [ 1843.308145]
      | \[(?P<rel>\s*[+-]\d+\.\d+)\]\s?                              # [  +0.000316]
      | \[(?P<ctime>\w{3}\s+\w{3}\s+\d+\s+\d\d:\d\d:\d\d\s+\d{4})\]\s?  # [Fri Aug 30 11:43:09 2024]
      | (?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?)\s+\S+\s+kernel:\s?
      | (?P<syslog>\w{3}\s+\d+\s+\d\d:\d\d:\d\d)\s+\S+\s+kernel:\s?
      | kernel:\s?
    )""",
    re.VERBOSE,
)
_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[^)]*)\): (?P<xid>\d+)"
    r"(?:, pid=(?P<pid>'[^']*'|[^,]*))?(?:, name=(?P<name>'[^']*'|[^,]*))?,?\s*(?P<msg>.*)"
)
_SXID = re.compile(r"nvswitch\d*: SXid \((?:PCI:)?(?P<pci>[^)]*)\): (?P<xid>\d+),\s*(?P<msg>.*)")
_CAUSED = re.compile(r"caused by previous Xid (\d+)", re.IGNORECASE)
_FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
_GPU_PCI = re.compile(r"GPU (?:at PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)")
_AER = re.compile(
    r"(?P<dev>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d).*PCIe Bus Error: severity=(?P<sev>[^,]+)"
)
_AER_FATAL = re.compile(
    r"(?P<dev>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d).*AER: (?P<sev>(?:Multiple )?Uncorrected[^:]*) error"
)
_NVLINK = re.compile(r"NVRM:.*nvlink.*(?:error|fatal|fail)", re.IGNORECASE)
_EFA = re.compile(r"^(?:infiniband )?efa[_ ]\S*.*(?:error|fail|timeout|reset)", re.IGNORECASE)
_OOM = re.compile(
    r"Out of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<name>[^)]*)\)|(?P<inv>\S+) invoked oom-killer"
)
_HUNG = re.compile(r"INFO: task (?P<name>.+?):(?P<pid>\d+) blocked for more than (?P<s>\d+) seconds")
_LOCKUP = re.compile(r"soft lockup|hard LOCKUP|watchdog: BUG", re.IGNORECASE)
_PANIC = re.compile(r"Kernel panic - not syncing|BUG: unable to handle|BUG: kernel NULL")
_MCE = re.compile(r"mce: \[Hardware Error\]")
_NMI = re.compile(
    r"NMI received for unknown reason|Uhhuh\. NMI received|NMI: PCI system error|NMI: IOCK error"
)
_DRIVER = re.compile(r"NVRM: loading NVIDIA .*Kernel Module for \S+\s+(?P<ver>\d+\.\d+(?:\.\d+)?)")
_UNKNOWN = {"'<unknown>'", "<unknown>", ""}


def detect(text: str) -> int:
    """Confidence that text is a kernel log."""
    if re.search(r"NVRM: Xid|SXid \(PCI|NVRM: loading NVIDIA", text):
        return 80
    stamped = sum(1 for line in text.splitlines()[:200] if _STAMP.match(strip_prefix(line)))
    return 30 if stamped >= 3 else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    current: dict[str, Any] | None = None
    stamped = 0
    for no, raw_line in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw_line)
        m = _STAMP.match(line)
        if m is None and current is not None and line[:1].isspace() and line.strip():
            current["message"] = f"{current['message']} {_body(line.strip())}".strip()
            _classify_continuation(current)
            continue
        if m is not None:
            stamped += 1
        current = None
        body = line[m.end() :] if m else line.strip()
        event = _event(body)
        if event is None:
            continue
        event.update(_stamp(m) if m else {"ts_raw": None, "uptime_s": None, "ts": None})
        event.update(line=no, raw=raw_line.rstrip())
        current = event
        result.add("kernel_event", event)
    if stamped == 0 and not result.rows("kernel_event"):
        raise ParseError("no kernel log lines found (no timestamps, no NVRM lines)")
    for ev in result.rows("kernel_event"):
        ev.pop("_open", None)  # internal marker of a message that may continue
    return result


def _body(line: str) -> str:
    return line[len("NVRM:") :].strip() if line.startswith("NVRM:") else line


def _row(event_type: str, message: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(("pci", "xid", "caused_by_xid", "pid", "process", "severity"), None)
    row.update(event_type=event_type, message=message.strip(), **fields)
    return row


def _event(body: str) -> dict[str, Any] | None:
    if m := _XID.search(body):
        msg = m.group("msg")
        caused = _CAUSED.search(msg)
        return _row(
            "xid",
            msg,
            pci=pci_address(m.group("pci")),
            xid=int(m.group("xid")),
            caused_by_xid=int(caused.group(1)) if caused else None,
            pid=_pid(m.group("pid")),
            process=_name(m.group("name")),
        )
    if m := _SXID.search(body):
        sev = m.group("msg").split(",")[0].strip()
        return _row(
            "sxid",
            m.group("msg"),
            pci=pci_address(m.group("pci")),
            xid=int(m.group("xid")),
            severity=sev if sev.lower() in ("fatal", "non-fatal") else None,
        )
    if m := _DRIVER.search(body):
        return _row("nvrm_driver_loaded", m.group("ver"))
    if body.startswith("NVRM:"):
        if _FALLEN.search(body) or _GPU_PCI.search(body) and "NVIDIA GPU" in body:
            gpu = _GPU_PCI.search(body)
            row = _row("nvrm_message", _body(body), pci=pci_address(gpu.group(1)) if gpu else None)
            _classify_continuation(row)
            row["_open"] = True
            return row
        if _NVLINK.search(body):
            return _row("nvlink_error", _body(body))
        return None
    if m := _AER.search(body):
        return _row("pcie_aer", body, pci=pci_address(m.group("dev")), severity=m.group("sev").strip())
    if m := _AER_FATAL.search(body):
        return _row("pcie_aer", body, pci=pci_address(m.group("dev")), severity=m.group("sev").strip())
    if m := _OOM.search(body):
        if m.group("inv"):
            return None  # the "Killed process" line that follows carries pid and name
        return _row("oom_kill", body, pid=int(m.group("pid")), process=m.group("name"))
    if m := _HUNG.search(body):
        return _row("hung_task", body, pid=int(m.group("pid")), process=m.group("name"))
    if _PANIC.search(body):
        return _row("kernel_panic", body)
    if _LOCKUP.search(body):
        return _row("soft_lockup", body)
    if _MCE.search(body):
        return _row("mce", body)
    if _NMI.search(body):
        return _row("nmi", body)
    if _EFA.search(body):
        return _row("efa_error", body)
    return None


def _classify_continuation(event: dict[str, Any]) -> None:
    """A multi-line NVRM message becomes 'fallen_off_bus' once its text says so."""
    if event["event_type"] == "nvrm_message" and _FALLEN.search(event["message"]):
        event["event_type"] = "fallen_off_bus"
        event["xid"] = 79


def _stamp(m: re.Match[str]) -> dict[str, Any]:
    if m.group("up"):
        return {"ts_raw": m.group("up"), "uptime_s": float(m.group("up")), "ts": None}
    if m.group("ctime"):
        raw = re.sub(r"\s+", " ", m.group("ctime"))
        try:
            ts = datetime.strptime(raw, "%a %b %d %H:%M:%S %Y").isoformat()
        except ValueError:
            ts = None
        return {"ts_raw": raw, "uptime_s": None, "ts": ts}
    if m.group("iso"):
        iso = m.group("iso")
        return {"ts_raw": iso, "uptime_s": None, "ts": _iso_utc(iso)}
    raw = m.group("rel") or m.group("syslog")
    return {"ts_raw": raw.strip() if raw else None, "uptime_s": None, "ts": None}


def _iso_utc(iso: str) -> str | None:
    """ISO time with any offset (``+0000``, ``+00:00``, ``Z``) as naive UTC."""
    text = re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", iso.replace("Z", "+00:00"))
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = parsed.utcoffset()
    if offset is not None:
        parsed = (parsed - offset).replace(tzinfo=None)
    return parsed.isoformat()


def _pid(value: str | None) -> int | None:
    if value is None or value.strip() in _UNKNOWN:
        return None
    return to_int(value.strip("'"))


def _name(value: str | None) -> str | None:
    if value is None or value.strip() in _UNKNOWN:
        return None
    return value.strip().strip("'")
