"""GPU/NIC interconnect matrix from ``nvidia-smi topo -m``.

Command the collector runs::

    nvidia-smi topo -m

Sample (hand-written, tab separated, in the layout of the della-h100 fixture)::

    \tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
    GPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A
    GPU1\tNV18\t X \tNODE\t0-47\t0\t\tN/A
    NIC0\tPIX\tNODE\t X \t\t\t\t

    NIC Legend:

      NIC0: mlx5_0

Accepted variations: tabs, or spaces when pasted from a rendered page; NICs as named ``mlx5_N``
columns (old) or ``NIC0..`` with a "NIC Legend"; ``SOC`` (old name of ``SYS``); optional
"NUMA Affinity" / "GPU NUMA ID" columns; an EMPTY CPU-affinity cell; NIC rows with trailing empty
cells.  Tab-separated rows are read by position, the last affinity column taking the last non-empty
cell (nvidia-smi prints an extra tab before "GPU NUMA ID").  With spaces an empty cell cannot be
seen; one missing affinity value is taken to be the CPU affinity (the only one seen empty).

Schema
------
``topo_link`` (one row per matrix cell, the diagonal included):

- ``line`` int — line of the row
- ``device`` str — row label as printed (GPU0, NIC0, mlx5_0); ``peer`` str — column label
- ``link`` str — as printed: X, NV#, PIX, PXB, PHB, NODE, SYS, SOC
- ``link_class`` str — self, nvlink, pcie_switch (PIX/PXB), pcie_host (PHB), numa (NODE),
  cross_socket (SYS/SOC); null for a code not listed here
- ``nvlinks`` int — the number in NV# (bonded NVLinks), null otherwise

``topo_device`` (one row per matrix row):

- ``line`` int; ``device`` str; ``device_type`` str — gpu or nic
- ``nic_name`` str — the NIC's name (legend name for NIC#, the label for named columns); null for GPUs
- ``cpu_affinity`` str — CPU list as printed (``48-63,176-191``); null when empty or N/A
- ``numa_affinity`` str — NUMA node(s) as printed; null when empty or N/A
- ``gpu_numa_id`` int — null for N/A

Examples
--------
>>> r = parse(SAMPLE)
>>> [(x["device"], x["peer"], x["link_class"], x["nvlinks"]) for x in r.rows("topo_link")][:3]
[('GPU0', 'GPU0', 'self', None), ('GPU0', 'GPU1', 'nvlink', 18), ('GPU0', 'NIC0', 'pcie_switch', None)]
>>> [(d["device"], d["nic_name"], d["cpu_affinity"], d["numa_affinity"]) for d in r.rows("topo_device")]
[('GPU0', None, '0-47', '0'), ('GPU1', None, '0-47', '0'), ('NIC0', 'mlx5_0', None, None)]
"""

from __future__ import annotations

import re

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import NOT_AVAILABLE, strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi-topo",
    title="nvidia-smi topo -m (GPU/NIC topology matrix)",
    commands=("nvidia-smi topo -m",),
    tables=("topo_link", "topo_device"),
    versions_seen=("~384 (SOC, no NUMA column)", "DGX A100 (mlx5 columns)", "545 (NIC Legend, GPU NUMA ID)"),
)

SCHEMA = {
    "topo_link": (
        Column("line", "int", "line of the matrix row"),
        Column("device", "str", "row label"),
        Column("peer", "str", "column label"),
        Column("link", "str", "connection code as printed"),
        Column("link_class", "str", "self/nvlink/pcie_switch/pcie_host/numa/cross_socket"),
        Column("nvlinks", "int", "bonded NVLinks for NV#"),
    ),
    "topo_device": (
        Column("line", "int", "line of the matrix row"),
        Column("device", "str", "row label"),
        Column("device_type", "str", "gpu or nic"),
        Column("nic_name", "str", "NIC device name (mlx5_0, rdmap...)"),
        Column("cpu_affinity", "str", "CPU list"),
        Column("numa_affinity", "str", "NUMA node(s)"),
        Column("gpu_numa_id", "int", "GPU NUMA id"),
    ),
}

_CLASSES = {"X": "self", "PIX": "pcie_switch", "PXB": "pcie_switch", "PHB": "pcie_host", "NODE": "numa"}
_CLASSES.update({"SYS": "cross_socket", "SOC": "cross_socket"})
_LINK = re.compile(r"^(?:X|NV(?P<n>\d+)|[A-Z][A-Z0-9]{1,4})$")
_LABELS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_GPU = re.compile(r"^GPU\d+$")


