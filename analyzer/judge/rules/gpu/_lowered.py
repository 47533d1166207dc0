"""Shared judgment of the GPU settings a site can lower: the power limit and the applications clocks.

Each GPU's value is held to the GPU's own default where its node printed one (``nvidia-smi -q`` and the
CSV print the default limit and the default applications clocks).  Where no default was read (the plain
``nvidia-smi`` table has only the cap; a CSV may not have asked for it; a driver may print N/A), the value
is held to the median of the same value on the *other* nodes of its peer group: the same instance type
and the same GPU model.  A group of fewer than ``min_nodes`` nodes (this one included) cannot say what is
normal: the GPU is not judged and its node is not examined ("too few peers"), never passed.  A value
more than ``below_fraction`` below its reference is low.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from statistics import median

from analyzer.judge.engine import Context, too_few_peers
from analyzer.judge.findings import Evidence, Finding
from analyzer.judge.peers import NODE_TYPE_SQL
from analyzer.judge.signals.gpus import GpuState

#: (section, key) pairs of ``gpu_attribute`` (lower case) a -q value is printed on, by field: each
#: layout's name of it (the old "Power Readings", the newer "GPU Power Readings").
Q_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "power_enforced_limit_w": (
        ("gpu power readings", "current power limit"),
        ("power readings", "enforced power limit"),
        ("power readings", "current power limit"),
    ),
    "power_limit_w": (
        ("gpu power readings", "current power limit"),
        ("power readings", "power limit"),
        ("power readings", "current power limit"),
    ),
    "power_requested_limit_w": (
        ("gpu power readings", "requested power limit"),
        ("power readings", "requested power limit"),
        ("power readings", "power limit"),
    ),
    "power_default_limit_w": (
        ("gpu power readings", "default power limit"),
        ("power readings", "default power limit"),
    ),
    "app_clock_graphics_mhz": (("applications clocks", "graphics"),),
    "app_clock_memory_mhz": (("applications clocks", "memory"),),
    "default_app_clock_graphics_mhz": (("default applications clocks", "graphics"),),
    "default_app_clock_memory_mhz": (("default applications clocks", "memory"),),
}


@dataclass(frozen=True)
class Measure:
    """One value judged: how a GPU's value and default are read, and how the value is named."""

    name: str  # "power limit", "graphics applications clock"
    unit: str  # "W", "MHz"
    value: Callable[[GpuState], float | None]
    default: Callable[[GpuState], float | None]
    fields: tuple[str, ...]  # the GPU fields that carry the value, then its default (for evidence)


@dataclass
class Low:
    """A GPU whose value lies more than the threshold below its reference."""

    state: GpuState
    measure: Measure
    value: float
    reference: float
    basis: str  # "default" (the GPU's own) or "peers" (the median of its peer group's other nodes)
    group: str = ""  # the peer group, for "peers"
    peer_nodes: int = 0  # nodes in the peer group, this one included


@dataclass
class Judged:
    lows: list[Low] = field(default_factory=list)
    unjudged: dict[str, set[str]] = field(default_factory=dict)  # node -> why not examined


def judge(
    ctx: Context, states: Iterable[GpuState], measures: Iterable[Measure], below: float, min_nodes: int
) -> Judged:
    """The GPUs whose measures are low, and the nodes that could not be judged (with why)."""
    states = list(states)
    measures = list(measures)
    types = {(r["bundle_id"], r["node"]): r["instance_type"] for r in ctx.rows(NODE_TYPE_SQL)}
    out = Judged()
    read: dict[str, bool] = {}  # node -> a value of some measure was read on one of its GPUs
    # peer values: (instance type, GPU model, measure) -> node -> the values of its GPUs
    peers: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for s in states:
        read.setdefault(s.node, False)
        for m in measures:
            v = m.value(s)
            if v is None:
                continue
            read[s.node] = True
            key = (types.get((s.bundle_id, s.node)) or "unknown", s.get("name") or "GPU", m.name)
            peers.setdefault(key, {}).setdefault(s.node, []).append(v)
    for s in states:
        for m in measures:
            v = m.value(s)
            if v is None:
                continue
            ref, basis, group, n = m.default(s), "default", "", 0
            if ref is None:
                itype, model = types.get((s.bundle_id, s.node)) or "unknown", s.get("name") or "GPU"
                nodes = peers.get((itype, model, m.name), {})
                group, n, basis = f"{itype} {model}", len(nodes), "peers"
                others = [x for node, values in nodes.items() if node != s.node for x in values]
                if n < min_nodes or not others:
                    out.unjudged.setdefault(s.node, set()).add(
                        too_few_peers(n, min_nodes, "nodes", f"{group}, no default {m.name} read")
                    )
                    continue
                ref = median(others)
            if v < ref * (1 - below):
                out.lows.append(Low(s, m, v, ref, basis, group, n))
    for node, seen in read.items():
        if not seen:
            names = " or ".join(dict.fromkeys(m.name for m in measures))
            out.unjudged.setdefault(node, set()).add(f"no {names} read")
    return out


