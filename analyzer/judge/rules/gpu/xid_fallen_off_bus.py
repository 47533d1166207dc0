"""A GPU that has "fallen off the bus" (Xid 79): the PCIe link to the GPU is lost.

Why it matters: the GPU no longer answers the driver and every job on the node fails.  NVIDIA's
Xid catalog gives Xid 79 the immediate bucket RESTART_BM (restart the machine; on HyperPod a node reboot,
which its auto-recovery does) and the investigatory bucket CONTACT_SUPPORT, so the action is "reboot"; only
when the GPU falls off the bus again (``repeat_escalation`` Xid 79 events on the same GPU in one bundle: a GPU
off the bus logs nothing more until it is back) does it become "replace the node" (the node-debugger issue
catalog § 2.1 and the performance-debugger details guide say drain and replace at once; NVIDIA's catalog is
followed here: docs/sources.md#where-sources-disagree).  Reported apart from ``gpu.xid`` so it stands out.
Both the Xid 79 line and the multi-line NVRM "fallen off the bus" message count; they are one finding per GPU,
and one event when they come together.  An Xid 79 line whose device the log does not give as an address (a
redacted ``Xid (PCI:...)``) is one more finding on its node, naming the GPU as unknown (or by the driver's
number).  The same event in several logs of one bundle counts once; Xid 79 logged only in an earlier boot
(``journalctl -b -1`` of a bug report) is a finding of its own, "in a previous boot (boot -1)", at warning:
the reboot since brought the GPU back, but a GPU that fell off the bus once may again.
False positives: none known.
Reference: NVIDIA Xid catalog, Xid 79 (docs/sources.md#xid-catalog).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu.xid import gpu_where
from analyzer.judge.signals.gpus import GPU_BY_PCI
from analyzer.judge.signals.kernel_events import (
    boot_words,
    columns_sql,
    distinct,
    previous_boot,
    previous_boot_action,
    previous_boot_severity,
)
from analyzer.judge.signals.kernel_time import KernelClock, span, stamp_sql
from analyzer.judge.xid_catalog import assess, xid_entry

RULE = RuleInfo(
    id="gpu.xid.fallen_off_bus",
    node_local=True,
    title="GPU fallen off the bus (Xid 79)",
    severity=Severity.CRITICAL,
    version=3,  # 3: an event in several logs counts once; events of earlier boots are findings of their own
    requires=("kernel_event",),
    passed="no GPU fell off the bus (no Xid 79) in the kernel log",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "reboot the node; replace it if it falls off again"
    ),
    severity_reason=(
        "A GPU off the bus answers nothing and every job on the node fails, so the node cannot run work "
        "until it is restarted, and a second fall on the same GPU means replace it; logged only in an "
        "earlier boot, a warning: the reboot since brought it back, but the fault is the hardware's (ours). "
        "Source: NVIDIA Xid "
        "catalog (docs.nvidia.com/deploy/xid-errors): Xid 79 immediate action RESTART_BM, investigatory "
        "CONTACT_SUPPORT."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        WITH g AS ({GPU_BY_PCI})
        SELECT {columns_sql("e")}, g.gpu, {stamp_sql("e")} AS stamp
        FROM kernel_event e LEFT JOIN g ON g.bundle_id = e.bundle_id AND g.pci = e.pci
        WHERE e.event_type = 'fallen_off_bus' OR (e.event_type = 'xid' AND e.xid = 79)
        ORDER BY e.bundle_id, e.node, e.pci NULLS LAST, e.gpu_index NULLS LAST, e.source_file, e.line
        """
    )
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in distinct(rows):
        index = r["gpu_index"] if r["pci"] is None else None
        earlier = r["boot"] is not None and r["boot"] < 0  # logged before the node's last reboot
        groups.setdefault((r["bundle_id"], r["node"], r["pci"], index, earlier), []).append(r)
    repeat = ctx.threshold(RULE, "repeat_escalation")
    entry = xid_entry(79)
    clock = KernelClock.load(ctx)
    order = sorted(groups, key=lambda k: (k[1], k[2] is None, k[2] or "", k[3] is None, k[3] or 0, k[4]))
    for bundle_id, node, pci, index, earlier in order:
        events = groups[(bundle_id, node, pci, index, earlier)]
        n_xid = sum(1 for e in events if e["event_type"] == "xid")
        first_event, last_event = events[0], events[-1]
        first, last = clock.at(bundle_id, first_event["stamp"]), clock.at(bundle_id, last_event["stamp"])
        times = span(first, last)
        judged = assess(79, count=max(n_xid, len(events) - n_xid), repeat=repeat)
        severity, action = judged.severity, judged.action
        boots = previous_boot(events) if earlier else []
        if boots:  # Xid 79 points at the hardware: a warning still, not dropped below
            severity, action = previous_boot_severity(severity, hardware=True), previous_boot_action(action)
        where = gpu_where(node, first_event["gpu"], pci, index)
        evidence = [ctx.evidence(first_event["source_file"], first_event["line"])]
        if (last_event["source_file"], last_event["line"]) != (
            first_event["source_file"],
            first_event["line"],
        ):
            evidence.append(ctx.evidence(last_event["source_file"], last_event["line"]))
        yield RULE.finding(
            node=node,
            gpu=first_event["gpu"],
            message=(
                f"{where} has fallen off the bus (Xid 79), {len(events)} event(s)"
                + (f" {boot_words(boots)}" if boots else "")
                + (f" at {times}" if times else "")
            ),
            params={
                "xid": 79,
                "pci": pci,
                **({"gpu_index": index} if index is not None else {}),
                "count": len(events),
                "first_seen": first.seen,
                "last_seen": last.seen,
                **first.params(),
                "immediate": judged.immediate,
                "investigatory": judged.investigatory,
                "recurring": judged.recurring,
                "class": entry.cause_class,
                **({"boot": boots[-1], "boots": boots} if boots else {}),
            },
            severity=severity,
            route=Route(RULE.route.owner, RULE.route.target, action),
            evidence=evidence,
            bundle_id=bundle_id,
            key=((pci,) if index is None else (pci, index)) + (("previous boot",) if boots else ()),
        )
