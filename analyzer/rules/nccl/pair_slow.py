"""Pairwise nccl-tests: pairs >= 20 % below the median of all pairs, localised to a node, a block or noise.

Why it matters: the drain-grade line.  With N nodes tested pairwise, one bad node X sits in (up to)
N-1 slow pairs while every other node sits in about one (its pair with X).  So: count slow pairs per
node; a node whose slow pairs are >= node_share of its pairs, at least node_min_slow_pairs, and at
least rest_factor times the highest count among the other nodes is "the node common to the slow
pairs" -> critical, route node-hardware § F.  Slow pairs that no such node explains: if they touch a
common topology block (last network_node_layers entry, else placement group; a block every node
shares tells nothing) -> warning "link or spine"; several with no pattern -> warning (links or
placement); a single one -> info "noise; re-run".  Every finding carries the per-node slow-pair counts.
False positives: a node tested in few pairs cannot be told from its partner (hence the minimum count);
confirm on the suspect with single-node tests, EFA counters and fi_ping before replacing it.
Reference: rules-facts § 3.2 (PD-DET 20 % below median; PD-SKILL ~10 %; procedure steps 1-5 ours).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from analyzer.engine import Context, RuleInfo
from analyzer.findings import Evidence, Finding, Route, Severity
from analyzer.signals.nccl import Pair, busbw_evidence, load_runs, node_rows, pairs

RULE = RuleInfo(
    id="nccl.pair.slow",
    title="Pairwise busbw >= 20 % below the median; node common to the slow pairs",
    severity=Severity.CRITICAL,
    requires=("nccl_result", "nccl_rank"),
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § F",
        "drain the node common to the slow pairs; confirm, replace",
    ),
)
LINK = Route(
    "placement-capacity",
    "hyperpod-cluster-debugger capacity-planning.md",
    "check the shared link / spine; re-run",
)
NOISE = Route("nccl-network", "hyperpod-nccl performance-testing.md", "re-run the pair before acting")
KEYS = ("below_median_fraction", "node_share", "node_min_slow_pairs", "rest_factor", "block_share")

PairKey = tuple[str, str]


@dataclass
class Localisation:
    """Which pairs are slow and what they have in common."""

    median: float
    slow: list[PairKey]
    total: Counter[str]
    count: Counter[str]
    suspects: list[str] = field(default_factory=list)
    rest: int = 0  # the most slow pairs any non-suspect node is in
    left: list[PairKey] = field(default_factory=list)  # slow pairs no suspect explains
    blocks: list[str] = field(default_factory=list)  # topology blocks the unexplained pairs share


def localise(
    values: Mapping[PairKey, float], blocks: Mapping[str, str | None], t: Mapping[str, Any]
) -> Localisation:
    """Mark pairs >= below_median_fraction under the median slow, then find their common node or block."""
    mid = round(median(values.values()), 2)
    slow = sorted(k for k, v in values.items() if v <= mid * (1 - t["below_median_fraction"]))
    loc = Localisation(mid, slow, Counter(m for k in values for m in k), Counter(m for k in slow for m in k))
    if not slow:
        return loc
    share = {
        m for m in loc.total if loc.count[m] >= max(t["node_min_slow_pairs"], t["node_share"] * loc.total[m])
    }
    loc.rest = max((loc.count[m] for m in loc.total if m not in share), default=0)
    loc.suspects = sorted(m for m in share if loc.count[m] >= t["rest_factor"] * max(loc.rest, 1))
    loc.left = [k for k in slow if not set(k) & set(loc.suspects)]
    of = {m: blocks.get(m) for m in loc.total}
    everyone = set(of.values()) if len(set(of.values())) == 1 else set()  # a block all nodes share
    touching = Counter(b for k in loc.left for b in {of[k[0]], of[k[1]]} if b and b not in everyone)
    loc.blocks = sorted(b for b, c in touching.items() if c >= t["block_share"] * len(loc.left))
    return loc


def check(ctx: Context) -> Iterable[Finding]:
    t = {k: ctx.threshold(RULE, k) for k in KEYS}
    blocks: dict[str, str | None] = {}
    for n in node_rows(ctx):
        layers = [x.strip() for x in (n["network_node_layers"] or "").split(",") if x.strip()]
        blocks[n["node"]] = layers[-1] if layers else n["placement_group"]
    groups = pairs(load_runs(ctx, ctx.threshold(RULE, "large_message_bytes")))
    for (itype, collective), group in groups.items():
        if len(group) < ctx.threshold(RULE, "min_pairs"):
            continue
        loc = localise({k: p.busbw for k, p in group.items()}, blocks, t)
        if not loc.slow:
            continue
        pct = round(100 * t["below_median_fraction"])
        base = {
            "median_gbps": loc.median,
            "below_median_pct": pct,
            "pairs": len(group),
            "slow_pairs": len(loc.slow),
            "instance_type": itype,
            "collective": collective,
            "slow_pairs_per_node": {m: f"{loc.count[m]}/{loc.total[m]}" for m in sorted(loc.total)},
        }
        for m in loc.suspects:
            params = {
                **base,
                "node_slow_pairs": loc.count[m],
                "node_pairs": loc.total[m],
                "rest_max_slow_pairs": loc.rest,
            }
            message = (
                f"{m} is the node common to the slow pairs: {loc.count[m]} of its {loc.total[m]} pairs ran >= "
                f"{pct} % below the pair median {loc.median} GB/s (every other node: at most {loc.rest})"
            )
            evidence, bundle_id = _slowest(ctx, [group[k] for k in loc.slow if m in k])
            yield RULE.finding(
                node=m,
                message=message,
                params=params,
                evidence=evidence,
                bundle_id=bundle_id,
                key=(m, collective),
            )
        if not loc.left:
            continue
        listed = ", ".join(f"{a} + {b} ({group[(a, b)].busbw} GB/s)" for a, b in loc.left)
        params = {**base, "unexplained_pairs": [list(k) for k in loc.left], "blocks": loc.blocks}
        key: tuple[Any, ...]
        if len(loc.left) >= 2 and loc.blocks:
            severity, route, key = Severity.WARNING, LINK, ("block", collective, *loc.blocks)
            message = (
                f"{len(loc.left)} slow pairs share no node but touch topology block(s) {', '.join(loc.blocks)}: "
                f"link or spine suspected, no node blamed ({listed}; pair median {loc.median} GB/s)"
            )
        elif len(loc.left) >= 2:
            severity, route, key = Severity.WARNING, LINK, ("spread", collective)
            message = (
                f"{len(loc.left)} slow pairs share no node and no topology block: links or placement "
                f"suspected, no node blamed ({listed}; pair median {loc.median} GB/s)"
            )
        else:
            severity, route, key = Severity.INFO, NOISE, ("noise", collective, *loc.left[0])
            message = (
                f"one slow pair with no pattern: {listed} vs pair median {loc.median} GB/s; noise, re-run it"
            )
        evidence, bundle_id = _slowest(ctx, [group[k] for k in loc.left])
        yield RULE.finding(
            severity=severity,
            node=None,
            message=message,
            params=params,
            route=route,
            evidence=evidence,
            bundle_id=bundle_id,
            key=key,
        )


def _slowest(ctx: Context, slow: list[Pair]) -> tuple[list[Evidence], str | None]:
    """Evidence of the slowest pairs (their large-size rows, at most 8) and the first one's bundle."""
    runs = [p.runs[0] for p in sorted(slow, key=lambda p: p.busbw)][:8]
    return [busbw_evidence(ctx, r) for r in runs], runs[0].bundle_id if runs else None
