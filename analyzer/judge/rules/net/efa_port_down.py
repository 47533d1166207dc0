"""An EFA (RDMA) port whose state is not ACTIVE.

Why it matters: a port that is DOWN, INIT or ARMED carries no traffic; NCCL then runs on the remaining
devices at reduced bandwidth or falls back to TCP.  Read from sysfs ``ports/*/state``, ``ibstat`` or
``ibv_devinfo``; one finding per node, device and port even when several sources list it.
Only EFA devices (``efa_port.is_efa``): a DOWN port of a soft-RoCE or Mellanox device is not an EFA
port (net.efa.count_low says when a node has no EFA device at all).
False positives: a capture taken while the driver was still loading (INIT right after boot).
Reference: docs/sources.md#efa-devices (mfu-debugger network guide and straggler step: anything other than
``4: ACTIVE``).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="net.efa.port_down",
    node_local=True,
    title="EFA port not ACTIVE",
    severity=Severity.CRITICAL,
    requires=("efa_port.state",),
    passed="every EFA port ACTIVE",
    route=Route(
        "nccl-network",
        "hyperpod-node-debugger § A",
        "reload the efa driver or reboot; replace if it stays down",
    ),
    severity_reason=(
        "A port that is not ACTIVE carries no traffic, so NCCL runs on fewer EFA devices at reduced "
        "bandwidth or falls back to TCP: reload the driver or replace the node. Source: HyperPod "
        "mfu-debugger network guide (awslabs/agent-plugins: anything other than 4: ACTIVE) and AWS EFA "
        "documentation."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        SELECT bundle_id, node, device, port,
               string_agg(DISTINCT state, '/' ORDER BY state) AS states,
               string_agg(DISTINCT phys_state, '/' ORDER BY phys_state) AS phys,
               list(DISTINCT source ORDER BY source) AS sources,
               arg_min(source_file, line) AS source_file, min(line) AS line
        FROM efa_port
        WHERE state IS NOT NULL AND state <> 'ACTIVE' AND coalesce(is_efa, true)
        GROUP BY ALL ORDER BY node, device, port
        """
    )
    for r in rows:
        message = f"{r['node']} EFA device {r['device']} port {r['port']} is {r['states']}" + (
            f" (physical state {r['phys']})" if r["phys"] else ""
        )
        yield RULE.finding(
            node=r["node"],
            message=message,
            params={
                "device": r["device"],
                "port": r["port"],
                "state": r["states"],
                "phys_state": r["phys"],
                "sources": r["sources"],
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["device"], r["port"]),
        )
