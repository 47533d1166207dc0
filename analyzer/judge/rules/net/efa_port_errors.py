"""EFA port error counters are not zero.

Why it matters: receive errors and transmit discards on an EFA port mean packets are lost or dropped;
EFA recovers them, but the retransmissions slow every collective that crosses this node, which makes
it a straggler before anything fails (mfu-debugger network guide and straggler step: non-zero -> warning;
docs/sources.md#efa-devices).  Read from sysfs ``ports/*/counters/port_rcv_errors`` and
``port_xmit_discards``.
False positives: the counters are cumulative since the driver loaded; a few errors on a node up for
months matter less than many on a fresh one (the message gives the numbers, ``host_uptime`` has the age).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="net.efa.port_errors",
    node_local=True,
    title="EFA port error counters not zero",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("efa_port.rcv_errors", "efa_port.xmit_discards"),
    passed="EFA port error counters within the limit",
    route=Route(
        "nccl-network",
        "hyperpod-nccl debugging-guide; hyperpod-node-debugger § A",
        "watch the counters grow under load; replace the node if they do",
    ),
    severity_reason=(
        "Receive errors and transmit discards are recovered by retransmission, so results stay correct but "
        "the node becomes a straggler; watch whether the counters grow under load. Source: HyperPod "
        "mfu-debugger network and straggler guides (awslabs/agent-plugins: non-zero counters are a warning)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    limit = ctx.threshold(RULE, "max_errors")
    rows = ctx.rows(
        """
        SELECT bundle_id, node, device, port, max(rcv_errors) AS rcv, max(xmit_discards) AS discards,
               min(source_file) AS source_file, min(line) AS line
        FROM efa_port WHERE coalesce(rcv_errors, 0) > ? OR coalesce(xmit_discards, 0) > ?
        GROUP BY ALL ORDER BY node, device, port
        """,
        limit,
        limit,
    )
    for r in rows:
        yield RULE.finding(
            node=r["node"],
            message=(
                f"{r['node']} EFA {r['device']} port {r['port']}: {r['rcv'] or 0} receive errors, "
                f"{r['discards'] or 0} transmit discards"
            ),
            params={
                "device": r["device"],
                "port": r["port"],
                "rcv_errors": r["rcv"],
                "xmit_discards": r["discards"],
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["device"], r["port"]),
        )
