"""CPU frequency governor per CPU: sysfs ``cpufreq`` files, ``cpupower frequency-info``, ``cpufreq-info``.

Commands the collector runs::

    for f in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do ...; echo "cpuN $(cat "$f")"; done

Sample (hand-written, in collector.sh's ``cpuN governor`` format; no capture of it exists yet)::

    cpu0 performance
    cpu1 performance
    cpu2 powersave

Formats read (travel noise is taken off first by ``parsers._text.clean_lines``):

- the collector's ``cpuN <governor>`` lines;
- ``grep . /sys/devices/system/cpu/cpu*/cpufreq/*`` and ``echo "$f: $(< $f)"`` loops (``path:value`` or
  ``path: value``): ``scaling_governor``, ``scaling_driver``, ``energy_performance_preference``,
  ``scaling_available_governors`` fill their columns, ``*_freq`` files (kHz) the MHz columns, and every
  file's value is kept as printed in ``extra`` (``policyN`` paths give ``cpu`` N);
- a bare ``cat`` of such files (one value per line, no CPU: the glob sorts cpu10 before cpu2, so ``cpu`` is
  null): a governor name is a governor, a cpufreq driver name (``intel_pstate``, ``acpi-cpufreq``,
  ``amd-pstate-epp``...) a driver, an EPP value (``balance_performance``...) an EPP; a ``cat`` command line
  naming ``energy_performance_preference`` or ``scaling_driver`` says which file the values come from;
- ``cpupower frequency-info`` and ``cpufreq-info`` (``analyzing CPU N:`` blocks): driver, hardware limits,
  available governors, current policy and its governor, current frequency, boost state, transition
  latency; each value as printed, frequencies also in MHz; other ``key: value`` lines (``AMD PSTATE
  Highest Performance``, ``CPUs which run at the same hardware frequency``) go to ``extra``.
  ``no or unknown cpufreq driver is active on this CPU`` (a VM, cpufreq off in the BIOS) is an answer: a
  row with ``status`` ``no_driver`` and null governor.  cpupower prints ``Not Available`` without its
  label when it cannot read the hardware limits: it is kept as ``hardware_limits``.

A line that is none of these is a ParseIssue (a cut last line among them).  ``cat: ...: No such file``
lines are skipped; a file of nothing else raises CollectorError.

Schema
------
``cpu_governor`` (one row per CPU or per listed line):

- ``line`` int — line of the row (``analyzing CPU N:`` for cpupower)
- ``cpu`` int — CPU number, null when the input does not say
- ``governor`` str — ``performance``, ``powersave``, ``ondemand``, ``schedutil``... (null when
  cpupower finds no cpufreq driver)
- ``driver`` str — cpufreq driver when printed (``intel_pstate``, ``acpi-cpufreq``, ``amd-pstate-epp``)
- ``source`` str — ``sysfs`` (scaling_governor lines, cat, grep), ``cpupower`` or ``cpufreq-info``
- ``status`` str — ``ok``, or ``no_driver`` (cpupower: no or unknown cpufreq driver)
- ``epp`` str — energy performance preference (``balance_performance``, ``performance``...)
- ``available_governors`` str — as printed (``performance powersave``, ``performance, powersave``)
- ``hardware_limits`` str — as printed (``800 MHz - 3.90 GHz``)
- ``hw_min_mhz``, ``hw_max_mhz`` float, MHz — hardware limits (sysfs ``cpuinfo_min/max_freq``)
- ``policy`` str — current policy as printed (``frequency should be within 400 MHz and 400 MHz.``)
- ``policy_min_mhz``, ``policy_max_mhz`` float, MHz — current policy (sysfs ``scaling_min/max_freq``)
- ``cur_freq`` str — the current frequency as printed (``3.90 GHz (asserted by call to kernel)``)
- ``cur_freq_mhz`` float, MHz — current frequency (sysfs ``scaling_cur_freq``)
- ``boost_supported``, ``boost_active`` bool — ``boost state support`` (null when not printed)
- ``transition_latency`` str — maximum transition latency as printed
- ``extra`` str — JSON object of the other keys or sysfs files and their values as printed, else null
- ``host`` str — launcher tag of the row's line (pdsh host, srun rank, pod), else null

Examples
--------
>>> [(r["cpu"], r["governor"]) for r in parse(SAMPLE).rows("cpu_governor")]
[(0, 'performance'), (1, 'performance'), (2, 'powersave')]
>>> text = "analyzing CPU 3:\\n  driver: acpi-cpufreq\\n  hardware limits: 800 MHz - 3.90 GHz\\n"
>>> row = parse(text).rows("cpu_governor")[0]
>>> row["cpu"], row["driver"], row["hw_min_mhz"], row["hw_max_mhz"], row["hardware_limits"]
(3, 'acpi-cpufreq', 800.0, 3900.0, '800 MHz - 3.90 GHz')
"""

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import (
    CollectorError,
    Column,
    ParseError,
    ParseResult,
    ParserInfo,
    require_text,
    sample_of,
)
from parsers._text import NOT_AVAILABLE, clean_head, clean_lines, keep_value, key_value, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="cpu-governor",
    title="CPU frequency governor (sysfs scaling_governor, cpupower, cpufreq-info)",
    commands=(
        "cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (as 'cpuN governor')",
        "grep . /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        "grep . /sys/devices/system/cpu/cpu*/cpufreq/{scaling_driver,energy_performance_preference}",
        "cpupower frequency-info",
        "cpufreq-info",
    ),
    tables=("cpu_governor",),
    versions_seen=(
        "Linux cpufreq sysfs (intel_pstate, pcc-cpufreq)",
        "cpupower frequency-info (intel_pstate, amd-pstate, amd-pstate-epp, no driver)",
        "cpufrequtils 006/008 cpufreq-info",
    ),
)

