"""GPU/NIC interconnect matrix from ``nvidia-smi topo -m`` (and ``topo -mp``).

Command the collector runs::

    nvidia-smi topo -m

Sample (hand-written, tab separated, in the layout of the della-h100 fixture)::

    \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
    GPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A
    GPU1\tNV18\t X \tNODE\t0-47\t0\t\tN/A
    NIC0\tPIX\tNODE\t X \t\t\t\t

    NIC Legend:

      NIC0: mlx5_0

Accepted variations: tabs, or spaces when pasted from a rendered page; NICs as named columns
(``mlx5_N``, ``rdmap...``: old drivers) or ``NIC0..`` with a "NIC Legend"; ``SOC`` (old name of
``SYS``); any number of GPUs and NICs; optional affinity columns ("CPU Affinity", "NUMA Affinity",
"GPU NUMA ID", and any other label after the device columns, kept in ``extra``); NIC rows with
trailing empty cells; several matrices in one file (pdsh / srun output, tagged ``host``).
Tab-separated rows are read by position: the cell after the links is the CPU affinity (it may be
EMPTY), the other non-empty cells fill the other affinity columns in order (nvidia-smi prints extra
tabs around "N/A").  With spaces an empty cell cannot be seen: one missing affinity value is taken to
be the CPU affinity, unless the first value looks like a CPU list run into the NUMA value
(``0-470`` for ``0-47`` + ``0``): that is split when another row shows the CPU list alone,
else by the shape of a CPU list (ascending ranges of one size, each a whole number of 4 CPUs; the NUMA
id a small number or N/A) when exactly one split has it, else reported with the NUMA affinity
unknown; tab-separated rows lacking one value are read the same way.  Travel noise (launcher prefixes, prompts, fences, CRLF) is taken off by
``parsers._text.clean_lines``.  A matrix row whose link codes cannot be read is a ParseIssue.

Schema
------
``topo_link`` (one row per matrix cell, the diagonal included):

- ``line`` int — line of the row
- ``device`` str — row label as printed (GPU0, NIC0, mlx5_0); ``peer`` str — column label
- ``link`` str — as printed: X, NV#, PIX, PXB, PHB, NODE, SYS, SOC
- ``link_class`` str — self, nvlink, pcie_switch (PIX/PXB), pcie_host (PHB), numa (NODE),
  cross_socket (SYS/SOC); null for a code not listed here
- ``nvlinks`` int — the number in NV# (bonded NVLinks), null otherwise
- ``host`` str — launcher tag of the row (pdsh host, srun rank), else null

``topo_device`` (one row per matrix row):

- ``line`` int; ``device`` str; ``device_type`` str — gpu or nic
- ``nic_name`` str — the NIC's name (legend name for NIC#, the label for named columns); null for GPUs
- ``cpu_affinity`` str — CPU list as printed (``48-63,176-191``); null when empty or N/A
- ``numa_affinity`` str — NUMA node(s) as printed; null when empty or N/A
- ``gpu_numa_id`` int — null for N/A
- ``extra`` str — JSON object of every affinity cell as printed, under its column label
  (``CPU Affinity``, ``NUMA Affinity``, ``GPU NUMA ID``, any other label)
- ``host`` str — launcher tag of the row, else null

Examples
--------
>>> r = parse(SAMPLE)
>>> [(x["device"], x["peer"], x["link_class"], x["nvlinks"]) for x in r.rows("topo_link")][:3]
[('GPU0', 'GPU0', 'self', None), ('GPU0', 'GPU1', 'nvlink', 18), ('GPU0', 'NIC0', 'pcie_switch', None)]
>>> [(d["device"], d["nic_name"], d["cpu_affinity"], d["numa_affinity"]) for d in r.rows("topo_device")]
[('GPU0', None, '0-47', '0'), ('GPU1', None, '0-47', '0'), ('NIC0', 'mlx5_0', None, None)]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import NOT_AVAILABLE, clean_head_text, clean_lines, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi-topo",
    title="nvidia-smi topo -m (GPU/NIC topology matrix)",
    commands=("nvidia-smi topo -m", "nvidia-smi topo -mp"),
    tables=("topo_link", "topo_device"),
    versions_seen=(
        "~384 (SOC, no NUMA column)",
        "DGX A100 (mlx5 columns)",
        "470-580 (NIC Legend, GPU NUMA ID)",
        "spaces instead of tabs (pasted)",
    ),
)

SCHEMA = {
    "topo_link": (
        Column("line", "int", "line of the matrix row"),
        Column("device", "str", "row label"),
        Column("peer", "str", "column label"),
        Column("link", "str", "connection code as printed"),
        Column("link_class", "str", "self/nvlink/pcie_switch/pcie_host/numa/cross_socket"),
        Column("nvlinks", "int", "bonded NVLinks for NV#"),
        Column("host", "str", "launcher tag of the row"),
    ),
    "topo_device": (
        Column("line", "int", "line of the matrix row"),
        Column("device", "str", "row label"),
        Column("device_type", "str", "gpu or nic"),
        Column("nic_name", "str", "NIC device name (mlx5_0, rdmap...)"),
        Column("cpu_affinity", "str", "CPU list"),
        Column("numa_affinity", "str", "NUMA node(s)"),
        Column("gpu_numa_id", "int", "GPU NUMA id"),
        Column("extra", "str", "JSON object of the affinity cells as printed"),
        Column("host", "str", "launcher tag of the row"),
    ),
}

_CLASSES = {"X": "self", "PIX": "pcie_switch", "PXB": "pcie_switch", "PHB": "pcie_host", "NODE": "numa"}
_CLASSES.update({"SYS": "cross_socket", "SOC": "cross_socket"})
_LINK = re.compile(r"^(?:X|NV(?P<n>\d+)|[A-Z][A-Z0-9]{1,4})$")
_KNOWN = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_GPU = re.compile(r"^GPU\d+$")
_DEVICE = re.compile(r"^(?:GPU\d+|NIC\d+|[A-Za-z][\w.-]*\d)$")
_CPU_LIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")


def detect(text: str) -> int:
    """Confidence that text is an ``nvidia-smi topo -m`` matrix (prefixes and prompts taken off)."""
    text = clean_head_text(text)
    head = re.search(r"^[^\n]*GPU0[ \t]+(?:GPU1|CPU Affinity|mlx5_0|NIC0)\b", text, re.MULTILINE)
    row = re.search(r"^\W*GPU0[ \t]+X\b", text, re.MULTILINE)
    if head and row:
        return 90
    if row and "Connection traversing" in text:
        return 70
    return 0


@dataclass
class _Matrix:
    peers: list[str]
    labels: list[str]
    tabs: bool
    rows: list[tuple[int, str, list[str], list[str], str | None]] = field(default_factory=list)


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult()
    cleaned = clean_lines(text)
    hosts = cleaned.hosts
    legend: dict[str, str] = {}
    matrices: list[_Matrix] = []
    matrix: _Matrix | None = None
    for i, line in enumerate(cleaned.lines):
        no, stripped = i + 1, line.strip()
        if m := _LEGEND_NIC.match(line):
            legend[m[1]] = m[2]
            continue
        if not stripped or set(stripped) <= {"."}:  # blank, or "..." pasted in place of elided rows
            continue
        if header := _header(line):
            matrix = _Matrix(*header)
            matrices.append(matrix)
            continue
        if matrix is None:
            continue
        cells = [c.strip() for c in line.split("\t")] if matrix.tabs and "\t" in line else line.split()
        device = cells[0]
        if not _DEVICE.match(device) or device.endswith(":"):
            matrix = None  # "Legend:", prose after the matrix
            continue
        links, affinity = cells[1 : 1 + len(matrix.peers)], cells[1 + len(matrix.peers) :]
        if len(links) < len(matrix.peers) or not all(_LINK.match(x) for x in links):
            result.issue(no, line, f"matrix row does not have one link code per column ({len(matrix.peers)})")
            continue
        matrix.rows.append((no, line, links, affinity, hosts[i] if hosts else None))
    if not matrices:
        seen = next((x.strip() for x in cleaned.lines if x.strip()), "")[:80]
        raise ParseError(f"expected an nvidia-smi topo -m header (GPU0 GPU1 ... CPU Affinity), saw {seen!r}")
    for matrix in matrices:
        _emit(matrix, legend, result)
    if not result.rows("topo_device") and not result.issues:
        raise ParseError("nvidia-smi topo -m header without matrix rows")
    result.tables.setdefault("topo_link", [])
    result.tables.setdefault("topo_device", [])
    return result


def _header(line: str) -> tuple[list[str], list[str], bool] | None:
    """(device columns, affinity labels, tab separated) when the line is a matrix header."""
    if "GPU0" not in line:
        return None
    tabs = "\t" in line
    cells = [c.strip() for c in re.split(r"\t| {2,}", line.strip()) if c.strip()]
    if any(" " in c and _DEVICE.match(c.split()[0]) for c in cells):  # spaces collapsed to one
        for label in _KNOWN:
            line = line.replace(label, label.replace(" ", "\x00"))
        cells = [c.replace("\x00", " ") for c in line.split()]
    if "GPU0" not in cells or "X" in cells:
        return None
    first_label = next((i for i, c in enumerate(cells) if not _DEVICE.match(c)), len(cells))
    return cells[:first_label], cells[first_label:], tabs


def _emit(matrix: _Matrix, legend: dict[str, str], result: ParseResult) -> None:
    labels, tabs = matrix.labels, matrix.tabs
    full = [cells for _, _, _, cells, _ in matrix.rows if len(cells) == len(labels) and not tabs]
    known_cpu = {cells[0] for cells in full if labels and labels[0] == "CPU Affinity"}
    for no, line, links, cells, host in matrix.rows:
        device = line.split()[0]
        values = _affinity(cells, labels, tabs)
        if values is None:
            result.issue(no, line, f"more affinity cells than affinity columns ({', '.join(labels)})")
            values = {}
        elif labels[:2] == ["CPU Affinity", "NUMA Affinity"] and _short(cells, labels, tabs):
            cpu = cells[0]  # "0-470": a CPU list run into the NUMA value?
            rest = [c for c in cells[1:] if c] if tabs else cells[1:]
            glued = next((k for k in known_cpu if cpu.startswith(k) and cpu[len(k) :].isdigit()), None)
            split = (glued, cpu[len(glued) :]) if glued else _unglue(cpu)
            if split:
                values = dict(zip(labels, [*split, *rest], strict=False))
            else:
                reason = f"CPU list {cpu!r} may have the NUMA affinity run into it: NUMA affinity unknown"
                result.issue(no, line, reason)
        for peer, link in zip(matrix.peers, links, strict=False):
            m = _LINK.match(link)
            result.add("topo_link", {
                "line": no, "device": device, "peer": peer, "link": link,
                "link_class": "nvlink" if m and m["n"] else _CLASSES.get(link),
                "nvlinks": int(m["n"]) if m and m["n"] else None, "host": host,
            })  # fmt: skip
        is_gpu = bool(_GPU.match(device))
        result.add("topo_device", {
            "line": no, "device": device, "device_type": "gpu" if is_gpu else "nic",
            "nic_name": None if is_gpu else legend.get(device, None if device.startswith("NIC") else device),
            "cpu_affinity": _value(values.get("CPU Affinity")),
            "numa_affinity": _value(values.get("NUMA Affinity")),
            "gpu_numa_id": to_int(_value(values.get("GPU NUMA ID"))),
            "extra": json.dumps({k: v for k, v in values.items() if v}), "host": host,
        })  # fmt: skip


def _affinity(cells: list[str], labels: list[str], tabs: bool) -> dict[str, str] | None:
    """Map the cells after the links to the affinity columns (see the module notes)."""
    if not labels:
        return {} if not any(cells) else None
    if tabs:
        first, rest = (cells[0] if cells else ""), [c for c in cells[1:] if c]
        if len(rest) > len(labels) - 1:
            return None
        return dict(zip(labels, [first, *rest], strict=False))
    if len(cells) > len(labels):
        return None
    short = len(cells) == len(labels) - 1 and labels[0] == "CPU Affinity"
    if short and not (cells and re.search(r"[-,]", cells[0])):
        cells = ["", *cells]  # the CPU affinity cell is the one seen empty
    return dict(zip(labels, cells, strict=False))


def _short(cells: list[str], labels: list[str], tabs: bool) -> bool:
    """Whether the affinity cells lack one value and the first looks like a CPU list ("0-470")."""
    if not cells or not re.search(r"[-,]", cells[0]):
        return False
    if tabs:
        return len([c for c in cells[1:] if c]) == len(labels) - 2
    return len(cells) == len(labels) - 1


_RANGES = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")


def _unglue(cell: str) -> tuple[str, str] | None:
    """Split a CPU list that a NUMA node id (or N/A) was run into, by the shape of a CPU list: ranges in
    ascending order, a node's ranges of one size (SMT siblings), each a whole number of 4 CPUs; the NUMA
    id a small number.  None when no split, or more than one, has that shape.

    >>> _unglue("0-31,64-950"), _unglue("0-470"), _unglue("8-15,24-311"), _unglue("0-47N/A")
    (('0-31,64-95', '0'), ('0-47', '0'), ('8-15,24-31', '1'), ('0-47', 'N/A'))
    >>> _unglue("0-4") is None
    True
    """
    if cell.endswith("N/A") and _cpu_list(cell[:-3]):
        return cell[:-3], "N/A"
    fits = [
        (cell[:-n], cell[-n:])
        for n in (1, 2)
        if len(cell) > n and cell[-n:].isdigit() and int(cell[-n:]) < 64 and _cpu_list(cell[:-n])
    ]
    return fits[0] if len(fits) == 1 else None


def _cpu_list(text: str) -> bool:
    """Whether text has the shape nvidia-smi prints a NUMA node's CPUs in (see ``_unglue``)."""
    if not _RANGES.match(text):
        return False
    spans = [tuple(int(x) for x in part.split("-")) for part in text.split(",")]
    if any(len(s) != 2 or s[0] > s[1] or (s[1] - s[0] + 1) % 4 for s in spans):
        return False
    sizes = {s[1] - s[0] for s in spans}
    return len(sizes) == 1 and all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def _value(cell: str | None) -> str | None:
    if cell is None or cell.strip().lower() in NOT_AVAILABLE:
        return None
    return cell.strip()
