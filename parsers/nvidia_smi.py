"""The default ``nvidia-smi`` table: banner, one block per GPU, the "MIG devices" and "Processes" tables.

Command the collector runs::

    nvidia-smi

Sample (lines of tests/fixtures/nvidia-smi/gpud-525-err-fan.txt)::

    | NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0     |
    |===============================+======================+======================|
    |   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0 Off |                    0 |
    |ERR!   38C    P5    49W / 450W |   2021MiB / 23028MiB |      0%   E. Process |
    |                               |                      |                  N/A |

Every layout from the 3xx drivers on is read the same way: two-row blocks (no "MIG M." row, before
450), three-row blocks, 79 / 89 / 91 columns, ``|---|`` or ``+---+`` separators, banners with
"Driver Version" or "KMD Version" / "CUDA UMD Version" (R610), or no CUDA version (<410).  Each block
row is split on ``|`` and its cells are matched to the header cells above the ``|===`` line by
position, so cell widths do not matter and a cell under a header the parser does not know is still
kept (in ``extra``, under its header label).  Without a header (a grep'd excerpt, a table pasted
without its top) the standard header is assumed.  Hyper-V / Azure PCI domains (``00000001:00:00.0``,
``3E3F8E05:00:00.0``) are kept whole.  "ERR!" in a cell nulls that value and names the cell in
``errors``; "Disabled*" (a MIG change pending a reset) gives ``mig_mode`` Disabled and ``mig_pending``.
The "MIG devices" table gives ``smi_mig`` rows, the "Processes" table ``smi_process`` rows (with or
without the GI/CI columns).  Travel noise is taken off by ``parsers._text.clean_lines``; lost
indentation does not matter.  A line "Unable to determine the device handle for GPU ..." is a
ParseIssue (that GPU is missing); so is every table row that cannot be read (a mangled block, a
process row that is not one).  No banner and no GPU row at all is a ParseError.

Schema
------
``smi_summary`` (one row per banner):

- ``line`` int — line of the banner
- ``smi_version``, ``driver_version`` str (R610's "KMD Version"); ``cuda_version`` str — "CUDA Version"
  (R610: "CUDA UMD Version"), null on drivers that do not print it
- ``timestamp`` str — the date line printed above the banner, as printed; null when absent
- ``extra`` str — JSON object of the banner's ``Key: value`` pairs as printed

``smi_gpu`` (one row per GPU block):

- ``line`` int — first line of the block
- ``index`` int; ``name`` str — as printed, possibly truncated ("NVIDIA GeForce ...")
- ``pci`` str — Bus-Id normalised to ``dddd:bb:dd.f`` (Hyper-V domains kept: ``0001:00:00.0``)
- ``bus_id`` str — Bus-Id as printed (``00000001:00:00.0``)
- ``persistence_mode`` str — On / Off (null on Windows, whose cell is TCC/WDDM: see ``extra``)
- ``disp_a`` str — "Disp.A" (display active) as printed: On / Off / N/A
- ``fan_pct`` float — null for N/A (passively cooled) or ERR!
- ``temp_c`` float; ``perf_state`` str (P0..P12)
- ``power_draw_w``, ``power_cap_w`` float — null for N/A; ``power_line`` int — the block's row with
  ``Pwr:Usage/Cap`` (the evidence of the cap)
- ``memory_used_mib``, ``memory_total_mib`` int — null for "Not Supported" (GB10 unified memory)
- ``util_gpu_pct`` float — null for N/A (MIG enabled); ``compute_mode`` str (Default, E. Process, Prohibited)
- ``mig_mode`` str — Enabled / Disabled / N/A, without the pending mark (null when the block has no MIG row)
- ``mig_pending`` bool — the MIG cell ended in ``*`` (a mode change waits for a GPU reset)
- ``ecc_uncorrected`` int — "Volatile Uncorr. ECC"; null for N/A, Off, On (MIG mode) or ERR!
- ``errors`` str — comma list of cells that showed "ERR!" (fan, temp, power, ...), null when none
- ``extra`` str — JSON object of every cell as printed, under its header label ("Fan", "Temp",
  "Pwr:Usage/Cap", "Bus-Id", "Volatile Uncorr. ECC", "MIG M.", "TCC/WDDM", any label not known here)

``smi_mig`` (one row per MIG device of the "MIG devices" table):

- ``line`` int; ``gpu``, ``gi_id``, ``ci_id``, ``mig_dev`` int
- ``memory_used_mib``, ``memory_total_mib``, ``bar1_used_mib``, ``bar1_total_mib`` int
- ``sm`` int — SM count; ``ecc_uncorrected`` int — "Vol. Unc. ECC", null for N/A
- ``ce``, ``enc``, ``dec``, ``ofa``, ``jpg`` int — shared engines
- ``extra`` str — JSON object of every cell as printed, under its header label

``smi_process`` (one row per process row):

- ``line`` int; ``gpu`` int; ``gi_id``, ``ci_id`` str — as printed (N/A outside MIG), null on old layouts
- ``pid`` int; ``type`` str (C, G, C+G, M); ``process_name`` str — as printed, possibly cut ("...-token=")
- ``gpu_memory_mib`` int — null for N/A; ``gpu_memory`` str — as printed (``74226MiB``, ``N/A``)

Examples
--------
>>> r = parse(SAMPLE)
>>> r.rows("smi_summary")[0]["driver_version"], r.rows("smi_summary")[0]["cuda_version"]
('525.125.06', '12.0')
>>> g = r.rows("smi_gpu")[0]
>>> g["pci"], g["fan_pct"], g["temp_c"], g["power_cap_w"], g["compute_mode"], g["errors"]
('0000:01:00.0', None, 38.0, 450.0, 'E. Process', 'fan')
>>> json.loads(g["extra"])["Pwr:Usage/Cap"]
'49W / 450W'
"""

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines, leading_number, pci_address, percent, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi",
    title="nvidia-smi default table",
    commands=("nvidia-smi",),
    tables=("smi_summary", "smi_gpu", "smi_mig", "smi_process"),
    versions_seen=(
        "390-440 (2-row blocks, 79 cols)",
        "450-525 (79 cols, MIG M. row)",
        "535/545 (89 cols)",
        "550-590 (91 cols)",
        "610 (KMD Version banner)",
    ),
)

