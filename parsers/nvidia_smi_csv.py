"""GPU inventory and health from ``nvidia-smi --query-gpu=... --format=csv`` (and ``--query-remapped-rows``).

Commands the collector runs (the fields are collector.sh's QUERY_FIELDS; fields a driver refuses are
dropped one by one)::

    nvidia-smi --query-gpu=<fields> --format=csv
    nvidia-smi --query-remapped-rows=gpu_bus_id,gpu_uuid,remapped_rows.correctable,\
remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv

Sample (lines of tests/fixtures/nvidia-smi-csv/slurm-v100-timestamp-l5.txt)::

    index, timestamp, utilization.gpu [%], utilization.memory [%], memory.total [MiB], memory.used [MiB], memory.free [MiB]
    0, 2020/11/12 13:48:11.412, 99 %, 52 %, 32480 MiB, 30994 MiB, 1486 MiB

Any set of fields is accepted, keyed by the header.  Output of ``--format=csv,noheader`` (and
``nounits``) has no header: its fields come from the command line recorded in the manifest
(``parse``'s ``command``; ``hptriage parse --fields a,b,c`` on the command line) or from the command
line pasted before the rows (after a ``$``/``#`` prompt or none, with a path to the tool, or broken
with a backslash so that its ``--query-gpu=`` starts the next line); without them it raises
``ParseError``.  A header hard-wrapped over several lines (a PDF's text) is joined again when the lines
joined make a header with as many cells as the row after it.  Units are stripped from headers (``[MiB]``) and values (``99 %``);
``[N/A]``, ``[Not Supported]`` and ``N/A`` become null.  Old and new names are both mapped
(``clocks_throttle_reasons.active`` / ``clocks_event_reasons.active``, ``pci.bus_id`` / ``gpu_bus_id``).
A file may hold several blocks, each starting with its own header line (``-l`` loops, remapped rows).
Travel noise (launcher prefixes, prompts, fences, CRLF) is taken off by ``parsers._text.clean_lines``;
a data line that cannot be read (wrong cell count, before any header line) is a ParseIssue with its
line number.  A cell that should be a number but is not (``0q``: a word glued to it that is not a unit,
nor a not-available marker) is a ParseIssue naming the field, and its value is kept as printed in
``extra``.

Schema
------
``gpu_query`` (one row per CSV data row; null where the field was not queried or not available):

- ``line`` int — line of the row in the file
- ``index`` int; ``uuid`` str; ``pci`` str (``dddd:bb:dd.f``); ``name``, ``serial``, ``driver_version``,
  ``vbios_version``, ``pstate`` str; ``timestamp`` ts (from ``YYYY/MM/DD HH:MM:SS.mmm``, host clock)
- ``temp_c`` float; ``sm_clock_mhz``, ``max_sm_clock_mhz`` int
- ``throttle_reasons_active`` str — the hex bitmask as printed (``0x0000000000000004``)
- ``pcie_gen_current``, ``pcie_gen_max``, ``pcie_width_current``, ``pcie_width_max`` int
- ``ecc_corrected_volatile``, ``ecc_uncorrected_volatile``, ``ecc_corrected_aggregate``,
  ``ecc_uncorrected_aggregate``, ``retired_pages_sbe``, ``retired_pages_dbe`` int
- ``retired_pages_pending`` str — ``yes``/``no``
- ``remapped_rows_correctable``, ``remapped_rows_uncorrectable`` int — row counts
- ``remapped_rows_pending``, ``remapped_rows_failure`` str — ``yes``/``no`` (``1``/``0`` mapped too)
- ``power_draw_w``, ``power_limit_w`` float; ``util_gpu_pct``, ``util_memory_pct``, ``fan_pct`` float
  (``power_limit_w`` is ``power.limit``, the limit software asked for with ``nvidia-smi -pl``)
- ``power_enforced_limit_w`` (``enforced.power.limit``: the limit in effect, the least of every limiter),
  ``power_default_limit_w``, ``power_min_limit_w``, ``power_max_limit_w`` float, W
- ``app_clock_graphics_mhz``, ``app_clock_memory_mhz`` int (``clocks.applications.*``: what ``nvidia-smi
  -ac`` sets); ``default_app_clock_graphics_mhz``, ``default_app_clock_memory_mhz`` int
  (``clocks.default_applications.*``)
- ``memory_total_mib``, ``memory_used_mib``, ``memory_free_mib`` int
- ``persistence_mode`` str — as printed (``Enabled``/``Disabled``)
- ``extra`` str — JSON object of every other field: snake-cased header with its unit
  (``clocks.mem [MHz]`` -> ``clocks_mem_mhz``) -> number, string or null

Examples
--------
>>> r = parse(SAMPLE)
>>> row = r.rows("gpu_query")[0]
>>> row["index"], row["timestamp"], row["util_gpu_pct"], row["memory_used_mib"], row["line"]
(0, '2020-11-12T13:48:11.412', 99.0, 30994, 2)
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import NOT_AVAILABLE, clean_head, clean_lines, pci_address, snake, to_float, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi-csv",
    title="nvidia-smi --query-gpu / --query-remapped-rows CSV",
    commands=(
        "nvidia-smi --query-gpu=<fields> --format=csv",
        "nvidia-smi --query-remapped-rows=<fields> --format=csv",
    ),
    tables=("gpu_query",),
    versions_seen=("driver 442-595",),
)

_COLUMNS = (
    ("line", "int"), ("index", "int"), ("uuid", "str"), ("pci", "str"), ("name", "str"), ("serial", "str"),
    ("driver_version", "str"), ("vbios_version", "str"), ("pstate", "str"), ("timestamp", "ts"),
    ("temp_c", "float"), ("sm_clock_mhz", "int"), ("max_sm_clock_mhz", "int"),
    ("throttle_reasons_active", "str"), ("pcie_gen_current", "int"), ("pcie_gen_max", "int"),
    ("pcie_width_current", "int"), ("pcie_width_max", "int"), ("ecc_corrected_volatile", "int"),
    ("ecc_uncorrected_volatile", "int"), ("ecc_corrected_aggregate", "int"),
    ("ecc_uncorrected_aggregate", "int"), ("retired_pages_sbe", "int"), ("retired_pages_dbe", "int"),
    ("retired_pages_pending", "str"), ("remapped_rows_correctable", "int"),
    ("remapped_rows_uncorrectable", "int"), ("remapped_rows_pending", "str"),
    ("remapped_rows_failure", "str"), ("power_draw_w", "float"), ("power_limit_w", "float"),
    ("power_enforced_limit_w", "float"), ("power_default_limit_w", "float"), ("power_min_limit_w", "float"),
    ("power_max_limit_w", "float"), ("app_clock_graphics_mhz", "int"), ("app_clock_memory_mhz", "int"),
    ("default_app_clock_graphics_mhz", "int"), ("default_app_clock_memory_mhz", "int"),
    ("util_gpu_pct", "float"), ("util_memory_pct", "float"), ("memory_total_mib", "int"),
    ("memory_used_mib", "int"), ("memory_free_mib", "int"), ("persistence_mode", "str"),
    ("fan_pct", "float"), ("extra", "str"),
)  # fmt: skip
_TYPES = dict(_COLUMNS)
SCHEMA = {"gpu_query": tuple(Column(name, kind) for name, kind in _COLUMNS)}

#: nvidia-smi field name (lower case, unit removed) -> column.
_FIELDS = {
    "index": "index", "uuid": "uuid", "gpu_uuid": "uuid", "pci.bus_id": "pci", "gpu_bus_id": "pci",
    "name": "name", "gpu_name": "name", "serial": "serial", "gpu_serial": "serial",
    "driver_version": "driver_version", "vbios_version": "vbios_version", "pstate": "pstate",
    "timestamp": "timestamp", "temperature.gpu": "temp_c", "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz", "clocks.max.sm": "max_sm_clock_mhz",
    "clocks_throttle_reasons.active": "throttle_reasons_active",
    "clocks_event_reasons.active": "throttle_reasons_active",
    "pcie.link.gen.current": "pcie_gen_current", "pcie.link.gen.gpucurrent": "pcie_gen_current",
    "pcie.link.gen.max": "pcie_gen_max", "pcie.link.width.current": "pcie_width_current",
    "pcie.link.width.max": "pcie_width_max",
    "ecc.errors.corrected.volatile.total": "ecc_corrected_volatile",
    "ecc.errors.uncorrected.volatile.total": "ecc_uncorrected_volatile",
    "ecc.errors.corrected.aggregate.total": "ecc_corrected_aggregate",
    "ecc.errors.uncorrected.aggregate.total": "ecc_uncorrected_aggregate",
    "retired_pages.single_bit_ecc.count": "retired_pages_sbe", "retired_pages.sbe": "retired_pages_sbe",
    "retired_pages.double_bit.count": "retired_pages_dbe", "retired_pages.dbe": "retired_pages_dbe",
    "retired_pages.pending": "retired_pages_pending",
    "remapped_rows.correctable": "remapped_rows_correctable",
    "remapped_rows.uncorrectable": "remapped_rows_uncorrectable",
    "remapped_rows.pending": "remapped_rows_pending", "remapped_rows.failure": "remapped_rows_failure",
    "power.draw": "power_draw_w", "power.limit": "power_limit_w", "utilization.gpu": "util_gpu_pct",
    "enforced.power.limit": "power_enforced_limit_w", "power.default_limit": "power_default_limit_w",
    "power.min_limit": "power_min_limit_w", "power.max_limit": "power_max_limit_w",
    "clocks.applications.graphics": "app_clock_graphics_mhz", "clocks.applications.gr": "app_clock_graphics_mhz",
    "clocks.applications.memory": "app_clock_memory_mhz", "clocks.applications.mem": "app_clock_memory_mhz",
    "clocks.default_applications.graphics": "default_app_clock_graphics_mhz",
    "clocks.default_applications.gr": "default_app_clock_graphics_mhz",
    "clocks.default_applications.memory": "default_app_clock_memory_mhz",
    "clocks.default_applications.mem": "default_app_clock_memory_mhz",
    "utilization.memory": "util_memory_pct", "memory.total": "memory_total_mib",
    "memory.used": "memory_used_mib", "memory.free": "memory_free_mib",
    "persistence_mode": "persistence_mode", "fan.speed": "fan_pct",
}  # fmt: skip
_YES_NO = {"yes": "yes", "no": "no", "true": "yes", "false": "no", "1": "yes", "0": "no"}
_HEADER_CELL = re.compile(r"^(?P<field>[A-Za-z][\w.]*)(?:\s*\[(?P<unit>[^\]]*)\])?$")
_WITH_UNIT = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(%|[A-Za-z][A-Za-z/]*)$")
#: units nvidia-smi prints after a value (lower case); another word glued to a number is not a unit
_UNITS = frozenset(
    {"%", "w", "mw", "mhz", "ghz", "c", "b", "kib", "mib", "gib", "tib", "kb", "mb", "gb", "tb"}
    | {"rpm", "v", "mv", "ms", "us", "s", "gb/s", "mb/s", "kb/s", "bytes"}
)
#: A command line pasted before its output without a prompt ("nvidia-smi --query-gpu=... --format=csv").
#: Also a "# " or "$ " prompt the cleaner keeps, a path to the tool (nvidia-smi.exe under WSL) and the
#: continuation line of a command broken with a backslash ("  --query-gpu=... --format=csv,noheader").
_TYPED = re.compile(
    r"^(?:[#$]\s+)?(?:sudo\s+)?(?:\S*/)?nvidia-smi(?:\.exe)?\s.*--query-(?:gpu|remapped-rows)[= ]"
    r"|^--query-(?:gpu|remapped-rows)="
)
_TOOL_ERROR = re.compile(
    r"is not a valid field to query|Invalid combination of input arguments|nvidia-smi -h"
)


def detect(text: str) -> int:
    """Confidence that text is nvidia-smi CSV: a header line of known query fields, or a pasted
    ``--query-gpu=...`` command line (a prompt's, or the continued line of one) followed by rows of as
    many cells as it asks for.

    >>> detect("$ nvidia-smi --query-gpu=index,name --format=csv,noheader\\n0, NVIDIA H100\\n1, NVIDIA H100\\n")
    80
    """
    cleaned = clean_head(text)
    for text_line in [cmd for _, cmd in cleaned.commands] + cleaned.lines[:50]:
        fields = fields_of(text_line)
        if fields and len(fields) > 1:
            rows = [ln for ln in cleaned.lines[:80] if ln.count(",") == len(fields) - 1 and "--" not in ln]
            if len(rows) >= 1:
                return 80
    for line in cleaned.lines[:50]:
        header = _header(line.strip())
        if header is None:
            continue
        known = [f for f in map(_field, header) if f in _FIELDS]
        if any("." in f or f.startswith("gpu_") for f in known):
            return 85
        if len(known) >= 2:
            return 60
    return 0


def fields_of(command: str) -> list[str] | None:
    """The fields of a ``--query-gpu=`` / ``--query-remapped-rows=`` command line, when it has them.

    >>> fields_of("nvidia-smi --query-gpu=index,temperature.gpu --format=csv,noheader,nounits")
    ['index', 'temperature.gpu']
    >>> fields_of("nvidia-smi -q") is None
    True
    """
    m = re.search(r"--query-(?:gpu|remapped-rows)[= ]([\w.,]+)", command)
    return [f for f in m.group(1).split(",") if f] if m else None


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse the CSV; the field list of ``command`` (the query that printed it) stands in for a missing
    header line.

    >>> command = "nvidia-smi --query-gpu=index,temperature.gpu,clocks.sm --format=csv,noheader"
    >>> rows = parse("0, 33, 1980\\n1, 35, 1980\\n", command=command).rows("gpu_query")
    >>> [(r["index"], r["temp_c"], r["sm_clock_mhz"]) for r in rows]
    [(0, 33.0, 1980), (1, 35.0, 1980)]
    """
    require_text(text)
    fields = fields_of(command) if command else None
    result = ParseResult()
    header: list[str] | None = [f.strip().lower() for f in fields] if fields else None
    headerless = False
    before: list[tuple[int, str]] = []  # lines seen before the first header
    cleaned = clean_lines(text)
    lines = cleaned.lines
    prompts = {no: command for no, command in cleaned.commands}  # "$ nvidia-smi --query-gpu=..." lines
    joined_up_to = 0  # the last line of a header hard-wrapped over several lines, already read
    for no, line in enumerate(lines, start=1):
        line = line.strip()
        typed = prompts.get(no) or (line if _TYPED.match(line) else None)
        if typed is not None:  # the command printed before its output: its fields stand for a header
            if typed_fields := fields_of(typed):
                header = [f.strip().lower() for f in typed_fields]
                before.clear()
            continue
        if no <= joined_up_to or not line or set(line) <= {"."}:
            continue
        fields = _header(line)
        if not _fits(fields, lines, no) and (wrapped := _wrapped_header(lines, no)) is not None:
            fields, joined_up_to = wrapped
        if fields is not None:
            if header is None:
                for line_no, skipped in before:
                    result.issue(line_no, skipped, "line before the CSV header line: columns unknown")
            header = fields
        elif header is None:
            headerless = headerless or "," in line
            if "," in line or any(ch.isdigit() for ch in line):
                before.append((no, line))
        else:
            cells = [c.strip() for c in line.split(",")]
            if len(cells) != len(header):
                result.issue(no, line, f"{len(cells)} cells, header has {len(header)}")
                continue
            result.add("gpu_query", _row(no, line, header, cells, result))
    if header is None:
        if error := _TOOL_ERROR.search(text):
            raise CollectorError(text[: error.end()].strip().splitlines()[-1][:300])
        if headerless:
            raise ParseError("CSV without a header line (--format=csv,noheader?): columns unknown")
        raise ParseError("no nvidia-smi CSV header line found")
    result.tables.setdefault("gpu_query", [])
    return result


def _fits(fields: list[str] | None, lines: list[str], no: int) -> bool:
    """Whether a header line read on line ``no`` is whole: the next line is a row of as many cells (or
    there is none).  Another header line next may be the rest of this one, wrapped."""
    if fields is None:
        return False
    after = next((x.strip() for x in lines[no:] if x.strip()), None)
    return after is None or (len(after.split(",")) == len(fields) and _header(after) is None)


def _wrapped_header(lines: list[str], no: int) -> tuple[list[str], int] | None:
    """A header hard-wrapped over lines ``no``.. (a PDF's text, a narrow terminal): (its cells, its last
    line number) when the lines joined make a header whose cell count the next data line has.  Each
    break may fall between two cells or inside one (``utilization.mem`` + ``ory [%]``): every way of
    joining the pieces (with a blank or without) is tried, and the one naming the most known query
    fields wins.

    >>> _wrapped_header(["index, utilization.mem", "ory [%], memory.us", "ed [MiB]", "0, 12 %, 5 MiB"], 1)
    (['index', 'utilization.memory [%]', 'memory.used [mib]'], 3)
    """
    import itertools

    first = lines[no - 1].strip()
    if not first or "," not in first + "," or _field(first.split(",")[0].strip().lower()) not in _FIELDS:
        return None
    pieces = [first]
    for end in range(no + 1, min(no + 6, len(lines) + 1)):
        part = lines[end - 1].strip()
        if not part:
            return None
        pieces.append(part)
        after = next((x.strip() for x in lines[end:] if x.strip()), None)
        if not after or _header(after) is not None:
            continue
        best: tuple[int, list[str]] | None = None
        for glues in itertools.product((" ", ""), repeat=len(pieces) - 1):
            joined = pieces[0] + "".join(g + p for g, p in zip(glues, pieces[1:], strict=True))
            cells = _header(joined)
            if cells and len(after.split(",")) == len(cells):
                known = sum(1 for c in cells if _field(c) in _FIELDS)
                if best is None or known > best[0]:
                    best = (known, cells)
        if best is not None:
            return best[1], end
    return None


def _header(line: str) -> list[str] | None:
    """The header cells (lower case, units kept) when the line is a header, else None."""
    cells = [c.strip().lower() for c in line.split(",")]
    if not all(_HEADER_CELL.match(c) for c in cells) or not any(_field(c) in _FIELDS for c in cells):
        return None
    return cells


def _field(cell: str) -> str:
    """'memory.used [mib]' -> 'memory.used'."""
    return cell.split("[")[0].strip()


def _row(no: int, raw: str, header: list[str], cells: list[str], result: ParseResult) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name, _ in _COLUMNS}
    row["line"] = no
    extra: dict[str, Any] = {}
    for cell_name, value in zip(header, cells, strict=True):
        field = _field(cell_name)
        column = _FIELDS.get(field)
        if column is None:
            extra[snake(cell_name)] = _loose(value, _unit(cell_name))
            continue
        if _missing(value):
            continue
        converted = _convert(column, value, _unit(cell_name))
        if converted is None:
            result.issue(no, raw, f"{field}: unreadable value {value!r}")
            extra[snake(cell_name)] = value  # kept as printed
        row[column] = converted
    row["extra"] = json.dumps(extra)
    return row


