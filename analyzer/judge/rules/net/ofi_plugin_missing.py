"""NCCL is installed on an EFA instance but the aws-ofi-nccl plugin (libnccl-net.so) is not seen.

Why it matters: without the plugin NCCL cannot drive EFA and uses TCP sockets (10-100x slower).
Fires for a node whose versions capture names NCCL (a real version) but no ofi_nccl (absent, "not
found", or "unknown"), on an instance type with EFA devices.  Software inside a container is not
visible from the host, so a host-side absence alone is not a defect: warning, and the message says
so.  Critical when an NCCL log of that node shows the TCP fallback (a TCP_FALLBACK line, or a run
whose transport resolved to socket / ofi-tcp).
Reference: docs/sources.md#aws-ofi-nccl (NCCL diagnose script, mfu-debugger network guide; NCCL debugging
guide § 13 for the TCP fallback).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex

RULE = RuleInfo(
    id="net.ofi_plugin.missing",
    cause_kind="setting",
    setting_keys=("nccl", "ofi_nccl"),
    title="aws-ofi-nccl plugin not found while NCCL is installed",
    severity=Severity.CRITICAL,
    requires=("software_version", "node.instance_type"),
    passed="aws-ofi-nccl found wherever host NCCL is installed",
    route=Route(
        "version-drift", "hyperpod-node-debugger § E", "install aws-ofi-nccl matching the EFA installer"
    ),
    severity_reason=(
        "Critical when the node's NCCL log shows the TCP fallback a missing aws-ofi-nccl plugin causes "
        "(10-100x slower collectives); warning when only the host lacks it, since the training container may "
        "ship its own. Source: AWS EFA documentation (NCCL over EFA needs aws-ofi-nccl) and HyperPod NCCL "
        "debugging guide (awslabs/agent-plugins)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        WITH v AS (
            SELECT bundle_id,
                   max(version) FILTER (WHERE component = 'nccl' AND lower(version) <> 'unknown') AS nccl,
                   arg_min(source_file, line) FILTER (WHERE component = 'nccl' AND lower(version) <> 'unknown') AS f,
                   min(line) FILTER (WHERE component = 'nccl' AND lower(version) <> 'unknown') AS l,
                   count(*) FILTER (WHERE component = 'ofi_nccl' AND coalesce(detail, '') <> 'not found'
                                    AND lower(coalesce(version, '')) <> 'unknown') AS ofi,
                   min(line) FILTER (WHERE component = 'ofi_nccl') AS ofi_line,
                   arg_min(source_file, line) FILTER (WHERE component = 'ofi_nccl') AS ofi_file
            FROM software_version GROUP BY bundle_id
        )
        SELECT n.bundle_id, n.node, n.hostname, n.instance_type, v.nccl, v.f, v.l, v.ofi_line, v.ofi_file
        FROM v JOIN node n USING (bundle_id)
        WHERE v.nccl IS NOT NULL AND v.ofi = 0 ORDER BY n.node
        """
    )
    if not rows:
        return
    fallback = _tcp_fallback(ctx)
    for r in rows:
        sku = ctx.settings.instance(r["instance_type"]) or {}
        if not sku.get("efa_devices"):
            continue
        seen = fallback.get(r["node"])
        state = "unknown" if r["ofi_line"] else "absent"
        message = (
            f"{r['node']} ({r['instance_type']}): NCCL {r['nccl']} is installed but aws-ofi-nccl is {state} "
            + (
                f"and an NCCL log shows the TCP fallback ({seen[0]})"
                if seen
                else "on the host; container-scoped software is not visible from the host, so this alone "
                "is not a defect: check inside the training image"
            )
        )
        evidence = [ctx.evidence(r["f"], r["l"])]
        if r["ofi_line"]:
            evidence.append(ctx.evidence(r["ofi_file"], r["ofi_line"]))
        if seen:
            evidence.append(ctx.evidence(seen[0], seen[1]))
        yield RULE.finding(
            severity=Severity.CRITICAL if seen else Severity.WARNING,
            node=r["node"],
            message=message,
            params={
                "nccl": r["nccl"],
                "ofi_nccl": state,
                "tcp_fallback_file": seen[0] if seen else None,
                "instance_type": r["instance_type"],
            },
            evidence=evidence,
            bundle_id=r["bundle_id"],
        )


def _tcp_fallback(ctx: Context) -> dict[str, tuple[str, int]]:
    """node -> (file, line) of the first TCP fallback sign in an NCCL log of that node."""
    index = HostIndex(ctx.rows("SELECT node, hostname FROM node"))
    hits = ctx.rows(
        """
        SELECT node, host, source_file, line FROM nccl_log_event WHERE code = 'TCP_FALLBACK'
        UNION ALL
        SELECT r.node, k.host, r.source_file, r.line FROM nccl_run r
        LEFT JOIN nccl_rank k USING (bundle_id, source_file, run)
        WHERE r.net_transport IN ('socket', 'ofi-tcp')
        ORDER BY source_file, line
        """
    )
    out: dict[str, tuple[str, int]] = {}
    for h in hits:
        for who in {h["node"], index.match(h["host"])} - {None}:
            out.setdefault(who, (h["source_file"], h["line"]))
    return out
