"""NVIDIA Fabric Manager: service state (systemctl status), its journal, its own log, fabric registration.

Commands whose output it reads (collector.sh runs ``systemctl status nvidia-fabricmanager --no-pager``)::

    systemctl status nvidia-fabricmanager --no-pager -l     # also with nvlsm: systemctl status nvidia-fabricmanager nvlsm
    journalctl -u nvidia-fabricmanager --no-pager            # -o short / short-iso / short-precise / short-full / short-unix
    cat /var/log/fabricmanager.log                           # "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] ..."
    nv-fabricmanager --version                               # "Fabric Manager version is : 535.54.03"
    nvidia-smi -q | grep -A2 -i fabric                       # "State : Completed", "Status : Success" per GPU

Sample (lines of tests/fixtures/fabricmanager/devrel-580-failed-signal-kill-script-redacted.txt)::

    × nvidia-fabricmanager.service - NVIDIA fabric manager service
         Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)
         Active: failed (Result: signal) since Mon 2026-08-10 15:45:34 UTC; 5 days ago
       Main PID: 9946 (code=killed, signal=KILL)

Accepted: any status glyph (●, ×, ○, ``*``, none), ``preset:`` and ``vendor preset:``, Drop-In/TriggeredBy/
Process/CGroup lines (kept in ``extra``), several units in one capture (nvidia-fabricmanager and nvlsm),
journal lines cut by the pager (``...>``) or by an ellipsis (``…``), ``lines 1-22/22 (END)``, script output
around the status (``=== DRIVER ===`` banners, ``--`` grep separators), ``-- Boot ... --`` journal
markers, ``░░`` catalog lines of ``journalctl -x`` (kept as the event's ``detail``), month names in the
host's locale (``11月 15 14:15:47``).  Every journal or Fabric Manager log line is a ``fabric_event``;
lines that continue one (the FM log's ``Message payload details:``) go into its ``detail``.  Travel noise
(launcher tags, prompts, fences, ``...``) is taken off by ``parsers._text.clean_lines``.
``Unit nvidia-fabricmanager.service could not be found.`` is a real answer: a row with load_state and
active_state ``not-found``.  A line that is none of these and holds a digit is a ParseIssue.

Schema
------
``service_state`` (one row per unit; fabric registration and version go on the Fabric Manager row,
or on a row with a null unit when no status was captured):

- ``line`` int — line of the unit header (or of the first journal/fabric/version line)
- ``unit`` str — ``nvidia-fabricmanager.service``, ``nvlsm.service``
- ``description`` str — the text after `` - `` on the header line
- ``load_state`` str — ``loaded``, ``not-found``, ``masked``
- ``unit_file`` str — path of the unit file (Loaded line)
- ``unit_file_state`` str — ``enabled``, ``disabled``, ... (from the Loaded line)
- ``preset`` str — the (vendor) preset printed in the Loaded line
- ``active_state`` str — ``active``, ``failed``, ``inactive``, ``activating``, ``not-found``
- ``sub_state`` str — ``running``, ``dead``, ``exited``, ``auto-restart``, ``failed``
- ``result`` str — ``signal``, ``exit-code``, ... (``Result:`` in the Active line; journal: ``Failed with result``)
- ``since`` ts — when it entered that state, as printed (local time of the host unless ``since_tz`` is UTC)
- ``since_tz`` str — the time zone printed (``UTC``, ``MSK``)
- ``main_pid`` int; ``main_process`` str — ``nv-fabricmanage``; ``main_exit`` str — ``code=killed, signal=KILL``
- ``exec_failure`` str — first ``Process:`` line that did not end in ``status=0/SUCCESS``
- ``last_error`` str — last journal line saying error/fail/fatal/timeout
- ``fabric_state`` str, ``fabric_status`` str — the GPUs' Fabric State / Status, distinct values
  comma-joined (``Completed``, ``Success``; ``In Progress``, ``N/A`` ...)
- ``fabric_gpu_count`` int — Fabric State lines seen
- ``version`` str — Fabric Manager version when printed
- ``source`` str — ``status`` (systemctl status), ``journal`` (journal lines only), ``log``, ``other``
- ``platform`` str — ``Pre-NVL5`` / ``NVL5`` from the start script's ``Detected ... system`` line
- ``fabric_configured`` bool — ``Successfully configured all the available NVSwitches`` was logged
- ``journal_state`` str — the last systemd lifecycle line of the unit: starting, started, stopping,
  stopped, failed (normalised, beside the printed lines)
- ``extra`` str — JSON object of the other status keys as printed (Tasks, Memory, CPU, CGroup, Drop-In ...)
- ``host`` str — launcher tag of the header line (pdsh host, srun rank, pod), else null

``fabric_event`` (one row per journal or Fabric Manager log line):

- ``line`` int; ``unit`` str — unit of the status block it was printed in, else null
- ``ts`` ts — the time, as printed (journal ``short`` without a year takes the year of the FM's own stamp
  or of the status ``since``; null when none is known); ``ts_text`` str — the stamp as printed
- ``hostname`` str, ``ident`` str, ``pid`` int — the journal's host, syslog identifier and pid
- ``fm_ts`` ts — the Fabric Manager's own ``[May 16 2025 15:10:21]`` stamp
- ``level`` str — level as printed (``INFO``, ``ERROR``); null when the line has none
- ``severity`` str — error, warning, info: from ``level``, else from the words of the message
- ``tid`` int — the FM thread id; ``message`` str — the text; ``detail`` str — continuation lines, joined by newlines
- ``truncated`` bool — the line was cut (``>`` of the pager, ``…``)
- ``event`` str — sxid, configured, platform, version, starting, started, stopping, stopped, failed,
  exit, job_failed; null for other lines
- ``sxid`` int — the NVSwitch error (SXid) code; ``sxid_fatal`` bool
- ``pci`` str — PCI address of the NVSwitch or GPU, normalised ``dddd:bb:dd.f``; ``pci_printed`` str as printed
- ``device`` str — ``nvidia-nvswitch3`` of kernel SXid lines; ``physical_id`` int; ``port`` int (FM port / SXid link)
- ``host`` str — launcher tag, else null

``fabric_attribute`` (one row per printed key, the long table): ``entity`` str (the unit of a status
block, ``nvidia-fabricmanager.service``; ``''`` for the nvidia-smi -q ``Fabric`` block and the FM version
line); ``section`` str (``Fabric`` or ``''``); ``key``, ``value`` str as printed (a CGroup tree line is a
further value of its key); ``number`` float, ``unit`` str where the value is one number (``Memory: 11.8M``);
``line`` int; ``host`` str.  Journal lines whose host was redacted (``xxx``, ``<redacted>``) or cut (the
ident right after the stamp) are read as journal lines.

Examples
--------
>>> row = parse(SAMPLE).rows("service_state")[0]
>>> row["unit"], row["active_state"], row["sub_state"], row["result"], row["main_pid"], row["main_exit"]
('nvidia-fabricmanager.service', 'failed', 'failed', 'signal', 9946, 'code=killed, signal=KILL')
>>> row["since"], row["since_tz"], row["unit_file_state"], row["preset"]
('2026-08-10T15:45:34', 'UTC', 'enabled', 'enabled')
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from parsers._base import (
    CollectorError,
    Column,
    ParseError,
    ParseResult,
    ParserInfo,
    long_columns,
    require_text,
    sample_of,
)
from parsers._text import LongTable, clean_lines, key_value, pci_address, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="fabricmanager",
    title="NVIDIA Fabric Manager service state, journal and log",
    commands=(
        "systemctl status nvidia-fabricmanager --no-pager",
        "systemctl status nvidia-fabricmanager --no-pager -l",
        "journalctl -u nvidia-fabricmanager --no-pager",
        "cat /var/log/fabricmanager.log",
        "nv-fabricmanager --version",
        "nvidia-smi -q | grep -A2 -i fabric",
    ),
    tables=("service_state", "fabric_event", "fabric_attribute"),
    versions_seen=(
        "systemd 245-256",
        "Fabric Manager 515-590",
        "journalctl -o short/short-iso/short-precise",
    ),
)

_STATE = (
    ("line", "int"), ("unit", "str"), ("description", "str"), ("load_state", "str"), ("unit_file", "str"),
    ("unit_file_state", "str"), ("preset", "str"), ("active_state", "str"), ("sub_state", "str"),
    ("result", "str"), ("since", "ts"), ("since_tz", "str"), ("main_pid", "int"), ("main_process", "str"),
    ("main_exit", "str"), ("exec_failure", "str"), ("last_error", "str"), ("fabric_state", "str"),
    ("fabric_status", "str"), ("fabric_gpu_count", "int"), ("version", "str"), ("source", "str"),
    ("platform", "str"), ("fabric_configured", "bool"), ("journal_state", "str"), ("extra", "str"),
    ("host", "str"),
)  # fmt: skip
_EVENT = (
    ("line", "int"), ("unit", "str"), ("ts", "ts"), ("ts_text", "str"), ("hostname", "str"), ("ident", "str"),
    ("pid", "int"), ("fm_ts", "ts"), ("level", "str"), ("severity", "str"), ("tid", "int"), ("message", "str"),
    ("detail", "str"), ("truncated", "bool"), ("event", "str"), ("sxid", "int"), ("sxid_fatal", "bool"),
    ("pci", "str"), ("pci_printed", "str"), ("device", "str"), ("physical_id", "int"), ("port", "int"),
    ("host", "str"),
)  # fmt: skip
SCHEMA = {
    "service_state": tuple(Column(n, t) for n, t in _STATE),
    "fabric_event": tuple(Column(n, t) for n, t in _EVENT),
    "fabric_attribute": (
        *long_columns("the systemd unit of a status block (nvidia-fabricmanager.service), '' elsewhere"),
        Column("host", "str", "launcher tag of the line, else null"),
    ),
}

_UNIT = re.compile(
    r"^(?:[^\w\s/\[(\"'-]\s*)?(?P<unit>[\w@.\\-]+\.(?:service|socket|path|timer|target|mount))(?:\s+-\s+(?P<d>.*))?$"
)
_NOT_FOUND = re.compile(r"^(?:Failed to [^:]*:\s*)?Unit (?P<unit>\S+?) (?:could not be found|not found)")
_LOADED = re.compile(r"^Loaded:\s*(?P<load>[\w-]+)(?:\s*\((?P<inner>[^)]*)\)?)?")
_ACTIVE = re.compile(r"^Active:\s*(?P<active>[\w-]+)(?P<rest>.*)$")
_SINCE = re.compile(
    r"since\s+(?:\w{3}\s+)?(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\s+(?P<tz>[A-Za-z][\w+-]*))?"
)
_STATUS_KEY = re.compile(r"^(?P<key>[A-Z][A-Za-z]*(?:[ -][A-Za-z]+)*):\s*(?P<value>.*)$")
_TREE = re.compile(r"^[├└│|`]")
#: journalctl -o short (any locale's month), short-precise, short-iso(-precise), short-full, short-unix, monotonic
_JOURNAL = re.compile(
    r"^(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|(?:[^\W\d_]{2,4}\.? )?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Za-z]{2,5}|[+-]\d{4})?"
    r"|(?:[^\W\d_]{3,5}\.?|\d{1,2}月)\s+\d{1,2},? \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{9,10}\.\d+|\[\s*\d+\.\d+\])"
    r"(?:\s+(?P<hostname>\S+))?\s+(?P<ident>[^\s\[:]+)(?:\[(?P<pid>\d+)\])?:(?:\s(?P<msg>.*))?$"
)
#: the Fabric Manager's own stamp: "[Feb 25 2025 13:59:45]" (and "[Mon Jan  1 12:00:00 2024]")
_FMLOG = re.compile(
    r"^\[(?P<fmts>(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} +\d{1,2},? (?:\d{4} \d\d:\d\d:\d\d|\d\d:\d\d:\d\d \d{4}))\]"
    r"\s*(?:\[(?P<level>[A-Za-z]+)\]\s*)?(?:\[tid (?P<tid>\d+)\]\s*)?(?P<msg>.*)$"
)
_FM_SXID = re.compile(
    r"detected NVSwitch (?P<fat>non-fatal|fatal) error (?P<code>\d+)(?: on fid \d+)?"
    r"(?: on NVSwitch pci bus id (?P<pci>[0-9A-Fa-f:.]+))?(?: physical id (?P<phys>\d+))?(?: port (?P<port>\d+))?",
    re.I,
)
_KERNEL_SXID = re.compile(
    r"(?P<dev>nvidia-nvswitch\d*|nvswitch\d*): SXid \((?:PCI:)?(?P<pci>[^)]*)\): (?P<code>\d+),?\s*"
    r"(?P<fat>Non-fatal|Fatal)?(?:,\s*Link (?P<port>\d+))?",
    re.I,
)
_PCI_ANY = re.compile(r"pci bus id (?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)", re.I)
_ERROR = re.compile(r"error|fail|fatal|timeout|timed out", re.IGNORECASE)
_LEVELS = {"ERROR": "error", "FATAL": "error", "CRITICAL": "error", "CRIT": "error", "WARNING": "warning",
           "WARN": "warning", "NOTICE": "info", "INFO": "info", "DEBUG": "info"}  # fmt: skip
_LIFECYCLE = (
    ("Starting ", "starting"),
    ("Started ", "started"),
    ("Stopping ", "stopping"),
    ("Stopped ", "stopped"),
    ("Failed to start", "failed"),
    ("Failed with result", "failed"),
    ("Deactivated successfully", "stopped"),
)
#: prompts clean_lines does not know (``bash-5.1# systemctl status ...``, ``sh-4.2$ journalctl ...``)
_SHELL_PROMPT = re.compile(
    r"^[\w.@~:/-]*[#$] +(?:sudo +)?(?:systemctl|journalctl|service|cat|tail|head|less|grep|nv-fabricmanager|"
    r"nvidia-smi)\b"
)
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                       "nov", "dec"), start=1)}  # fmt: skip
_NOISE = re.compile(
    r"^(?:lines \d+-\d+(?:/\d+)?(?: \(END\))?|\(END\)|-- .* --|-+|=+|=== .* ===|[-=]{3,} .* [-=]{3,})$"
)


def detect(text: str) -> int:
    """Confidence that text is Fabric Manager service state, journal or log.

    A syslog that holds GPU Xid lines besides Fabric Manager lines stays a kernel log (dmesg scores 80).
    """
    if "nvidia-fabricmanager" in text or "nv-fabricmanager" in text:
        if re.search(r"Active:|could not be found|not found", text):
            return 90
        if re.search(r"nv-fabricmanager\[\d+\]|fabricmanager-start\.sh\[|fabric manager service", text):
            return 70 if "NVRM: Xid" in text else 90
    if "Fabric Manager version is" in text:
        return 80
    if re.search(r"^\[[A-Z][a-z]{2} +\d{1,2} \d{4} \d\d:\d\d:\d\d\] \[[A-Z]+\] \[tid \d+\]", text, re.M):
        return 85
    return 40 if re.search(r"^\s*Loaded: ", text, re.M) and re.search(r"^\s*Active: ", text, re.M) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    if re.search(r"System has not been booted with systemd|Failed to connect to bus", text):
        raise CollectorError(text.strip().splitlines()[0][:300])
    return _Parser(text).run()


def _loaded(row: dict[str, Any], m: re.Match[str]) -> None:
    """The ``Loaded:`` line of a status block: load state, unit file, its state, the vendor preset."""
    row["load_state"] = m["load"]
    parts = [p.strip() for p in (m["inner"] or "").split(";")]
    row["unit_file"] = parts[0] or None if parts[0].startswith("/") else None
    row["unit_file_state"] = parts[1] if len(parts) > 1 and "preset" not in parts[1] else None
    row["preset"] = next((p.split(":", 1)[1].strip() for p in parts if "preset:" in p), None)
    if m["load"] == "not-found":
        row["active_state"] = "not-found"


class _Parser:
    """One pass over the cleaned lines; state of the open status block and the last event."""

    def __init__(self, text: str) -> None:
        self.cleaned = clean_lines(text)
        self.result = ParseResult(tables={"service_state": [], "fabric_event": []})
        self.attributes = self.result.column_table("fabric_attribute", LongTable(("host",)))
        self.row: dict[str, Any] | None = None  # the open status block
        self.in_status = False  # between a header and the first blank line / journal line
        self.extra: dict[str, Any] = {}
        self.last_key: str | None = None
        self.event: dict[str, Any] | None = None  # the event the next unknown line may continue
        self.fabric: dict[str, list[str]] = {"State": [], "Status": []}
        self.facts: dict[str, Any] = {"line": None, "version": None, "platform": None, "configured": None}
        self.journal_units: dict[str, dict[str, Any]] = {}
        self.in_fabric = False

    def run(self) -> ParseResult:
        hosts = self.cleaned.hosts
        for i, line in enumerate(self.cleaned.lines):
            no, host = i + 1, hosts[i] if hosts else None
            s = line.strip()
            if not s:
                self._close_status()
                self.event = None
                continue
            self._line(no, s, host)
        self._close_status()
        return self._finish()

    def _line(self, no: int, s: str, host: str | None) -> None:
        if self._heading(no, s, host) or self._log_line(no, s, host):
            return
        if s == "Fabric":
            self.in_fabric = True
            return
        kv = key_value(s)
        if self.in_fabric and kv and not kv[0].startswith("Fabric Manager"):
            if kv[0] in self.fabric:
                self.fabric[kv[0]].append(kv[1])
            self.facts["line"] = self.facts["line"] or no
            self._attribute(no, "", "Fabric", kv[0], kv[1], host)
            return
        self.in_fabric = False
        if m := re.search(r"Fabric Manager version(?: is)?\s*:?\s*(\d[\w.]*|\d*\.?x[\w.]*)", s):
            self.facts["version"], self.facts["line"] = m.group(1), self.facts["line"] or no
            self._attribute(no, "", "", "Fabric Manager version", m.group(1), host)
            return
        if self.in_status and self.row is not None and self._status_line(s, no):
            if kv is not None and not _TREE.match(s):
                self._attribute(no, self.row["unit"] or "", "", kv[0], kv[1], host)
            elif _TREE.match(s) and self.last_key is not None:
                self._attribute(no, self.row["unit"] or "", "", self.last_key, s.lstrip("├└│|`─- "), host)
            return
        self._other(no, s, host)

    def _heading(self, no: int, s: str, host: str | None) -> bool:
        """Noise and prompts (they end an event), a unit's status heading, a unit systemd does not know."""
        if (s[0] in "-=l(" and _NOISE.match(s)) or (("#" in s or "$" in s) and _SHELL_PROMPT.match(s)):
            self.event, self.in_fabric = None, False
        elif "." in s and (m := _UNIT.match(s)):
            self._close_status()
            self.row = self._state_row(no, m["unit"], "status", host)
            self.row["description"] = m["d"]
            self.in_status, self.event = True, None
        elif "Unit " in s and (m := _NOT_FOUND.match(s)):
            self._close_status()
            row = self._state_row(no, m["unit"], "status", host)
            row.update(load_state="not-found", active_state="not-found")
        else:
            return False
        return True

    def _log_line(self, no: int, s: str, host: str | None) -> bool:
        """A journal line, a Fabric Manager log line, a journal detail line ("░░ ...")."""
        if (m := _JOURNAL.match(s)) and (m["hostname"] is not None or not m["stamp"].startswith("[")):
            # a journal line; its host may be redacted ("xxx", "<redacted>") or cut (none: the ident
            # follows the stamp); a kernel line "[ 12.3] nvidia-nvswitch3: ..." is no journal line
            self._close_status(keep_row=True)
            self._journal(no, m, host)
        elif s.startswith("[") and (m := _FMLOG.match(s)):
            self._close_status(keep_row=True)
            ev = self._event(no, host, message=m["msg"], level=m["level"], tid=to_int(m["tid"]))
            ev["fm_ts"] = ev["ts"] = _fm_time(m["fmts"])
            ev["ts_text"] = m["fmts"]
            self._classify(ev)
        elif s.startswith("░░"):
            if self.event is not None:
                self._detail(s)
        else:
            return False
        return True

    def _other(self, no: int, s: str, host: str | None) -> None:
        """A kernel SXid line, the rest of an event's message, a failed job, else an unrecognised line."""
        if "SXid" in s and _KERNEL_SXID.search(s):  # a kernel line (dmesg, journalctl -k) in the capture
            stamp = re.match(r"^\[\s*([^\]]+)\]\s*", s)
            ev = self._event(no, host, message=s[stamp.end() :] if stamp else s, level=None, tid=None)
            ev.update(ident="kernel", ts_text=stamp.group(1) if stamp else None)
            self._classify(ev)
        elif self.event is not None and not s.startswith(("===", "--")):
            self._detail(s)
        elif s.startswith(("Job for ", "Failed to start ", "Failed to restart ")):
            ev = self._event(no, host, message=s, level=None, tid=None)
            ev.update(ident="systemctl", event="job_failed", severity="error")
        elif re.search(r"\d", s) or "fabric" in s.lower():
            self.result.issue(
                no, s, "unrecognised line (not systemctl status, journal or Fabric Manager log)"
            )

    def _attribute(self, no: int, entity: str, section: str, key: str, value: str, host: str | None) -> None:
        self.attributes.add(entity, section, key, value, no, host)

    # --- status block --------------------------------------------------------------------------------

    def _state_row(self, no: int, unit: str | None, source: str, host: str | None) -> dict[str, Any]:
        row: dict[str, Any] = dict.fromkeys(name for name, _ in _STATE)
        row.update(line=no, unit=unit, source=source, host=host)
        self.result.add("service_state", row)
        return row

    def _close_status(self, keep_row: bool = False) -> None:
        if self.in_status and self.row is not None and self.extra:
            self.row["extra"] = json.dumps(self.extra, ensure_ascii=False)
        if self.in_status:
            self.extra, self.last_key, self.in_status = {}, None, False
        if not keep_row:
            self.in_fabric = False

    def _status_line(self, s: str, no: int) -> bool:
        """Read one ``Key: value`` line of a status block; False when it is not one."""
        row = self.row
        assert row is not None
        if m := _LOADED.match(s):
            _loaded(row, m)
        elif m := _ACTIVE.match(s):
            self._active(row, m, s, no)
        elif m := re.match(r"^Main PID:\s*(\S+)(?:\s*\((?P<inner>[^)]*)\))?", s):
            row["main_pid"] = to_int(m.group(1))
            if row["main_pid"] is None:
                self.result.issue(no, s, "unreadable Main PID")
            if m["inner"] and "code=" in m["inner"]:
                row["main_exit"] = m["inner"]
            elif m["inner"]:
                row["main_process"] = m["inner"]
        elif m := re.match(r"^Process:\s*\d+\s+(?P<what>\w+)=.*\((?P<inner>code=[^)]*)\)", s):
            if "status=0/SUCCESS" not in m["inner"] and row["exec_failure"] is None:
                row["exec_failure"] = f"{m['what']} {m['inner']}"
            self._keep("Process", s.split(":", 1)[1].strip())
        elif (m := _STATUS_KEY.match(s)) and m["key"] not in ("Fabric Manager version is",):
            self._keep(m["key"], m["value"])
        elif _TREE.match(s) and self.last_key is not None:
            self._keep(self.last_key, s.lstrip("├└│|`─- "))
        else:
            return False
        return True

    def _active(self, row: dict[str, Any], m: re.Match[str], s: str, no: int) -> None:
        """The ``Active:`` line: state, sub state, result, since when (a clock that is none is said)."""
        rest = m["rest"].split(" since ")[0]
        parens = re.findall(r"\(([^)]*)\)", rest)
        row["active_state"] = "not-found" if row["load_state"] == "not-found" else m["active"]
        row["result"] = next((p.split(":", 1)[1].strip() for p in parens if p.startswith("Result:")), None)
        row["sub_state"] = next((p for p in parens if ":" not in p), None)
        if row["sub_state"] is None and row["result"] is not None:
            row["sub_state"] = m["active"]  # "failed (Result: signal)": systemd's sub state is "failed"
        if sm := _SINCE.search(m["rest"]):
            try:
                row["since"] = datetime.strptime(sm["ts"], "%Y-%m-%d %H:%M:%S").isoformat()
            except ValueError:  # a clock that is none (25:61:00): said, the line kept
                self.result.issue(no, s, f"unreadable time in 'since': {sm['ts']!r}")
            row["since_tz"] = sm["tz"]

    def _keep(self, key: str, value: str) -> None:
        self.last_key = key
        old = self.extra.get(key)
        if old is None:
            self.extra[key] = value
        else:
            self.extra[key] = (old if isinstance(old, list) else [old]) + [value]

    # --- events --------------------------------------------------------------------------------------

    def _event(
        self, no: int, host: str | None, *, message: str, level: str | None, tid: int | None
    ) -> dict[str, Any]:
        ev: dict[str, Any] = dict.fromkeys(name for name, _ in _EVENT)
        truncated = message.endswith(("…", ">")) and not message.endswith(("->", "=>"))
        ev.update(line=no, message=message, level=level, tid=tid, truncated=truncated, host=host)
        ev["unit"] = self.row["unit"] if self.row is not None else None
        self.result.add("fabric_event", ev)
        self.event = ev
        return ev

    def _journal(self, no: int, m: re.Match[str], host: str | None) -> None:
        msg = m["msg"] or ""
        fm = _FMLOG.match(msg) if msg.startswith("[") else None
        ev = self._event(no, host, message=fm["msg"] if fm else msg, level=fm["level"] if fm else None,
                         tid=to_int(fm["tid"]) if fm else None)  # fmt: skip
        ev.update(ts_text=m["stamp"], hostname=m["hostname"], ident=m["ident"], pid=to_int(m["pid"]))
        if fm:
            ev["fm_ts"] = _fm_time(fm["fmts"])
        year = (ev["fm_ts"] or (self.row or {}).get("since") or "")[:4]
        ev["ts"] = _journal_time(m["stamp"], int(year) if year.isdigit() else None)
        self._classify(ev)
        if ev["ident"] == "systemd" and (unit := self._journal_unit(msg)):
            state = next((st for key, st in _LIFECYCLE if key in msg), None)
            row = self.journal_units.get(unit)
            if row is None:
                row = next((r for r in self.result.rows("service_state") if r["unit"] == unit), None)
                row = row or self._state_row(no, unit, "journal", host)
                self.journal_units[unit] = row
            if state:
                row["journal_state"] = state
                ev["event"] = ev["event"] or state
            if r := re.search(r"Failed with result '([^']+)'", msg):
                row["result"] = row["result"] or r.group(1)
            if "exited, code=" in msg:
                ev["event"] = ev["event"] or "exit"

    def _journal_unit(self, msg: str) -> str | None:
        if m := re.search(r"([\w@.-]+\.service)", msg):
            return m.group(1)
        if re.search(r"NVIDIA fabric manager service", msg, re.I):
            return "nvidia-fabricmanager.service"
        return None

    def _detail(self, s: str) -> None:
        ev = self.event
        assert ev is not None
        ev["detail"] = f"{ev['detail']}\n{s}" if ev["detail"] else s
        if not ev["sxid"] and (m := _PCI_ANY.search(s)):
            ev["pci_printed"], ev["pci"] = m["pci"], pci_address(m["pci"])

    def _classify(self, ev: dict[str, Any]) -> None:
        msg = ev["message"] or ""
        level = (ev["level"] or "").upper()
        if "SXid" in msg and (m := _KERNEL_SXID.search(msg)):
            ev.update(event="sxid", sxid=int(m["code"]), device=m["dev"], pci_printed=m["pci"].strip(),
                      pci=pci_address(m["pci"]), port=to_int(m["port"]))  # fmt: skip
            ev["sxid_fatal"] = None if not m["fat"] else m["fat"].lower() == "fatal"
        elif "NVSwitch" in msg and (m := _FM_SXID.search(msg)):
            ev.update(event="sxid", sxid=int(m["code"]), sxid_fatal=m["fat"].lower() == "fatal",
                      pci_printed=m["pci"], pci=pci_address(m["pci"]), physical_id=to_int(m["phys"]),
                      port=to_int(m["port"]))  # fmt: skip
        elif m := _PCI_ANY.search(msg):
            ev["pci_printed"], ev["pci"] = m["pci"], pci_address(m["pci"])
        if "Successfully configured all the available NVSwitches" in msg:
            ev["event"], self.facts["configured"] = "configured", True
        elif m := re.search(r"Detected (\S+) system", msg):
            ev["event"], self.facts["platform"] = "platform", m.group(1)
        elif m := re.search(r"Fabric Manager version (?:is\s*:\s*)?(\d[\w.]*)", msg):
            ev["event"] = "version"
            self.facts["version"] = self.facts["version"] or m.group(1)
        elif ev["event"] is None and re.search(
            r"\" failed! Exit code|Main process exited|Control process exited", msg
        ):
            ev["event"] = "exit"
        if level in _LEVELS:
            ev["severity"] = _LEVELS[level]
        elif ev["sxid_fatal"] is False:
            ev["severity"] = "warning"
        elif _ERROR.search(msg) and "status=0/SUCCESS" not in msg:
            ev["severity"] = "error"
        elif re.search(r"\bwarn", msg, re.I):
            ev["severity"] = "warning"
        else:
            ev["severity"] = "info"
        if ev["severity"] == "error" and self.row is not None:
            self.row["last_error"] = msg

    # --- end -----------------------------------------------------------------------------------------

    def _finish(self) -> ParseResult:
        rows = self.result.rows("service_state")
        target = next((r for r in rows if "fabricmanager" in (r["unit"] or "")), rows[0] if rows else None)
        facts = self.facts
        if target is None:
            has_facts = self.fabric["State"] or self.fabric["Status"] or facts["version"]
            if not has_facts:
                if self.result.rows("fabric_event"):
                    return self.result
                raise ParseError(
                    "no systemctl status, journal line, Fabric Manager log line, fabric state or version found "
                    f"(first line: {next((x for x in self.cleaned.lines if x.strip()), '')[:80]!r})"
                )
            target = self._state_row(facts["line"] or 1, None, "other", None)
        if self.fabric["State"] or self.fabric["Status"]:
            target["fabric_state"] = ",".join(dict.fromkeys(self.fabric["State"])) or None
            target["fabric_status"] = ",".join(dict.fromkeys(self.fabric["Status"])) or None
            target["fabric_gpu_count"] = len(self.fabric["State"])
        target["version"] = target["version"] or facts["version"]
        target["platform"] = facts["platform"]
        target["fabric_configured"] = facts["configured"]
        if target["last_error"] is None:
            errors = [e for e in self.result.rows("fabric_event") if e["severity"] == "error"]
            target["last_error"] = errors[-1]["message"] if errors else None
        return self.result