SCHEMA = {
    "cpu_governor": (
        Column("line", "int", "line of the row"),
        Column("cpu", "int", "CPU number"),
        Column("governor", "str", "scaling governor"),
        Column("driver", "str", "cpufreq driver"),
        Column("source", "str", "sysfs, cpupower or cpufreq-info"),
        Column("status", "str", "ok or no_driver"),
        Column("epp", "str", "energy performance preference"),
        Column("available_governors", "str", "available governors as printed"),
        Column("hardware_limits", "str", "hardware limits as printed"),
        Column("hw_min_mhz", "float", "hardware minimum frequency, MHz"),
        Column("hw_max_mhz", "float", "hardware maximum frequency, MHz"),
        Column("policy", "str", "current policy as printed"),
        Column("policy_min_mhz", "float", "policy minimum frequency, MHz"),
        Column("policy_max_mhz", "float", "policy maximum frequency, MHz"),
        Column("cur_freq", "str", "current frequency as printed"),
        Column("cur_freq_mhz", "float", "current frequency, MHz"),
        Column("boost_supported", "bool", "boost supported"),
        Column("boost_active", "bool", "boost active"),
        Column("transition_latency", "str", "maximum transition latency as printed"),
        Column("extra", "str", "JSON object of other keys/files as printed"),
        Column("host", "str", "launcher tag of the row's line"),
    )
}

GOVERNORS = frozenset({"performance", "powersave", "ondemand", "conservative", "schedutil", "userspace"})
DRIVERS = frozenset(
    {"intel_pstate", "intel_cpufreq", "acpi-cpufreq", "amd-pstate", "amd-pstate-epp", "amd_pstate"}
    | {"pcc-cpufreq", "cppc_cpufreq", "cpufreq-dt", "powernv-cpufreq", "scmi", "cppc-cpufreq"}
)
EPP = frozenset({"default", "balance_performance", "balance_power", "power", "performance"})
_CPU_LINE = re.compile(r"^cpu(?P<cpu>\d+)[\s:=]+(?P<gov>[\w-]+)$")
_SYSFS = re.compile(
    r"/(?:cpu(?P<cpu>\d+)/cpufreq|cpufreq/policy(?P<policy>\d+))/(?P<file>\w+):\s?(?P<value>.*)$"
)
_ANALYZING = re.compile(r"^\s*analyzing CPU (\d+):")
_GOV = re.compile(r'The governor "([^"]+)" may decide')
_FREQ = re.compile(r"(\d+(?:\.\d+)?)\s*([kMG]?Hz)\b")
_SCALE = {"Hz": 1e-6, "kHz": 1e-3, "MHz": 1.0, "GHz": 1000.0}
_NO_DRIVER = "no or unknown cpufreq driver is active"
_BANNER = re.compile(r"^(?:cpufrequtils \d+: cpufreq-info|Report errors and bugs to|within this range\.?$)")
_COMMAND = re.compile(
    r"(?:^|[\s$#>➜~])(?:sudo\s+)?(?:cpupower\b|cpufreq-info\b|(?:cat|grep|for|find)\s.*cpu)"
)
_MISSING = re.compile(r"^(?:cat|grep|ls): .*(?:No such file|Permission denied|cannot access)")
#: sysfs files with a column of their own (as printed) and the kHz files read into MHz columns.
_FILE_COLUMNS = {
    "scaling_governor": "governor",
    "scaling_driver": "driver",
    "energy_performance_preference": "epp",
    "scaling_available_governors": "available_governors",
}
_KHZ_FILES = {
    "scaling_cur_freq": "cur_freq_mhz",
    "cpuinfo_min_freq": "hw_min_mhz",
    "cpuinfo_max_freq": "hw_max_mhz",
    "scaling_min_freq": "policy_min_mhz",
    "scaling_max_freq": "policy_max_mhz",
}


