"""Derive the nvidia-smi CSV fixtures of the collector test from the real ``nvidia-smi -q`` dump.

No real ``--query-gpu`` output with the collector's field list exists in ../shared/real-samples, so
the fake ``nvidia-smi`` prints CSV built here from the values of the 8x H100 ``-q`` dump: the two
views of the node then agree.  Rerun after changing ``QUERY_FIELDS`` in collector.sh::

    .venv/bin/python tests/collector/derive_fixtures.py

The fake models a driver that rejects ``clocks_throttle_reasons.active`` (see ``REJECTED``), so the
collector's drop-one-field-and-retry path is exercised; the ``.fields`` file is the list it must
end up asking for.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIX = ROOT / "tests" / "fixtures" / "collector"
Q_DUMP = FIX / "nvidia-smi-q" / "jp-simulator-8xh100-565-complete.txt"
REJECTED = ("clocks_throttle_reasons.active",)

# header nvidia-smi prints for a query name (aliases print their canonical name; units in brackets)
HEADER = {
    "clocks.sm": "clocks.current.sm [MHz]",
    "clocks.max.sm": "clocks.max.sm [MHz]",
    "clocks.mem": "clocks.current.memory [MHz]",
    "clocks.max.mem": "clocks.max.memory [MHz]",
    "power.draw": "power.draw [W]",
    "power.limit": "power.limit [W]",
    "enforced.power.limit": "enforced.power.limit [W]",
    "power.default_limit": "power.default_limit [W]",
    "power.min_limit": "power.min_limit [W]",
    "power.max_limit": "power.max_limit [W]",
    "clocks.applications.graphics": "clocks.applications.graphics [MHz]",
    "clocks.applications.memory": "clocks.applications.memory [MHz]",
    "clocks.default_applications.graphics": "clocks.default_applications.graphics [MHz]",
    "clocks.default_applications.memory": "clocks.default_applications.memory [MHz]",
    "utilization.gpu": "utilization.gpu [%]",
    "memory.total": "memory.total [MiB]",
    "memory.used": "memory.used [MiB]",
}
EVENT_BITS = {  # clocks_event_reasons bit per -q line
    "Idle": 0x1,
    "Applications Clocks Setting": 0x2,
    "SW Power Cap": 0x4,
    "HW Slowdown": 0x8,
    "Sync Boost": 0x10,
    "SW Thermal Slowdown": 0x20,
    "HW Thermal Slowdown": 0x40,
    "HW Power Brake Slowdown": 0x80,
    "Display Clock Setting": 0x100,
}


def query_fields() -> list[str]:
    text = (ROOT / "collector.sh").read_text()
    m = re.search(r"^QUERY_FIELDS=\((.*?)\)", text, re.S | re.M)
    assert m, "QUERY_FIELDS not found in collector.sh"
    return m.group(1).split()


def gpus(text: str) -> list[dict[str, str]]:
    """Flatten each GPU block of -q into 'Section/Key' -> value."""
    out: list[dict[str, str]] = []
    stack: list[tuple[int, str]] = []
    cur: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("GPU 0000"):
            cur = {"bus": line.split()[1]}
            out.append(cur)
            stack = []
            continue
        if cur is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        key, _, val = line.strip().partition(":")
        key = key.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([s for _, s in stack] + [key])
        if val.strip() or ":" in line:
            cur[path] = val.strip()
        if not val.strip():
            stack.append((indent, key))
    return out


def values(g: dict[str, str], index: int, driver: str) -> dict[str, str]:
    def num(key: str) -> str:
        return g[key].split()[0]

    def ecc(kind: str, sub: str) -> str:
        return str(sum(int(g[f"ECC Errors/{kind}/{k}"]) for k in sub.split("|")))

    reasons = 0
    for k, v in g.items():
        name = k.rsplit("/", 1)[-1]
        if k.startswith("Clocks Event Reasons/") and v == "Active" and name in EVENT_BITS:
            reasons |= EVENT_BITS[name]
    corr = "SRAM Correctable|DRAM Correctable"
    unc = "SRAM Uncorrectable Parity|SRAM Uncorrectable SEC-DED|DRAM Uncorrectable"
    na = "[N/A]"
    return {
        "index": str(index),
        "uuid": g["GPU UUID"],
        "pci.bus_id": g["bus"],
        "name": g["Product Name"],
        "serial": g["Serial Number"],
        "vbios_version": g["VBIOS Version"],
        "driver_version": driver,
        "pstate": g["Performance State"],
        "persistence_mode": g["Persistence Mode"],
        "temperature.gpu": num("Temperature/GPU Current Temp"),
        "temperature.memory": num("Temperature/Memory Current Temp"),
        "power.draw": g["GPU Power Readings/Power Draw"],
        "power.limit": g["GPU Power Readings/Requested Power Limit"],
        "enforced.power.limit": g["GPU Power Readings/Current Power Limit"],
        "power.default_limit": g["GPU Power Readings/Default Power Limit"],
        "power.min_limit": g["GPU Power Readings/Min Power Limit"],
        "power.max_limit": g["GPU Power Readings/Max Power Limit"],
        "clocks.applications.graphics": g["Applications Clocks/Graphics"],
        "clocks.applications.memory": g["Applications Clocks/Memory"],
        "clocks.default_applications.graphics": g["Default Applications Clocks/Graphics"],
        "clocks.default_applications.memory": g["Default Applications Clocks/Memory"],
        "clocks.sm": g["Clocks/SM"],
        "clocks.max.sm": g["Max Clocks/SM"],
        "clocks.mem": g["Clocks/Memory"],
        "clocks.max.mem": g["Max Clocks/Memory"],
        "clocks_event_reasons.active": f"0x{reasons:016X}",
        "pcie.link.gen.current": g["PCI/GPU Link Info/PCIe Generation/Current"],
        "pcie.link.gen.max": g["PCI/GPU Link Info/PCIe Generation/Max"],
        "pcie.link.width.current": g["PCI/GPU Link Info/Link Width/Current"].rstrip("x"),
        "pcie.link.width.max": g["PCI/GPU Link Info/Link Width/Max"].rstrip("x"),
        "utilization.gpu": g["Utilization/Gpu"],
        "memory.total": g["FB Memory Usage/Total"],
        "memory.used": g["FB Memory Usage/Used"],
        "ecc.mode.current": g["ECC Mode/Current"],
        "ecc.errors.corrected.volatile.total": ecc("Volatile", corr),
        "ecc.errors.uncorrected.volatile.total": ecc("Volatile", unc),
        "ecc.errors.corrected.aggregate.total": ecc("Aggregate", corr),
        "ecc.errors.uncorrected.aggregate.total": ecc("Aggregate", unc),
        "retired_pages.single_bit_ecc.count": na,
        "retired_pages.double_bit_ecc.count": na,
        "retired_pages.pending": na,
        "mig.mode.current": g["MIG Mode/Current"],
    }


def main() -> None:
    text = Q_DUMP.read_text()
    driver = re.search(r"^Driver Version\s*:\s*(\S+)", text, re.M).group(1)  # type: ignore[union-attr]
    fields = [f for f in query_fields() if f not in REJECTED]
    rows = [values(g, i, driver) for i, g in enumerate(gpus(text))]
    csv = [", ".join(HEADER.get(f, f) for f in fields)]
    csv += [", ".join(r[f] for f in fields) for r in rows]
    out = FIX / "nvidia-smi-csv"
    out.mkdir(exist_ok=True)
    (out / "jp-simulator-8xh100-565--query-gpu-derived.csv").write_text("\n".join(csv) + "\n")
    (out / "jp-simulator-8xh100-565--query-gpu-derived.fields").write_text(",".join(fields) + "\n")
    remap = [
        "gpu_bus_id, gpu_uuid, remapped_rows.correctable, remapped_rows.uncorrectable, "
        "remapped_rows.pending, remapped_rows.failure"
    ]
    for g in gpus(text):
        remap.append(
            ", ".join(
                [
                    g["bus"],
                    g["GPU UUID"],
                    g["Remapped Rows/Correctable Error"],
                    g["Remapped Rows/Uncorrectable Error"],
                    g["Remapped Rows/Pending"],
                    g["Remapped Rows/Remapping Failure Occurred"],
                ]
            )
        )
    (out / "jp-simulator-8xh100-565--remapped-rows-derived.csv").write_text("\n".join(remap) + "\n")


if __name__ == "__main__":
    main()
