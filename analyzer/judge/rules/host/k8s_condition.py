"""A Kubernetes node condition says the node is not ready, or under pressure, or reports a problem.

What it detects (node_condition rows: the Conditions table of ``kubectl describe node``, the
``status.conditions`` of the node JSON; a HyperPod issue report's ``nodes_describe.txt`` on each node):

- ``Ready`` False or Unknown -> critical: the kubelet is not healthy, or has stopped posting the node's
  status (``NodeStatusUnknown``); Kubernetes taints the node not-ready / unreachable and evicts its pods.
  Any other condition named ``...Ready`` (the EKS node monitoring agent's ``AcceleratedHardwareReady``,
  ``NetworkingReady``, ``StorageReady``, ``KernelReady``, ``ContainerRuntimeReady``) False or Unknown
  -> critical as well: the agent's own verdict of that subsystem (EKS node auto repair acts on it).
- any other condition True -> warning: the kubelet's ``MemoryPressure``, ``DiskPressure``,
  ``PIDPressure`` (it evicts pods), ``NetworkUnavailable`` (the node's network is not set up),
  ``OutOfDisk`` of older releases, and the problems a node-problem-detector reports as conditions
  (``KernelDeadlock``, ``ReadonlyFilesystem``, ``FrequentKubeletRestart``, ``CorruptDockerOverlay2``, or
  a custom one such as ``XIDError``): by their convention a problem condition is True when present.

Each finding quotes the condition's reason and message and cites its line.  A problem condition that
is Unknown is no finding of its own: it goes with ``Ready`` Unknown (the kubelet stopped posting every
condition).  A placement output that describes several Kubernetes nodes is judged on the one this node
is (its name, host name or instance id in the Kubernetes name); none of them: not examined.

Why it matters: conditions are the kubelet's and the node agents' view of the node; a node not Ready
takes no pods and its running pods are evicted, whatever the GPUs say (Kubernetes documentation "Node
status: conditions"; node-problem-detector README; Amazon EKS node health documentation;
docs/sources.md#health-checks).  False positives: conditions are a snapshot when the report was made.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="host.k8s.condition",
    node_local=True,
    title="Kubernetes node condition: not ready, under pressure, or a problem reported",
    severity=Severity.CRITICAL,
    requires=("node_condition.type",),
    passed="every Kubernetes node condition reads healthy",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § F",
        "read the condition's reason; restart kubelet or recover the node",
    ),
    severity_reason=(
        "Critical when Ready (or an agent's ...Ready condition) is False or Unknown: Kubernetes schedules "
        "nothing on the node and evicts its pods; warning for a pressure or problem condition that is True "
        "(the kubelet evicts pods under pressure; a node-problem-detector condition names a lasting problem). "
        "Source: Kubernetes node status documentation; node-problem-detector README; Amazon "
        "EKS node health documentation."
    ),
)

#: word in the condition's type -> the owner it goes to (first match), else the rule's route
_ROUTES = (
    (("network",), Route("nccl-network", "hyperpod-node-debugger § A", "check the node's network and CNI")),
    (("disk", "storage", "readonly"), Route(
        "filesystem-capacity", "hyperpod-node-debugger § F", "free or repair the node's disk")),
)  # fmt: skip


def _bad(row: dict[str, Any]) -> Severity | None:
    kind, status = str(row["type"]), str(row["status"] or "").lower()
    if kind.endswith("Ready"):
        return Severity.CRITICAL if status in ("false", "unknown") else None
    return Severity.WARNING if status == "true" else None


def check(ctx: Context) -> Iterable[Finding]:
    nodes = {
        (n["bundle_id"], n["node"]): n
        for n in ctx.rows("SELECT bundle_id, node, hostname, instance_id FROM node")
    }
    rows = ctx.rows(
        "SELECT bundle_id, node, node_name, type, status, reason, message, last_transition_time, "
        "source_file, line FROM node_condition ORDER BY bundle_id, node, line"
    )
    per_node: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        per_node.setdefault((r["bundle_id"], r["node"]), []).append(r)
    for (bundle_id, node), found in per_node.items():
        names = {r["node_name"] for r in found}
        if len(names) > 1:
            me = nodes.get((bundle_id, node), {})
            marks = [str(m).lower() for m in (node, me.get("hostname"), me.get("instance_id")) if m]
            names = {n for n in names if n and any(m in n.lower() for m in marks)}
            if len(names) != 1:
                ctx.not_judged(
                    [node], "the Kubernetes describe names several nodes, none of them as this one"
                )
                continue
        for r in found:
            if r["node_name"] not in names or (severity := _bad(r)) is None:
                continue
            route = next(
                (rt for words, rt in _ROUTES if any(w in r["type"].lower() for w in words)), RULE.route
            )
            why = ": ".join(str(x) for x in (r["reason"], r["message"]) if x) or "no reason given"
            yield RULE.finding(
                severity=severity,
                node=node,
                message=f"{node}: Kubernetes condition {r['type']}={r['status']} ({why})",
                params={
                    "condition": r["type"],
                    "status": r["status"],
                    "reason": r["reason"],
                    "message": r["message"],
                    "since": r["last_transition_time"],
                },
                route=route,
                evidence=[ctx.evidence(r["source_file"], r["line"])],
                bundle_id=bundle_id,
                key=(r["type"],),
            )