def detect(text: str) -> int:
    """Confidence that text is an ``nvidia-smi topo -m`` matrix."""
    head = re.search(r"^[^\n]*GPU0[ \t]+(?:GPU1|CPU Affinity|mlx5_0|NIC0)\b", text, re.MULTILINE)
    row = re.search(r"^\W*GPU0[ \t]+X\b", text, re.MULTILINE)
    if head and row:
        return 90
    if row and "Connection traversing" in text:
        return 70
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    lines = [(no, strip_prefix(raw)) for no, raw in enumerate(text.splitlines(), start=1)]
    start = next((i for i, (_, line) in enumerate(lines) if _is_header(line)), None)
    if start is None:
        raise ParseError("no nvidia-smi topo -m header (GPU0 GPU1 ... CPU Affinity) found")
    header_line = lines[start][1]
    tabs = "\t" in header_line
    columns = _split(header_line, tabs, header=True)
    labels = [c for c in columns if c in _LABELS]
    peers = [c for c in columns if c not in _LABELS]
    legend = dict(m.groups() for _, line in lines if (m := _LEGEND_NIC.match(line)))
    for no, line in lines[start + 1 :]:
        if not line.strip():
            if result.rows("topo_device"):
                break
            continue
        if line.strip().startswith("Legend"):
            break
        if set(line.strip()) <= {"."}:  # "..." pasted in place of elided rows
            continue
        cells = _split(line, tabs)
        device, links = cells[0], cells[1 : 1 + len(peers)]
        if len(links) < len(peers) or not all(_LINK.match(x) for x in links):
            result.issue(no, line, "matrix row does not have one link code per column")
            continue
        for peer, link in zip(peers, links, strict=True):
            m = _LINK.match(link)
            result.add("topo_link", {
                "line": no, "device": device, "peer": peer, "link": link,
                "link_class": "nvlink" if m and m["n"] else _CLASSES.get(link),
                "nvlinks": int(m["n"]) if m and m["n"] else None,
            })  # fmt: skip
        affinity = _affinity(cells[1 + len(peers) :], labels, tabs)
        if affinity is None:
            result.issue(no, line, "more affinity cells than affinity columns")
            affinity = {}
        is_gpu = bool(_GPU.match(device))
        result.add("topo_device", {
            "line": no, "device": device, "device_type": "gpu" if is_gpu else "nic",
            "nic_name": None if is_gpu else legend.get(device, None if device.startswith("NIC") else device),
            "cpu_affinity": _value(affinity.get("CPU Affinity")),
            "numa_affinity": _value(affinity.get("NUMA Affinity")),
            "gpu_numa_id": to_int(_value(affinity.get("GPU NUMA ID"))),
        })  # fmt: skip
    if not result.rows("topo_device") and not result.issues:
        raise ParseError("nvidia-smi topo -m header without matrix rows")
    result.tables.setdefault("topo_link", [])
    result.tables.setdefault("topo_device", [])
    return result


def _is_header(line: str) -> bool:
    cells = _split(line, "\t" in line, header=True)
    return "GPU0" in cells and "X" not in cells


def _split(line: str, tabs: bool, header: bool = False) -> list[str]:
    """Cells of a line; the header's corner cell and a tab row's trailing empty cells are dropped."""
    if tabs:
        cells = [c.strip() for c in line.split("\t")]
        if header:
            return [c for c in cells if c]
        while len(cells) > 1 and not cells[-1]:
            cells.pop()
        return cells
    for label in _LABELS:
        line = line.replace(label, label.replace(" ", "\x00"))
    return [c.replace("\x00", " ") for c in line.split()]


def _affinity(cells: list[str], labels: list[str], tabs: bool) -> dict[str, str] | None:
    """Map the cells after the links to the affinity columns (see the module notes)."""
    if not labels:
        return {} if not any(cells) else None
    if tabs:
        head, tail = cells[: len(labels) - 1], [c for c in cells[len(labels) - 1 :] if c]
        return None if len(tail) > 1 else dict(zip(labels, [*head, *tail], strict=False))
    if len(cells) > len(labels):
        return None
    if len(cells) == len(labels) - 1 and labels[0] == "CPU Affinity":
        cells = ["", *cells]
    return dict(zip(labels, cells, strict=False))


def _value(cell: str | None) -> str | None:
    if cell is None or cell.strip().lower() in NOT_AVAILABLE:
        return None
    return cell.strip()