def _unit(cell: str) -> str | None:
    """'memory.used [mib]' -> 'mib'; None without a unit."""
    m = _HEADER_CELL.match(cell)
    return m.group("unit").strip().lower() if m and m.group("unit") else None


def _number(value: str, unit: str | None) -> str:
    """The number of ``99 %`` / ``81559 MiB`` when its unit is a unit (the header's or a known one); else
    the value unchanged, so ``0q`` stays unreadable instead of reading as 0."""
    m = _WITH_UNIT.match(value)
    if m is None:
        return value
    printed = m.group(2).lower()
    return m.group(1) if printed in _UNITS or printed == unit else value


def _convert(column: str, value: str, unit: str | None = None) -> Any:
    kind = _TYPES[column]
    if column == "pci":
        return pci_address(value)
    if column.endswith("_pending") or column.endswith("_failure"):
        return _YES_NO.get(value.lower(), value.lower())
    if column == "timestamp":
        return _timestamp(value)
    if kind == "str":
        return value
    text = _number(value, unit)
    return to_int(text) if kind == "int" else to_float(text)


def _loose(value: str, unit: str | None = None) -> Any:
    """A value for ``extra``: a number without its unit, else the string as printed; null when not
    available."""
    if _missing(value):
        return None
    text = _number(value, unit)
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    parsed = to_float(text)
    return value if parsed is None else parsed


def _missing(value: str) -> bool:
    return value.lower() in NOT_AVAILABLE or value.lower() in ("[not found]", "[unknown]")


def _timestamp(value: str) -> str | None:
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            parsed = datetime.strptime(value, fmt)
        except ValueError:
            continue
        return parsed.isoformat(timespec="milliseconds" if "." in value else "seconds")
    return None
