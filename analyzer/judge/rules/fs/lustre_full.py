"""A Lustre file system full: every OST above the full line, or the file system as a whole (lfs df).

Why it matters: checkpoint and dataset writes fail with ENOSPC once the OSTs they stripe onto are full
(mfu-debugger node diagnostics § 4: ``lfs df`` per OST/MDT above 90 %).  When every OST is above the line,
or the file system's own use (its ``filesystem_summary`` line; without one, used / (used + available)
of its OSTs) is, there is no room to restripe into: the fix is capacity (grow the file system, free
space), not balance.  Then fs.lustre.ost_imbalance stays silent for that file system (one cause, one
finding; uneven OSTs are named here in params), and fs.data.full leaves the same mount to this rule.  The
full line is fs.lustre.ost_imbalance's ``full_pct``.  lfs df from several nodes of one file system gives
one finding.
False positives: a file system sized close to its data on purpose (a read-only dataset).
Reference: docs/sources.md#local-storage.
Scope: shared: the OSTs serve every client, so no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules.fs import lustre_ost_imbalance
from analyzer.judge.signals.fs import lustre_use

RULE = RuleInfo(
    id="fs.lustre.full",
    title="Lustre file system full",
    severity=Severity.WARNING,
    requires=("lustre_target.use_pct",),
    passed="no Lustre file system above its full line",
    scope="shared",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B",
        "grow the file system's storage capacity (FSx for Lustre: update its storage capacity) or free space "
        "(old checkpoints, datasets no longer read) before writes fail",
    ),
    severity_reason=(
        "A Lustre file system whose OSTs are all above 90 % is about to fail checkpoint and dataset writes; "
        "grow it or free space. Source: HyperPod mfu-debugger node diagnostics § 4 (awslabs/agent-plugins: "
        "lfs df per OST above 90 %, checkpoint writes fail)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    full_line = ctx.threshold(lustre_ost_imbalance.RULE, "full_pct")
    spread_line = ctx.threshold(lustre_ost_imbalance.RULE, "spread_pct")
    for fs in lustre_use(ctx, full_line):
        if not fs.full:
            continue
        every = fs.min_pct > full_line
        what = (
            f"all {fs.osts} OSTs above {full_line:g} % (OST{fs.bottom['i']:04d} {fs.min_pct:g} % to "
            f"OST{fs.top['i']:04d} {fs.max_pct:g} %)"
            if every
            else f"{len(fs.full_osts)} of {fs.osts} OSTs above {full_line:g} %, the file system as a whole too"
        )
        total = f"; {fs.total_pct:g} % used" if fs.total_pct is not None else ""
        free = f", {fs.avail_bytes / 2**30:.1f} GiB free" if fs.avail_bytes is not None else ""
        uneven = fs.osts > 1 and fs.spread_pct > spread_line
        evidence = [ctx.evidence(*fs.summary_at)] if fs.summary_at else []
        evidence += [ctx.evidence(fs.top["f"], fs.top["l"]), ctx.evidence(fs.bottom["f"], fs.bottom["l"])]
        yield RULE.finding(
            node=None,
            message=(
                f"Lustre {fs.fsname} ({', '.join(fs.mountpoints) or 'mount unknown'}) is full: {what}{total}{free}"
                + (f"; its OSTs also spread {fs.spread_pct:g} points" if uneven else "")
            ),
            params={
                "fsname": fs.fsname,
                "mountpoints": list(fs.mountpoints),
                "nodes": list(fs.nodes),
                "osts": fs.osts,
                "every_ost_full": every,
                "full_osts": list(fs.full_osts),
                "max_pct": fs.max_pct,
                "min_pct": fs.min_pct,
                "spread_pct": fs.spread_pct,
                "total_pct": fs.total_pct,
                "total_from": fs.total_from,
                "avail_bytes": fs.avail_bytes,
                "full_line": full_line,
            },
            evidence=list(dict.fromkeys(evidence)),
            bundle_id=fs.bundle_id,
            key=(fs.fsname,),
        )
