"""Hung tasks: processes blocked in the kernel for more than the hung-task timeout (120 s by default).

Why it matters: a task stuck in uninterruptible sleep usually waits on storage (Lustre/NFS/EBS) or a
driver; training ranks stuck this way stall the job (the node-debugger triage script lists ``hung_task`` with
the panics; node-debugger diagnostics guide § N; docs/sources.md#host-kernel).  Reported as a warning (not
critical like a panic) because the node usually recovers when the I/O completes.  One finding per node with
the count and the task names.
False positives: a burst during a heavy checkpoint write to a slow file system.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.host._events import process_findings

RULE = RuleInfo(
    id="host.hung_task",
    node_local=True,
    title="Hung tasks in the kernel log",
    severity=Severity.WARNING,
    requires=("kernel_event",),
    passed="no hung task reported in the kernel log",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § N", "find what the tasks wait on (storage, driver)"
    ),
    severity_reason=(
        "A task blocked past the kernel's hung-task timeout stalls the job, but the node usually recovers "
        "once the I/O or driver call completes. Source: HyperPod node-debugger skill (awslabs/agent-plugins, "
        "kernel section); ours: warning rather than the P0 its triage script gives, for that reason."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    return process_findings(ctx, RULE, "hung_task", "{n} hung task report(s)")
