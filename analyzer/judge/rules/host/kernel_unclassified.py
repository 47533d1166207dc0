"""Kernel errors no signature claims: what the kernel log says at error level that no rule names.

Why it matters: the signature catalog (parsers/kernel_signatures.toml) is broad but never complete; a
kernel error it does not know must not go unmentioned.  The parser keeps, as ``kernel_error`` rows, the
lines at error level or worse where the log prints the level (``dmesg -x`` ``kern  :err   :``, Talos,
/dev/kmsg priorities 0-3) and, where it prints none, the lines with an error word ("error", "fail",
"timeout", "timed out") after a driver and device name (``nvme nvme0: ...``), less the catalog's noise
rows (ACPI BIOS errors, firmware files not found, the kernel command line, ...: docs/sources.md#kernel-signatures).
One information finding per node: how many, and the first few lines as evidence.  It ranks no node.
False positives: an error a driver prints while it works around it; the catalog's noise rows list those
measured on healthy real logs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="host.kernel.unclassified",
    node_local=True,
    title="Kernel errors no signature of the catalog claims",
    severity=Severity.INFO,
    requires=("kernel_event",),
    passed="no kernel error outside the signature catalog",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § N", "read the lines; a repeating one may need a signature"
    ),
    severity_reason=(
        "Information: the line is an error by the kernel's own level or words, but no public catalog "
        "says what it means for the node, so it is shown, not judged (ours: nothing goes unmentioned)."
    ),
)

#: lines cited per node
SHOWN = 5


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        SELECT bundle_id, node, source_file, line, severity, device, message FROM kernel_event
        WHERE event_type = 'kernel_error' ORDER BY bundle_id, node, line
        """
    )
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["bundle_id"], r["node"]), []).append(r)
    for (bundle_id, node), events in groups.items():
        shown = events[:SHOWN]
        levels = sorted({e["severity"] for e in events if e["severity"]})
        devices = sorted({e["device"] for e in events if e["device"]})
        yield RULE.finding(
            node=node,
            message=(
                f"{node}: {len(events)} kernel error line(s) no signature claims"
                + (f" ({', '.join(levels)})" if levels else "")
                + f"; first: {shown[0]['message'][:160]}"
            ),
            params={
                "count": len(events),
                "levels": levels,
                "devices": devices[:20],
                "shown": [e["message"][:200] for e in shown],
            },  # fmt: skip
            evidence=[ctx.evidence(e["source_file"], e["line"]) for e in shown],
            bundle_id=bundle_id,
        )
