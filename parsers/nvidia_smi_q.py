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

The text is a tree of ``Key : value`` lines; the parser walks it line by line, keeps the path of
section names (by relative indentation, so any key padding works: 36 columns on 396.x, 42 on 5xx, 55 on
580, or none), and maps known paths to columns.  It reads "Clocks Throttle Reasons" and its successor
"Clocks Event Reasons", Single/Double Bit ECC (pre-Ampere) and SRAM/DRAM Correctable/Uncorrectable (with
or without the 565 Parity/SEC-DED split), section names with trailing spaces, ``-d ECC,ROW_REMAPPER``
partial displays, several GPUs, values printed as ``N/A``, ``[N/A]``, ``Unknown Error``, ``[GPU requires
reset]`` (no number, listed in ``error_values`` when they are errors).  Lossless: every key printed for a
GPU whose value is not already held verbatim in a ``str`` column is kept in ``extra`` (JSON: section path
joined with ``/`` -> value as printed; a key printed twice, as under ``Processes`` or ``MIG Devices``,
holds the list of its values), unknown sections and keys at any depth included.  A key with its own
children (``HW Slowdown``, ``Process ID``) is a section of them.  Travel noise (launcher prefixes, prompts,
``[...]`` elisions, ``<===`` annotations, CRLF) is taken off by ``parsers._text.clean_lines``.  Lost
indentation (every line flush left under the ``GPU`` header) is rebuilt from the known nesting of
nvidia-smi's sections.  Excerpts without a ``GPU <bus id>`` header (``nvidia-smi -q | grep -A6 Fabric``, a
pasted ``Retired Pages`` section) give one row per excerpt with ``pci`` null; ``--`` separators and a
repeated top-level key or section start the next row.  In a dump that has ``GPU <bus id>`` headers, a
line outside every GPU block is the dump's own (its top lines at any indentation, a vGPU host's
``vGPU Driver Capability`` section): it never makes a GPU record, and the top lines go to every GPU of
the dump.  A line under a GPU that lost its indentation (a section header pasted flush left) is read
at the depth of the GPU's own keys.  ``power_draw_w`` is the ``Power Draw`` printed, else the ``Average
Power Draw``, else the ``Instantaneous Power Draw`` (whichever of the two is not N/A).  A value that should be a number and is not, or a
line without a key that holds digits, is a ParseIssue.

