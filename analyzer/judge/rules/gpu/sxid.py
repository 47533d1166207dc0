"""SXid events: errors the NVSwitch driver logs for the switches that join the GPUs of an HGX board.

Why it matters: a fatal SXid takes NVLink traffic through that switch down (jobs hang or fail; the
node needs a reset and, if it recurs, a baseboard replacement); non-fatal SXids are corrected link
events, worth knowing when they pile up (NVIDIA Fabric Manager user guide, its NVSwitch SXid errors:
docs/sources.md#nvlink-fabric).  One finding per node, switch (PCI address) and SXid code: a Fatal event is
critical, non-fatal ones are info and warning once they repeat, events of unknown fatality warning.  A
multi-line SXid (code line, "Severity ... Engine instance", "Data {...}") counts as one event.  An SXid line
whose switch address cannot be read (a redacted ``SXid (PCI:...)``) is judged on its node, the switch named as
unknown.  The same event in several logs of one bundle counts once; SXids logged only in an earlier boot
are a finding of their own ("in a previous boot (boot -1)"): a fatal one a warning (the switch's hardware),
the others info.  False positives: non-fatal SXids right after boot (link training) are common; hence info.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.kernel_events import (
    boot_words,
    columns_sql,
    distinct,
    previous_boot,
    previous_boot_action,
    previous_boot_severity,
)

RULE = RuleInfo(
    id="gpu.sxid",
    node_local=True,
    title="NVSwitch SXid errors in the kernel log",
    severity=Severity.CRITICAL,
    version=2,  # 2: an event in several logs counts once; events of earlier boots are findings of their own
    requires=("kernel_event",),
    passed="no NVSwitch SXid in the kernel log",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "reset the node; replace the baseboard if it recurs"
    ),
    severity_reason=(
        "Critical for a fatal SXid, after which NVLink traffic through that NVSwitch stops until the node is "
        "reset; non-fatal SXids are info and a warning once they repeat on one switch, SXids of unknown "
        "fatality a warning; logged only in an earlier boot, a fatal SXid a warning and the others info, the "
        "reboot since having reset the switch. Source: NVIDIA Fabric Manager user guide (NVSwitch fatal and "
        "non-fatal errors); ours: the repeat count, by analogy with gpu.xid, and the earlier-boot levels."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        SELECT {columns_sql()}, severity FROM kernel_event WHERE event_type = 'sxid'
        ORDER BY bundle_id, node, pci NULLS LAST, xid, source_file, line
        """
    )
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in distinct(rows):
        earlier = r["boot"] is not None and r["boot"] < 0  # logged before the node's last reboot
        groups.setdefault((r["bundle_id"], r["node"], r["pci"], r["xid"], earlier), []).append(r)
    repeat = ctx.threshold(RULE, "repeat_escalation")
    order = sorted(groups, key=lambda k: (k[1], k[2] is None, k[2] or "", k[3], k[4]))
    for bundle_id, node, pci, xid, earlier in order:
        events = groups[(bundle_id, node, pci, xid, earlier)]
        fatal = sum(1 for e in events if (e["severity"] or "").lower() == "fatal")
        nonfatal = sum(1 for e in events if (e["severity"] or "").lower() == "non-fatal")
        count = fatal + nonfatal or len(events)
        if fatal:
            severity, kind = Severity.CRITICAL, "fatal"
        elif nonfatal:
            severity = Severity.WARNING if nonfatal >= repeat else Severity.INFO
            kind = "non-fatal"
        else:
            severity, kind = Severity.WARNING, "unknown fatality"
        boots = previous_boot(events) if earlier else []
        route = RULE.route
        if boots:  # a fatal SXid is the switch's hardware: a warning still
            severity = previous_boot_severity(severity, hardware=bool(fatal))
            route = Route(route.owner, route.target, previous_boot_action(route.action))
        first, last = events[0], events[-1]
        evidence = [ctx.evidence(first["source_file"], first["line"])]
        if (last["source_file"], last["line"]) != (first["source_file"], first["line"]):
            evidence.append(ctx.evidence(last["source_file"], last["line"]))
        yield RULE.finding(
            severity=severity,
            node=node,
            message=(
                f"{node} NVSwitch {pci or '(unknown: no PCI address in the log)'} logged SXid"
                f" {xid} ({kind}) "
                f"{count}x" + (f" {boot_words(boots)}" if boots else "") + f", first at {first['ts_raw']}"
            ),
            params={
                "sxid": xid,
                "pci": pci,
                "count": count,
                "fatal": fatal,
                "non_fatal": nonfatal,
                "first_seen": first["ts_raw"],
                "last_seen": last["ts_raw"],
                **({"boot": boots[-1], "boots": boots} if boots else {}),
            },
            route=route if boots else None,
            evidence=evidence,
            bundle_id=bundle_id,
            key=(pci, xid) + (("previous boot",) if boots else ()),
        )
