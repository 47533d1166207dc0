"""The kernel OOM killer ended processes on the node (host memory exhausted).

Why it matters: an OOM kill takes out a training rank (or a daemon the node needs); the job fails and
the cause is host memory, not the GPU (rules-facts HOST-OOM: ND-TRIAGE, ND-DET I.3, P1).  One finding
per node with the count and the killed processes.
Routing: the runbook is hyperpod-node-debugger § I (Resource Exhaustion); the closed owner list has no
"host resources" owner, so it goes to node-hardware, the owner of the node-debugger runbook.
False positives: none; an OOM kill always happened, though it may be old (the time is shown).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Finding, Route, Severity
from analyzer.rules.host._events import events_per_node, when

RULE = RuleInfo(
    id="host.oom",
    title="Processes killed by the OOM killer",
    severity=Severity.WARNING,
    requires=("kernel_event",),
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § I",
        "reduce host memory use (workers, batch, pinned memory)",
    ),
    docs="docs/rules.md#hostoom",
)


def check(ctx: Context) -> Iterable[Finding]:
    for r in events_per_node(ctx, ("oom_kill",)):
        procs = sorted(r["processes"] or [])
        yield Finding(
            rule=RULE.id,
            rule_version=RULE.version,
            severity=RULE.severity,
            node=r["node"],
            gpu=None,
            message=f"{r['node']}: OOM killer ended {r['n']} process(es){when(r)}: {', '.join(procs) or 'unknown'}",
            params={
                "count": r["n"],
                "processes": procs,
                "first_seen": r["first_seen"],
                "last_seen": r["last_seen"],
            },
            route=RULE.route,
            evidence=[ctx.evidence(r["source_file"], r["first_line"])],
            bundle_id=r["bundle_id"],
        )
