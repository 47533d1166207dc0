"""A GPU reports fewer NVLink links than its peers or than its instance type has.

Why it matters: a missing link is bandwidth the GPU does not have; HyperPod's deep health check
verifies the NVLink count (NVIDIA health-validation NVLink checks: 18 links per H100/H200; AWS
SageMaker HyperPod deep health checks documentation; docs/sources.md#nvlink-fabric).  The
expected count is ``sku.toml`` ``nvlinks_per_gpu`` for the node's instance type: fewer is critical when
that figure is ``nvlinks_verified``, else warning (A100's 12 is unverified).  Independently, a GPU is
compared with the most common count among GPUs of the same name in the bundle set (warning).  The SKU
figure applies only when the GPU name matches the SKU's ``gpu_model``.  A GPU with neither (no count in
sku.toml for its type, and fewer than ``min_peers`` GPUs of its model or no majority count) is not judged:
its node is not examined ("too few peers").  Links
dcgmi marks Not Supported are not counted.  False positives: a truncated nvlink output; the finding
shows the lines read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo, too_few_peers
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu._nvlink import link_sets

RULE = RuleInfo(
    id="gpu.nvlink.count",
    title="Fewer NVLink links than expected",
    severity=Severity.CRITICAL,
    requires=("nvlink.link",),
    peers="min_peers",
    passed="every GPU has the NVLink count expected of it",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain and replace"),
    severity_reason=(
        "Critical when a GPU has fewer links than a verified per-type count: the missing bandwidth does not "
        "come back and HyperPod's deep health checks verify the count; warning against an unverified count "
        "or against peers only. Source: NVIDIA health-validation NVLink check reference (18 links per "
        "H100/H200) and AWS SageMaker HyperPod deep health checks documentation."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_peers = ctx.threshold(RULE, "min_peers")
    sets = []
    for s in link_sets(ctx):
        links = [link for link in s.links if link["link"] is not None and link["state"] != "not_supported"]
        if s.gpu is not None and links:
            sets.append((s, len(links)))
    by_name: dict[str | None, list[int]] = {}
    for s, n in sets:
        by_name.setdefault(s.name, []).append(n)
    peers: dict[str | None, int | None] = {}  # the count most GPUs of a model have, once per model
    for name, counts in by_name.items():
        mode, k = Counter(counts).most_common(1)[0]
        peers[name] = mode if len(counts) >= min_peers and k * 2 > len(counts) else None
    unjudged: dict[str, str] = {}
    flagged: set[str] = set()
    for s, n in sets:
        sku = s.sku(ctx)
        expected, verified = sku.get("nvlinks_per_gpu"), bool(sku.get("nvlinks_verified"))
        peer = peers[s.name]
        if not expected and not peer:
            counts = by_name[s.name]
            unjudged[s.node] = (
                too_few_peers(len(counts), min_peers, "GPUs", s.name or "unknown model")
                if len(counts) < min_peers
                else f"no majority NVLink count among {len(counts)} {s.name or 'GPUs'}"
            ) + f"; no NVLink count known for {s.instance_type or 'an unknown instance type'}"
            continue
        severity = None
        if expected and n < expected:
            severity = Severity.CRITICAL if verified else Severity.WARNING
        elif peer and n < peer:
            severity = Severity.WARNING
        if severity is None:
            continue
        flagged.add(s.node)
        yield RULE.finding(
            severity=severity,
            node=s.node,
            gpu=s.gpu,
            message=(
                f"{s.label} reports {n} NVLink(s); expected {expected or 'n/a'} for "
                f"{s.instance_type or 'unknown type'}{'' if verified or not expected else ' (unverified)'}, "
                f"peers {peer or 'n/a'}"
            ),
            params={
                "links": n,
                "expected": expected,
                "expected_verified": verified,
                "peer_links": peer,
                "instance_type": s.instance_type,
            },
            evidence=[ctx.evidence(s.source_file, s.links[0]["line"])],
            bundle_id=s.bundle_id,
        )
    for node, reason in unjudged.items():
        if node not in flagged:
            ctx.not_judged([node], reason)
