"""SXid events: errors the NVSwitch driver logs for the switches that join the GPUs of an HGX board.

Why it matters: a fatal SXid takes NVLink traffic through that switch down (jobs hang or fail; the
node needs a reset and, if it recurs, a baseboard replacement); non-fatal SXids are corrected link
events, worth knowing when they pile up (NVIDIA Fabric Manager user guide, its NVSwitch SXid errors:
docs/sources.md#nvlink-fabric).  One finding per node, switch (PCI address) and SXid code: a Fatal event is
critical, non-fatal ones are info and warning once they repeat, events of unknown fatality warning.  A
multi-line SXid (code line, "Severity ... Engine instance", "Data {...}") counts as one event.  An SXid line
whose switch address cannot be read (a redacted ``SXid (PCI:...)``) is judged on its node, the switch named as
unknown.  False positives: non-fatal SXids right after boot (link training) are common; hence info.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.sxid",
    title="NVSwitch SXid errors in the kernel log",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    passed="no NVSwitch SXid in the kernel log",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "reset the node; replace the baseboard if it recurs"
    ),
    severity_reason=(
        "Critical for a fatal SXid, after which NVLink traffic through that NVSwitch stops until the node is "
        "reset; non-fatal SXids are info and a warning once they repeat on one switch, SXids of unknown "
        "fatality a warning. Source: NVIDIA Fabric Manager user guide (NVSwitch fatal and non-fatal errors); "
        "ours: the repeat count, by analogy with gpu.xid."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        SELECT bundle_id, node, pci, xid, any_value(source_file) AS source_file,
               count(*) FILTER (WHERE lower(severity) = 'fatal') AS fatal,
               count(*) FILTER (WHERE lower(severity) = 'non-fatal') AS nonfatal,
               count(*) AS lines, min(line) AS first_line, max(line) AS last_line,
               arg_min(ts_raw, line) AS first_seen, arg_max(ts_raw, line) AS last_seen
        FROM kernel_event WHERE event_type = 'sxid'
        GROUP BY bundle_id, node, pci, xid ORDER BY node, pci NULLS LAST, xid
        """
    )
    repeat = ctx.threshold(RULE, "repeat_escalation")
    for r in rows:
        events = r["fatal"] + r["nonfatal"] or r["lines"]
        if r["fatal"]:
            severity, kind = Severity.CRITICAL, "fatal"
        elif r["nonfatal"]:
            severity = Severity.WARNING if r["nonfatal"] >= repeat else Severity.INFO
            kind = "non-fatal"
        else:
            severity, kind = Severity.WARNING, "unknown fatality"
        evidence = [ctx.evidence(r["source_file"], r["first_line"])]
        if r["last_line"] != r["first_line"]:
            evidence.append(ctx.evidence(r["source_file"], r["last_line"]))
        yield RULE.finding(
            severity=severity,
            node=r["node"],
            message=(
                f"{r['node']} NVSwitch {r['pci'] or '(unknown: no PCI address in the log)'} logged SXid"
                f" {r['xid']} ({kind}) "
                f"{events}x, first at {r['first_seen']}"
            ),
            params={
                "sxid": r["xid"],
                "pci": r["pci"],
                "count": events,
                "fatal": r["fatal"],
                "non_fatal": r["nonfatal"],
                "first_seen": r["first_seen"],
                "last_seen": r["last_seen"],
            },
            evidence=evidence,
            bundle_id=r["bundle_id"],
            key=(r["pci"], r["xid"]),
        )
