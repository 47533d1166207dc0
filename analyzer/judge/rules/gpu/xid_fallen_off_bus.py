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
number).
False positives: none known.
Reference: NVIDIA Xid catalog, Xid 79 (docs/sources.md#xid-catalog).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu.xid import gpu_where
from analyzer.judge.signals.gpus import GPU_BY_PCI
from analyzer.judge.signals.kernel_time import KernelClock, span, stamp_sql
from analyzer.judge.xid_catalog import assess, xid_entry

RULE = RuleInfo(
    id="gpu.xid.fallen_off_bus",
    title="GPU fallen off the bus (Xid 79)",
    severity=Severity.CRITICAL,
    version=2,  # 2: actions and severities follow NVIDIA's Xid catalog buckets
    requires=("kernel_event",),
    passed="no GPU fell off the bus (no Xid 79) in the kernel log",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "reboot the node; replace it if it falls off again"
    ),
    severity_reason=(
        "A GPU off the bus answers nothing and every job on the node fails, so the node cannot run work "
        "until it is restarted, and a second fall on the same GPU means replace it. Source: NVIDIA Xid "
        "catalog (docs.nvidia.com/deploy/xid-errors): Xid 79 immediate action RESTART_BM, investigatory "
        "CONTACT_SUPPORT."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        WITH g AS ({GPU_BY_PCI})
        SELECT e.bundle_id, e.node, e.pci, CASE WHEN e.pci IS NULL THEN e.gpu_index END AS gpu_index,
               any_value(g.gpu) AS gpu, count(*) AS n,
               count(*) FILTER (WHERE e.event_type = 'xid') AS n_xid,
               count(*) FILTER (WHERE e.event_type = 'fallen_off_bus') AS n_text,
               arg_min(e.line, e.line) AS first_line, arg_max(e.line, e.line) AS last_line,
               arg_min({stamp_sql("e")}, e.line) AS first_stamp,
               arg_max({stamp_sql("e")}, e.line) AS last_stamp,
               any_value(e.source_file) AS source_file
        FROM kernel_event e LEFT JOIN g ON g.bundle_id = e.bundle_id AND g.pci = e.pci
        WHERE e.event_type = 'fallen_off_bus' OR (e.event_type = 'xid' AND e.xid = 79)
        GROUP BY ALL ORDER BY e.node, e.pci NULLS LAST, gpu_index NULLS LAST
        """
    )
    repeat = ctx.threshold(RULE, "repeat_escalation")
    entry = xid_entry(79)
    clock = KernelClock.load(ctx)
    for r in rows:
        first, last = clock.at(r["bundle_id"], r["first_stamp"]), clock.at(r["bundle_id"], r["last_stamp"])
        times = span(first, last)
        judged = assess(79, count=max(r["n_xid"], r["n_text"]), repeat=repeat)
        where = gpu_where(r["node"], r["gpu"], r["pci"], r["gpu_index"])
        evidence = [ctx.evidence(r["source_file"], r["first_line"])]
        if r["last_line"] != r["first_line"]:
            evidence.append(ctx.evidence(r["source_file"], r["last_line"]))
        yield RULE.finding(
            node=r["node"],
            gpu=r["gpu"],
            message=(
                f"{where} has fallen off the bus (Xid 79), {r['n']} event(s)"
                + (f" at {times}" if times else "")
            ),
            params={
                "xid": 79,
                "pci": r["pci"],
                **({"gpu_index": r["gpu_index"]} if r["gpu_index"] is not None else {}),
                "count": r["n"],
                "first_seen": first.seen,
                "last_seen": last.seen,
                **first.params(),
                "immediate": judged.immediate,
                "investigatory": judged.investigatory,
                "recurring": judged.recurring,
                "class": entry.cause_class,
            },
            severity=judged.severity,
            route=Route(RULE.route.owner, RULE.route.target, judged.action),
            evidence=evidence,
            bundle_id=r["bundle_id"],
            key=(r["pci"],) if r["gpu_index"] is None else (r["pci"], r["gpu_index"]),
        )
