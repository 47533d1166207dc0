"""fi_info ran on an EFA instance type but listed no ``efa`` provider.

Why it matters: without the libfabric efa provider aws-ofi-nccl cannot use EFA and NCCL falls back to
TCP (10-100x slower) or fails.  Fires for a node whose fi-info file was parsed but whose providers
include no efa, on an instance type whose sku.toml ``efa_devices`` is above zero.  ``fi_getinfo: -61
(No data available)`` (no provider matches ``-p efa``) parses to zero provider rows and an
``fi_info_status`` row ``no_provider``: the node is examined and flagged, the message quoting that line
(older bundles, where the store kept it as a tool error, are still read).  The same answer on the probe's
stderr with nothing on stdout (how ``fi_info`` prints it, exit 61) is read from the failure answers
(``probe_answer``, parsers.probe_answers) and flagged the same way; a ``fi_info`` that hung until the
probe's timeout is a warning (the provider could not be listed).  A node with no fi_info output and no
answer is not examined: the instance type alone is never the evidence.  False positives: ``fi_info -p tcp`` captures (only the
requested provider is listed); a container without the EFA device plugin (then it is a real problem
for jobs in that container).  Reference: docs/sources.md#efa-devices (NCCL diagnose script, node-debugger
issue catalog § 1.2).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="net.fi_info.no_efa",
    node_local=True,
    title="No efa provider in fi_info on an EFA instance",
    severity=Severity.CRITICAL,
    requires=("node.instance_type",),
    requires_any=("fi_provider", "fi_info_status", "probe_answer.family=fi-info"),
    passed="fi_info lists the efa provider on EFA instances",
    route=Route(
        "nccl-network", "hyperpod-node-debugger § A", "check the EFA driver, device plugin and FI_PROVIDER"
    ),
    severity_reason=(
        "Without the libfabric efa provider aws-ofi-nccl cannot use EFA and NCCL falls back to TCP sockets "
        "(10-100x slower) or fails; warning when fi_info hung and the providers could not be listed. Source: "
        "AWS EFA documentation (fi_info -p efa must list the efa provider) and HyperPod node-debugger skill "
        "(awslabs/agent-plugins, EFA section, P0)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        SELECT f.bundle_id, n.node, n.instance_type, min(f.source_file) AS source_file,
               string_agg(DISTINCT f.status, ',' ORDER BY f.status) AS status,
               (SELECT string_agg(DISTINCT p.provider, ',' ORDER BY p.provider) FROM fi_provider p
                WHERE p.bundle_id = f.bundle_id) AS providers,
               coalesce(
                   (SELECT min(p.line) FROM fi_provider p WHERE p.source_file = min(f.source_file)),
                   (SELECT min(s.line) FROM fi_info_status s WHERE s.source_file = min(f.source_file))
               ) AS line,
               (SELECT min(s.message) FROM fi_info_status s
                WHERE s.bundle_id = f.bundle_id AND s.status = 'no_provider') AS no_provider
        FROM file f JOIN node n USING (bundle_id)
        WHERE f.kind = 'fi-info' AND f.status IN ('parsed', 'tool-error')
          AND NOT EXISTS (SELECT 1 FROM fi_provider p WHERE p.bundle_id = f.bundle_id AND p.provider LIKE 'efa%')
        GROUP BY ALL ORDER BY n.node
        """
    )
    flagged = {r["bundle_id"] for r in rows}
    for r in rows:
        sku = ctx.settings.instance(r["instance_type"]) or {}
        if not sku.get("efa_devices"):
            continue
        answer = (
            f"fi_info answered {r['no_provider']!r}" if r["no_provider"] else "fi_info lists no efa provider"
        )
        message = (
            f"{r['node']} ({r['instance_type']}, {sku['efa_devices']} EFA devices expected): {answer} "
            f"(providers: {r['providers'] or 'none'}; file {r['status']})"
        )
        yield RULE.finding(
            node=r["node"],
            message=message,
            params={
                "providers": r["providers"],
                "status": r["status"],
                "no_provider": r["no_provider"],
                "instance_type": r["instance_type"],
                "efa_devices": sku["efa_devices"],
            },
            evidence=[ctx.evidence(r["source_file"], r["line"] or 1)],  # a tool error is on line 1
            bundle_id=r["bundle_id"],
        )
    yield from _answers(ctx, flagged)


def _answers(ctx: Context, flagged: set[str]) -> Iterable[Finding]:
    """fi_info's failure answers on stderr or its timeout, on nodes its stdout did not already flag."""
    rows = ctx.rows(
        """SELECT a.bundle_id, a.node, n.instance_type, a.answer, a.exit_code, a.source_file, a.line, a.text
           FROM probe_answer a JOIN node n USING (bundle_id)
           WHERE a.family = 'fi-info' AND a.answer IN ('no-provider', 'timeout')
             AND NOT EXISTS (SELECT 1 FROM fi_provider p WHERE p.bundle_id = a.bundle_id
                             AND p.provider LIKE 'efa%')
           ORDER BY a.node, a.answer"""
    )
    done: set[str] = set(flagged)
    for r in rows:
        sku = ctx.settings.instance(r["instance_type"]) or {}
        if not sku.get("efa_devices") or r["bundle_id"] in done:
            continue
        done.add(r["bundle_id"])
        hung = r["answer"] == "timeout"
        answer = "fi_info hung until the probe's timeout" if hung else f"fi_info answered {r['text']!r}"
        yield RULE.finding(
            severity=Severity.WARNING if hung else None,
            node=r["node"],
            message=f"{r['node']} ({r['instance_type']}, {sku['efa_devices']} EFA devices expected): {answer} "
            f"(exit {r['exit_code']})",
            params={
                "providers": None,
                "status": r["answer"],
                "no_provider": None if hung else r["text"],
                "instance_type": r["instance_type"],
                "efa_devices": sku["efa_devices"],
                "exit_code": r["exit_code"],
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
