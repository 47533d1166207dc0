"""The kernel OOM killer ended processes on the node (host memory exhausted).

Why it matters: an OOM kill takes out a training rank (or a daemon the node needs); the job fails and
the cause is host memory, not the GPU (node-debugger triage script, P1; node-debugger diagnostics
guide § I.3; docs/sources.md#host-kernel).  One finding
per node with the count and the killed processes.
Routing: the runbook is hyperpod-node-debugger § I (Resource Exhaustion); the closed owner list has no
"host resources" owner, so it goes to node-hardware, the owner of the node-debugger runbook.
False positives: none; an OOM kill always happened, though it may be old (the time is shown).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.host._events import process_findings

RULE = RuleInfo(
    id="host.oom",
    node_local=True,
    title="Processes killed by the OOM killer",
    severity=Severity.WARNING,
    requires=("kernel_event",),
    passed="no process killed by the OOM killer",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § I",
        "reduce host memory use (workers, batch, pinned memory)",
    ),
    severity_reason=(
        "An OOM kill ended a process, often a training rank, because host memory ran out; the node itself is "
        "sound and the fix is memory use, to make before the next run. Source: HyperPod node-debugger skill "
        "(awslabs/agent-plugins: resource exhaustion, P1)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    return process_findings(ctx, RULE, "oom_kill", "OOM killer ended {n} process(es)")
