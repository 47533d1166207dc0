"""CPU frequency governor other than ``performance`` on a GPU node.

Why it matters: with ``powersave``/``ondemand`` the host CPUs clock down between bursts, adding latency
to kernel launches, data loading and NCCL proxy threads; the HyperPod performance-debugger skill § A lists CPU
frequency scaling as cause #4 of uneven NCCL bandwidth between nodes (docs/sources.md#host-kernel).  One
finding per node with the count of CPUs per governor.
Routing: the runbook is hyperpod-performance-debugger § A ("uneven NCCL", docs/sources.md#routes); the closed
owner list has no performance owner, so the closest is ``nccl-network``, who owns the uneven-NCCL
symptom this causes.  False positives: intel_pstate's ``powersave`` with HWP behaves better than the
legacy governor, but AWS guidance for training nodes is still ``performance``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="host.cpu.governor",
    cause_kind="setting",
    setting_keys=("governors",),
    node_local=True,
    title="CPU governor not 'performance'",
    severity=Severity.WARNING,
    requires=("cpu_governor.governor",),
    passed="every CPU on the performance governor",
    route=Route(
        "nccl-network",
        "hyperpod-performance-debugger § A",
        "set the governor to performance (cpupower frequency-set -g performance)",
    ),
    severity_reason=(
        "A powersave or ondemand governor slows kernel launches, data loading and NCCL proxy threads, which "
        "makes the node uneven, not broken. Source: HyperPod performance-debugger skill "
        "(awslabs/agent-plugins: cause 4 of uneven NCCL bandwidth)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    wanted = "performance"
    rows = ctx.rows(
        """
        SELECT bundle_id, node, lower(governor) AS governor, count(*) AS cpus,
               any_value(source_file) AS source_file, min(line) AS line
        FROM cpu_governor WHERE governor IS NOT NULL
        GROUP BY bundle_id, node, lower(governor) ORDER BY bundle_id, node, governor
        """
    )
    nodes: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        nodes.setdefault((r["bundle_id"], r["node"]), []).append(r)
    for (bundle_id, node), govs in nodes.items():
        other = [g for g in govs if g["governor"] != wanted]
        if not other:
            continue
        counts = {g["governor"]: g["cpus"] for g in govs}
        text = ", ".join(f"{n} CPU(s) {g}" for g, n in counts.items())
        yield RULE.finding(
            node=node,
            message=f"{node}: CPU governor is not {wanted}: {text}",
            params={"governors": counts, "expected": wanted},
            evidence=[ctx.evidence(g["source_file"], g["line"]) for g in other[:3]],
            bundle_id=bundle_id,
        )
