"""GPU temperature at or above the alarm lines.

Why it matters: a hot GPU throttles its clocks (H100: software slowdown near 88 °C, hardware slowdown
near 92 °C), slows the whole job to its pace and, if it persists, points at cooling trouble in the
chassis (docs/sources.md#gpu-thermal).  Lines: >= 85 °C warning (performance-debugger snapshot
script), >= 92 °C critical (mfu-debugger node diagnostics, the H100 HW-throttle line); other sources
say > 80 °C (node-debugger issue catalog § 2.3) or 83/88 (mfu-debugger node diagnostics), recorded as ``alt``
(docs/sources.md#where-sources-disagree).  Read from ``-q``, else the CSV, else the plain ``nvidia-smi``
table.
False positives: a single snapshot during a heavy kernel can read high; compare with peers.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import gpu_states

RULE = RuleInfo(
    id="gpu.temperature.high",
    node_local=True,
    title="GPU temperature high",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("gpu.temp_c", "gpu_query.temp_c", "smi_gpu.temp_c"),
    passed="every GPU below the temperature warning line",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "check cooling; drain if it persists"),
    severity_reason=(
        "Critical from 92 °C, where an H100 enters hardware slowdown and the whole job runs at its pace; "
        "warning from 85 °C, where cooling is at risk but clocks still hold. Source: HyperPod mfu-debugger "
        "node diagnostics (awslabs/agent-plugins: 92 °C hardware slowdown) and HyperPod performance-debugger "
        "skill (85 °C flag)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    warn, crit = ctx.threshold(RULE, "warning_c"), ctx.threshold(RULE, "critical_c")
    for s in gpu_states(ctx):
        temp = s.get("temp_c")
        if temp is None or temp < warn:
            continue
        severity = Severity.CRITICAL if temp >= crit else Severity.WARNING
        yield RULE.finding(
            severity=severity,
            node=s.node,
            gpu=s.index,
            message=f"{s.label} is at {temp:g} °C (warning at {warn} °C, critical at {crit} °C)",
            params={"pci": s.pci, "temp_c": temp, "warning_c": warn, "critical_c": crit, "source": s.source},
            evidence=s.evidence(ctx, "temp_c"),
            bundle_id=s.bundle_id,
            key=(s.pci,),
        )
