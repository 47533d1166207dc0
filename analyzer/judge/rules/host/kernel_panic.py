"""Kernel panics, soft/hard lockups, machine-check (MCE) errors and hardware NMIs in the kernel log.

Why it matters: a panic or lockup means the node crashed or stalled (every rank on it stopped); an MCE
is the CPU or memory reporting a hardware error.  P0 (node-debugger triage script; node-debugger diagnostics
guide § N: machine checks mean replace, "NMI received" is critical, § F; docs/sources.md#host-kernel).  One
finding per node and kind, with the count and first/last time.
False positives: a lockup warning during a very long kernel operation can be benign once; a repeat
is not.  Hung tasks are a separate, milder rule (``host.hung_task``).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.host._events import events_per_node, when

RULE = RuleInfo(
    id="host.kernel.panic",
    node_local=True,
    title="Kernel panic, lockup or machine-check error",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    passed="no kernel panic, lockup or machine check in the log",
    route=Route("node-hardware", "hyperpod-node-debugger § N", "reboot; replace if it recurs"),
    severity_reason=(
        "A panic, lockup, machine check or hardware NMI means the node crashed, stalled or reported a CPU or "
        "memory hardware error and every rank on it stopped: reboot, replace if it recurs. Source: HyperPod "
        "node-debugger skill and its triage script (awslabs/agent-plugins, kernel section, P0)."
    ),
)

_WHAT = {
    "kernel_panic": "kernel panic / BUG",
    "soft_lockup": "CPU lockup",
    "mce": "machine-check hardware error",
    "nmi": "hardware NMI",
}


def check(ctx: Context) -> Iterable[Finding]:
    for r in events_per_node(ctx, tuple(_WHAT)):
        route = RULE.route
        if r["event_type"] in ("mce", "nmi"):
            route = Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace")
        evidence = [ctx.evidence(r["source_file"], r["first_line"])]
        if r["last_line"] != r["first_line"]:
            evidence.append(ctx.evidence(r["source_file"], r["last_line"]))
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']}: {_WHAT[r['event_type']]} logged {r['n']}x{when(r)}: {r['first_message']}",
            params={
                "event": r["event_type"],
                "count": r["n"],
                "first_seen": r["first_seen"],
                "last_seen": r["last_seen"],
                **r["first_at"].params(),
            },
            route=route,
            evidence=evidence,
            bundle_id=r["bundle_id"],
            key=(r["event_type"],),
        )
