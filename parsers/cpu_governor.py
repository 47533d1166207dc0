"""CPU frequency governor per CPU, from sysfs ``scaling_governor`` or ``cpupower frequency-info``.

Commands the collector runs::

    for f in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do ...; echo "cpuN $(cat "$f")"; done

Sample (hand-written, in collector.sh's ``cpuN governor`` format; no capture of it exists yet)::

    cpu0 performance
    cpu1 performance
    cpu2 powersave

Formats read: the collector's ``cpuN <governor>`` lines; ``grep . /sys/.../cpu*/cpufreq/scaling_governor``
(``path:governor``; ``scaling_driver`` paths fill ``driver``); a bare ``cat`` of the files (one
governor per line: the glob sorts cpu10 before cpu2, so ``cpu`` is null); and ``cpupower
frequency-info`` (``analyzing CPU N:`` blocks with ``driver:`` and ``The governor "x" may decide``;
``no or unknown cpufreq driver is active`` gives a row with null governor and driver).

Schema
------
``cpu_governor`` (one row per CPU or per listed line):

- ``line`` int — line of the row (``analyzing CPU N:`` for cpupower)
- ``cpu`` int — CPU number, null when the input does not say
- ``governor`` str — ``performance``, ``powersave``, ``ondemand``, ``schedutil``... (null when
  cpupower finds no cpufreq driver)
- ``driver`` str — cpufreq driver when printed (``intel_pstate``, ``acpi-cpufreq``), else null
- ``source`` str — ``sysfs`` (scaling_governor lines) or ``cpupower``

Examples
--------
>>> [(r["cpu"], r["governor"]) for r in parse(SAMPLE).rows("cpu_governor")]
[(0, 'performance'), (1, 'performance'), (2, 'powersave')]
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import NOT_AVAILABLE, strip_prefix

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="cpu-governor",
    title="CPU frequency governor (sysfs scaling_governor, cpupower)",
    commands=(
        "cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (as 'cpuN governor')",
        "grep . /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        "cpupower frequency-info",
    ),
    tables=("cpu_governor",),
    versions_seen=("Linux cpufreq sysfs", "cpupower frequency-info (linux-tools)"),
)

SCHEMA = {
    "cpu_governor": (
        Column("line", "int", "line of the row"),
        Column("cpu", "int", "CPU number"),
        Column("governor", "str", "scaling governor"),
        Column("driver", "str", "cpufreq driver"),
        Column("source", "str", "sysfs or cpupower"),
    )
}

GOVERNORS = frozenset({"performance", "powersave", "ondemand", "conservative", "schedutil", "userspace"})
_CPU_LINE = re.compile(r"^cpu(?P<cpu>\d+)[\s:=]+(?P<gov>[\w-]+)$")
_SYSFS = re.compile(r"/cpu(?P<cpu>\d+)/cpufreq/scaling_(?P<file>governor|driver):\s*(?P<value>\S+)$")
_ANALYZING = re.compile(r"^analyzing CPU (\d+):")
_CP_DRIVER = re.compile(r"^driver:\s*(\S+)")
_CP_GOV = re.compile(r'The governor "([^"]+)" may decide')


def detect(text: str) -> int:
    """Confidence that text lists CPU governors."""
    if re.search(r"^\s*analyzing CPU \d+:", text, re.MULTILINE):
        return 85
    lines = [strip_prefix(line).strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return 0
    if any(_SYSFS.search(line) for line in lines):
        return 85
    if all((m := _CPU_LINE.match(line)) and m.group("gov") in GOVERNORS for line in lines):
        return 80
    return 60 if all(line in GOVERNORS for line in lines) else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    lines = [(no, raw, strip_prefix(raw).strip()) for no, raw in enumerate(text.splitlines(), start=1)]
    if any(_ANALYZING.match(line) for _, _, line in lines):
        _cpupower(lines, result)
    else:
        _sysfs(lines, result)
    if not result.rows("cpu_governor"):
        raise ParseError("no governor lines and no 'analyzing CPU N:' block found")
    return result


def _new(no: int, cpu: int | None, source: str) -> dict[str, Any]:
    return {"line": no, "cpu": cpu, "governor": None, "driver": None, "source": source}


def _sysfs(lines: list[tuple[int, str, str]], result: ParseResult) -> None:
    by_cpu: dict[int, dict[str, Any]] = {}
    for no, raw, line in lines:
        if not line:
            continue
        if m := _SYSFS.search(line):
            cpu = int(m.group("cpu"))
            if cpu not in by_cpu:
                by_cpu[cpu] = _new(no, cpu, "sysfs")
                result.add("cpu_governor", by_cpu[cpu])
            by_cpu[cpu][m.group("file")] = m.group("value")
        elif m := _CPU_LINE.match(line):
            row = _new(no, int(m.group("cpu")), "sysfs")
            row["governor"] = None if m.group("gov").lower() in NOT_AVAILABLE else m.group("gov")
            result.add("cpu_governor", row)
        elif re.fullmatch(r"[a-z_]+", line) and line in GOVERNORS:
            row = _new(no, None, "sysfs")
            row["governor"] = line
            result.add("cpu_governor", row)
        else:
            result.issue(no, raw, "not a governor line")


def _cpupower(lines: list[tuple[int, str, str]], result: ParseResult) -> None:
    row: dict[str, Any] | None = None
    for no, _raw, line in lines:
        if m := _ANALYZING.match(line):
            row = _new(no, int(m.group(1)), "cpupower")
            result.add("cpu_governor", row)
        elif row is None:
            continue
        elif m := _CP_DRIVER.match(line):
            row["driver"] = m.group(1)
        elif m := _CP_GOV.search(line):
            row["governor"] = m.group(1)
