"""PCIe Advanced Error Reporting (AER) errors in the kernel log, on the device that failed.

Why it matters: an uncorrected PCIe error on a GPU, NIC or bridge means a transaction was lost; the
device may reset or fall off the bus (Linux kernel PCIe AER guide; PCIe quality in the mfu-debugger failure
patterns; docs/sources.md#pcie).  Uncorrected (fatal or non-fatal) -> critical.  Corrected errors are retried
by the link itself; only many of them on one device are reported, as info (a marginal link).

One AER error is one report, however many lines the kernel prints for it (drivers/pci/pcie/aer.c and
err.c): the port that received it (``pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received:
<source>``), the source's ``PCIe Bus Error`` line and status bits, then, for an uncorrected error, each
device below the port that could not recover (``nvidia 0000:03:00.0: AER: can't recover``).  The report
is the failed device's: the endpoints that could not recover, else the source the port names when that is
another device, else the port itself (its own error, no device below it named).  The functions of one
card (a GPU and its audio function) are one device, named by the GPU's function.  The port that received
the report is said as where it was reported, never judged apart: one AER error, one finding.  The AER
family of the kernel-signature catalog is judged here only (``host.kernel.fault`` leaves it to this rule),
so no line of it is reported twice.  One finding per node and device; a device that is a GPU is named by
its index.
False positives: a few corrected errors after boot or a hot-plug are normal.  A port's own uncorrected
error with no endpoint line names the port: the log does not say which device below it failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import GPU_BY_PCI
from analyzer.judge.signals.kernel_time import KernelClock, stamp_sql

RULE = RuleInfo(
    id="host.pcie.aer",
    node_local=True,
    title="PCIe AER errors",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    passed="no uncorrected PCIe AER error in the kernel log",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain; reseat or replace the device"),
    severity_reason=(
        "Critical for an uncorrected AER error: a transaction to a GPU, NIC or bridge was lost and the "
        "device may reset or fall off the bus, so drain; corrected errors were retried by the link and only "
        "many on one device are reported, as info. Source: Linux kernel PCIe AER driver guide (correctable, "
        "non-fatal and fatal errors); ours: the count of 10 corrected errors."
    ),
)

#: the lines a port prints for one report, after the line that received it, before its source's
#: ``PCIe Bus Error`` line (aer.c prints the two one after the other)
_BUS_ERROR_AFTER = 3
#: the lines after a report within which a device's "can't recover" line is the recovery of that report
#: (err.c walks the devices below the port right after the report; other drivers' lines may come between)
_RECOVERY_WITHIN = 20
_RECEIVED = ("aer_uncorrected_received", "aer_corrected_received")
#: the address a line is printed under: ``pcieport 0000:00:03.0: ...`` (the parser's ``pci`` is the source
#: the message names, which for a port's "error received" line is another device)
_OWN = re.compile(r"^(?:[\w-]+ )?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]):")


@dataclass
class _Report:
    """One AER error: its lines, the port that received it, what it names, who could not recover."""

    uncorrected: bool
    first: dict[str, Any]
    reporter: str | None = None
    named: list[str] = field(default_factory=list)  # the source and the devices of its Bus Error lines
    endpoints: list[str] = field(default_factory=list)  # devices that could not recover
    lines: list[dict[str, Any]] = field(default_factory=list)
    received: bool = False

    def failed(self) -> list[str]:
        """The devices the report is of (see the module docstring)."""
        if self.endpoints:
            return self.endpoints
        below = [d for d in self.named if d != self.reporter]
        return below or self.named or ([self.reporter] if self.reporter else [])


def _card(pci: str) -> str:
    """The device an address is a function of: ``0000:03:00.1`` -> ``0000:03:00``."""
    return pci.rsplit(".", 1)[0]


def reports(events: list[dict[str, Any]]) -> list[_Report]:
    """The AER reports of one node's ``pcie_aer`` events (in line order)."""
    out: list[_Report] = []
    for e in events:
        own = m.group(1) if (m := _OWN.match(e["message"])) else None
        unc = "uncorrect" in (e["severity"] or "").lower()
        last = out[-1] if out else None
        gap = e["line"] - last.lines[-1]["line"] if last else None
        if e["signature"] in _RECEIVED:
            r = _Report(unc, e, reporter=own, received=True)
            out.append(r)
        elif (
            e["signature"] == "aer_bus_error"
            and last is not None
            and last.received
            and last.uncorrected == unc
            and gap is not None
            and gap <= _BUS_ERROR_AFTER
            and not any(x["signature"] == "aer_bus_error" and x["pci"] == e["pci"] for x in last.lines)
        ):
            r = last  # the source's own line of the report just received
        elif (
            e["signature"] == "aer_not_recovered"
            and last is not None
            and last.uncorrected
            and gap is not None
            and gap <= _RECOVERY_WITHIN
        ):
            last.endpoints.append(e["pci"])
            last.lines.append(e)
            continue
        else:  # a line that starts a report of its own (no receiving port printed before it)
            r = _Report(unc, e)
            out.append(r)
            if e["signature"] == "aer_not_recovered":
                r.endpoints.append(e["pci"])
                r.lines.append(e)
                continue
        if e["pci"] and e["pci"] not in r.named:
            r.named.append(e["pci"])
        r.lines.append(e)
    return out


