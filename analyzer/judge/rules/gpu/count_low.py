"""Fewer GPUs than the instance type has, or than another source sees: the GPU counts disagree.

Why it matters: a GPU that the driver no longer lists (fallen off the bus, failed init) leaves the node
unable to run an 8-GPU job; drain and replace (HyperPod performance-debugger skill; its details guide: "all 8
visible"; docs/sources.md#gpu-presence).  Each source counts on its own, and any source below another is one
finding that names every count: the instance type (``sku.toml`` ``gpus``), the PCI bus (``lspci``: NVIDIA
3D/VGA controllers, NVSwitch bridges left out), nvidia-smi (``-q``, else the ``--query-gpu`` CSV, else the
plain table) and DCGM (the "GPU Device IDs Detected" of ``dcgmi diag``).  What the disagreement says:

- on the bus but missing from nvidia-smi: the driver did not bind the GPU or lost it (fallen off the bus, a
  failed init) — critical, reboot, then replace if it stays missing (NVIDIA Xid catalog: Xid 79 is
  RESTART_BM; NVIDIA/NVSentinel#684 compares the bus with nvidia-smi for the GPUs that drop without an Xid);
  where ``lspci -k`` names another driver bound to it (vfio-pci), the message says so and the route is to
  bind it to nvidia again;
- fewer on the bus than the instance type has: the GPU is gone from the PCI bus, a hardware fault — critical,
  drain and replace; a GPU lspci reads as ``rev ff`` no longer answers on the bus and is named;
- fewer in nvidia-smi than the type has and no lspci in the bundle: critical, as before lspci was collected;
- DCGM alone sees fewer: its diagnostic did not test every GPU (a run limited with ``-i``, or GPUs DCGM
  left out) — info: the untested GPUs are judged by the other sources;
- a source above the instance type (meta.env names the wrong type?) — warning.

A node whose instance type is unknown (absent from meta.env or not in sku.toml) and whose sources agree gets
one info finding saying its count is not judged.  Nodes with neither nvidia-smi GPUs nor lspci are left to
the bundle-gap rules (and nvidia-smi's failure answers to gpu.smi.unreachable).
Settling: fewer GPUs on a node collected within the settle window after its boot
(analyzer.judge.signals.boot) may be GPUs still initialising: info, with the boot time, not a fault.
False positives: a collector run with ``CUDA_VISIBLE_DEVICES`` set does not change nvidia-smi output; the
``grep`` excerpts users paste may leave GPU lines out (the collector's ``lspci -D -nnk`` lists every device).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.signals.boot import settling_nodes
from analyzer.judge.signals.gpus import GpuState, gpu_states

RULE = RuleInfo(
    id="gpu.count.low",
    node_local=True,
    title="Fewer GPUs than the instance type has, or GPU counts that disagree",
    severity=Severity.CRITICAL,
    version=2,  # 2: lspci and DCGM counted beside nvidia-smi and the instance type
    requires=("node.instance_type",),
    requires_any=("gpu", "gpu_query", "smi_gpu", "pci_device"),
    passed="all GPUs of the type on the PCI bus and in nvidia-smi",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    severity_reason=(
        "A node missing a GPU cannot run a full-node job and must be drained and replaced, and a GPU on the "
        "PCI bus that nvidia-smi lost needs a reboot (Xid 79's RESTART_BM) before that; warning when a source "
        "sees more GPUs than the type has (meta.env may name the wrong type); info when only DCGM sees fewer "
        "GPUs (its diagnostic did not test them all), within the settle window after a boot (GPUs may still be "
        "initialising) or where the instance type has no expected count. Source: HyperPod performance-debugger skill (awslabs/agent-plugins: a "
        "missing GPU means drain and replace), NVIDIA Xid catalog, NVIDIA/NVSentinel#684."
    ),
)

_REBOOT = Route(
    "node-hardware",
    "hyperpod-node-debugger § F",
    "reboot the node so the driver binds the GPU again; drain and replace if it stays missing",
)
_OTHER_DRIVER = Route(
    "node-hardware",
    "hyperpod-node-debugger § F",
    "bind the GPU to the nvidia driver again (undo the vfio/passthrough setting), then reboot",
)
_DCGM = Route(
    "node-hardware",
    "hyperpod-node-debugger § G",
    "find why DCGM does not see every GPU; run its diagnostic again",
)
_META = Route(
    "support-bundle", "hyperpod-issue-report", "check the instance type meta.env names; collect again"
)


@dataclass
class _Bus:
    """The NVIDIA GPUs lspci lists on one node."""

    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)  # address -> row


def check(ctx: Context) -> Iterable[Finding]:
    seen: dict[tuple[str, str], list[GpuState]] = {}
    for s in gpu_states(ctx):
        seen.setdefault((s.bundle_id, s.node), []).append(s)
    buses: dict[tuple[str, str], _Bus] = {}
    for r in ctx.rows(
        """SELECT bundle_id, node, address, rev, driver, source_file, line FROM pci_device
           WHERE gpu ORDER BY bundle_id, node, address, line"""
    ):
        buses.setdefault((r["bundle_id"], r["node"]), _Bus()).gpus.setdefault(r["address"], r)
    for r in ctx.rows("SELECT DISTINCT bundle_id, node FROM pci_device"):  # a bus without NVIDIA GPUs
        buses.setdefault((r["bundle_id"], r["node"]), _Bus())
    dcgm = _dcgm_counts(ctx)
    for n in ctx.rows("SELECT bundle_id, node, instance_type FROM node ORDER BY node"):
        where = (n["bundle_id"], n["node"])
        states, bus = seen.get(where), buses.get(where)
        if not states and bus is None:
            continue
        yield from _judge(ctx, n, states or [], bus, dcgm.get(where))


def _judge(
    ctx: Context, n: dict[str, Any], states: list[GpuState], bus: _Bus | None, dcgm: dict[str, Any] | None
) -> Iterable[Finding]:
    node, sku = n["node"], ctx.settings.instance(n["instance_type"]) or {}
    expected = sku.get("gpus")
    smi = len({s.pci or s.uuid or s.index for s in states}) if states else None
    counts = {"instance type": expected, "lspci": len(bus.gpus) if bus else None, "nvidia-smi": smi}
    counts["DCGM"] = dcgm["count"] if dcgm and (smi is not None or bus is not None) else None
    known = {k: v for k, v in counts.items() if v is not None}
    top = max(known.values())
    low = [k for k, v in known.items() if v < top]
    evidence = _evidence(ctx, n, states, bus, dcgm)
    said = ", ".join(f"{k} {v}" for k, v in known.items())
    if not low:
        if expected is None:
            yield RULE.finding(
                severity=Severity.INFO,
                node=node,
                message=f"{node}: GPU count not judged, instance type {n['instance_type'] or 'unknown'} "
                f"has no expectation ({said})",
                params={
                    "seen": smi if smi is not None else counts["lspci"],
                    "instance_type": n["instance_type"],
                    "source": states[0].source if states else "pci_device",
                    "counts": known,
                },
                evidence=evidence,
                bundle_id=n["bundle_id"],
                key=("not-judged",),
            )
        return
    parts, severity, route = _explain(counts, bus, states)
    boot = settling_nodes(ctx).get(n["bundle_id"]) if severity == Severity.CRITICAL else None
    message = f"{node}: GPU counts disagree ({said}): " + "; ".join(parts)
    if boot:
        message += f" — settling: {boot.describe()}, GPUs may still be initialising"
    yield RULE.finding(
        severity=Severity.INFO if boot else severity,
        node=node,
        message=message,
        params={
            "seen": smi if smi is not None else counts["lspci"],
            "expected": expected,
            "instance_type": n["instance_type"],
            "source": states[0].source if states else "pci_device",
            "counts": known,
            "below": low,
            "missing_from_smi": _missing(bus, states),
            "not_answering": sorted(a for a, r in (bus.gpus if bus else {}).items() if r["rev"] == "ff"),
            "settling": boot is not None,
            "boot_utc": boot.boot_utc if boot else None,
        },
        route=route,
        evidence=evidence,
        bundle_id=n["bundle_id"],
    )


def _explain(
    counts: dict[str, int | None], bus: _Bus | None, states: list[GpuState]
) -> tuple[list[str], Severity, Route]:
    """What the counts say, worst first: the sentences, the severity and the route."""
    expected, pci, smi, dcgm = counts["instance type"], counts["lspci"], counts["nvidia-smi"], counts["DCGM"]
    parts: list[str] = []
    severity, route = Severity.INFO, RULE.route
    if pci is not None and expected is not None and pci < expected:
        parts.append(f"{expected - pci} GPU(s) missing from the PCI bus: gone from the bus, a hardware fault")
        severity = Severity.CRITICAL
    if pci is not None and smi is not None and smi < pci:
        missing = _missing(bus, states)
        which = ""
        if missing and bus is not None:
            which = " (" + ", ".join(_bus_word(a, bus.gpus[a]) for a in missing) + ")"
        others = {bus.gpus[a]["driver"] for a in missing} if bus is not None and missing else set()
        if others and None not in others and "nvidia" not in others:
            parts.append(
                f"{pci - smi} GPU(s) on the PCI bus but missing from nvidia-smi{which}: bound to "
                f"{', '.join(sorted(others))}, not to the nvidia driver (a passthrough or driver setting)"
            )
            route = _OTHER_DRIVER if severity != Severity.CRITICAL else route
        else:
            parts.append(
                f"{pci - smi} GPU(s) on the PCI bus but missing from nvidia-smi{which}: the driver did not bind "
                "them or lost them (fallen off the bus, failed init)"
            )
            route = _REBOOT if severity != Severity.CRITICAL else route
        severity = Severity.CRITICAL
    if pci is None and smi is not None and expected is not None and smi < expected:
        parts.append(
            f"{expected - smi} GPU(s) missing from nvidia-smi (no lspci in the bundle to tell a GPU the driver "
            "lost from one gone from the bus)"
        )
        severity = Severity.CRITICAL
    if smi is not None and pci is not None and pci < smi:
        parts.append("nvidia-smi lists more GPUs than lspci (an lspci excerpt?)")
        severity = max(severity, Severity.WARNING, key=lambda s: -s.rank)
    if dcgm is not None and dcgm < max(v for v in (smi, pci) if v is not None):
        parts.append(f"DCGM detected {dcgm}: its diagnostic did not test every GPU")
        if severity == Severity.INFO:
            route = _DCGM
    if expected is not None and any(v is not None and v > expected for v in (pci, smi, dcgm)):
        parts.append(f"more GPUs than a {expected}-GPU instance type has: is meta.env's instance type right?")
        if severity != Severity.CRITICAL:
            severity, route = Severity.WARNING, _META
    dead = sorted(a for a, r in (bus.gpus if bus else {}).items() if r["rev"] == "ff")
    if dead:
        parts.append(f"lspci reads {', '.join(dead)} as rev ff: no longer answering on the bus")
    if not parts:
        parts.append("the sources do not list the same number of GPUs")
        severity = Severity.WARNING
    return parts, severity, route


def _bus_word(address: str, row: dict[str, Any]) -> str:
    """``0000:5d:00.0`` with what lspci says of it: its driver (``-k``), ``rev ff``."""
    notes = [f"driver {row['driver']}" if row["driver"] else "", "rev ff" if row["rev"] == "ff" else ""]
    notes = [x for x in notes if x]
    return address + (f" [{', '.join(notes)}]" if notes else "")


def _missing(bus: _Bus | None, states: list[GpuState]) -> list[str]:
    """The bus addresses nvidia-smi does not list, when nvidia-smi's addresses are all on that bus (else the
    two listings are not comparable address by address: none named)."""
    if bus is None or not states:
        return []
    smi = {s.pci for s in states}
    if None in smi or not smi <= set(bus.gpus):
        return []
    return sorted(set(bus.gpus) - smi)


def _dcgm_counts(ctx: Context) -> dict[tuple[str, str], dict[str, Any]]:
    """Per node, the GPUs a ``dcgmi diag`` run detected ("GPU Device IDs Detected"), the largest of its runs."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in ctx.rows(
        """SELECT r.bundle_id, r.node, r.gpu_device_ids, r.source_file,
                  coalesce((SELECT min(a.line) FROM dcgm_attribute a
                            WHERE a.source_file = r.source_file AND a.key = 'GPU Device IDs Detected'), r.line)
                  AS line
           FROM dcgm_run r WHERE r.gpu_device_ids IS NOT NULL ORDER BY r.source_file, r.line"""
    ):
        count = len([x for x in str(r["gpu_device_ids"]).split(",") if x.strip()])
        where = (r["bundle_id"], r["node"])
        if count and count > out.get(where, {}).get("count", 0):
            out[where] = {"count": count, "source_file": r["source_file"], "line": r["line"]}
    return out


def _evidence(
    ctx: Context, n: dict[str, Any], states: list[GpuState], bus: _Bus | None, dcgm: dict[str, Any] | None
) -> list[Evidence]:
    out: list[Evidence] = []
    if states:
        out += states[0].evidence(ctx, "row")
    if bus is not None and bus.gpus:
        missing = _missing(bus, states)
        rows = [bus.gpus[a] for a in missing[:3]] or [next(iter(bus.gpus.values()))]
        out += [ctx.evidence(r["source_file"], r["line"]) for r in rows]
    if dcgm is not None:
        out.append(ctx.evidence(dcgm["source_file"], dcgm["line"]))
    if n["instance_type"]:
        out.append(ctx.meta_evidence(n["node"], "instance_type"))
    return out
