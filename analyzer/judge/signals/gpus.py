"""Shared helpers for GPU rules: one merged view of every GPU, whichever nvidia-smi output a node has.

A node's GPUs come from ``nvidia-smi -q`` (table ``gpu``) when the node has it, else from the
``--query-gpu`` / ``--query-remapped-rows`` CSV (``gpu_query``; rows of one GPU are merged by PCI
address, UUID or index, later rows of an ``-l`` loop overriding earlier ones), else from the plain
``nvidia-smi`` table (``smi_gpu``).  Each field keeps the file and line it was read from, for evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Evidence, Finding

#: A view of every GPU seen by any source, keyed by bundle and normalised PCI address.
GPU_BY_PCI = """
    SELECT bundle_id, node, pci, min(gpu) AS gpu FROM (
        SELECT bundle_id, node, pci, "index" AS gpu FROM gpu WHERE pci IS NOT NULL
        UNION ALL SELECT bundle_id, node, pci, "index" FROM gpu_query WHERE pci IS NOT NULL
        UNION ALL SELECT bundle_id, node, pci, "index" FROM smi_gpu WHERE pci IS NOT NULL
    ) GROUP BY bundle_id, node, pci
"""

#: NVML clock event reason bits (nvmlClocksEventReason*), as printed in the CSV's hex bitmask.
THROTTLE_BITS = {
    0x1: "idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

#: Power limits, W (``power_limit_w``: the limit as the source prints it; requested: what ``nvidia-smi -pl``
#: set; enforced: the limit in effect).  The CSV's ``power.limit`` is the requested limit, the plain
#: table's cap (``Pwr:Usage/Cap``) is read as ``power_limit_w``.
POWER_LIMITS = (
    "power_limit_w",
    "power_requested_limit_w",
    "power_enforced_limit_w",
    "power_default_limit_w",
)
#: Applications clocks and their defaults, MHz.
APP_CLOCKS = (
    "app_clock_graphics_mhz",
    "app_clock_memory_mhz",
    "default_app_clock_graphics_mhz",
    "default_app_clock_memory_mhz",
)
#: -q columns -> the evidence-line column that points at them.
_Q_LINES = {
    "temp_c": "temp_line",
    "throttle": "throttle_line",
    "pcie": "pcie_line",
    "ecc_volatile": "ecc_volatile_line",
    "ecc_aggregate": "ecc_aggregate_line",
    "remap": "remap_line",
    "retired_pages_pending": "retired_line",
    "persistence": "persistence_line",
    "fabric": "fabric_line",
}
_FIELDS = [
    "name",
    "pstate",
    "temp_c",
    "throttle",
    "pcie_gen_current",
    "pcie_gen_max",
    "pcie_width_current",
    "pcie_width_max",
    "ecc_corrected_volatile",
    "ecc_uncorrected_volatile",
    "ecc_uncorrected_aggregate",
    "retired_pages_pending",
    "remap_pending",
    "remap_failure",
    "persistence",
    "fabric_state",
    "fabric_status",
    *POWER_LIMITS,
    *APP_CLOCKS,
]


@dataclass
class GpuState:
    """One GPU of one node, from the best source that node has."""

    bundle_id: str
    node: str
    source: str  # gpu, gpu_query or smi_gpu
    index: int | None
    pci: str | None
    uuid: str | None
    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # field -> (file, line)

    def get(self, key: str) -> Any:
        return self.values.get(key)

    @property
    def label(self) -> str:
        gpu = f"GPU {self.index}" if self.index is not None else "a GPU"
        return f"{self.node} {gpu} ({self.pci or 'PCI unknown'})"

    def evidence(self, ctx: Context, *keys: str) -> list[Evidence]:
        out: list[Evidence] = []
        for key in keys:
            where = self.lines.get(key) or self.lines.get("row")
            if where and where[1] is not None:
                ev = ctx.evidence(*where)
                if ev not in out:
                    out.append(ev)
        return out


def throttle_reasons(value: str | None) -> set[str]:
    """Active clock event reasons as snake-case names, from -q's list or the CSV's hex bitmask.

    >>> sorted(throttle_reasons("Idle, HW Slowdown")), sorted(throttle_reasons("0x0000000000000048"))
    (['hw_slowdown', 'idle'], ['hw_slowdown', 'hw_thermal_slowdown'])
    """
    if not value:
        return set()
    text = value.strip()
    if text.lower().startswith("0x"):
        try:
            mask = int(text, 16)
        except ValueError:
            return set()
        return {name for bit, name in THROTTLE_BITS.items() if mask & bit}
    return {part.strip().lower().replace(" ", "_") for part in text.split(",") if part.strip()}


def yes(value: Any) -> bool | None:
    """Yes/No, Enabled/Disabled, On/Off, 1/0 and booleans as a bool (None when unknown)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "enabled", "on", "1", "true", "active"):
        return True
    if text in ("no", "disabled", "off", "0", "false", "not active"):
        return False
    return None