def check(ctx: Context) -> Iterable[Finding]:
    many = ctx.threshold(RULE, "corrected_info_count")
    gpus = {
        (g["bundle_id"], g["pci"]): g["gpu"]
        for g in ctx.rows(f"SELECT bundle_id, pci, gpu FROM ({GPU_BY_PCI})")
    }
    rows = ctx.rows(
        f"""
        SELECT bundle_id, node, source_file, line, pci, severity, signature, message, {stamp_sql()} AS stamp
        FROM kernel_event WHERE event_type = 'pcie_aer' AND pci IS NOT NULL ORDER BY bundle_id, node, line
        """
    )
    per_node: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        per_node.setdefault((r["bundle_id"], r["node"]), []).append(r)
    clock = KernelClock.load(ctx)
    for (bundle_id, node), events in per_node.items():
        cards: dict[str, list[_Report]] = {}
        for rep in reports(events):
            for card in dict.fromkeys(_card(d) for d in rep.failed()):
                cards.setdefault(card, []).append(rep)
        for card, reps in sorted(cards.items()):
            if (found := _finding(ctx, clock, bundle_id, node, card, reps, gpus, many)) is not None:
                yield found


def _finding(
    ctx: Context,
    clock: KernelClock,
    bundle_id: str,
    node: str,
    card: str,
    reps: list[_Report],
    gpus: dict[tuple[str, str], int | None],
    many: int,
) -> Finding | None:
    """The finding of one device's reports: critical for an uncorrected one, info for many corrected."""
    unc = [r for r in reps if r.uncorrected]
    corrected = len(reps) - len(unc)
    failed = [d for r in reps for d in r.failed() if _card(d) == card]
    functions = sorted({d for r in reps for d in (*r.named, *r.endpoints) if _card(d) == card})
    on_gpu = [d for d in functions if gpus.get((bundle_id, d)) is not None]
    pci = on_gpu[0] if on_gpu else failed[0]
    gpu = gpus.get((bundle_id, pci))
    reporters = sorted({r.reporter for r in reps if r.reporter and _card(r.reporter) != card})
    recovered_not = [
        e for r in unc for e in r.lines if e["signature"] == "aer_not_recovered" and _card(e["pci"]) == card
    ]
    if unc:
        severity, first = Severity.CRITICAL, unc[0].first
    elif corrected >= many:
        severity, first = Severity.INFO, reps[0].first
    else:
        return None
    at = clock.at(bundle_id, first["stamp"])  # the time of the cited line
    device = f"GPU {gpu} ({pci})" if gpu is not None else f"device {pci}"
    if len(functions) > 1:
        device += f" (functions {', '.join(functions)})"
    printed = sorted({e["severity"] for r in reps for e in r.lines if e["severity"]})
    # the report's first line, the line of the port that received one (it names the port), the first
    # line of a device that could not recover
    received = [r.first for r in (unc or reps) if r.received]
    cited = sorted(
        {first["line"], *(e["line"] for e in received[:1]), *(e["line"] for e in recovered_not[:1])}
    )
    route = (
        RULE.route
        if severity == Severity.CRITICAL
        else Route("node-hardware", "hyperpod-node-debugger § G", "watch the link; reseat if errors grow")
    )
    return RULE.finding(
        severity=severity,
        node=node,
        gpu=gpu,
        message=(
            f"{node} {device}: {len(unc)} uncorrected and {corrected} corrected PCIe AER error(s)"
            + (f" ({', '.join(printed)})" if printed else "")
            + (f", reported by port {', '.join(reporters)}" if reporters else "")
            + ("; the device could not recover" if recovered_not else "")
            + ("" if unc else f" (info from {many} corrected)")
            + (f"; first {'uncorrected ' if unc else ''}at {at.shown}" if at.shown else "")
        ),
        params={
            "pci": pci,
            "functions": functions,
            "reported_by": reporters,
            "not_recovered": bool(recovered_not),
            "uncorrected": len(unc),
            "corrected": corrected,
            "severities": printed,
            "corrected_info_count": many,
            **at.params(),
        },
        route=route,
        evidence=[ctx.evidence(first["source_file"], line) for line in cited],
        bundle_id=bundle_id,
        key=(pci,),
    )
