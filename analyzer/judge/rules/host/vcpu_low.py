"""Fewer vCPUs online than the instance type has (p5: 96 instead of 192).

Why it matters: an instance group created with ThreadsPerCore = 1 runs on half the vCPUs; data loaders
and NCCL proxy threads compete for fewer cores (node-debugger diagnostics guide § J, issue catalog § 5.1;
docs/sources.md#host-kernel).  The
count is meta.env ``nproc``; the expectation is ``sku.toml`` ``vcpus`` for the node's instance type.
Nodes without either are not judged.  Routing: node-debugger § J (instance-group configuration), owned
by node-hardware in the closed owner list.  False positives: a deliberate ThreadsPerCore = 1 choice.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="host.vcpu.low",
    cause_kind="setting",
    setting_keys=("nproc", "expected"),
    node_local=True,
    title="Fewer vCPUs than the instance type has",
    severity=Severity.WARNING,
    requires=("node.instance_type", "node.nproc"),
    passed="every node has the vCPUs its instance type has",
    route=Route("node-hardware", "hyperpod-node-debugger § J", "check ThreadsPerCore in the instance group"),
    severity_reason=(
        "A node on half its vCPUs (ThreadsPerCore = 1) runs jobs correctly but starves data loaders and NCCL "
        "proxy threads; fix the instance group when convenient. Source: HyperPod node-debugger skill "
        "(awslabs/agent-plugins, instance-group configuration) and AWS EC2 CPU options documentation."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    for n in ctx.rows(
        "SELECT bundle_id, node, instance_type, nproc FROM node WHERE nproc IS NOT NULL ORDER BY node"
    ):
        expected = (ctx.settings.instance(n["instance_type"]) or {}).get("vcpus")
        if not expected or n["nproc"] >= expected:
            continue
        evidence = [ctx.meta_evidence(n["node"], "nproc")]
        yield RULE.finding(
            node=n["node"],
            message=f"{n['node']}: {n['nproc']} vCPUs online, a {n['instance_type']} has {expected}",
            params={"nproc": n["nproc"], "expected": expected, "instance_type": n["instance_type"]},
            evidence=evidence,
            bundle_id=n["bundle_id"],
        )