_GPU_COLUMNS = (
    ("line", "int"), ("index", "int"), ("name", "str"), ("pci", "str"), ("bus_id", "str"),
    ("persistence_mode", "str"), ("disp_a", "str"), ("fan_pct", "float"), ("temp_c", "float"),
    ("perf_state", "str"), ("power_draw_w", "float"), ("power_cap_w", "float"), ("power_line", "int"),
    ("memory_used_mib", "int"), ("memory_total_mib", "int"), ("util_gpu_pct", "float"),
    ("compute_mode", "str"), ("mig_mode", "str"), ("mig_pending", "bool"), ("ecc_uncorrected", "int"),
    ("errors", "str"), ("extra", "str"),
)  # fmt: skip
_MIG_COLUMNS = (
    ("line", "int"), ("gpu", "int"), ("gi_id", "int"), ("ci_id", "int"), ("mig_dev", "int"),
    ("memory_used_mib", "int"), ("memory_total_mib", "int"), ("bar1_used_mib", "int"),
    ("bar1_total_mib", "int"), ("sm", "int"), ("ecc_uncorrected", "int"), ("ce", "int"), ("enc", "int"),
    ("dec", "int"), ("ofa", "int"), ("jpg", "int"), ("extra", "str"),
)  # fmt: skip
_PROCESS_COLUMNS = (
    ("line", "int"), ("gpu", "int"), ("gi_id", "str"), ("ci_id", "str"), ("pid", "int"), ("type", "str"),
    ("process_name", "str"), ("gpu_memory_mib", "int"), ("gpu_memory", "str"),
)  # fmt: skip
SCHEMA = {
    "smi_summary": (
        Column("line", "int", "line of the banner"),
        Column("driver_version", "str"),
        Column("cuda_version", "str", "CUDA version the driver supports"),
        Column("smi_version", "str"),
        Column("timestamp", "str", "date line above the banner, as printed"),
        Column("extra", "str", "JSON object of the banner's Key: value pairs as printed"),
    ),
    "smi_gpu": tuple(Column(name, kind) for name, kind in _GPU_COLUMNS),
    "smi_mig": tuple(Column(name, kind) for name, kind in _MIG_COLUMNS),
    "smi_process": tuple(Column(name, kind) for name, kind in _PROCESS_COLUMNS),
}

