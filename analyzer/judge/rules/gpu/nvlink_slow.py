"""Active NVLink links running below their generation's speed or below their peers.

Why it matters: a link that trained at a lower rate slows every collective that crosses it.  Expected
per-link speed comes from ``sku.toml`` ``nvlink_speed_gbps`` for the node's instance type (H100/H200:
26.562 GB/s, NVIDIA health-validation NVLink checks: docs/sources.md#nvlink-fabric); independently, a link is
compared with the median speed of all active links of GPUs with the same product name in the bundle set (when
there are enough GPUs).  A link slower than either by more than ``tolerance`` is reported; one finding per
GPU.  The SKU figure applies only when the GPU name matches the SKU's ``gpu_model`` (a mislabelled node is not
judged as another model).  A GPU with neither figure (an instance type without a speed in sku.toml and
fewer than ``min_peers`` GPUs of its model) is not judged: its node is not examined ("too few peers").
Read from ``nvidia-smi nvlink -s`` (dcgmi prints no speed).  False positives: none known; speeds are
printed as fixed per-generation rates.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo, too_few_peers
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.gpu._nvlink import link_sets

RULE = RuleInfo(
    id="gpu.nvlink.slow",
    title="NVLink links slower than expected",
    severity=Severity.WARNING,
    requires=("nvlink.speed_gbps",),
    peers="min_peers",
    passed="every active NVLink runs at the expected speed",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "reboot; drain and replace if it persists"),
    severity_reason=(
        "A link that trained at a lower rate still carries traffic correctly but slows every collective that "
        "crosses it: reboot soon, replace if it stays slow. Source: NVIDIA health-validation NVLink check "
        "reference (fixed per-generation link rates); ours: warning, because the link works."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    tolerance, min_peers = ctx.threshold(RULE, "tolerance"), ctx.threshold(RULE, "min_peers")
    sets = [s for s in link_sets(ctx) if s.gpu is not None]
    speeds: dict[str | None, list[float]] = {}
    gpus: dict[str | None, int] = {}
    for s in sets:
        up = [link["speed_gbps"] for link in s.links if link["state"] == "active" and link["speed_gbps"]]
        if up:
            speeds.setdefault(s.name, []).extend(up)
            gpus[s.name] = gpus.get(s.name, 0) + 1
    medians = {name: statistics.median(up) for name, up in speeds.items() if gpus[name] >= min_peers}
    unjudged: dict[str, str] = {}
    flagged: set[str] = set()
    for s in sets:
        sku = s.sku(ctx)
        expected = sku.get("nvlink_speed_gbps")
        median = medians.get(s.name)
        bars = [b for b in (expected, median) if b]
        if not bars:
            if s.name in speeds:  # active links with a speed, but nothing to hold them to
                unjudged[s.node] = (
                    f"{too_few_peers(gpus[s.name], min_peers, 'GPUs', s.name or 'unknown model')}; "
                    f"no link speed known for {s.instance_type or 'an unknown instance type'}"
                )
            continue
        bar = max(bars)
        slow = [
            link
            for link in s.links
            if link["state"] == "active" and link["speed_gbps"] and link["speed_gbps"] < bar * (1 - tolerance)
        ]
        if not slow:
            continue
        worst = min(link["speed_gbps"] for link in slow)
        flagged.add(s.node)
        yield RULE.finding(
            node=s.node,
            gpu=s.gpu,
            message=(
                f"{s.label}: {len(slow)} NVLink(s) below speed, slowest {worst:g} GB/s "
                f"(expected {expected if expected else 'n/a'} GB/s for {s.instance_type or 'unknown type'}, "
                f"peer median {median if median else 'n/a'} GB/s)"
            ),
            params={
                "links": [link["link"] for link in slow],
                "slowest_gbps": worst,
                "expected_gbps": expected,
                "peer_median_gbps": median,
                "instance_type": s.instance_type,
            },
            evidence=[ctx.evidence(s.source_file, line) for line in s.lines(slow)],
            bundle_id=s.bundle_id,
        )
    for node, reason in unjudged.items():
        if node not in flagged:
            ctx.not_judged([node], reason)
