"""Xid events in the kernel log: one finding per node, GPU and Xid code (a burst is one finding).

Why it matters: an Xid is the NVIDIA driver reporting a GPU error; hardware-class Xids (48, 62, 64, 74,
95, ...) mean the node must be drained (rules-facts § 2, GPU-XID-*).  An Xid the driver says was
"caused by previous Xid N" (45 after 149/145, ...) is folded into the finding of its cause, so one fault
gives one finding.  When the cause itself is not in the log (the log was cut), the finding names the
cause and says so, at warning at most.  Xid 79 / "fallen off the bus" is left to
``gpu.xid.fallen_off_bus``.  False positives: application-class Xids (13, 31, 43, 45) usually come from
the job's own code; they are info unless they repeat on one GPU.
Reference: NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity
from analyzer.rules.gpu._gpus import GPU_BY_PCI
from analyzer.xid_catalog import event_severity, xid_entry

RULE = RuleInfo(
    id="gpu.xid",
    title="Xid errors in the kernel log",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    route=Route("node-hardware", "hyperpod-node-debugger § G", "drain and replace"),
    docs="docs/rules.md#gpuxid",
)


def _worst(a: Severity, b: Severity) -> Severity:
    return a if a.rank <= b.rank else b


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        WITH g AS ({GPU_BY_PCI})
        SELECT e.bundle_id, e.node, e.pci, e.xid, e.caused_by_xid, e.line, e.source_file, e.message, g.gpu,
               coalesce(strftime(e.ts, '%Y-%m-%dT%H:%M:%S'), e.ts_raw) AS at
        FROM kernel_event e LEFT JOIN g ON g.bundle_id = e.bundle_id AND g.pci = e.pci
        WHERE e.event_type = 'xid' AND e.xid <> 79
        ORDER BY e.bundle_id, e.node, e.pci, e.line
        """
    )
    repeat = ctx.threshold(RULE, "repeat_escalation")
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    present = {(r["bundle_id"], r["node"], r["pci"], r["xid"]) for r in rows}
    for r in rows:
        cause = r["caused_by_xid"]
        # fold into the cause (79 stays apart: gpu.xid.fallen_off_bus reports the cause)
        code = cause if cause not in (None, r["xid"], 79) else r["xid"]
        key = (r["bundle_id"], r["node"], r["pci"], code)
        g = groups.setdefault(key, {"row": r, "events": [], "folded": {}, "severity": Severity.INFO})
        if code == r["xid"]:
            g["events"].append(r)
            g["severity"] = _worst(g["severity"], event_severity(r["xid"], r["message"]))
        else:
            g["folded"].setdefault(r["xid"], []).append(r)
    for (bundle_id, node, pci, code), g in groups.items():
        entry = xid_entry(code)
        events, folded = g["events"], g["folded"]
        logged = (bundle_id, node, pci, code) in present
        severity = g["severity"] if events else entry.severity
        if severity == Severity.INFO and len(events) >= repeat:
            severity = Severity.WARNING  # an app-class Xid that keeps recurring on one GPU
        if not logged and severity == Severity.CRITICAL:
            severity = Severity.WARNING  # the cause's own line is missing: not enough to drain on
        every = sorted(events + [e for evs in folded.values() for e in evs], key=lambda e: e["line"])
        first, last = every[0], every[-1]
        gpu = g["row"]["gpu"]
        where = f"{node} {'GPU ' + str(gpu) if gpu is not None else 'a GPU'} ({pci or 'PCI unknown'})"
        times = first["at"] if first["at"] == last["at"] else f"{first['at']} .. {last['at']}"
        folded_text = ", ".join(f"Xid {x} {len(evs)}x" for x, evs in sorted(folded.items()))
        if logged:
            message = f"{where} logged Xid {code} ({entry.meaning}) {len(events)}x"
        else:
            message = f"{where}: Xid {code} ({entry.meaning}) is named as the cause but is not in the log"
        if folded_text:
            message += f"; folded: {folded_text} caused by it"
        if first["at"]:
            message += f" at {times}"
        evidence = [ctx.evidence(first["source_file"], first["line"])]
        if last["line"] != first["line"]:
            evidence.append(ctx.evidence(last["source_file"], last["line"]))
        yield Finding(
            rule=RULE.id,
            rule_version=RULE.version,
            severity=severity,
            node=node,
            gpu=gpu,
            message=message,
            params={
                "xid": code,
                "pci": pci,
                "count": len(events),
                "cause_logged": logged,
                "folded": {str(x): len(evs) for x, evs in sorted(folded.items())},
                "first_seen": first["at"],
                "last_seen": last["at"],
                "class": entry.cause_class,
            },
            route=Route(RULE.route.owner, RULE.route.target, entry.action),
            evidence=evidence,
            bundle_id=bundle_id,
            key=(code, pci),
        )
