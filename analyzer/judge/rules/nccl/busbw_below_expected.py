"""all_reduce busbw at large messages below the instance type's expected line (sku.toml).

Why it matters: a run below the per-instance-type line means the node or network delivers less than
the hardware should.  The figure is the best busbw at sizes >= 1 GiB (a run that stopped earlier is
judged at its largest size and says so); the ``# Avg bus bandwidth`` line is never used.  Single-node
runs (one host in the rank lines) are judged against the ``single_node_*`` lines, runs across hosts
against ``multi_node_*``.  Below the warning line -> warning.  Below the failure line -> critical only
when that expectation is verified in sku.toml AND peers agree (>= min_peers other runs of the same
instance type and scope whose median meets the warning line, so the shortfall is this run's own);
otherwise warning, and the message says "unverified expectation".  False positives: the published
figures disagree (docs/sources.md#where-sources-disagree: p4d ~300 vs 35-45 GB/s, p5 ~400+ vs 380-420), hence
the verified flag; a log whose collective is not named is assumed to be all_reduce.  A 2-host run of a slow
pair that nccl.pair.slow localised to a node is not reported here: it is listed in that node's finding.
A run of an instance type sku.toml gives no line for is not examined (never a pass; with no run held to
a line the rule is skipped, saying which type lacks one).
Each run is judged on its own (never the best of several): the message names it (file, and test when the
log holds several), and the same hosts' runs elsewhere (another folder, log or re-run) are said with it.
Reference: docs/sources.md#nccl-bandwidth, docs/sources.md#instance-types (performance-debugger details guide
and skill, mfu-debugger network guide).
"""

from __future__ import annotations

from collections.abc import Iterable
from statistics import median

from analyzer.judge.engine import CannotJudge, Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.nccl import (
    busbw_evidence,
    contrast,
    explained_runs,
    load_runs,
    other_runs,
    size_label,
)

RULE = RuleInfo(
    id="nccl.busbw.below_expected",
    title="nccl-tests busbw below the instance type's expected line",
    severity=Severity.CRITICAL,
    requires=("nccl_result", "nccl_run"),
    passed="nccl-tests busbw at or above the expected line",
    route=Route(
        "nccl-network", "hyperpod-performance-debugger § A", "find the slow node or link (pairwise tests)"
    ),
    severity_reason=(
        "Critical only below the failure line (20 % under the type's expected busbw) when that figure is "
        "verified and same-type peers meet the warning line, so the shortfall is this run's own; otherwise a "
        "warning. Source: HyperPod performance-debugger skill (awslabs/agent-plugins, per-type busbw lines) "
        "and nccl-tests PERFORMANCE.md (what busbw measures)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_bytes = ctx.threshold(RULE, "large_message_bytes")
    min_peers = ctx.threshold(RULE, "min_peers")
    runs = [
        r
        for r in load_runs(ctx, min_bytes)
        if r.busbw is not None and r.scope and r.collective in (None, "all_reduce")
    ]
    folded = explained_runs(ctx)
    unheld: list[str] = []  # why runs were held to no line
    held = 0
    for run in runs:
        members = sorted(set(run.members))
        if run.key in folded:
            continue  # one of the slow pairs of the node nccl.pair.slow names: listed in its finding
        sku = ctx.settings.instance(run.instance_type) or {}
        scope = run.scope or "multi_node"  # runs without a scope were filtered out above
        warn, fail = sku.get(f"{scope}_busbw_warning"), sku.get(f"{scope}_busbw_failure")
        if warn is None:  # no line to hold the run to: not examined, never a pass
            why = (
                f"no expected {scope.replace('_', '-')} busbw line for instance type "
                f"{run.instance_type or 'unknown'} (sku.toml)"
            )
            ctx.not_judged([run.node] if run.node else members, why)
            unheld.append(why)
            continue
        held += 1
        if run.busbw is None or run.busbw >= warn:
            continue
        verified = bool(sku.get(f"{scope}_verified", False))
        peers = [
            p.busbw
            for p in runs
            if p is not run
            and p.instance_type == run.instance_type
            and p.scope == scope
            and p.busbw is not None
        ]
        peer_median = round(median(peers), 2) if peers else None
        peers_agree = len(peers) >= min_peers and peer_median is not None and peer_median >= warn
        below_fail = fail is not None and run.busbw < fail
        critical = below_fail and verified and peers_agree
        line_name = "failure" if below_fail else "warning"
        qualifier = "verified expectation" if verified else "unverified expectation"
        size_note = "" if run.reached_min_bytes else f"; the run never reached {size_label(min_bytes)}"
        peer_note = (
            f"{len(peers)} peer run(s), median {peer_median} GB/s" if peers else "no peer runs of this type"
        )
        # the same hosts' other runs (re-runs, another folder or log), each said against the same line
        same = [
            (p, p.busbw is not None and p.busbw < warn)
            for p in runs
            if p is not run and p.subject == run.subject and p.instance_type == run.instance_type
        ]
        said = f"; {contrast(run.label, run, True, same, 'below')}" if same else ""
        message = (
            f"{run.label}: all_reduce busbw {run.busbw} GB/s at {size_label(run.size_bytes)} in run {run.name} "
            f"({scope.replace('_', '-')} run) is below the {run.instance_type} {line_name} line "
            f"{fail if below_fail else warn} GB/s ({qualifier}; {peer_note}{size_note}){said}"
        )
        node = run.node or (run.members[0] if scope == "single_node" and run.members else None)
        yield RULE.finding(
            severity=Severity.CRITICAL if critical else Severity.WARNING,
            node=node,
            message=message,
            params={
                "nodes": [node] if node else members,
                "busbw_gbps": run.busbw,
                "size_bytes": run.size_bytes,
                "reached_large_size": run.reached_min_bytes,
                "scope": scope,
                "instance_type": run.instance_type,
                "warning_gbps": warn,
                "failure_gbps": fail,
                "verified": verified,
                "peers": len(peers),
                "peer_median_gbps": peer_median,
                "peers_agree": peers_agree,
                "members": run.members,
                "file": run.source_file,
                "run": run.name,
                "other_runs": other_runs(same, "below"),
            },
            evidence=[busbw_evidence(ctx, run)],
            bundle_id=run.bundle_id,
            key=(run.source_file,) if run.run == 1 else (run.source_file, run.run),
        )
    if unheld and not held:  # every run lacked a line to hold it to (a finding comes only from a held run)
        raise CannotJudge("; ".join(sorted(set(unheld))))
