"""NVIDIA Fabric Manager service state (systemctl status) and the GPUs' fabric registration.

Commands whose output it reads (collector.sh runs ``systemctl status nvidia-fabricmanager --no-pager``)::

    systemctl status nvidia-fabricmanager --no-pager -l
    nv-fabricmanager --version                      # "Fabric Manager version is : 535.54.03"
    nvidia-smi -q | grep -A2 -i fabric              # "State : Completed", "Status : Success" per GPU

Sample (lines of tests/fixtures/fabricmanager/devrel-580-failed-signal-kill-script-redacted.txt)::

    × nvidia-fabricmanager.service - NVIDIA fabric manager service
         Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)
         Active: failed (Result: signal) since Mon 2026-08-10 15:45:34 UTC; 5 days ago
       Main PID: 9946 (code=killed, signal=KILL)

Accepted: the ● / × / ○ glyphs, ``preset:`` and ``vendor preset:``, TriggeredBy/Process/CGroup lines,
journal lines cut by the pager (``...>``), ``lines 1-22/22 (END)``, script output around the status
(``=== DRIVER ===`` banners, ``--`` grep separators).  ``Unit nvidia-fabricmanager.service could not be
found.`` is a real answer: a row with load_state and active_state ``not-found``.

Schema
------
``service_state`` (one row per unit; fabric registration and version go on the Fabric Manager row,
or on a row with a null unit when no status was captured):

- ``line`` int — line of the unit header (or of the first fabric/version line)
- ``unit`` str — ``nvidia-fabricmanager.service``
- ``load_state`` str — ``loaded``, ``not-found``, ``masked``
- ``unit_file_state`` str — ``enabled``, ``disabled``, ... (from the Loaded line)
- ``active_state`` str — ``active``, ``failed``, ``inactive``, ``activating``, ``not-found``
- ``sub_state`` str — ``running``, ``dead``, ``exited``, ``auto-restart``, ``failed``
- ``result`` str — ``signal``, ``exit-code``, ... (``Result:`` in the Active line)
- ``since`` ts — when it entered that state, as printed (local time of the host unless ``since_tz`` is UTC)
- ``since_tz`` str — the time zone printed (``UTC``, ``MSK``)
- ``main_pid`` int; ``main_exit`` str — ``code=killed, signal=KILL`` when the main process ended
- ``exec_failure`` str — first ``Process:`` line that did not end in ``status=0/SUCCESS``
- ``last_error`` str — last journal line saying error/fail/fatal/timeout
- ``fabric_state`` str, ``fabric_status`` str — the GPUs' Fabric State / Status, distinct values
  comma-joined (``Completed``, ``Success``; ``In Progress``, ``N/A`` ...)
- ``fabric_gpu_count`` int — Fabric State lines seen
- ``version`` str — Fabric Manager version when printed

Examples
--------
>>> row = parse(SAMPLE).rows("service_state")[0]
>>> row["unit"], row["active_state"], row["sub_state"], row["result"], row["main_pid"], row["main_exit"]
('nvidia-fabricmanager.service', 'failed', 'failed', 'signal', 9946, 'code=killed, signal=KILL')
>>> row["since"], row["since_tz"], row["unit_file_state"]
('2026-08-10T15:45:34', 'UTC', 'enabled')
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import key_value, strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="fabricmanager",
    title="NVIDIA Fabric Manager service state",
    commands=(
        "systemctl status nvidia-fabricmanager --no-pager",
        "systemctl status nvidia-fabricmanager --no-pager -l",
        "nv-fabricmanager --version",
        "nvidia-smi -q | grep -A2 -i fabric",
    ),
    tables=("service_state",),
    versions_seen=("systemd 245-255", "Fabric Manager 535-590"),
)

_COLUMNS = (
    ("line", "int"), ("unit", "str"), ("load_state", "str"), ("unit_file_state", "str"),
    ("active_state", "str"), ("sub_state", "str"), ("result", "str"), ("since", "ts"), ("since_tz", "str"),
    ("main_pid", "int"), ("main_exit", "str"), ("exec_failure", "str"), ("last_error", "str"),
    ("fabric_state", "str"), ("fabric_status", "str"), ("fabric_gpu_count", "int"), ("version", "str"),
)  # fmt: skip
SCHEMA = {"service_state": tuple(Column(name, typ) for name, typ in _COLUMNS)}

_UNIT = re.compile(
    r"^(?:[●×○↻✗*]\s*)?(?P<unit>[\w@.\\-]+\.(?:service|socket|path|timer|target|mount))(?:\s+-\s+.*)?$"
)
_NOT_FOUND = re.compile(r"^(?:Failed to [^:]*:\s*)?Unit (?P<unit>\S+?) (?:could not be found|not found)")
_LOADED = re.compile(r"^Loaded:\s*(?P<load>[\w-]+)(?:\s*\((?P<inner>[^)]*)\)?)?")
_ACTIVE = re.compile(r"^Active:\s*(?P<active>[\w-]+)(?P<rest>.*)$")
_SINCE = re.compile(
    r"since\s+(?:\w{3}\s+)?(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\s+(?P<tz>[A-Za-z][\w+-]*))?"
)
_JOURNAL = re.compile(r"^\w{3} \d\d \d\d:\d\d:\d\d \S+ [\w.@-]+(?:\[\d+\])?:\s*(?P<msg>.*)$")
_ERROR = re.compile(r"error|fail|fatal|timeout|timed out", re.IGNORECASE)


def detect(text: str) -> int:
    """Confidence that text is Fabric Manager service state."""
    if "nvidia-fabricmanager" in text and re.search(r"Active:|could not be found|not found", text):
        return 90
    if "Fabric Manager version is" in text:
        return 80
    return 40 if re.search(r"^\s*Loaded: ", text, re.M) and re.search(r"^\s*Active: ", text, re.M) else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    if re.search(r"System has not been booted with systemd|Failed to connect to bus", text):
        raise CollectorError(text.strip().splitlines()[0][:300])
    result = ParseResult(tables={"service_state": []})
    row: dict[str, Any] | None = None
    fabric: dict[str, list[str]] = {"State": [], "Status": []}
    extra: dict[str, Any] = {"line": None, "version": None}
    in_fabric = False
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw.strip()).strip()
        if m := _UNIT.match(line):
            row = _new_row(result, no, m["unit"])
            continue
        if m := _NOT_FOUND.match(line):
            row = _new_row(result, no, m["unit"])
            row.update(load_state="not-found", active_state="not-found")
            continue
        if line == "Fabric":
            in_fabric = True
            continue
        kv = key_value(line)
        if in_fabric and kv and kv[0] in fabric:
            fabric[kv[0]].append(kv[1])
            extra["line"] = extra["line"] or no
            continue
        in_fabric = False
        if m := re.search(r"Fabric Manager version is\s*:\s*(\S+)", line):
            extra["version"], extra["line"] = m.group(1), extra["line"] or no
        elif row is not None and not _status_line(result, row, line, no, raw):
            journal = _JOURNAL.match(line)
            if journal and _ERROR.search(journal["msg"]):
                row["last_error"] = journal["msg"]
    rows = result.rows("service_state")
    target = next((r for r in rows if "fabricmanager" in (r["unit"] or "")), rows[0] if rows else None)
    if target is None:
        if extra["line"] is None:
            raise ParseError("no systemctl status, fabric state or Fabric Manager version found")
        target = _new_row(result, extra["line"], None)
    if fabric["State"] or fabric["Status"]:
        target["fabric_state"] = ",".join(dict.fromkeys(fabric["State"])) or None
        target["fabric_status"] = ",".join(dict.fromkeys(fabric["Status"])) or None
        target["fabric_gpu_count"] = len(fabric["State"])
    target["version"] = target["version"] or extra["version"]
    return result


def _new_row(result: ParseResult, no: int, unit: str | None) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(name for name, _ in _COLUMNS)
    row.update(line=no, unit=unit)
    result.add("service_state", row)
    return row


def _status_line(result: ParseResult, row: dict[str, Any], line: str, no: int, raw: str) -> bool:
    """Read one ``Key: value`` line of a status block; False when it is not one."""
    if m := _LOADED.match(line):
        row["load_state"] = m["load"]
        parts = [p.strip() for p in (m["inner"] or "").split(";")]
        row["unit_file_state"] = parts[1] if len(parts) > 1 and "preset" not in parts[1] else None
        if m["load"] == "not-found":
            row["active_state"] = "not-found"
    elif m := _ACTIVE.match(line):
        rest = m["rest"].split(" since ")[0]
        parens = re.findall(r"\(([^)]*)\)", rest)
        row["active_state"] = "not-found" if row["load_state"] == "not-found" else m["active"]
        row["result"] = next((p.split(":", 1)[1].strip() for p in parens if p.startswith("Result:")), None)
        row["sub_state"] = next((p for p in parens if ":" not in p), None)
        if row["sub_state"] is None and row["result"] is not None:
            row["sub_state"] = m["active"]  # "failed (Result: signal)": systemd's sub state is "failed"
        if s := _SINCE.search(m["rest"]):
            row["since"] = datetime.strptime(s["ts"], "%Y-%m-%d %H:%M:%S").isoformat()
            row["since_tz"] = s["tz"]
    elif m := re.match(r"^Main PID:\s*(\S+)(?:\s*\((?P<inner>[^)]*)\))?", line):
        row["main_pid"] = to_int(m.group(1))
        if row["main_pid"] is None:
            result.issue(no, raw, "unreadable Main PID")
        if m["inner"] and "code=" in m["inner"]:
            row["main_exit"] = m["inner"]
    elif m := re.match(r"^Process:\s*\d+\s+(?P<what>\w+)=.*\((?P<inner>code=[^)]*)\)", line):
        if "status=0/SUCCESS" not in m["inner"] and row["exec_failure"] is None:
            row["exec_failure"] = f"{m['what']} {m['inner']}"
    else:
        return False
    return True