Schema
------
``gpu`` (one row per ``GPU <bus id>`` block, or per headerless excerpt):

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
- ``power_requested_limit_w``, ``power_enforced_limit_w``, ``power_default_limit_w``, ``power_min_limit_w``,
  ``power_max_limit_w`` float, W — the GPU's power readings (not the module's).  ``power_limit_w`` is the
  limit as printed ("Power Limit" up to the 525 drivers, "Current Power Limit" from 530 on); the two
  layouts name the same two limits differently, and these columns name them alike: the *requested* limit
  (what ``nvidia-smi -pl`` sets: "Power Limit", later "Requested Power Limit") and the *enforced* limit (the
  one in effect, the least of every limiter, a power brake or an out-of-band cap included: "Enforced Power
  Limit", later "Current Power Limit")
- ``app_clock_graphics_mhz``, ``app_clock_memory_mhz`` float, MHz — "Applications Clocks" (what
  ``nvidia-smi -ac`` sets); ``default_app_clock_graphics_mhz``, ``default_app_clock_memory_mhz`` float, MHz —
  "Default Applications Clocks"; null where printed N/A (GeForce, drivers that dropped them)
- ``fabric_state``, ``fabric_status`` str (NVSwitch systems: Completed / Success)
- ``mig_mode_pending``, ``ecc_mode_pending`` str; ``mig_devices`` int — number of ``MIG Device`` sections
  (0 for ``MIG Devices : None``; null when the dump has no such section)
- ``virtualization_mode``, ``host_vgpu_mode`` str (``GPU Virtualization Mode``: None / Pass-Through / VGPU /
  Host VGPU); ``vgpu_license_product``, ``vgpu_license_status`` str (``vGPU Software Licensed Product``)
- ``reset_recommended`` str (``Drain and Reset Recommended``: Yes/No)
- ``recovery_action`` str — ``GPU Recovery Action`` as printed by the drivers that have it (565, 570, 580 among
  the fixtures): ``None``, ``Reset``, ``Reboot``, ``Drain P2P``, ``Drain and Reset`` (what the driver says the
  GPU needs); ``recovery_action_line`` int, its line
- ``bank_remap_max``, ``bank_remap_high``, ``bank_remap_partial``, ``bank_remap_low``, ``bank_remap_none``
  int, banks — the ``Bank Remap Availability Histogram``
- ``fabric_clique_id`` int; ``fabric_cluster_uuid``, ``fabric_health_summary``, ``fabric_bandwidth`` str
- ``timestamp`` str (dump header, as printed); ``attached_gpus`` int (dump header)
- ``error_values`` str — comma list of the distinct error values printed in place of readings
  (``Unknown Error``, ``GPU requires reset``, ``System is not in ready state``, ``GPU is lost``, ...)
- ``extra`` str — JSON object, every other key printed for the GPU (and the dump header), path -> value
- ``host`` str — launcher tag (pdsh host, srun rank, pod) of the GPU's first line, else null
- evidence lines (int): ``temp_line``, ``throttle_line``, ``pcie_line``, ``ecc_volatile_line``,
  ``ecc_aggregate_line``, ``remap_line``, ``retired_line``, ``persistence_line``, ``fabric_line``, ``clock_line``;
  ``driver_version_line``, ``cuda_version_line`` — the ``Driver Version`` / ``CUDA Version`` lines of the
  dump header; ``vbios_version_line`` — the GPU's ``VBIOS Version`` line

``gpu_attribute`` (the long table: one row per printed key, the dump's top lines included):

- ``entity`` str — the GPU's bus id as ``gpu.pci``; null for the dump's top lines (Timestamp, Driver
  Version, CUDA Version, Attached GPUs, vGPU Driver Capability) and for excerpts without a GPU header
- ``section`` str — the section path as printed, levels joined by `` / `` (``PCI / GPU Link Info /
  Link Width``, ``Applications Clocks``); '' for the GPU's own keys
- ``key``, ``value`` str — as printed; ``number`` float and ``unit`` str when the value is one number
  with an optional unit (``700.00 W`` -> 700.0, ``W``); ``line`` int

Examples
--------
>>> gpu = parse(SAMPLE).rows("gpu")[0]
>>> gpu["pci"], gpu["name"], gpu["driver_version"], gpu["ecc_uncorrected_volatile"], gpu["temp_c"]
('0000:19:00.0', 'NVIDIA H100 80GB HBM3', '545.23.08', 2, 33.0)
>>> gpu["throttle_reasons_active"], gpu["pcie_width_current"], gpu["ecc_volatile_line"]
('HW Slowdown', 16, 19)
>>> gpu["driver_version_line"], gpu["cuda_version_line"], gpu["line"]
(2, 3, 5)
>>> json.loads(gpu["extra"])["Temperature/GPU Current Temp"], json.loads(gpu["extra"])["Attached GPUs"]
('33 C', '1')
>>> [(a["section"], a["key"], a["number"]) for a in parse(SAMPLE).rows("gpu_attribute")][4:6]
[('PCI / GPU Link Info / Link Width', 'Max', 16.0), ('PCI / GPU Link Info / Link Width', 'Current', 16.0)]
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, long_columns, require_text, sample_of
from parsers._text import (
    NOT_AVAILABLE,
    Cleaned,
    LongTable,
    clean_head_text,
    clean_lines,
    keep_value,
    leading_number,
    pci_address,
    to_int,
)

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi-q",
    title="nvidia-smi -q (full GPU query)",
    commands=("nvidia-smi -q", "nvidia-smi -q -d ECC,ROW_REMAPPER,...", "nvidia-smi -q | grep -A6 Fabric"),
    tables=("gpu", "gpu_attribute"),
    versions_seen=(
        "396.37",
        "510.73.08",
        "525.105.17 (Power Readings: Power Limit, Enforced Power Limit)",
        "535.247.01",
        "545.23.08",
        "550.90.07",
        "550.127.05",
        "565.57.01",
        "535.129.03 (vGPU host: vGPU Driver Capability)",
        "570.124.06 (whole dump indented by 4)",
        "580.142 (55-column keys)",
        "595.71.05 (-d power: GPU Power Readings alone)",
    ),
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
    "recovery_action_line",
    "line",
    "mig_devices",
    "bank_remap_max",
    "bank_remap_high",
    "bank_remap_partial",
    "bank_remap_low",
    "bank_remap_none",
    "fabric_clique_id",
    "attached_gpus",
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
    "power_requested_limit_w",
    "power_enforced_limit_w",
    "power_default_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
    "app_clock_graphics_mhz",
    "app_clock_memory_mhz",
    "default_app_clock_graphics_mhz",
    "default_app_clock_memory_mhz",
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
    "mig_mode_pending",
    "ecc_mode_pending",
    "virtualization_mode",
    "host_vgpu_mode",
    "vgpu_license_product",
    "vgpu_license_status",
    "reset_recommended",
    "recovery_action",
    "fabric_cluster_uuid",
    "fabric_health_summary",
    "fabric_bandwidth",
    "timestamp",
    "error_values",
    "extra",
    "host",
]
_BOOL_COLS = ("remap_pending", "remap_failure")

SCHEMA = {
    "gpu": tuple(
        [Column(c, "int") for c in _INT_COLS]
        + [Column(c, "float") for c in _FLOAT_COLS]
        + [Column(c, "str") for c in _STR_COLS]
        + [Column(c, "bool") for c in _BOOL_COLS]
    ),
    "gpu_attribute": tuple(
        long_columns(
            "the GPU's bus id (dddd:bb:dd.f, as gpu.pci); null for the dump's top lines and excerpts"
        )
    ),
}

#: Full section path + key (lower case, joined with '/') -> (column, converter).
_COLUMNS: dict[str, tuple[str, str]] = {
    "product name": ("name", "str"),
    "serial number": ("serial", "str"),
    "gpu uuid": ("uuid", "str"),
    "vbios version": ("vbios", "str"),
    "minor number": ("minor_number", "int"),
    "module id": ("module_id", "int"),
    "platform info/module id": ("module_id", "int"),
    "persistence mode": ("persistence_mode", "str"),
    "mig mode/current": ("mig_mode", "str"),
    "mig mode/pending": ("mig_mode_pending", "str"),
    "ecc mode/current": ("ecc_mode", "str"),
    "ecc mode/pending": ("ecc_mode_pending", "str"),
    "performance state": ("performance_state", "str"),
    "gpu reset status/reset required": ("reset_required", "str"),
    "gpu reset status/drain and reset recommended": ("reset_recommended", "str"),
    "gpu recovery action": ("recovery_action", "str"),
    "gpu virtualization mode/virtualization mode": ("virtualization_mode", "str"),
    "gpu virtualization mode/host vgpu mode": ("host_vgpu_mode", "str"),
    "vgpu software licensed product/product name": ("vgpu_license_product", "str"),
    "vgpu software licensed product/license status": ("vgpu_license_status", "str"),
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
    "retired pages/pending": ("retired_pages_pending", "str"),
    "retired pages/pending page blacklist": ("retired_pages_pending", "str"),
    "retired pages/pending page retirement": ("retired_pages_pending", "str"),
    "remapped rows/correctable error": ("remapped_rows_correctable", "int"),
    "remapped rows/uncorrectable error": ("remapped_rows_uncorrectable", "int"),
    "remapped rows/pending": ("remap_pending", "bool"),
    "remapped rows/remapping failure occurred": ("remap_failure", "bool"),
    "remapped rows/bank remap availability histogram/max": ("bank_remap_max", "int"),
    "remapped rows/bank remap availability histogram/high": ("bank_remap_high", "int"),
    "remapped rows/bank remap availability histogram/partial": ("bank_remap_partial", "int"),
    "remapped rows/bank remap availability histogram/low": ("bank_remap_low", "int"),
    "remapped rows/bank remap availability histogram/none": ("bank_remap_none", "int"),
    "power readings/power draw": ("power_draw_w", "num"),
    "gpu power readings/power draw": ("power_draw_w", "num"),
    "gpu power readings/average power draw": ("power_draw_w", "num"),
    "gpu power readings/instantaneous power draw": ("power_draw_w", "num"),
    "power readings/average power draw": ("power_draw_w", "num"),
    "power readings/instantaneous power draw": ("power_draw_w", "num"),
    "power readings/power limit": ("power_limit_w", "num"),
    "power readings/current power limit": ("power_limit_w", "num"),
    "gpu power readings/current power limit": ("power_limit_w", "num"),
    "power readings/requested power limit": ("power_requested_limit_w", "num"),
    "gpu power readings/requested power limit": ("power_requested_limit_w", "num"),
    "power readings/enforced power limit": ("power_enforced_limit_w", "num"),
    "power readings/default power limit": ("power_default_limit_w", "num"),
    "gpu power readings/default power limit": ("power_default_limit_w", "num"),
    "power readings/min power limit": ("power_min_limit_w", "num"),
    "gpu power readings/min power limit": ("power_min_limit_w", "num"),
    "power readings/max power limit": ("power_max_limit_w", "num"),
    "gpu power readings/max power limit": ("power_max_limit_w", "num"),
    "applications clocks/graphics": ("app_clock_graphics_mhz", "num"),
    "applications clocks/memory": ("app_clock_memory_mhz", "num"),
    "default applications clocks/graphics": ("default_app_clock_graphics_mhz", "num"),
    "default applications clocks/memory": ("default_app_clock_memory_mhz", "num"),
    "fb memory usage/total": ("memory_total_mib", "num"),
    "fb memory usage/used": ("memory_used_mib", "num"),
    "utilization/gpu": ("util_gpu_pct", "num"),
    "fabric/state": ("fabric_state", "str"),
    "fabric/status": ("fabric_status", "str"),
    "fabric/cliqueid": ("fabric_clique_id", "int"),
    "fabric/clusteruuid": ("fabric_cluster_uuid", "str"),
    "fabric/health/summary": ("fabric_health_summary", "str"),
    "fabric/health/bandwidth": ("fabric_bandwidth", "str"),
}
#: Paths whose value also fills a second column: the limit each power-readings layout prints as its
#: plain "Power Limit" / "Current Power Limit" is the requested / the enforced limit of the other layout.
_ALSO = {
    "power readings/power limit": "power_requested_limit_w",
    "power readings/current power limit": "power_enforced_limit_w",
    "gpu power readings/current power limit": "power_enforced_limit_w",
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
_THROTTLE = ("clocks throttle reasons", "clocks event reasons")
#: Dump header keys (before the first GPU block); Driver/CUDA Version also have columns.
_HEADER_KEYS = frozenset({"timestamp", "driver version", "cuda version", "attached gpus", "nvml version"})
#: Lost indentation: the section each nested section belongs to (a section not listed is top level).
_PARENT = {
    "gpu link info": ("pci",),
    "pcie generation": ("gpu link info",),
    "link width": ("gpu link info",),
    "bridge chip": ("pci",),
    "volatile": ("ecc errors",),
    "aggregate": ("ecc errors",),
    "aggregate uncorrectable sram sources": ("ecc errors",),
    "single bit": ("volatile", "aggregate"),
    "double bit": ("volatile", "aggregate"),
    "bank remap availability histogram": ("remapped rows",),
    "health": ("fabric",),
    "mig device": ("mig devices",),
    "device attributes": ("mig device",),
    "shared": ("device attributes",),
}
#: Lost indentation: keys printed after a nested section that belong to its parent (or the GPU).
_TOP_KEYS = frozenset(
    [
        "product name",
        "product brand",
        "product architecture",
        "display mode",
        "display attached",
        "display active",
        "persistence mode",
        "addressing mode",
        "accounting mode",
        "accounting mode buffer size",
        "serial number",
        "gpu uuid",
        "gpu pdi",
        "minor number",
        "vbios version",
        "multigpu board",
        "board id",
        "board part number",
        "gpu part number",
        "fru part number",
        "module id",
        "gsp firmware version",
        "gpu c2c mode",
        "gpu recovery action",
        "fan speed",
        "performance state",
        "sparse operation mode",
        "compute mode",
        "processes",
        "power smoothing",
    ]
)
_PCI_TAIL = frozenset(
    [
        "replays since reset",
        "replay number rollovers",
        "tx throughput",
        "rx throughput",
        "atomic caps inbound",
        "atomic caps outbound",
    ]
)
#: Values nvidia-smi prints in place of a reading when the GPU or driver is in trouble.
_ERROR_VALUES = {
    "unknown error": "Unknown Error",
    "gpu requires reset": "GPU requires reset",
    "system is not in ready state": "System is not in ready state",
    "gpu is lost": "GPU is lost",
    "insufficient permissions": "Insufficient Permissions",
    "err!": "ERR!",
}
_NO_NUMBER = NOT_AVAILABLE | {
    "not supported",
    "[not supported]",
    "requested functionality has been deprecated",
}
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
#: "Key<2+ spaces>: value" — the padded key of nvidia-smi -q (any width).
_PADDED = re.compile(r"^\s*[A-Za-z][\w .()/+-]*?\s{2,}: ?\S")
_SECTIONS = (
    "fabric|retired pages|remapped rows|ecc errors|ecc mode|temperature|clocks event reasons|"
    "clocks throttle reasons|gpu reset status|vgpu software licensed product|mig mode|mig devices|"
    "gpu virtualization mode|fb memory usage|gpu power readings|power readings|bank remap availability "
    "histogram|processes|pci|clocks|max clocks|utilization"
)
_SECTION_LINE = re.compile(rf"^\s*(?:{_SECTIONS})\s*$", re.I | re.M)
#: An srun/pdsh tag on an empty line ("0:" once the trailing space is gone) that clean_lines leaves.
_BARE_TAG = re.compile(r"^\d{1,5}:$")
_COMMAND = re.compile(r"^\s*(?:[#$]\s*)?(?:sudo\s+)?nvidia-smi\b|^\s*[#$]\s")


def detect(text: str) -> int:
    """Confidence that text is ``nvidia-smi -q`` output, whole or an excerpt (prefixes taken off first)."""
    if "NVSMI LOG" in text[:2000]:
        return 95
    text = clean_head_text(text)
    padded = sum(1 for line in text.splitlines()[:400] if _PADDED.match(line))
    if re.search(r"^\s*GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$", text, re.M) and (
        "Product Name" in text or padded >= 2
    ):
        return 85
    if padded >= 2 and _SECTION_LINE.search(text):
        return 70  # a grep'd or pasted section: "    Fabric" / "        State   : Completed"
    if re.search(r"^\s*(?:GPU UUID|Product Name|Driver Version)\s{2,}: \S", text, re.M):
        return 60
    return 0


class _Gpu:
    """One GPU block being read: its row, the section stack and what has been printed under it."""

    def __init__(self, row: dict[str, Any], base: int, headerless: bool, attributes: LongTable) -> None:
        self.row = row
        self.attributes = attributes  # the parse's gpu_attribute table
        self.base = base  # indent of the "GPU <bus id>" header (-1 for a headerless excerpt)
        self.headerless = headerless
        self.flat: bool | None = None  # lost indentation (decided on the first line under the header)
        self.stack: list[list[Any]] = []  # [indent, printed name, has child, line no, raw line]
        self.pending: tuple[int, str] | None = None  # last key, a section if the next line is deeper
        self.extra: dict[str, Any] = {}
        self.verbatim: set[str] = set()  # paths whose value a str column holds as printed
        self.errors: list[str] = []
        self.active: list[str] = []
        self.ecc: dict[tuple[str, str, str], int] = {}
        self.nonzero: set[str] = set()
        self.top_seen: set[str] = set()
        self.names: tuple[str, ...] | None = None  # the names of ``stack``, kept while it is unchanged
        self.child: int | None = None  # indent of the GPU's own keys (the first line under the header)


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    cleaned = clean_lines(text)
    dump = _Dump(cleaned, text.splitlines())
    for no, line, host in cleaned.numbered():
        dump.line(no, line, host)
    return dump.finish()


class _Dump:
    """One capture of ``nvidia-smi -q`` being read: one dump or several concatenated, whole or excerpts."""

    def __init__(self, cleaned: Cleaned, raw_lines: list[str]) -> None:
        self.result = ParseResult(tables={"gpu": []})
        self.result.column_table("gpu_attribute", LongTable())
        self.raw_lines = raw_lines
        self.tagged = cleaned.hosts is not None
        # A dump with a "GPU <bus id>" header: a line outside every GPU block is the dump's own (its top
        # lines, a "vGPU Driver Capability" section), never a GPU of its own.
        self.has_header = any(
            line.lstrip()[:4] == "GPU " and _GPU_HEADER.match(line.strip()) for line in cleaned.lines
        )
        self.header: dict[str, str] = {}
        self.header_lines: dict[str, int] = {}
        self.gpus: list[_Gpu] = []
        self.gpu: _Gpu | None = None
        self.first_seen = ""
        self.dump_section: tuple[int, str] | None = None  # a section of the dump's top lines, its indent

    def line(self, no: int, line: str, host: str | None) -> None:
        if "\t" in line:
            line = line.replace("\t", "    ")
        stripped = line.strip()
        if stripped.startswith("=====") and "NVSMI LOG" in stripped:  # the banner: a new dump begins
            self._new_dump()
            return
        if (
            not stripped
            or ((stripped[0] in "#$" or "nvidia-smi" in stripped) and _COMMAND.match(line))
            or (self.tagged and _BARE_TAG.match(stripped))
        ):
            return
        self.first_seen = self.first_seen or stripped
        gpu = self.gpu
        if stripped == "--":  # grep -A/-C group separator
            if gpu is not None:
                _close(gpu, self.result, self.raw_lines)
                if gpu.headerless:
                    self.gpu = None
            return
        if stripped.startswith("GPU ") and (m := _GPU_HEADER.match(stripped)):
            if gpu is not None:
                _close(gpu, self.result, self.raw_lines)
            row = _new_row(no, len(self.gpus), self.header, self.header_lines, host, pci_address(m.group(1)))
            indent = len(line) - len(line.lstrip(" "))
            self._open(_Gpu(row, indent, headerless=False, attributes=_attributes(self.result)))
            return
        indent = len(line) - len(line.lstrip(" "))
        kv = _split(stripped)
        low = (stripped if kv is None else kv[0]).rstrip().lower()  # the key or section, lower case
        if gpu is not None and kv and low in _HEADER_KEYS and (gpu.flat or indent <= gpu.base):
            self._new_dump()  # the header of a further dump (concatenated nodes)
        if self.gpu is None and not self._outside(no, line, stripped, indent, kv, host):
            return
        self._in_gpu(no, indent, stripped, kv, host, low)

    def _new_dump(self) -> None:
        if self.gpu is not None:
            _close(self.gpu, self.result, self.raw_lines)
        self.gpu, self.header, self.header_lines, self.dump_section = None, {}, {}, None

    def _open(self, gpu: _Gpu) -> None:
        self.gpu = gpu
        self.gpus.append(gpu)
        self.result.add("gpu", gpu.row)

    def _outside(
        self, no: int, line: str, stripped: str, indent: int, kv: tuple[str, str] | None, host: str | None
    ) -> bool:
        """A line outside every GPU block: the dump's top lines and sections (False: taken), a line of a
        headerless excerpt (True: a GPU of its own opens), else noise."""
        attributes = _attributes(self.result)
        if kv and (kv[0].lower() in _HEADER_KEYS or self.has_header):
            if self.dump_section is not None and indent <= self.dump_section[0]:
                self.dump_section = None
            section = self.dump_section[1] if self.dump_section else ""
            name = f"{section}/{kv[0]}" if section else kv[0]
            self.header[name] = kv[1]
            self.header_lines[name] = no
            attributes.add(None, section, kv[0], kv[1], no)
            return False
        if self.has_header:  # a section of the dump's top lines ("vGPU Driver Capability")
            self.dump_section = (indent, stripped)
            attributes.add(None, "", stripped, "", no)
            return False
        if not (_PADDED.match(line) or _SECTION_LINE.match(line) or (kv and kv[0].lower() in _COLUMNS)):
            if re.search(r"\d", stripped):
                self.result.issue(no, self.raw_lines[no - 1], "not an nvidia-smi -q line (no GPU block open)")
            return False
        row = _new_row(no, len(self.gpus), self.header, self.header_lines, host, None)
        self._open(_Gpu(row, -1, headerless=True, attributes=_attributes(self.result)))
        return True

    def _in_gpu(
        self, no: int, indent: int, stripped: str, kv: tuple[str, str] | None, host: str | None, low: str
    ) -> None:
        gpu = self.gpu
        assert gpu is not None
        if gpu.flat is None and not gpu.headerless:
            gpu.flat = indent <= gpu.base
            gpu.child = indent
        if gpu.child is not None and not gpu.flat and indent < gpu.child:
            indent = gpu.child  # a line that lost its indentation: at least a section of the GPU
        self.gpu = _line(
            gpu, self.result, self.raw_lines, no, indent, stripped, kv, host, self.gpus, self.header,
            self.header_lines, low,
        )  # fmt: skip

    def finish(self) -> ParseResult:
        if self.gpu is not None:
            _close(self.gpu, self.result, self.raw_lines)
        if not self.gpus:
            if self.header:
                raise ParseError(
                    f"nvidia-smi -q output lists no GPU block: header keys {sorted(self.header)} but no"
                    " 'GPU <bus id>'"
                )
            raise ParseError(
                "not nvidia-smi -q output: expected an NVSMI LOG banner, a 'GPU <bus id>' block or padded"
                f" 'Key   : value' lines under a section; first line seen: {self.first_seen[:120]!r}"
            )
        for g in self.gpus:
            _finish(g)
        _attributes(self.result).sort_by("line")  # a key-less line is added when closed
        return self.result


def _line(
    gpu: _Gpu,
    result: ParseResult,
    raw_lines: list[str],
    no: int,
    indent: int,
    stripped: str,
    kv: tuple[str, str] | None,
    host: str | None,
    gpus: list[_Gpu],
    header: dict[str, str],
    header_lines: dict[str, int],
    low: str,
) -> _Gpu:
    """Read one line inside a GPU block (or a headerless excerpt); returns the GPU it went to.  ``low``:
    the key (or section) in lower case."""
    is_section = kv is None
    name = (stripped if kv is None else kv[0]).rstrip()
    if gpu.flat:
        _flat_path(gpu, result, raw_lines, low, is_section)
    else:
        while gpu.stack and gpu.stack[-1][0] >= indent:
            _pop(gpu, result, raw_lines)
        if (
            gpu.pending is not None
            and indent > gpu.pending[0]
            and (not gpu.stack or gpu.stack[-1][0] < indent)
        ):
            gpu.stack.append([gpu.pending[0], gpu.pending[1], True, no, ""])
            gpu.names = None
    gpu.pending = None
    if not gpu.stack and gpu.headerless:
        if low in gpu.top_seen:  # the same top-level key again: the next GPU of a grep'd excerpt
            _close(gpu, result, raw_lines)
            row = _new_row(no, len(gpus), header, header_lines, host, None)
            gpu = _Gpu(row, -1, headerless=True, attributes=gpu.attributes)
            gpus.append(gpu)
            result.add("gpu", gpu.row)
        gpu.top_seen.add(low)
    if gpu.stack:
        gpu.stack[-1][2] = True
    if kv is None:
        if low == "mig device" and gpu.stack and gpu.stack[-1][1].lower() == "mig devices":
            gpu.row["mig_devices"] = (gpu.row["mig_devices"] or 0) + 1
        gpu.stack.append([indent, name, False, no, raw_lines[no - 1]])
        gpu.names = None
        return gpu
    key, value = kv
    if gpu.names is None:  # the section names change only when the stack does
        gpu.names = tuple(s[1] for s in gpu.stack)
    _apply(gpu, result, gpu.names, key, low, value, no, raw_lines[no - 1])
    gpu.pending = (indent, key)
    return gpu


def _flat_path(gpu: _Gpu, result: ParseResult, raw_lines: list[str], low: str, is_section: bool) -> None:
    """Lost indentation: put the line under the section nvidia-smi nests it in."""
    if is_section:
        parents = _PARENT.get(low)
        names = [s[1].lower() for s in gpu.stack]
        keep = max((names.index(p) + 1 for p in parents or () if p in names), default=0)
        while len(gpu.stack) > keep:
            _pop(gpu, result, raw_lines)
        for s in gpu.stack:
            s[0] = -1  # flat: nothing is popped by indentation
    elif low in _TOP_KEYS and not (
        low == "module id" and gpu.stack and gpu.stack[-1][1].lower() == "platform info"
    ):
        while gpu.stack:
            _pop(gpu, result, raw_lines)
    elif low in _PCI_TAIL:
        while gpu.stack and gpu.stack[-1][1].lower() != "pci":
            _pop(gpu, result, raw_lines)


def _pop(gpu: _Gpu, result: ParseResult, raw_lines: list[str]) -> None:
    indent, name, has_child, no, raw = gpu.stack.pop()
    gpu.names = None
    if not has_child and raw:  # a line without a key and nothing under it: kept, loud if it holds digits
        path = "/".join([s[1] for s in gpu.stack] + [name])
        _keep(gpu.extra, path, "")
        sections = tuple(s[1] for s in gpu.stack)
        _attributes(result).add(gpu.row["pci"], _section_path(sections), name, "", no)
        if re.search(r"\d", name):
            result.issue(no, raw, "a line without a key (value or cut line?)")


def _close(gpu: _Gpu, result: ParseResult, raw_lines: list[str]) -> None:
    while gpu.stack:
        _pop(gpu, result, raw_lines)
    gpu.pending = None


@functools.lru_cache(maxsize=1024)
def _section_path(sections: tuple[str, ...]) -> str:
    """The section path of the long table: the sections as printed, joined by `` / ``."""
    return " / ".join(s.strip() for s in sections)


def _attributes(result: ParseResult) -> LongTable:
    table = result.columns["gpu_attribute"]
    assert isinstance(table, LongTable)
    return table


def _split(line: str) -> tuple[str, str] | None:
    if ":" not in line:
        return None
    key, _, value = line.partition(" : ") if " : " in line else line.partition(":")
    key = key.strip()
    return (key, value.strip()) if key else None


def _new_row(
    no: int,
    index: int,
    header: dict[str, str],
    header_lines: dict[str, int],
    host: str | None,
    pci: str | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {c.name: None for c in SCHEMA["gpu"]}
    row.update(
        line=no,
        index=index,
        pci=pci,
        host=host,
        driver_version=header.get("Driver Version"),
        cuda_version=header.get("CUDA Version"),
        timestamp=header.get("Timestamp"),
        attached_gpus=to_int(header.get("Attached GPUs")),
        driver_version_line=header_lines.get("Driver Version"),
        cuda_version_line=header_lines.get("CUDA Version"),
        _header={k: v for k, v in header.items() if k not in ("Driver Version", "CUDA Version", "Timestamp")},
    )
    return row


@functools.lru_cache(maxsize=4096)
def _section_keys(sections: tuple[str, ...]) -> tuple[str, tuple[str, ...], str]:
    """(path prefix as printed, the sections in lower case, lower-case path prefix) of a section stack:
    the same few stacks come back on every GPU, so each is worked out once."""
    low = tuple(s.lower() for s in sections)
    return "".join(f"{s}/" for s in sections), low, "".join(f"{s}/" for s in low)


def _apply(
    gpu: _Gpu,
    result: ParseResult,
    sections: tuple[str, ...],
    key: str,
    low_key: str,
    value: str,
    no: int,
    raw: str,
) -> None:
    row = gpu.row
    prefix, low_sections, low_prefix = _section_keys(sections)
    path = prefix + key
    top = low_sections[0] if low_sections else ""
    error = _ERROR_VALUES.get(value.strip("[]").lower())
    if error and error not in gpu.errors:
        gpu.errors.append(error)
    if top in _THROTTLE:
        row["throttle_line"] = row["throttle_line"] or no
        if value.lower() == "active":
            gpu.active.append(key)  # as printed: 'HW Slowdown', 'SW Power Cap'
    elif top == "ecc errors":
        _ecc(gpu, list(low_sections[1:]), key, value, no)
    if low_key == "persistence mode" and not sections:
        row["persistence_line"] = no
    line_col = _LINE_OF_SECTION.get(top)
    if line_col and row[line_col] is None:
        row[line_col] = no
    target = _COLUMNS.get(low_prefix + low_key)
    if target is not None:
        column, conv = target
        if row.get(column) is None or conv == "str":  # first number wins (GPU before Module Power Readings)
            converted = _convert(value, conv)
            if (
                converted is None
                and conv != "str"
                and value.strip("[]").lower() not in _NO_NUMBER
                and not error
            ):
                result.issue(
                    no, raw, f"{key}: expected {'Yes/No' if conv == 'bool' else 'a number'}, got {value!r}"
                )
            row[column] = converted
            if (also := _ALSO.get(low_prefix + low_key)) and row[also] is None:
                row[also] = converted
            if conv == "str" and converted == value:
                gpu.verbatim.add(path)
        if column == "vbios":
            row["vbios_version_line"] = no
        elif column == "recovery_action":
            row["recovery_action_line"] = no
    if path not in gpu.verbatim:
        keep_value(gpu.extra, path, value)
    gpu.attributes.add(row["pci"], _section_path(sections), key, value, no)


def _keep(extra: dict[str, Any], path: str, value: str) -> None:
    """Record a printed key; a path printed again (processes, MIG devices) holds the list of its values."""
    keep_value(extra, path, value)


def _ecc(gpu: _Gpu, sections: list[str], key: str, value: str, no: int) -> None:
    """Collect ECC counters under 'ECC Errors' into a flat dict keyed by scope and kind."""
    if not sections:
        return
    scope = sections[0]  # volatile / aggregate / aggregate uncorrectable sram sources
    if scope not in ("volatile", "aggregate"):
        return
    row = gpu.row
    row[f"ecc_{scope}_line"] = row[f"ecc_{scope}_line"] or no
    count = to_int(value)
    if count is None:
        return
    k = key.lower()
    if sections[1:2] == ["single bit"] and k == "total":
        gpu.ecc[(scope, "legacy", "corrected")] = count
    elif sections[1:2] == ["double bit"] and k == "total":
        gpu.ecc[(scope, "legacy", "uncorrected")] = count
    elif k.startswith(("sram", "dram")) and ("correctable" in k):
        memory = k[:4]
        kind = "uncorrected" if "uncorrectable" in k else "corrected"
        gpu.ecc[(scope, memory, kind)] = gpu.ecc.get((scope, memory, kind), 0) + count
    uncorrectable = "uncorrectable" in k or sections[1:2] == ["double bit"]
    if count > 0 and uncorrectable and scope not in gpu.nonzero:
        # evidence points at the first non-zero uncorrectable counter, not the section start
        row[f"ecc_{scope}_line"] = no
        gpu.nonzero.add(scope)


def _finish(gpu: _Gpu) -> None:
    row = gpu.row
    row["throttle_reasons_active"] = ", ".join(gpu.active) if row["throttle_line"] is not None else None
    ecc = gpu.ecc
    for scope in ("volatile", "aggregate"):
        for kind in ("corrected", "uncorrected"):
            parts = [ecc[k] for k in ecc if k[0] == scope and k[2] == kind]
            row[f"ecc_{kind}_{scope}"] = sum(parts) if parts else None
        for memory in ("sram", "dram"):
            row[f"{memory}_uncorrected_{scope}"] = ecc.get((scope, memory, "uncorrected"))
        row[f"dram_corrected_{scope}"] = ecc.get((scope, "dram", "corrected"))
    if row["mig_devices"] is None and "MIG Devices" in gpu.extra:
        row["mig_devices"] = 0  # "MIG Devices : None"
    extra = {**row.pop("_header"), **gpu.extra}
    row["extra"] = json.dumps(extra, ensure_ascii=False) if extra else None
    row["error_values"] = ", ".join(gpu.errors) or None


def _convert(value: str, conv: str) -> Any:
    if conv == "str":
        return None if value.upper() in ("N/A", "[N/A]", "") else value.strip()
    if value.strip("[]").lower() in _NO_NUMBER or value.strip("[]").lower() in _ERROR_VALUES:
        return None
    if conv == "int":
        return to_int(value.split()[0]) if value.split() else None  # "639 bank(s)"
    if conv == "width":
        return to_int(value.rstrip("x"))
    if conv == "bool":
        v = value.strip().lower()
        return True if v in ("yes", "true", "1") else False if v in ("no", "false", "0") else None
    return leading_number(value)
