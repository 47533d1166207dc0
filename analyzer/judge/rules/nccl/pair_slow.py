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
Reference: docs/sources.md#nccl-bandwidth (performance-debugger details guide: 20 % below the median;
performance-debugger skill: ~10 %; the localisation is ours).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Evidence, Finding, Route, Severity
from analyzer.judge.signals.nccl import (
    LOCALISE_KEYS,
    Localisation,
    Pair,
    PairKey,
    busbw_evidence,
    localisations,
    localise,
    size_label,
)

RULE = RuleInfo(
    id="nccl.pair.slow",
    title="Pairwise busbw >= {below_median_fraction:pct} % below the median; node common to the slow pairs",
    severity=Severity.CRITICAL,
    requires=("nccl_result", "nccl_rank"),
    passed="no pairwise busbw far below the pair median",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § F",
        "drain the node common to the slow pairs; confirm, replace",
    ),
    severity_reason=(
        "Critical when one node is common to the pairs 20 % or more below the pair median, the "
        "drain-and-replace line, since that node holds back every collective it joins; slow pairs a topology "
        "block or no pattern explains are warnings, a single one info (noise, re-run). Source: HyperPod "
        "performance-debugger skill (awslabs/agent-plugins); ours: the localisation procedure."
    ),
)
LINK = Route(
    "placement-capacity",
    "hyperpod-cluster-debugger capacity-planning.md",
    "check the shared link / spine; re-run",
)
NOISE = Route("nccl-network", "hyperpod-nccl performance-testing.md", "re-run the pair before acting")
KEYS = LOCALISE_KEYS  # the thresholds localise() reads (analyzer.judge.signals.nccl)
__all__ = ["RULE", "Localisation", "check", "localise"]


def check(ctx: Context) -> Iterable[Finding]:
    for (itype, collective), (group, loc) in localisations(ctx).items():
        pct = round(100 * ctx.threshold(RULE, "below_median_fraction"))
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
            explained = loc.explained(m)
            worst = min(explained, key=lambda k: group[k].busbw)
            params = {
                **base,
                "node_slow_pairs": loc.count[m],
                "node_pairs": loc.total[m],
                "rest_max_slow_pairs": loc.rest,
                "folded_pairs": _folded(group, explained),
            }
            message = (
                f"{m} is the node common to the slow pairs: {loc.count[m]} of its {loc.total[m]} pairs ran >= "
                f"{pct} % below the pair median {loc.median} GB/s (every other node: at most {loc.rest}); "
                f"its slow pairs are folded into this finding (worst {' + '.join(worst)}: "
                f"{group[worst].busbw} GB/s)"
            )
            evidence, bundle_id = _slowest(ctx, [group[k] for k in explained])
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
        params = {
            **base,
            "unexplained_pairs": [list(k) for k in loc.left],
            "blocks": loc.blocks,
            "nodes": sorted({m for k in loc.left for m in k}),
        }
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
    """Evidence of the slowest pairs (the judged size row of each, slowest first, at most 8) and the
    first one's bundle."""
    runs = [p.run for p in sorted(slow, key=lambda p: p.busbw)][:8]
    return [busbw_evidence(ctx, r) for r in runs], runs[0].bundle_id if runs else None


def _folded(group: dict[PairKey, Pair], explained: list[PairKey]) -> list[dict[str, Any]]:
    """The slow pairs a localised node explains, slowest first: each pair's busbw and the row judged."""
    out = []
    for k in sorted(explained, key=lambda k: (group[k].busbw, k)):
        run = group[k].run
        out.append(
            {
                "pair": list(k),
                "busbw_gbps": group[k].busbw,
                "size": size_label(run.size_bytes),
                "file": run.source_file,
                "line": run.busbw_line or run.line,
            }
        )
    return out
