"""HyperPod health labels on a Kubernetes node say it failed (or is in) deep health checks.

What it detects (placement_fact rows from ``kubectl get node -o json`` / ``kubectl describe node``,
label keys kept as printed):

- ``sagemaker.amazonaws.com/deep-health-check-status=Failed`` -> critical
- ``sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReplacement`` -> critical,
  ``UnschedulablePendingReboot`` -> warning, ``Unschedulable`` -> info (deep checks are running, about
  two hours; the node takes no work meanwhile)
- ``sagemaker.amazonaws.com/fault-type`` set -> warning, with ``fault-reason`` quoted when present;
  a network fault type (NetworkFaultType) goes to the EFA owner, anything else to node hardware.

Why it matters: these labels are HyperPod's own verdict (deep health checks and the health-monitoring
agent); a node marked for replacement or reboot should not be debugged further, and with automatic
node recovery it will be replaced or rebooted anyway (HyperPod node-debugger skill, NCCL
diagnose script; AWS docs "Resilience-related Kubernetes labels by SageMaker HyperPod";
docs/sources.md#health-checks).
False positives: labels are a snapshot taken when the bundle was collected; a node may have been
recovered since.  Schedulable / Passed / InProgress raise nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="host.deep_health.failed",
    title="HyperPod deep health check failed / node marked for recovery",
    severity=Severity.CRITICAL,
    requires=("placement_fact.key",),
    passed="no HyperPod health label reports a failure",
    route=Route(
        "node-hardware", "hyperpod-node-debugger § F", "let HyperPod recover the node, or reboot / replace it"
    ),
    severity_reason=(
        "Critical when HyperPod itself failed the node's deep health checks or marked it for replacement: it "
        "must take no work; warning when it waits for a reboot or a fault type is set, info while deep "
        "checks still run (about two hours). Source: AWS SageMaker HyperPod documentation "
        "(resilience-related Kubernetes labels, deep health checks)."
    ),
)

_PREFIX = "sagemaker.amazonaws.com/"
#: (label, value) -> severity and what it means
_STATES = {
    ("deep-health-check-status", "failed"): (Severity.CRITICAL, "failed HyperPod deep health checks"),
    ("node-health-status", "unschedulablependingreplacement"): (
        Severity.CRITICAL, "failed health checks and is waiting to be replaced"),
    ("node-health-status", "unschedulablependingreboot"): (
        Severity.WARNING, "failed health checks and is waiting to be rebooted"),
    ("node-health-status", "unschedulable"): (
        Severity.INFO, "is running deep health checks (about {hours} h) and takes no work meanwhile"),
}  # fmt: skip
_NETWORK = Route(
    "nccl-network", "hyperpod-node-debugger § A", "check EFA and the security groups of the node"
)


def check(ctx: Context) -> Iterable[Finding]:
    hours = ctx.threshold(RULE, "deep_check_hours")
    rows = ctx.rows(
        "SELECT bundle_id, node, key, value, source_file, line FROM placement_fact "
        "WHERE lower(key) LIKE ? AND value IS NOT NULL AND trim(value) <> '' ORDER BY node, line",
        _PREFIX + "%",
    )
    labels: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        labels.setdefault((r["bundle_id"], r["node"]), {}).setdefault(r["key"].lower()[len(_PREFIX) :], r)
    for (bundle_id, node), found in labels.items():
        for name in ("deep-health-check-status", "node-health-status"):
            state = found.get(name)
            hit = _STATES.get((name, state["value"].strip().lower())) if state else None
            if state is None or hit is None:
                continue
            severity, meaning = hit
            yield _label_finding(
                ctx, bundle_id, node, state, severity, meaning.format(hours=hours), RULE.route
            )
        fault = found.get("fault-type") or found.get("fault-types")
        if fault is not None and fault["value"].strip().lower() not in ("none", "null"):
            reason = found.get("fault-reason") or found.get("fault-reasons")
            text = f"reports fault type {fault['value']}" + (f" ({reason['value']})" if reason else "")
            route = _NETWORK if "network" in fault["value"].lower() else RULE.route
            yield _label_finding(ctx, bundle_id, node, fault, Severity.WARNING, text, route, reason)


def _label_finding(
    ctx: Context,
    bundle_id: str,
    node: str,
    r: dict[str, Any],
    severity: Severity,
    meaning: str,
    route: Route,
    extra: dict[str, Any] | None = None,
) -> Finding:
    """A finding quoting one health label (and, as ``extra``, the label that explains it)."""
    evidence = [ctx.evidence(r["source_file"], r["line"])]
    if extra is not None:
        evidence.append(ctx.evidence(extra["source_file"], extra["line"]))
    return RULE.finding(
        severity=severity,
        node=node,
        message=f"{node}: label {r['key']}={r['value']}: the node {meaning}",
        params={"label": r["key"], "value": r["value"], "detail": extra["value"] if extra else None},
        route=route,
        evidence=evidence,
        bundle_id=bundle_id,
        key=(r["key"],),
    )