def gpu_states(ctx: Context) -> list[GpuState]:
    """Every GPU of every node, from -q where the node has it, else the CSV, else the plain table.

    Computed once per rule run (cached on the context): ten rules read it.
    """
    cached: list[GpuState] | None = getattr(ctx, "_gpu_states", None)
    if cached is not None:
        return cached
    states: list[GpuState] = []
    seen: set[tuple[str, str]] = set()
    for r in ctx.rows('SELECT * FROM gpu ORDER BY bundle_id, node, "index"'):
        seen.add((r["bundle_id"], r["node"]))
        s = GpuState(r["bundle_id"], r["node"], "gpu", r["index"], r["pci"], r["uuid"])
        s.values = {k: r[k] for k in _FIELDS if k in r}
        s.values.update(
            pstate=r["performance_state"],
            throttle=throttle_reasons(r["throttle_reasons_active"]),
            retired_pages_pending=yes(r["retired_pages_pending"]),
            persistence=yes(r["persistence_mode"]),
        )
        s.lines = {"row": (r["source_file"], r["line"])}
        s.lines.update({k: (r["source_file"], r[col]) for k, col in _Q_LINES.items() if r[col] is not None})
        states.append(s)
    merged: dict[tuple[str, str], list[GpuState]] = {}
    for r in ctx.rows("SELECT * FROM gpu_query ORDER BY bundle_id, node, line"):
        where = (r["bundle_id"], r["node"])
        if where in seen:
            continue
        node_states = merged.setdefault(where, [])
        found = _match(node_states, r["pci"], r["uuid"], r["index"])
        if found is None:
            found = GpuState(r["bundle_id"], r["node"], "gpu_query", r["index"], r["pci"], r["uuid"])
            node_states.append(found)
        s = found
        s.index = s.index if s.index is not None else r["index"]
        s.pci, s.uuid = s.pci or r["pci"], s.uuid or r["uuid"]
        new = {
            "name": r["name"],
            "pstate": r["pstate"],
            "temp_c": r["temp_c"],
            "throttle": throttle_reasons(r["throttle_reasons_active"])
            if r["throttle_reasons_active"]
            else None,
            "pcie_gen_current": r["pcie_gen_current"],
            "pcie_gen_max": r["pcie_gen_max"],
            "pcie_width_current": r["pcie_width_current"],
            "pcie_width_max": r["pcie_width_max"],
            "ecc_corrected_volatile": r["ecc_corrected_volatile"],
            "ecc_uncorrected_volatile": r["ecc_uncorrected_volatile"],
            "ecc_uncorrected_aggregate": r["ecc_uncorrected_aggregate"],
            "retired_pages_pending": yes(r["retired_pages_pending"]),
            "remap_pending": yes(r["remapped_rows_pending"]),
            "remap_failure": yes(r["remapped_rows_failure"]),
            "persistence": yes(r["persistence_mode"]),
            "power_requested_limit_w": r.get("power_limit_w"),
            **{k: r.get(k) for k in (*POWER_LIMITS, *APP_CLOCKS) if k != "power_requested_limit_w"},
        }
        for key, value in new.items():
            if value is not None:
                s.values[key] = value
                s.lines[_line_key(key)] = (r["source_file"], r["line"])
        s.lines.setdefault("row", (r["source_file"], r["line"]))
    for node_states in merged.values():
        seen.add((node_states[0].bundle_id, node_states[0].node))
        states.extend(node_states)
    for r in ctx.rows('SELECT * FROM smi_gpu ORDER BY bundle_id, node, "index"'):
        if (r["bundle_id"], r["node"]) in seen:
            continue
        s = GpuState(r["bundle_id"], r["node"], "smi_gpu", r["index"], r["pci"], None)
        s.values = {
            "name": r["name"],
            "pstate": r["perf_state"],
            "temp_c": r["temp_c"],
            "ecc_uncorrected_volatile": r["ecc_uncorrected"],
            "persistence": yes(r["persistence_mode"]),
            "power_limit_w": r.get("power_cap_w"),
        }
        s.lines = {"row": (r["source_file"], r["line"])}
        if r.get("power_line") is not None:
            s.lines["power_limit_w"] = (r["source_file"], r["power_line"])
        states.append(s)
    setattr(ctx, "_gpu_states", states)  # noqa: B010 - Context has no slot for rule caches
    return states


def flagged(ctx: Context, rule: RuleInfo, field: str, message: str, evidence_key: str) -> Iterable[Finding]:
    """One finding per GPU whose yes/no FIELD is yes (remap failed or pending, page retirement pending).

    ``message`` is formatted with ``label`` (the GPU as reports name it)."""
    for s in gpu_states(ctx):
        if s.get(field) is not True:
            continue
        yield rule.finding(
            node=s.node,
            gpu=s.index,
            message=message.format(label=s.label),
            params={"pci": s.pci, "source": s.source},
            evidence=s.evidence(ctx, evidence_key),
            bundle_id=s.bundle_id,
            key=(s.pci,),
        )


def _line_key(key: str) -> str:
    if key.startswith("pcie_"):
        return "pcie"
    if key.startswith("remap_"):
        return "remap"
    if key in ("ecc_corrected_volatile", "ecc_uncorrected_volatile"):
        return "ecc_volatile"
    if key == "ecc_uncorrected_aggregate":
        return "ecc_aggregate"
    return key


def _match(states: list[GpuState], pci: str | None, uuid: str | None, index: int | None) -> GpuState | None:
    for s in states:
        if (pci and s.pci == pci) or (uuid and s.uuid == uuid):
            return s
    if pci is None and uuid is None and index is not None:
        return next((s for s in states if s.index == index), None)
    return None