def detect(text: str) -> int:
    """Confidence that text lists CPU governors (cpupower/cpufreq-info, sysfs files, cat of them)."""
    if re.search(r"^\W*analyzing CPU \d+:", text, re.MULTILINE):
        return 85
    cleaned = clean_head(text)
    lines = [line.strip() for line in cleaned.lines if line.strip()]
    if not lines:
        return 0
    if any(_SYSFS.search(line) for line in lines):
        return 85
    if all((m := _CPU_LINE.match(line)) and m.group("gov") in GOVERNORS for line in lines):
        return 80
    return 60 if all(line in GOVERNORS for line in lines) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult(tables={"cpu_governor": []})
    cleaned = clean_lines(text)
    raw = text.splitlines()
    commands = dict(cleaned.commands)
    if any(_ANALYZING.match(line) for line in cleaned.lines):
        _cpupower(cleaned.numbered(), raw, result)
    else:
        _sysfs(cleaned.numbered(), raw, commands, result)
    if not result.rows("cpu_governor"):
        errors = [line.strip() for line in cleaned.lines if _MISSING.match(line.strip())]
        if errors:
            raise CollectorError(errors[0][:300])
        seen = next((line.strip()[:80] for line in cleaned.lines if line.strip()), "")
        raise ParseError(
            "expected 'analyzing CPU N:' blocks, cpufreq sysfs 'path:value' lines, 'cpuN governor' lines or "
            f"bare governor names; saw {seen!r}"
        )
    for row in result.rows("cpu_governor"):
        extra = row.pop("_extra")
        row["extra"] = json.dumps(extra, sort_keys=True) if extra else None
    return result


def _new(result: ParseResult, no: int, cpu: int | None, source: str, host: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["cpu_governor"]}
    row.update(line=no, cpu=cpu, source=source, status="ok", host=host, _extra={})
    result.add("cpu_governor", row)
    return row


def _mhz(text: str) -> list[float]:
    return [float(n) * _SCALE[u] for n, u in _FREQ.findall(text)]


def _put(row: dict[str, Any], key: str, value: str) -> None:
    """Keep a value in ``extra``; a key printed twice keeps both values, in order."""
    keep_value(row["_extra"], key, value)


def _sysfs(numbered: Any, raw: list[str], commands: dict[int, str], result: ParseResult) -> None:
    by_cpu: dict[tuple[str | None, int], dict[str, Any]] = {}
    command = ""
    pending = sorted(commands.items())
    for no, line, host in numbered:
        line = line.strip()
        while pending and pending[0][0] < no:  # a prompt line above this one (clean_lines blanked it)
            command = pending.pop(0)[1]
        if m := _SYSFS.search(line):
            cpu = int(m.group("cpu") or m.group("policy"))
            row = by_cpu.get((host, cpu))
            if row is None:
                row = by_cpu[(host, cpu)] = _new(result, no, cpu, "sysfs", host)
                if m.group("policy") is not None:
                    row["_extra"]["policy"] = f"policy{cpu}"
            _sysfs_file(row, m.group("file"), m.group("value").strip())
        elif m := _CPU_LINE.match(line):
            row = _new(result, no, int(m.group("cpu")), "sysfs", host)
            row["governor"] = None if m.group("gov").lower() in NOT_AVAILABLE else m.group("gov")
        elif _COMMAND.search(line) and not re.fullmatch(r"[\w-]+", line):
            command = line  # a command echoed without a prompt clean_lines knows
        elif _MISSING.match(line):
            continue
        elif re.fullmatch(r"[\w-]+", line) and (column := _bare_column(line, command)):
            row = _new(result, no, None, "sysfs", host)
            row[column] = line
        else:
            result.issue(no, raw[no - 1], "not a governor, cpufreq sysfs or 'cpuN governor' line")


