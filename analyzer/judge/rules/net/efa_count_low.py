"""Fewer EFA devices on a node than its instance type has.

Why it matters: a missing EFA device does not stop NCCL; it silently runs at reduced bandwidth
("replace the node").  Counted as distinct devices in ``efa_port`` (sysfs / ibstat / ibv_devinfo,
preferred: fi_info can list several endpoints per card) else distinct ``fi_provider.device`` of the
efa provider, and compared with sku.toml ``efa_devices``.  Critical when that figure is verified;
warning when it is not (p5en: 16 per the NCCL debugging guide, NCCL diagnose script and
torchx AWS instance table vs 32 per the mfu-debugger network guide) and the message says so.
Only EFA devices count (``efa_port.is_efa``): a node whose RDMA capture lists only other devices
(soft-RoCE ``rxe0``, Mellanox ``mlx5_0``) shows 0 EFA devices and the message says "no EFA device",
naming what it has instead.
False positives: a capture limited to some devices (``ibstat efa_0``, ``fi_info -d ...``, or taken
inside an EKS pod that requested fewer ``vpc.amazonaws.com/efa`` devices than the node has); nodes of an
instance type missing from sku.toml are not judged.  A node whose RDMA probe answered "No IB devices
found" (``probe_answer``, parsers.probe_answers) shows 0 EFA devices, that line as evidence.  A node with
no EFA source and no such answer is not examined.
Reference: docs/sources.md#efa-devices (NCCL debugging guide § 19, NCCL diagnose script, mfu-debugger network
guide).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="net.efa.count_low",
    node_local=True,
    title="Fewer EFA devices than the instance type has",
    severity=Severity.CRITICAL,
    requires=("node.instance_type",),
    requires_any=("efa_port.device", "fi_provider.device", "probe_answer.family=efa"),
    passed="every node shows the EFA devices its type has",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "replace the node (EFA device missing)"),
    severity_reason=(
        "A missing EFA device does not stop NCCL but silently cuts inter-node bandwidth, so replace the "
        "node; warning where the expected count is unverified (p5en: sources say 16 or 32). Source: HyperPod "
        "NCCL debugging guide (awslabs/agent-plugins: fewer EFA devices than the type has means replace)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """
        WITH p AS (
            SELECT bundle_id,
                   count(DISTINCT device) FILTER (WHERE coalesce(is_efa, true)) AS n,
                   string_agg(DISTINCT device || ' (' || coalesce(provider, '?') || ')', ', '
                              ORDER BY device || ' (' || coalesce(provider, '?') || ')')
                       FILTER (WHERE NOT coalesce(is_efa, true)) AS other,
                   arg_min(source_file, line) AS f, min(line) AS l
            FROM efa_port WHERE device IS NOT NULL GROUP BY bundle_id
        ), fi AS (
            SELECT bundle_id, count(DISTINCT device) AS n, arg_min(source_file, line) AS f, min(line) AS l
            FROM fi_provider WHERE provider LIKE 'efa%' AND device IS NOT NULL GROUP BY bundle_id
        )
        SELECT n.bundle_id, n.node, n.instance_type, p.other,
               CASE WHEN p.n > 0 OR fi.n IS NULL THEN p.n ELSE fi.n END AS found,
               CASE WHEN p.n > 0 OR fi.n IS NULL THEN 'efa_port' ELSE 'fi_info' END AS via,
               CASE WHEN p.n > 0 OR fi.n IS NULL THEN p.f ELSE fi.f END AS source_file,
               CASE WHEN p.n > 0 OR fi.n IS NULL THEN p.l ELSE fi.l END AS line
        FROM node n LEFT JOIN p USING (bundle_id) LEFT JOIN fi USING (bundle_id)
        WHERE coalesce(p.n, fi.n) IS NOT NULL
        UNION ALL
        SELECT a.bundle_id, a.node, n.instance_type, NULL, 0, 'the RDMA probe''s answer',
               a.source_file, a.line
        FROM probe_answer a JOIN node n USING (bundle_id)
        WHERE a.family = 'efa' AND a.answer = 'no-ib-devices'
          AND NOT EXISTS (SELECT 1 FROM efa_port e WHERE e.bundle_id = a.bundle_id AND e.device IS NOT NULL)
          AND NOT EXISTS (SELECT 1 FROM fi_provider f WHERE f.bundle_id = a.bundle_id AND f.device IS NOT NULL
                          AND f.provider LIKE 'efa%')
        ORDER BY 2
        """
    )
    for r in rows:
        sku = ctx.settings.instance(r["instance_type"]) or {}
        expected = sku.get("efa_devices")
        if not expected or r["found"] >= expected:
            continue
        verified = bool(sku.get("efa_devices_verified", True))
        shows = (
            f"shows no EFA device (RDMA devices seen: {r['other']})"
            if r["found"] == 0 and r["other"]
            else "shows no EFA device (No IB devices found)"
            if r["via"].startswith("the RDMA")
            else f"shows {r['found']} EFA devices ({r['via']})"
        )
        message = f"{r['node']} ({r['instance_type']}) {shows}; {r['instance_type']} has {expected}" + (
            "" if verified else " (unverified expectation: sources disagree on this figure)"
        )
        yield RULE.finding(
            severity=Severity.CRITICAL if verified else Severity.WARNING,
            node=r["node"],
            message=message,
            params={
                "found": r["found"],
                "expected": expected,
                "via": r["via"],
                "other_rdma": r["other"],
                "verified": verified,
                "instance_type": r["instance_type"],
            },
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
        )
