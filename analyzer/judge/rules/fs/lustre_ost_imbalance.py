"""Lustre OSTs filled unevenly: some near full while others have room (lfs df).

Why it matters: Lustre stripes files over OSTs; when one OST fills, writes striped onto it fail with
ENOSPC although the file system as a whole has room, and a hot OST slows every reader of its stripes
(mfu-debugger node diagnostics § 4: > 90 % used per OST/MDT).  Reported per file system whose OSTs are
uneven: the spread between the fullest and emptiest OST above ``spread_pct`` points, or some OSTs above
``full_pct`` while others are below it.  A file system with every OST (or its total) above ``full_pct``
is full, not uneven: fs.lustre.full reports it and this rule does not (one cause, one finding).  lfs df
from several nodes of one file system gives one finding.
False positives: a fresh file system with a few large files (small absolute use, uneven percentages):
spread is judged only when the fullest OST is above ``min_used_pct``.
Reference: docs/sources.md#local-storage.
Scope: shared: the OSTs serve every client, so no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.fs import lustre_use

RULE = RuleInfo(
    id="fs.lustre.ost_imbalance",
    title="Lustre OSTs uneven: some near full while others have room",
    severity=Severity.WARNING,
    requires=("lustre_target.use_pct",),
    passed="Lustre OSTs even, none near full while others have room",
    scope="shared",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B",
        "move data off the full OSTs (lfs migrate) and restripe hot directories (lfs setstripe); growing the "
        "file system adds empty OSTs",
    ),
    severity_reason=(
        "A nearly full or uneven OST fails writes striped onto it and slows its readers while the file "
        "system as a whole has room. Source: HyperPod mfu-debugger node diagnostics (awslabs/agent-plugins: "
        "above 90 % per OST); ours: the 20-point spread line."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    spread_line = ctx.threshold(RULE, "spread_pct")
    full_line = ctx.threshold(RULE, "full_pct")
    min_used = ctx.threshold(RULE, "min_used_pct")
    for fs in lustre_use(ctx, full_line):
        if fs.full:  # no room to rebalance into: fs.lustre.full
            continue
        top, bottom, spread, full = fs.top, fs.bottom, fs.spread_pct, fs.full_osts
        uneven = fs.osts > 1 and spread > spread_line and fs.max_pct >= min_used
        if not (uneven or full):
            continue
        parts = []
        if uneven:
            parts.append(
                f"OST use spreads {spread:g} points (OST{top['i']:04d} {fs.max_pct:g} %, OST{bottom['i']:04d} {fs.min_pct:g} %)"
            )
        if full:
            parts.append(
                f"{len(full)} of {fs.osts} OSTs above {full_line:g} % while the others have room: "
                + ", ".join(f"OST{i:04d}" for i in full)
            )
        yield RULE.finding(
            node=None,
            message=f"Lustre {fs.fsname} ({fs.osts} OSTs): " + "; ".join(parts),
            params={
                "fsname": fs.fsname,
                "osts": fs.osts,
                "max_pct": fs.max_pct,
                "min_pct": fs.min_pct,
                "spread_pct": spread,
                "full_osts": list(full),
                "total_pct": fs.total_pct,
                "spread_line": spread_line,
                "full_line": full_line,
            },  # fmt: skip
            evidence=[ctx.evidence(top["f"], top["l"]), ctx.evidence(bottom["f"], bottom["l"])],
            bundle_id=fs.bundle_id,
            key=(fs.fsname,),
        )