def _bare_column(value: str, command: str) -> str | None:
    """Which file a bare value was cat'ed from: the command line says, else the value itself."""
    for file, column in _FILE_COLUMNS.items():
        if file in command and column != "available_governors":
            return column
    if value in GOVERNORS:
        return "governor"
    if value in DRIVERS:
        return "driver"
    return "epp" if value in EPP else None


def _sysfs_file(row: dict[str, Any], file: str, value: str) -> None:
    if column := _FILE_COLUMNS.get(file):
        row[column] = value if value.lower() not in NOT_AVAILABLE else None
        return
    _put(row, file, value)
    if column := _KHZ_FILES.get(file):
        khz = to_float(value)
        row[column] = khz / 1000.0 if khz is not None else None


def _cpupower(numbered: Any, raw: list[str], result: ParseResult) -> None:
    row: dict[str, Any] | None = None
    source = "cpupower"
    last_key = ""
    for no, line, host in numbered:
        line = line.strip()
        if m := _ANALYZING.match(line):
            row = _new(result, no, int(m.group(1)), source, host)
            last_key = ""
            continue
        if line.startswith("cpufrequtils"):
            source = "cpufreq-info"
        if _BANNER.match(line) or _MISSING.match(line) or (row is None and _COMMAND.search(line)):
            continue
        if row is None:
            result.issue(no, raw[no - 1], "line before the first 'analyzing CPU N:'")
            continue
        if not _cpupower_line(row, line, last_key):
            result.issue(no, raw[no - 1], "not a cpupower frequency-info line")
            continue
        last_key = line.split(":", 1)[0].strip().lower() if ":" in line else last_key


def _cpupower_line(row: dict[str, Any], line: str, last_key: str) -> bool:
    if _NO_DRIVER in line:
        row["status"] = "no_driver"
        return True
    if m := _GOV.search(line):
        row["governor"] = m.group(1)
        return True
    if line == "Not Available" or line == "Unable to determine current policy":
        column = "hardware_limits" if line == "Not Available" else "policy"
        row[column] = line
        return True
    if line.startswith("current CPU frequency is "):  # cpufreq-info
        line = "current CPU frequency: " + line.removeprefix("current CPU frequency is ").rstrip(".")
    kv = key_value(line)
    if kv is None:
        return False
    key, value = kv
    low = key.lower()
    if low == "driver":
        row["driver"] = value
    elif low == "hardware limits":
        row["hardware_limits"] = value
        if len(mhz := _mhz(value)) == 2:
            row["hw_min_mhz"], row["hw_max_mhz"] = mhz
    elif low == "available cpufreq governors":
        row["available_governors"] = value
    elif low == "current policy":
        row["policy"] = value
        if len(mhz := _mhz(value)) == 2:
            row["policy_min_mhz"], row["policy_max_mhz"] = mhz
    elif low == "current cpu frequency":
        _put(row, key, value)
        if (mhz := _mhz(value)) and row["cur_freq"] is None:
            row["cur_freq"], row["cur_freq_mhz"] = value, mhz[0]
    elif low == "maximum transition latency":
        row["transition_latency"] = value
    elif low in ("supported", "active") and last_key in ("boost state support", "supported", "active"):
        flag = {"yes": True, "no": False}.get(value.lower())
        row["boost_supported" if low == "supported" else "boost_active"] = flag
    elif "energy performance preference" in low or low == "energy_performance_preference":
        row["epp"] = value
    elif low != "boost state support" or value:
        _put(row, key, value)
    return True
