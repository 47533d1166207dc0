"""Per-GPU state from ``nvidia-smi -q`` (the same text as ``nvidia-smi -a``).

Command the collector runs::

    nvidia-smi -q

Sample (hand-written from lines of the della-h100-545 and a10-550 fixtures; DRAM counters set to 5 and 2)::

    ==============NVSMI LOG==============
    Driver Version                            : 545.23.08
    CUDA Version                              : 12.3
    Attached GPUs                             : 1
    GPU 00000000:19:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        PCI
            GPU Link Info
                Link Width
                    Max                       : 16x
                    Current                   : 16x
        Clocks Event Reasons
            HW Slowdown                       : Active
        ECC Errors
            Volatile
                SRAM Correctable              : 0
                SRAM Uncorrectable            : 0
                DRAM Correctable              : 5
                DRAM Uncorrectable            : 2
        Temperature
            GPU Current Temp                  : 33 C

The text is a tree of ``Key : value`` lines indented by four spaces; the parser walks it, keeps the path
of section names, and maps known paths to columns.  It reads the 36-column keys of 396.x drivers and the
42-column keys of 5xx, "Clocks Throttle Reasons" and its successor "Clocks Event Reasons", Single/Double
Bit ECC (pre-Ampere) and SRAM/DRAM Correctable/Uncorrectable (with or without the 565 Parity/SEC-DED split),
section names with trailing spaces, and ``-d ECC,ROW_REMAPPER`` partial dumps.

Schema
------
``gpu`` (one row per ``GPU <bus id>`` block):

- ``line`` int — line of the ``GPU <bus id>`` header; ``index`` int — order in the dump (0-based)
- ``pci`` str — bus id normalised to ``dddd:bb:dd.f``; ``name``, ``serial``, ``uuid``, ``vbios`` str
- ``driver_version``, ``cuda_version`` str — from the dump header (CUDA absent before 410)
- ``minor_number``, ``module_id`` int; ``persistence_mode``, ``mig_mode``, ``ecc_mode`` str (Enabled/Disabled)
- ``performance_state`` str (P0..P12); ``reset_required`` str (Yes/No)
- ``temp_c``, ``temp_slowdown_c``, ``temp_shutdown_c``, ``temp_max_operating_c``, ``temp_tlimit_c``,
  ``memory_temp_c`` float, °C (T.Limit temps are margins and can be negative)
- ``sm_clock_mhz``, ``max_sm_clock_mhz``, ``graphics_clock_mhz``, ``memory_clock_mhz`` float, MHz
- ``throttle_reasons_active`` str — comma list of active clock event/throttle reasons (``Idle`` included)
- ``pcie_gen_current``, ``pcie_gen_max``, ``pcie_width_current``, ``pcie_width_max``, ``pcie_replays`` int
- ``ecc_corrected_volatile``, ``ecc_uncorrected_volatile``, ``ecc_corrected_aggregate``,
  ``ecc_uncorrected_aggregate`` int — totals (SRAM + DRAM, or Single/Double Bit totals)
- ``sram_uncorrected_volatile``, ``dram_uncorrected_volatile``, ``sram_uncorrected_aggregate``,
  ``dram_uncorrected_aggregate``, ``dram_corrected_volatile``, ``dram_corrected_aggregate`` int
- ``retired_pages_sbe``, ``retired_pages_dbe`` int; ``retired_pages_pending`` str
- ``remapped_rows_correctable``, ``remapped_rows_uncorrectable`` int; ``remap_pending``, ``remap_failure`` bool
- ``power_draw_w``, ``power_limit_w`` float, W; ``memory_total_mib``, ``memory_used_mib`` float, MiB;
  ``util_gpu_pct`` float, %
- ``fabric_state``, ``fabric_status`` str (NVSwitch systems: Completed / Success)
- evidence lines (int): ``temp_line``, ``throttle_line``, ``pcie_line``, ``ecc_volatile_line``,
  ``ecc_aggregate_line``, ``remap_line``, ``retired_line``, ``persistence_line``, ``fabric_line``, ``clock_line``;
  ``driver_version_line``, ``cuda_version_line`` — the ``Driver Version`` / ``CUDA Version`` lines of the
  dump header; ``vbios_version_line`` — the GPU's ``VBIOS Version`` line

Examples
--------
>>> gpu = parse(SAMPLE).rows("gpu")[0]
>>> gpu["pci"], gpu["name"], gpu["driver_version"], gpu["ecc_uncorrected_volatile"], gpu["temp_c"]
('0000:19:00.0', 'NVIDIA H100 80GB HBM3', '545.23.08', 2, 33.0)
>>> gpu["throttle_reasons_active"], gpu["pcie_width_current"], gpu["ecc_volatile_line"]
('HW Slowdown', 16, 19)
>>> gpu["driver_version_line"], gpu["cuda_version_line"], gpu["line"]
(2, 3, 5)
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import leading_number, pci_address, strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi-q",
    title="nvidia-smi -q (full GPU query)",
    commands=("nvidia-smi -q",),
    tables=("gpu",),
    versions_seen=("396.37", "545.23.08", "550.127.05", "565.57.01"),
)

_INT_COLS = [
    "index",
    "minor_number",
    "module_id",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "pcie_replays",
    "ecc_corrected_volatile",
    "ecc_uncorrected_volatile",
    "ecc_corrected_aggregate",
    "ecc_uncorrected_aggregate",
    "sram_uncorrected_volatile",
    "dram_uncorrected_volatile",
    "sram_uncorrected_aggregate",
    "dram_uncorrected_aggregate",
    "dram_corrected_volatile",
    "dram_corrected_aggregate",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "temp_line",
    "throttle_line",
    "pcie_line",
    "ecc_volatile_line",
    "ecc_aggregate_line",
    "remap_line",
    "retired_line",
    "persistence_line",
    "fabric_line",
    "clock_line",
    "driver_version_line",
    "cuda_version_line",
    "vbios_version_line",
    "line",
]
_FLOAT_COLS = [
    "temp_c",
    "temp_slowdown_c",
    "temp_shutdown_c",
    "temp_max_operating_c",
    "temp_tlimit_c",
    "memory_temp_c",
    "sm_clock_mhz",
    "max_sm_clock_mhz",
    "graphics_clock_mhz",
    "memory_clock_mhz",
    "power_draw_w",
    "power_limit_w",
    "memory_total_mib",
    "memory_used_mib",
    "util_gpu_pct",
]
_STR_COLS = [
    "pci",
    "name",
    "serial",
    "uuid",
    "vbios",
    "driver_version",
    "cuda_version",
    "persistence_mode",
    "mig_mode",
    "ecc_mode",
    "performance_state",
    "reset_required",
    "throttle_reasons_active",
    "retired_pages_pending",
    "fabric_state",
    "fabric_status",
]
_BOOL_COLS = ("remap_pending", "remap_failure")

SCHEMA = {
    "gpu": tuple(
        [Column(c, "int") for c in _INT_COLS]
        + [Column(c, "float") for c in _FLOAT_COLS]
        + [Column(c, "str") for c in _STR_COLS]
        + [Column(c, "bool") for c in _BOOL_COLS]
    )
}

#: (section path, key) -> (column, converter); paths are joined with '/', lower case.
_SIMPLE: dict[str, tuple[str, str]] = {
    "product name": ("name", "str"),
    "serial number": ("serial", "str"),
    "gpu uuid": ("uuid", "str"),
    "vbios version": ("vbios", "str"),
    "minor number": ("minor_number", "int"),
    "module id": ("module_id", "int"),
    "persistence mode": ("persistence_mode", "str"),
    "mig mode/current": ("mig_mode", "str"),
    "ecc mode/current": ("ecc_mode", "str"),
    "performance state": ("performance_state", "str"),
    "gpu reset status/reset required": ("reset_required", "str"),
    "temperature/gpu current temp": ("temp_c", "num"),
    "temperature/gpu slowdown temp": ("temp_slowdown_c", "num"),
    "temperature/gpu shutdown temp": ("temp_shutdown_c", "num"),
    "temperature/gpu max operating temp": ("temp_max_operating_c", "num"),
    "temperature/gpu t.limit temp": ("temp_tlimit_c", "num"),
    "temperature/memory current temp": ("memory_temp_c", "num"),
    "clocks/sm": ("sm_clock_mhz", "num"),
    "clocks/graphics": ("graphics_clock_mhz", "num"),
    "clocks/memory": ("memory_clock_mhz", "num"),
    "max clocks/sm": ("max_sm_clock_mhz", "num"),
    "pci/gpu link info/pcie generation/current": ("pcie_gen_current", "int"),
    "pci/gpu link info/pcie generation/max": ("pcie_gen_max", "int"),
    "pci/gpu link info/link width/current": ("pcie_width_current", "width"),
    "pci/gpu link info/link width/max": ("pcie_width_max", "width"),
    "pci/replays since reset": ("pcie_replays", "int"),
    "retired pages/single bit ecc": ("retired_pages_sbe", "int"),
    "retired pages/double bit ecc": ("retired_pages_dbe", "int"),
    "retired pages/pending page blacklist": ("retired_pages_pending", "str"),
    "retired pages/pending page retirement": ("retired_pages_pending", "str"),
    "remapped rows/correctable error": ("remapped_rows_correctable", "int"),
    "remapped rows/uncorrectable error": ("remapped_rows_uncorrectable", "int"),
    "remapped rows/pending": ("remap_pending", "bool"),
    "remapped rows/remapping failure occurred": ("remap_failure", "bool"),
    "power readings/power draw": ("power_draw_w", "num"),
    "gpu power readings/power draw": ("power_draw_w", "num"),
    "power readings/power limit": ("power_limit_w", "num"),
    "power readings/current power limit": ("power_limit_w", "num"),
    "gpu power readings/current power limit": ("power_limit_w", "num"),
    "fb memory usage/total": ("memory_total_mib", "num"),
    "fb memory usage/used": ("memory_used_mib", "num"),
    "utilization/gpu": ("util_gpu_pct", "num"),
    "fabric/state": ("fabric_state", "str"),
    "fabric/status": ("fabric_status", "str"),
}
#: Which evidence-line column a section (first path element) feeds.
_LINE_OF_SECTION = {
    "temperature": "temp_line",
    "clocks throttle reasons": "throttle_line",
    "clocks event reasons": "throttle_line",
    "pci": "pcie_line",
    "remapped rows": "remap_line",
    "retired pages": "retired_line",
    "fabric": "fabric_line",
    "clocks": "clock_line",
}
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")


def detect(text: str) -> int:
    """Confidence that text is ``nvidia-smi -q`` output."""
    if "NVSMI LOG" in text[:2000]:
        return 95
    if re.search(r"^GPU [0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:", text, re.M) and "Product Name" in text:
        return 85
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    header: dict[str, str] = {}
    header_lines: dict[str, int] = {}  # header key -> its line (evidence for the versions)
    gpu: dict[str, Any] | None = None
    path: list[tuple[int, str]] = []  # (indent, section name)
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).rstrip().replace("\t", "    ")
        if not line.strip() or line.startswith("====="):
            continue
        if m := _GPU_HEADER.match(line.strip()):
            gpu = _new_gpu(no, m.group(1), len(result.rows("gpu")), header, header_lines)
            result.add("gpu", gpu)
            path = []
            continue
        indent = len(line) - len(line.lstrip(" "))
        while path and path[-1][0] >= indent:
            path.pop()
        kv = _split(line)
        if gpu is None:
            if kv and kv[0] in ("Driver Version", "CUDA Version"):
                header[kv[0]] = kv[1]
                header_lines[kv[0]] = no
            continue
        if kv is None or (kv[1] == "" and ":" not in line):
            path.append((indent, line.strip().lower()))
            continue
        _apply(gpu, [p for _, p in path], kv[0].lower(), kv[1], no)
    if not result.rows("gpu"):
        if header:
            raise ParseError("nvidia-smi -q output lists no GPU block")
        raise ParseError("not nvidia-smi -q output: no 'GPU <bus id>' block and no NVSMI LOG banner")
    for row in result.rows("gpu"):
        _finish(row)
    return result


def _split(line: str) -> tuple[str, str] | None:
    if ":" not in line:
        return None
    key, _, value = line.partition(" : ") if " : " in line else line.partition(":")
    key = key.strip()
    return (key, value.strip()) if key else None


def _new_gpu(
    no: int, bus: str, index: int, header: dict[str, str], header_lines: dict[str, int]
) -> dict[str, Any]:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["gpu"]}
    row.update(
        line=no,
        index=index,
        pci=pci_address(bus),
        driver_version=header.get("Driver Version"),
        cuda_version=header.get("CUDA Version"),
        driver_version_line=header_lines.get("Driver Version"),
        cuda_version_line=header_lines.get("CUDA Version"),
        _active=[],
        _ecc={},
    )
    return row


def _apply(gpu: dict[str, Any], sections: list[str], key: str, value: str, no: int) -> None:
    top = sections[0] if sections else ""
    if top in ("clocks throttle reasons", "clocks event reasons"):
        gpu["throttle_line"] = gpu["throttle_line"] or no
        if value.lower() == "active":
            gpu["_active"].append(_title(key))
        return
    if top == "ecc errors":
        _ecc(gpu, sections[1:], key, value, no)
        return
    if top == "persistence mode" or key == "persistence mode":
        gpu["persistence_line"] = no
    line_col = _LINE_OF_SECTION.get(top)
    if line_col and gpu[line_col] is None:
        gpu[line_col] = no
    full = "/".join([*sections, key])
    target = _SIMPLE.get(full) or _SIMPLE.get("/".join([*sections[-1:], key])) or _SIMPLE.get(key)
    if target is None:
        return
    column, conv = target
    if gpu.get(column) is not None and conv != "str":
        return  # first value wins (e.g. GPU Power Readings before Module Power Readings)
    gpu[column] = _convert(value, conv)
    if column == "vbios":
        gpu["vbios_version_line"] = no


def _ecc(gpu: dict[str, Any], sections: list[str], key: str, value: str, no: int) -> None:
    """Collect ECC counters under 'ECC Errors' into a flat dict keyed by scope and kind."""
    if not sections:
        return
    scope = sections[0]  # volatile / aggregate / aggregate uncorrectable sram sources
    if scope not in ("volatile", "aggregate"):
        return
    gpu[f"ecc_{scope}_line"] = gpu[f"ecc_{scope}_line"] or no
    count = to_int(value)
    if count is None:
        return
    k = key.lower()
    if sections[1:2] == ["single bit"] and k == "total":
        gpu["_ecc"][(scope, "legacy", "corrected")] = count
    elif sections[1:2] == ["double bit"] and k == "total":
        gpu["_ecc"][(scope, "legacy", "uncorrected")] = count
    elif k.startswith(("sram", "dram")) and ("correctable" in k):
        memory = k[:4]
        kind = "uncorrected" if "uncorrectable" in k else "corrected"
        gpu["_ecc"][(scope, memory, kind)] = gpu["_ecc"].get((scope, memory, kind), 0) + count
    uncorrectable = "uncorrectable" in k or sections[1:2] == ["double bit"]
    if count > 0 and uncorrectable and not gpu.get(f"_nz_{scope}"):
        # evidence points at the first non-zero uncorrectable counter, not the section start
        gpu[f"ecc_{scope}_line"] = no
        gpu[f"_nz_{scope}"] = True


def _finish(gpu: dict[str, Any]) -> None:
    active = gpu.pop("_active")
    gpu["throttle_reasons_active"] = ", ".join(active) if gpu["throttle_line"] is not None else None
    ecc = gpu.pop("_ecc")
    gpu.pop("_nz_volatile", None)
    gpu.pop("_nz_aggregate", None)
    for scope in ("volatile", "aggregate"):
        for kind in ("corrected", "uncorrected"):
            parts = [ecc[k] for k in ecc if k[0] == scope and k[2] == kind]
            gpu[f"ecc_{kind}_{scope}"] = sum(parts) if parts else None
        for memory in ("sram", "dram"):
            gpu[f"{memory}_uncorrected_{scope}"] = ecc.get((scope, memory, "uncorrected"))
        gpu[f"dram_corrected_{scope}"] = ecc.get((scope, "dram", "corrected"))


def _convert(value: str, conv: str) -> Any:
    if conv == "str":
        return None if value.upper() in ("N/A", "[N/A]") else value.strip()
    if conv == "int":
        return to_int(value)
    if conv == "width":
        return to_int(value.rstrip("x"))
    if conv == "bool":
        v = value.strip().lower()
        return True if v in ("yes", "true", "1") else False if v in ("no", "false", "0") else None
    return leading_number(value)


def _title(key: str) -> str:
    """Restore the printed capitalisation of a throttle reason."""
    return " ".join(w.upper() if w in ("hw", "sw") else w.capitalize() for w in key.split())
