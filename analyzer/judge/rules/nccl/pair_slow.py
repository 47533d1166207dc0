"""Pairwise nccl-tests: pairs >= 20 % below the median of all pairs, localised to a node, a block or noise.

Why it matters: the drain-grade line.  With N nodes tested pairwise, one bad node X sits in (up to)
N-1 slow pairs while every other node sits in about one (its pair with X).  So: count slow pairs per
node; a node whose slow pairs are >= node_share of its pairs, at least node_min_slow_pairs, and at
least rest_factor times the highest count among the other nodes is "the node common to the slow
pairs" -> critical, route node-hardware § F.  Slow pairs that no such node explains: if they touch a
common topology block (last network_node_layers entry, else placement group; a block every node
shares tells nothing) -> warning "link or spine"; several with no pattern -> warning (links or
placement); a single one -> info "noise; re-run", or a warning when every other run of that pair was
slow too (not noise).  Every finding carries the per-node slow-pair counts.
Runs are never pooled: each sweep (one folder's pair logs, one log holding a sweep, each re-run of a pair;
analyzer.judge.signals.nccl.sweeps) is localised on its own, its findings name the sweep and the run
(file, test) of every slow pair, and say how the same pairs ran in the other sweeps ("slow in run A
(x GB/s), fine in run B (y GB/s)").  A sweep of fewer than min_pairs pairs (a re-run of a few pairs) is
judged against the median of the sweep it re-runs.
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
    Judged,
    Localisation,
    PairKey,
    Run,
    busbw_evidence,
    contrast,
    load_runs,
    localisations,
    localise,
    not_compared,
    other_runs,
    size_label,
    slow_elsewhere,
    sweeps,
)

RULE = RuleInfo(
    id="nccl.pair.slow",
    title="Pairwise busbw >= {below_median_fraction:pct} % below the median; node common to the slow pairs",
    severity=Severity.CRITICAL,
    requires=("nccl_result", "nccl_rank"),
    peers="min_pairs",
    passed="no pairwise busbw far below the pair median",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § F",
        "drain the node common to the slow pairs; confirm, replace",
    ),
    severity_reason=(
        "Critical when one node is common to the pairs 20 % or more below the pair median, the "
        "drain-and-replace line, since that node holds back every collective it joins; slow pairs a topology "
        "block or no pattern explains are warnings, a single one info (noise, re-run) unless it was slow in every "
        "run of it (then a warning). Source: HyperPod "
        "performance-debugger skill (awslabs/agent-plugins); ours: the localisation procedure."
    ),
)
LINK = Route(
    "placement-capacity",
    "hyperpod-cluster-debugger capacity-planning.md",
    "check the shared link / spine; re-run",
)
NOISE = Route("nccl-network", "hyperpod-nccl performance-testing.md", "re-run the pair before acting")
PERSISTENT = Route(
    "nccl-network",
    "hyperpod-performance-debugger § A",
    "check both nodes' EFA counters and the link between them (slow in every run)",
)
KEYS = LOCALISE_KEYS  # the thresholds localise() reads (analyzer.judge.signals.nccl)
#: slow pairs said run by run in a message (the params list them all)
SAID = 3
__all__ = ["RULE", "Localisation", "check", "localise"]


def check(ctx: Context) -> Iterable[Finding]:
    judged = localisations(ctx)
    min_pairs = ctx.threshold(RULE, "min_pairs")
    # a sweep of too few pairs (and no sweep to judge it against) is not examined, never passed
    groups = sweeps(load_runs(ctx, ctx.threshold(RULE, "large_message_bytes")), 2, min_pairs)
    not_compared(ctx, groups, [j.sweep for j in judged], min_pairs, "pairs")
    several = {j.group for j in judged if sum(k.group == j.group for k in judged) > 1}
    for j in judged:
        if j.loc.slow:
            yield from _findings(ctx, j, judged, j.group in several)


def _findings(ctx: Context, j: Judged, judged: list[Judged], several: bool) -> Iterable[Finding]:
    sweep, loc, group = j.sweep, j.loc, j.pairs
    itype, collective = j.group
    pct = round(100 * ctx.threshold(RULE, "below_median_fraction"))
    where = sweep.describe()
    # with several sweeps of the same pairs, each finding is its own (the sweep is part of its key)
    tag: tuple[str, ...] = (sweep.label,) if several else ()
    base = {
        "median_gbps": loc.median,
        "below_median_pct": pct,
        "pairs": len(group),
        "slow_pairs": len(loc.slow),
        "instance_type": itype,
        "collective": collective,
        "sweep": sweep.label,
        "reference_sweep": sweep.reference.label if sweep.reference is not None else None,
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
            "folded_pairs": _folded(j, judged, explained),
        }
        message = (
            f"{m} is the node common to the slow pairs of {where}: {loc.count[m]} of its {loc.total[m]} "
            f"pairs ran >= {pct} % below the pair median {loc.median} GB/s (every other node: at most "
            f"{loc.rest}); its slow pairs are folded into this finding (worst {' + '.join(worst)}: "
            f"{group[worst].busbw} GB/s in run {group[worst].run.name}){_elsewhere(j, judged, explained)}"
        )
        evidence, bundle_id = _slowest(ctx, [group[k].run for k in explained])
        yield RULE.finding(
            node=m,
            message=message,
            params=params,
            evidence=evidence,
            bundle_id=bundle_id,
            key=(m, collective, *tag),
        )
    if not loc.left:
        return
    listed = ", ".join(
        f"{a} + {b} ({group[(a, b)].busbw} GB/s in run {group[(a, b)].run.name})" for a, b in loc.left
    )
    params = {
        **base,
        "unexplained_pairs": [list(k) for k in loc.left],
        "unexplained_runs": _folded(j, judged, loc.left),
        "blocks": loc.blocks,
        "nodes": sorted({m for k in loc.left for m in k}),
    }
    key: tuple[Any, ...]
    if len(loc.left) >= 2 and loc.blocks:
        severity, route, key = Severity.WARNING, LINK, ("block", collective, *loc.blocks)
        message = (
            f"{len(loc.left)} slow pairs of {where} share no node but touch topology block(s) "
            f"{', '.join(loc.blocks)}: link or spine suspected, no node blamed ({listed}; pair median "
            f"{loc.median} GB/s)"
        )
    elif len(loc.left) >= 2:
        severity, route, key = Severity.WARNING, LINK, ("spread", collective)
        message = (
            f"{len(loc.left)} slow pairs of {where} share no node and no topology block: links or placement "
            f"suspected, no node blamed ({listed}; pair median {loc.median} GB/s)"
        )
    elif (again := slow_elsewhere(judged, j, loc.left[0])) and all(bad for _, bad in again):
        # slow in every run of it: not noise (the key stays the pair's, whatever the severity)
        severity, route, key = Severity.WARNING, PERSISTENT, ("noise", collective, *loc.left[0])
        message = (
            f"one slow pair with no pattern in {where}: {listed} vs pair median {loc.median} GB/s, and slow "
            f"again in every other run of it: not noise; check the link between its two nodes"
        )
    else:
        severity, route, key = Severity.INFO, NOISE, ("noise", collective, *loc.left[0])
        message = (
            f"one slow pair with no pattern in {where}: {listed} vs pair median {loc.median} GB/s; noise, "
            "re-run it"
        )
    evidence, bundle_id = _slowest(ctx, [group[k].run for k in loc.left])
    yield RULE.finding(
        severity=severity,
        node=None,
        message=message + _elsewhere(j, judged, loc.left),
        params=params,
        route=route,
        evidence=evidence,
        bundle_id=bundle_id,
        key=(*key, *tag),
    )


def _elsewhere(j: Judged, judged: list[Judged], slow: list[PairKey]) -> str:
    """'; in other runs: a + b slow in run X (240 GB/s), fine in run Y (401 GB/s); ...' for the slow pairs
    that also ran in another sweep (the slowest SAID of them; how many were fine elsewhere), or ''."""
    ran = [
        (k, o)
        for k in sorted(slow, key=lambda k: (j.pairs[k].busbw, k))
        if (o := slow_elsewhere(judged, j, k))
    ]
    if not ran:
        return ""
    said = "; ".join(contrast(" + ".join(k), j.pairs[k].run, True, o) for k, o in ran[:SAID])
    more = f"; and {len(ran) - SAID} more pair(s)" if len(ran) > SAID else ""
    fine = sum(1 for _, o in ran if any(not bad for _, bad in o))
    return (
        f"; the same pairs in other runs: {said}{more} ({fine} of the {len(ran)} slow pair(s) run elsewhere "
        "were fine there)"
    )


def _slowest(ctx: Context, runs: list[Run]) -> tuple[list[Evidence], str | None]:
    """Evidence of the slowest runs (the judged size row of each, slowest first, at most 8) and the first
    one's bundle."""
    runs = sorted(runs, key=lambda r: r.busbw or 0.0)[:8]
    return [busbw_evidence(ctx, r) for r in runs], runs[0].bundle_id if runs else None


def _folded(j: Judged, judged: list[Judged], slow: list[PairKey]) -> list[dict[str, Any]]:
    """The slow pairs, slowest first: each pair's busbw, the run and row judged, and the same pair's runs
    in the other sweeps."""
    out = []
    for k in sorted(slow, key=lambda k: (j.pairs[k].busbw, k)):
        run = j.pairs[k].run
        out.append(
            {
                "pair": list(k),
                "busbw_gbps": j.pairs[k].busbw,
                "size": size_label(run.size_bytes),
                "run": run.name,
                "file": run.source_file,
                "line": run.busbw_line or run.line,
                "other_runs": other_runs(slow_elsewhere(judged, j, k)),
            }
        )
    return out