def _month(token: str) -> int | None:
    token = token.rstrip(".").lower()
    if token.endswith("月"):
        return to_int(token[:-1])
    return _MONTHS.get(token[:3])


def _journal_time(stamp: str, year: int | None) -> str | None:
    """ISO time of a journal stamp; a ``short`` stamp without a year needs ``year``."""
    if stamp[0].isdigit() and "-" in stamp[:5]:
        m = re.match(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?", stamp)
        if m:
            frac = f".{m.group(3)[:6]}" if m.group(3) else ""
            return f"{m.group(1)}T{m.group(2)}{frac}"
    if re.fullmatch(r"\d{9,10}\.\d+", stamp):
        return datetime.fromtimestamp(float(stamp), tz=timezone.utc).replace(tzinfo=None).isoformat()
    if m := re.match(r"(?:[^\W\d_]{2,4}\.? )?(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)", stamp):
        return f"{m.group(1)}T{m.group(2)}"
    m = re.match(r"(\S+)\s+(\d{1,2}),? (\d\d):(\d\d):(\d\d)(?:\.(\d+))?", stamp)
    month = _month(m.group(1)) if m else None
    if not m or month is None or year is None:
        return None
    try:
        t = datetime(year, month, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
    except ValueError:
        return None
    return t.isoformat() + (f".{m.group(6)[:6]}" if m.group(6) else "")


def _fm_time(stamp: str) -> str | None:
    """ISO time of the Fabric Manager's stamp ``Feb 25 2025 13:59:45`` / ``Mon Jan  1 12:00:00 2024``."""
    parts = stamp.replace(",", "").split()
    if len(parts) == 5:
        parts = parts[1:]
    if len(parts) != 4:
        return None
    month, day, a, b = parts
    year, clock = (a, b) if ":" in b else (b, a)
    mon = _month(month)
    try:
        numbers = [int(x) for x in clock.split(":")]
        if len(numbers) > 4:  # datetime() takes hour, minute, second, microsecond
            return None
        hour, minute, second, micro = (*numbers, 0, 0, 0)[:4]
        return datetime(int(year), mon or 0, int(day), hour, minute, second, micro).isoformat()
    except (TypeError, ValueError):
        return None
