"""The default ``nvidia-smi`` table: driver/CUDA banner and one summary block per GPU.

Command the collector runs::

    nvidia-smi

Sample (lines of tests/fixtures/nvidia-smi/gpud-525-err-fan.txt)::

    | NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0     |
    |===============================+======================+======================|
    |   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0 Off |                    0 |
    |ERR!   38C    P5    49W / 450W |   2021MiB / 23028MiB |      0%   E. Process |
    |                               |                      |                  N/A |

The three layouts (<=525: 79 columns; 535/545: 89 columns with a narrow Bus-Id cell; 550-595: 91
columns with a wide one; ``+---+`` instead of ``|---|`` separators on 580+) are read the same way:
each GPU block is split on ``|``, so cell widths do not matter.  Blocks of two rows (no MIG row, old
drivers) are accepted.  The processes and "MIG devices" tables are not read.  A line "Unable to
determine the device handle for GPU ..." above the table becomes a ParseIssue (that GPU is
missing).  "ERR!" in a cell nulls that value and names the cell in ``errors``.

Schema
------
``smi_summary`` (one row per banner):

- ``line`` int — line of the banner
- ``smi_version``, ``driver_version`` str; ``cuda_version`` str — null on drivers that do not print it

``smi_gpu`` (one row per GPU block):

- ``line`` int — first line of the block
- ``index`` int; ``name`` str — as printed, possibly truncated ("NVIDIA GeForce ...")
- ``pci`` str — Bus-Id normalised to ``dddd:bb:dd.f``
- ``persistence_mode`` str — On / Off
- ``fan_pct`` float — null for N/A (passively cooled) or ERR!
- ``temp_c`` float; ``perf_state`` str (P0..P12)
- ``power_draw_w``, ``power_cap_w`` float
- ``memory_used_mib``, ``memory_total_mib`` int
- ``util_gpu_pct`` float; ``compute_mode`` str (Default, E. Process, Prohibited)
- ``mig_mode`` str — Enabled / Disabled / N/A (null when the block has no MIG row)
- ``ecc_uncorrected`` int — "Volatile Uncorr. ECC"; null for N/A, Off or ERR!
- ``errors`` str — comma list of cells that showed "ERR!" (fan, temp, power, ...), null when none

Examples
--------
>>> r = parse(SAMPLE)
>>> r.rows("smi_summary")[0]["driver_version"], r.rows("smi_summary")[0]["cuda_version"]
('525.125.06', '12.0')
>>> g = r.rows("smi_gpu")[0]
>>> g["pci"], g["fan_pct"], g["temp_c"], g["power_cap_w"], g["compute_mode"], g["errors"]
('0000:01:00.0', None, 38.0, 450.0, 'E. Process', 'fan')
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import leading_number, pci_address, percent, strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi",
    title="nvidia-smi default table",
    commands=("nvidia-smi",),
    tables=("smi_summary", "smi_gpu"),
    versions_seen=("525.125.06 (79 cols)", "545.23.08 (89 cols)", "550-590 (91 cols)"),
)

SCHEMA = {
    "smi_summary": (
        Column("line", "int", "line of the banner"),
        Column("driver_version", "str"),
        Column("cuda_version", "str", "CUDA version the driver supports"),
        Column("smi_version", "str"),
    ),
    "smi_gpu": tuple(
        Column(name, kind)
        for name, kind in (
            ("line", "int"), ("index", "int"), ("name", "str"), ("pci", "str"),
            ("persistence_mode", "str"), ("fan_pct", "float"), ("temp_c", "float"),
            ("perf_state", "str"), ("power_draw_w", "float"), ("power_cap_w", "float"),
            ("memory_used_mib", "int"), ("memory_total_mib", "int"), ("util_gpu_pct", "float"),
            ("compute_mode", "str"), ("mig_mode", "str"), ("ecc_uncorrected", "int"), ("errors", "str"),
        )
    ),
}  # fmt: skip

_BANNER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s+(?P<drv>\S+)(?:\s+CUDA Version:\s+(?P<cuda>[\w.]+))?"
)
_FIRST = re.compile(r"^\s*(?P<index>\d+)\s+(?P<rest>.*?)\s*$")
_STATE = re.compile(r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*$")
_PAIR = re.compile(r"^\s*(\S+)\s*/\s*(\S+)\s*$")
_LOST = re.compile(r"Unable to determine the device handle for GPU|GPU is lost", re.IGNORECASE)
_FAILED = re.compile(
    r"NVIDIA-SMI has failed|couldn't communicate with the NVIDIA driver|No devices were found"
)


def detect(text: str) -> int:
    """Confidence that text is the default nvidia-smi table."""
    if _BANNER.search(text):
        return 90
    if "Persistence-M" in text and "Bus-Id" in text:
        return 80
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    in_table = table_done = False
    block: list[tuple[int, str, list[str]]] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).strip()
        if m := _BANNER.search(line):
            result.add("smi_summary", _summary(no, m))
            in_table = table_done = False
            continue
        if not in_table:
            if not table_done and line.startswith("|=") and "+" in line:
                in_table = True
            elif _LOST.search(line):  # printed above the table for a GPU that dropped out
                result.issue(no, raw, "nvidia-smi could not reach a GPU")
            continue
        if line and set(line) <= {"."}:  # "..." pasted in place of elided GPUs
            continue
        if line.startswith(("+-", "|-")):
            _flush(block, result)
            block = []
            continue
        cells = line.strip("|").split("|") if line.startswith("|") else []
        if len(cells) < 3:  # blank line, "| Processes:", "| MIG devices:", end of paste
            _flush(block, result)
            block = []
            in_table, table_done = False, True
            continue
        block.append((no, raw, cells))
    _flush(block, result)
    if not result.rows("smi_summary") and not result.rows("smi_gpu"):
        if m := _FAILED.search(text):
            raise CollectorError(text[m.start() :].splitlines()[0][:300])
        raise ParseError("no nvidia-smi banner or GPU table found")
    return result


def _summary(no: int, m: re.Match[str]) -> dict[str, Any]:
    return {"line": no, "driver_version": m["drv"], "cuda_version": m["cuda"], "smi_version": m["smi"]}


def _flush(block: list[tuple[int, str, list[str]]], result: ParseResult) -> None:
    if not block:
        return
    no, raw, first = block[0]
    head = _FIRST.match(first[0])
    if head is None or len(block) < 2:
        for line_no, line, _ in block:
            result.issue(line_no, line, "not a GPU block of the nvidia-smi table")
        return
    errors: list[str] = []

    def cell(value: str | None, name: str) -> str | None:
        if value is None or "ERR!" in value:
            if value is not None and name not in errors:
                errors.append(name)
            return None
        return value.strip()

    name, persistence = head["rest"], None
    words = name.rsplit(None, 1)
    if len(words) == 2 and words[1] in ("On", "Off", "N/A", "ERR!"):
        name, persistence = words[0].strip(), cell(words[1], "persistence")
    row: dict[str, Any] = {"line": no, "index": int(head["index"]), "name": name}
    row["pci"] = pci_address(cell(first[1].split()[0] if first[1].split() else None, "pci"))
    row["persistence_mode"] = persistence
    row["ecc_uncorrected"] = to_int(cell(first[2], "ecc"))
    state_cells = block[1][2]
    state = _STATE.match(state_cells[0])
    if state is None:
        result.issue(block[1][0], block[1][1], "unreadable fan/temp/perf/power cell")
    get = state.group if state else (lambda _name: None)
    row["fan_pct"] = percent(cell(get("fan"), "fan"))
    row["temp_c"] = leading_number(cell(get("temp"), "temp"))
    row["perf_state"] = cell(get("perf"), "perf")
    row["power_draw_w"] = leading_number(cell(get("pwr"), "power"))
    row["power_cap_w"] = leading_number(cell(get("cap"), "power_cap"))
    memory = _PAIR.match(state_cells[1])
    row["memory_used_mib"] = _int(cell(memory.group(1) if memory else None, "memory"))
    row["memory_total_mib"] = _int(cell(memory.group(2) if memory else None, "memory"))
    util_mode = state_cells[2].split(None, 1)
    row["util_gpu_pct"] = percent(cell(util_mode[0] if util_mode else None, "util"))
    row["compute_mode"] = cell(util_mode[1] if len(util_mode) > 1 else None, "compute_mode")
    row["mig_mode"] = (cell(block[2][2][2], "mig") or None) if len(block) > 2 else None
    row["errors"] = ",".join(errors) or None
    result.add("smi_gpu", {c.name: row.get(c.name) for c in SCHEMA["smi_gpu"]})


def _int(value: str | None) -> int | None:
    number = leading_number(value)
    return int(number) if number is not None else None