_BANNER = re.compile(r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s+(?P<drv>\S+)")
_BANNER_PAIR = re.compile(r"([A-Z][\w-]*(?: [A-Za-z][\w-]*)*):\s+(\S+)")
_DATE = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$")
_LOST = re.compile(r"Unable to determine the device handle for GPU|GPU is lost", re.IGNORECASE)
_FAILED = re.compile(
    r"NVIDIA-SMI has failed|couldn't communicate with the NVIDIA driver|No devices were found"
)
_GPU_ROW = re.compile(r"^\|\s*\d+\s+\S.*\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d")
_FIRST = re.compile(r"^(?P<index>\d+)\s+(?P<rest>\S.*?)$")
_STATE = re.compile(r"^(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)$")
_PAIR = re.compile(r"^(\S+)\s*/\s*(\S+)$")
_PROC_NEW = re.compile(
    r"^(?P<gpu>\d+)\s+(?P<gi>\S+)\s+(?P<ci>\S+)\s+(?P<pid>\d+)\s+(?P<type>[A-Z+]{1,4})\s+"
    r"(?P<name>\S.*?)\s+(?P<mem>\d+MiB|N/A)$"
)
_PROC_OLD = re.compile(
    r"^(?P<gpu>\d+)\s+(?P<pid>\d+)\s+(?P<type>[A-Z+]{1,4})\s+(?P<name>\S.*?)\s+(?P<mem>\d+MiB|N/A)$"
)
#: The header of the GPU table when none was printed (or kept): rows of cells of labels.
_DEFAULT_HEADER = [
    ["GPU Name Persistence-M", "Bus-Id Disp.A", "Volatile Uncorr. ECC"],
    ["Fan Temp Perf Pwr:Usage/Cap", "Memory-Usage", "GPU-Util Compute M."],
    ["", "", "MIG M."],
]
_MODES = ("On", "Off", "N/A", "ERR!", "TCC", "WDDM", "MCDM")


def detect(text: str) -> int:
    """Confidence that text is the default nvidia-smi table (a banner, its header, or GPU rows)."""
    head = text[:65536]
    if _BANNER.search(head):
        return 90
    if "Persistence-M" in head and "Bus-Id" in head:
        return 80
    lines = "\n".join(line.strip() for line in clean_lines(head).lines)
    if re.search(_GPU_ROW.pattern, lines, re.MULTILINE) and "MiB /" in lines:
        return 75
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult()
    table = _Table(result)
    previous = ""
    for i, raw_line in enumerate(clean_lines(text).lines):
        no, line = i + 1, raw_line.strip()
        if m := _BANNER.search(line):
            table.end()
            result.add("smi_summary", _summary(no, line, m, previous))
        elif not line:
            table.end()
        elif line.startswith("|") or line.startswith("+-"):
            table.feed(no, raw_line, line)
        else:
            table.end()
            if _LOST.search(line):  # printed above the table for a GPU that dropped out
                result.issue(no, raw_line, "nvidia-smi could not reach a GPU")
        if line and not set(line) <= set("+-="):
            previous = line
    table.end()
    if not result.rows("smi_summary") and not result.rows("smi_gpu"):
        if m := _FAILED.search(text):
            raise CollectorError(text[m.start() :].splitlines()[0][:300])
        seen = next((line.strip() for line in text.splitlines() if line.strip()), "")[:80]
        raise ParseError(
            f"expected an nvidia-smi banner or GPU table rows ('|   0  NAME ... |'), saw {seen!r}"
        )
    for name in SCHEMA:
        result.tables.setdefault(name, [])
    return result


def _summary(no: int, line: str, m: re.Match[str], previous: str) -> dict[str, Any]:
    pairs = {k: v for k, v in _BANNER_PAIR.findall(line.strip("| "))}
    cuda = pairs.get("CUDA Version") or pairs.get("CUDA UMD Version")
    return {
        "line": no, "driver_version": m["drv"], "cuda_version": cuda, "smi_version": m["smi"],
        "timestamp": previous if _DATE.match(previous) else None, "extra": json.dumps(pairs),
    }  # fmt: skip


class _Table:
    """The table the lines belong to: its header rows (cells of labels) and the block being read."""

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.kind: str | None = None  # "gpu", "mig", "proc" once past a '|===' line
        self.header: list[list[str]] = []
        self.block: list[tuple[int, str, list[str]]] = []
        self.collecting = False  # between a table's top and its '|===' line

    def end(self) -> None:
        self.flush()
        self.kind, self.header, self.collecting = None, [], False

    def flush(self) -> None:
        block, self.block = self.block, []
        if not block:
            return
        if self.kind == "gpu":
            _gpu_block(block, self.header or _DEFAULT_HEADER, self.result)
        elif self.kind == "mig":
            _mig_block(block, self.header, self.result)
        else:
            for no, raw, _ in block:
                self.result.issue(no, raw, "table row outside a GPU, MIG devices or processes table")

    def feed(self, no: int, raw: str, line: str) -> None:
        if line.startswith(("+-", "|-")) or (line.startswith("|=") and self.kind):
            self.flush()
            return
        if line.startswith("|="):
            self.kind = _kind_of(self.header)
            self.collecting = False
            return
        cells = [c.strip() for c in line.strip("|").split("|")]
        if "MIG devices:" in line or "Processes:" in line:
            self.end()
            self.collecting, self.header = True, []
            if "Processes:" in line:
                self.header.append(cells)  # old layouts put "GPU Memory" on this line
            return
        if self.collecting or (self.kind is None and _is_header(cells)):
            self.collecting = True
            self.header.append(cells)
            return
        if _GPU_ROW.match(line) and self.kind in (None, "gpu"):
            if self.kind is None:
                self.kind, self.header = "gpu", []  # a table without its header
            self.flush()  # a GPU's first row starts its block, separator or not (grep'd excerpts)
        if self.kind == "proc":
            _process_row(no, raw, cells, self.header, self.result)
        elif self.kind in ("gpu", "mig") and len(cells) == 1:
            self.flush()  # "No MIG devices found"
            if not re.match(r"No \w+ (?:devices|processes) found", cells[0]):
                self.result.issue(no, raw, f"not a row of the {self.kind} table")
        else:
            self.block.append((no, raw, cells))


def _is_header(cells: list[str]) -> bool:
    return any(word in c for c in cells for word in ("Persistence-M", "Bus-Id", "TCC/WDDM", "Memory-Usage"))


def _kind_of(header: list[list[str]]) -> str:
    text = " ".join(" ".join(row) for row in header)
    if "MIG" in text and "GI" in text and "Bus-Id" not in text:
        return "mig"
    if "PID" in text:
        return "proc"
    return "gpu"


def _labels(header: list[list[str]], r: int, c: int) -> str:
    row = header[r] if r < len(header) else []
    return " ".join(row[c].split()) if c < len(row) else ""


def _gpu_block(block: list[tuple[int, str, list[str]]], header: list[list[str]], result: ParseResult) -> None:
    no, raw, first = block[0]
    if _FIRST.match(first[0]) is None or len(block) < 2 or any(len(c) != len(first) for _, _, c in block):
        for line_no, line, _ in block:
            result.issue(line_no, line, "not a GPU block of the nvidia-smi table")
        return
    row: dict[str, Any] = {name: None for name, _ in _GPU_COLUMNS}
    row["line"] = no
    extra: dict[str, Any] = {}
    errors: list[str] = []
    for r, (line_no, line, cells) in enumerate(block):
        for c, value in enumerate(cells):
            label = _labels(header, r, c)
            if "Pwr:Usage/Cap" in label:
                row["power_line"] = line_no
            if (value or label) and not _gpu_cell(
                label or f"row {r + 1} cell {c + 1}", value, row, extra, errors
            ):
                result.issue(line_no, line, f"unreadable {label!r} cell: {value!r}")
    if row["index"] is None:
        for line_no, line, _ in block:
            result.issue(line_no, line, "not a GPU block of the nvidia-smi table")
        return
    row["errors"] = ",".join(errors) or None
    row["extra"] = json.dumps(extra)
    result.add("smi_gpu", row)


def _gpu_cell(label: str, value: str, row: dict[str, Any], extra: dict[str, str], errors: list[str]) -> bool:
    """Read one cell of a GPU block under its header label; every value is kept in ``extra`` as printed.

    False when the cell is under a known label but cannot be read."""

    def ok(v: str | None, name: str) -> str | None:
        if v is None or "ERR!" in v:
            if v is not None and name not in errors:
                errors.append(name)
            return None
        return v

    words = label.split()
    if words[:2] == ["GPU", "Name"] and (m := _FIRST.match(value)):
        name, mode = m["rest"], None
        if len(words) > 2 and len(parts := name.rsplit(None, 1)) == 2 and parts[1] in _MODES:
            name, mode = parts[0], parts[1]
        row["index"], row["name"] = int(m["index"]), name.strip()
        extra.update({"GPU": m["index"], "Name": name, **({words[-1]: mode} if mode else {})})
        if words[-1] == "Persistence-M":
            row["persistence_mode"] = ok(mode, "persistence")
    elif label.startswith("Fan") and "Pwr:Usage/Cap" in label:
        m = _STATE.match(value)
        if m is None:
            extra[label] = value
            return False
        extra.update(
            Fan=m["fan"], Temp=m["temp"], Perf=m["perf"], **{"Pwr:Usage/Cap": f"{m['pwr']} / {m['cap']}"}
        )
        row["fan_pct"] = percent(ok(m["fan"], "fan"))
        row["temp_c"] = leading_number(ok(m["temp"], "temp"))
        row["perf_state"] = ok(m["perf"], "perf")
        row["power_draw_w"] = leading_number(ok(m["pwr"], "power"))
        row["power_cap_w"] = leading_number(ok(m["cap"], "power_cap"))
    elif label.startswith("Bus-Id"):
        parts = value.split()
        extra.update(zip(words, parts, strict=False))
        row["bus_id"] = ok(parts[0], "pci") if parts else None
        row["pci"] = pci_address(row["bus_id"])
        row["disp_a"] = parts[1] if len(parts) > 1 else None
    elif label.endswith("Memory-Usage"):
        extra[label] = value
        m = _PAIR.match(value)
        if m is None:
            return value.lower() in ("n/a", "not supported", "[n/a]", "")
        row["memory_used_mib"] = _int(ok(m.group(1), "memory"))
        row["memory_total_mib"] = _int(ok(m.group(2), "memory"))
    elif label.startswith("GPU-Util"):
        util, _, mode = value.partition(" ")
        extra.update({"GPU-Util": util, "Compute M.": mode.strip()})
        row["util_gpu_pct"] = percent(ok(util, "util"))
        row["compute_mode"] = ok(mode.strip(), "compute_mode") or None
    elif label == "MIG M.":
        extra[label] = value
        row["mig_mode"] = ok(value.rstrip("*"), "mig") or None
        row["mig_pending"] = value.endswith("*") if value else None
    elif label.startswith("Volatile Uncorr"):
        extra[label] = value
        row["ecc_uncorrected"] = to_int(ok(value, "ecc"))
    elif words[:2] == ["GPU", "Name"]:
        extra[label] = value
        return False
    else:
        extra[label] = value
    return True


def _mig_block(block: list[tuple[int, str, list[str]]], header: list[list[str]], result: ParseResult) -> None:
    no, raw, first = block[0]
    ids = first[0].split() if first else []
    if len(ids) != 4 or not all(x.isdigit() for x in ids) or len(first) < 4:
        for line_no, line, _ in block:
            result.issue(line_no, line, "not a device block of the MIG devices table")
        return
    row: dict[str, Any] = {name: None for name, _ in _MIG_COLUMNS}
    row.update(line=no, gpu=int(ids[0]), gi_id=int(ids[1]), ci_id=int(ids[2]), mig_dev=int(ids[3]))
    extra: dict[str, str] = {}
    for r, (_, _, cells) in enumerate(block):
        for c, value in enumerate(cells):
            label = _labels(header, r, c) if c == 1 else ""
            if c == 1 and (m := _PAIR.match(value)):
                key = "bar1" if "BAR1" in label or r > 0 else "memory"
                row[f"{key}_used_mib"], row[f"{key}_total_mib"] = _int(m.group(1)), _int(m.group(2))
                extra[label or f"row {r + 1} cell 2"] = value
            elif c == 2 and r == 0:
                parts = value.split()
                row["sm"] = to_int(parts[0]) if parts else None
                row["ecc_uncorrected"] = to_int(parts[1]) if len(parts) > 1 else None
                extra.update({"SM": parts[0] if parts else "", "Vol. Unc. ECC": " ".join(parts[1:])})
            elif c == 3 and r == 0:
                names = _labels(header, 1, 3).split() or ["CE", "ENC", "DEC", "OFA", "JPG"]
                for name, v in zip(names, value.split(), strict=False):
                    extra[name] = v
                    if name.lower() in row:
                        row[name.lower()] = to_int(v)
            elif c == 0 and r == 0:
                extra.update(zip(("GPU", "GI ID", "CI ID", "MIG Dev"), ids, strict=True))
            elif value:
                extra[f"row {r + 1} cell {c + 1}"] = value
    row["extra"] = json.dumps(extra)
    result.add("smi_mig", row)


def _process_row(no: int, raw: str, cells: list[str], header: list[list[str]], result: ParseResult) -> None:
    text = " ".join(cells).strip()
    if not text or re.match(r"No running processes found", text):
        return
    has_gi = any("GI" in c for row in header for c in row)
    m = (_PROC_NEW.match(text) if has_gi else None) or _PROC_OLD.match(text)
    if m is None:
        result.issue(no, raw, "not a process row (GPU PID Type Process-name Memory)")
        return
    groups = m.groupdict()
    mem = groups["mem"]
    result.add("smi_process", {
        "line": no, "gpu": int(groups["gpu"]), "gi_id": groups.get("gi"), "ci_id": groups.get("ci"),
        "pid": int(groups["pid"]), "type": groups["type"], "process_name": groups["name"],
        "gpu_memory_mib": _int(mem), "gpu_memory": mem,
    })  # fmt: skip


def _int(value: str | None) -> int | None:
    number = leading_number(value)
    return int(number) if number is not None else None