def per_node(
    ctx: Context,
    judged: Judged,
    cause: Callable[[Low], str],
    finding: Callable[[str, str, str, list[Low]], Finding],
) -> Iterator[Finding]:
    """One finding per node and cause of its GPUs judged low (``finding(bundle_id, node, cause, lows)``);
    a node not judged (too few peers, no value read) is said so, unless it has a finding."""
    by_node: dict[tuple[str, str, str], list[Low]] = {}
    for lo in judged.lows:
        by_node.setdefault((lo.state.bundle_id, lo.state.node, cause(lo)), []).append(lo)
    flagged = set()
    for (bundle_id, node, why), lows in by_node.items():
        flagged.add(node)
        yield finding(bundle_id, node, why, lows)
    for node, reasons in judged.unjudged.items():
        if node not in flagged:
            for reason in sorted(reasons):
                ctx.not_judged([node], reason)


def evidence(ctx: Context, s: GpuState, fields: Iterable[str]) -> list[Evidence]:
    """The lines a GPU's fields were read from: the -q line of each (``gpu_attribute``), else the row."""
    if s.source != "gpu":
        return s.evidence(ctx, *fields)
    lines = _q_lines(ctx)
    file = s.lines["row"][0]
    out: list[Evidence] = []
    for f in fields:
        for section, key in Q_KEYS.get(f, ()):
            line = lines.get((file, s.pci, section, key))
            if line is not None:
                ev = ctx.evidence(file, line)
                if ev not in out:
                    out.append(ev)
                break
    return out or s.evidence(ctx, "row")


def _q_lines(ctx: Context) -> dict[tuple[str, str | None, str, str], int]:
    def read() -> dict[tuple[str, str | None, str, str], int]:
        sections = sorted({section for pairs in Q_KEYS.values() for section, _ in pairs})
        marks = ", ".join("?" for _ in sections)
        out: dict[tuple[str, str | None, str, str], int] = {}
        for r in ctx.rows(
            f"SELECT source_file, entity, lower(section) AS section, lower(key) AS key, min(line) AS line "
            f"FROM gpu_attribute WHERE lower(section) IN ({marks}) GROUP BY ALL",
            *sections,
        ):
            out[(r["source_file"], r["entity"], r["section"], r["key"])] = r["line"]
        return out

    lines: dict[tuple[str, str | None, str, str], int] = ctx.memo("gpu.lowered.q_lines", read)
    return lines


def fmt(value: float) -> str:
    """A watt or megahertz figure as nvidia-smi's settings are given: whole numbers without decimals."""
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def gpu_list(lows: list[Low]) -> str:
    """'GPUs 0, 1, 2' / 'GPU 3' (the index, else the PCI address)."""
    names = [str(lo.state.index) if lo.state.index is not None else str(lo.state.pci) for lo in lows]
    names = list(dict.fromkeys(names))
    return ("GPUs " if len(names) > 1 else "GPU ") + ", ".join(names)


def said(lows: list[Low], describe: Callable[[Low], str]) -> str:
    """The GPUs and their values: GPUs sharing one description said once ('GPUs 0, 1: power limit ...')."""
    groups: dict[str, list[Low]] = {}
    for lo in lows:
        groups.setdefault(describe(lo), []).append(lo)
    return "; ".join(f"{gpu_list(members)}: {text}" for text, members in groups.items())
