"""NCCL carried inter-node traffic over TCP sockets instead of EFA.

Why it matters: NCCL silently falls back to ``NET/Socket`` (or aws-ofi-nccl to the libfabric ``tcp``
provider) when EFA or the plugin is unusable; collectives then run 10-100x slower.  Detected from the
run's resolved transport (``socket``, ``ofi-tcp``) or ``TCP_FALLBACK`` log events (``NET/OFI Using
TCP``, ``Using network Socket``).  False positives: single-node runs never use the network; the parser
only marks ``NET/Socket : Using`` lines as a fallback when the run's transport resolved to socket.
Reference: docs/sources.md#aws-ofi-nccl (NCCL debugging guide § 13, NCCL error-patterns quick reference,
mfu-debugger network guide).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals.nccl import node_rows

RULE = RuleInfo(
    id="nccl.transport.tcp_fallback",
    cause_kind="setting",
    setting_keys=("transport", "provider"),
    title="NCCL fell back to TCP sockets",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("nccl_run.net_transport", "nccl_transport", "nccl_log_event"),
    passed="no TCP fallback seen in NCCL logs",
    route=Route(
        "nccl-network",
        "hyperpod-nccl debugging-guide § 13",
        "restore EFA: device plugin, FI_PROVIDER, aws-ofi-nccl",
    ),
    severity_reason=(
        "Inter-node collectives over TCP sockets run 10-100x slower than over EFA, so the job cannot run at "
        "its scale until EFA is restored. Source: HyperPod NCCL debugging guide (awslabs/agent-plugins, TCP "
        "fallback) and AWS EFA documentation (NCCL over EFA with aws-ofi-nccl)."
    ),
)

TCP_TRANSPORTS = ("socket", "ofi-tcp")


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        WITH ev AS (
            SELECT bundle_id, source_file, count(*) AS events, min(line) AS first_line,
                   list(DISTINCT host) FILTER (WHERE host IS NOT NULL) AS hosts
            FROM nccl_log_event WHERE code = 'TCP_FALLBACK' GROUP BY ALL
        )
        SELECT r.bundle_id, r.node, r.source_file, r.line, r.net_transport, r.net_provider,
               coalesce(ev.events, 0) AS events, ev.first_line, ev.hosts
        FROM (SELECT * FROM nccl_run WHERE run = 1) r LEFT JOIN ev USING (bundle_id, source_file)
        WHERE r.net_transport IN {TCP_TRANSPORTS} OR ev.events > 0
        ORDER BY r.bundle_id, r.source_file
        """
    )
    index = HostIndex(node_rows(ctx))
    for r in rows:
        nodes = sorted({index.match(h) or h for h in r["hosts"] or []})
        node = r["node"] or (nodes[0] if len(nodes) == 1 else None)
        transport = r["net_transport"] or "unresolved"
        message = (
            f"NCCL on {node or ','.join(nodes) or r['source_file']} used TCP instead of EFA: transport "
            f"{transport}, provider {r['net_provider'] or 'none named'}, {r['events']} fallback log line(s)"
        )
        yield RULE.finding(
            node=node,
            message=message,
            params={
                "transport": transport,
                "provider": r["net_provider"],
                "events": r["events"],
                "hosts": nodes,
                "nodes": [node] if node else nodes,
                "file": r["source_file"],
            },
            evidence=[ctx.evidence(r["source_file"], r["first_line"] or r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["source_file"],),
        )
