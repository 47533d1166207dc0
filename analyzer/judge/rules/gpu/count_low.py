"""Fewer GPUs visible than the instance type has (a GPU missing from nvidia-smi).

Why it matters: a GPU that the driver no longer lists (fallen off the bus, failed init) leaves the node
unable to run an 8-GPU job; drain and replace (HyperPod performance-debugger skill; its details guide: "all 8
visible"; docs/sources.md#gpu-presence).  GPUs are counted from ``nvidia-smi -q``, else the ``--query-gpu``
CSV, else the plain ``nvidia-smi`` table; the expected count is ``sku.toml`` ``gpus`` for the node's instance
type.  A node whose instance type is unknown (absent from meta.env or not in sku.toml) is not judged: it gets
one info finding saying so.  Nodes without any nvidia-smi output are left to the bundle-gap rules.
Settling: fewer GPUs on a node collected within the settle window after its boot (analyzer.judge.signals.boot)
may be GPUs still initialising: info, with the boot time, not a fault.
False positives: a collector run with ``CUDA_VISIBLE_DEVICES`` set does not change nvidia-smi output.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.boot import settling_nodes
from analyzer.judge.signals.gpus import GpuState, gpu_states

RULE = RuleInfo(
    id="gpu.count.low",
    node_local=True,
    title="Fewer GPUs than the instance type has",
    severity=Severity.CRITICAL,
    requires=("node.instance_type",),
    requires_any=("gpu", "gpu_query", "smi_gpu"),
    passed="every node shows all the GPUs its instance type has",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    severity_reason=(
        "A node missing a GPU cannot run a full-node job and must be drained and replaced; info within the "
        "settle window after a boot (GPUs may still be initialising) or where the instance type has no "
        "expected count. Source: HyperPod performance-debugger skill (awslabs/agent-plugins: a missing GPU "
        "means drain and replace)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    seen: dict[tuple[str, str], list[GpuState]] = {}
    for s in gpu_states(ctx):
        seen.setdefault((s.bundle_id, s.node), []).append(s)
    for n in ctx.rows("SELECT bundle_id, node, instance_type FROM node ORDER BY node"):
        states = seen.get((n["bundle_id"], n["node"]))
        if not states:
            continue
        count = len({s.pci or s.uuid or s.index for s in states})
        sku = ctx.settings.instance(n["instance_type"]) or {}
        expected = sku.get("gpus")
        evidence = states[0].evidence(ctx, "row")
        if expected is None:
            yield RULE.finding(
                severity=Severity.INFO,
                node=n["node"],
                message=(
                    f"{n['node']}: GPU count not judged, instance type {n['instance_type'] or 'unknown'} "
                    f"has no expectation ({count} GPU(s) seen)"
                ),
                params={"seen": count, "instance_type": n["instance_type"], "source": states[0].source},
                evidence=evidence,
                bundle_id=n["bundle_id"],
                key=("not-judged",),
            )
            continue
        if count >= expected:
            continue
        boot = settling_nodes(ctx).get(n["bundle_id"])
        yield RULE.finding(
            severity=Severity.INFO if boot else None,
            node=n["node"],
            message=f"{n['node']}: {count} GPU(s) visible, a {n['instance_type']} has {expected}"
            + (f" — settling: {boot.describe()}, GPUs may still be initialising" if boot else ""),
            params={
                "seen": count,
                "expected": expected,
                "instance_type": n["instance_type"],
                "source": states[0].source,
                "settling": boot is not None,
                "boot_utc": boot.boot_utc if boot else None,
            },
            evidence=evidence,
            bundle_id=n["bundle_id"],
        )
