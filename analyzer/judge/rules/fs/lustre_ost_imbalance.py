"""Lustre OSTs filled unevenly, or one OST nearly full (lfs df).

Why it matters: Lustre stripes files over OSTs; when one OST fills, writes striped onto it fail with
ENOSPC although the file system as a whole has room, and a hot OST slows every reader of its stripes
(mfu-debugger node diagnostics § 4: > 90 % used per OST/MDT).  Reported per file system: the spread between
the fullest and emptiest OST above ``spread_pct`` points, and every OST above ``full_pct``.  lfs df from
several nodes of one file system gives one finding.
False positives: a fresh file system with a few large files (small absolute use, uneven percentages):
spread is judged only when the fullest OST is above ``min_used_pct``.
Reference: docs/sources.md#local-storage.
Scope: shared: the OSTs serve every client, so no node is ranked for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="fs.lustre.ost_imbalance",
    title="Lustre OSTs uneven or nearly full",
    severity=Severity.WARNING,
    requires=("lustre_target.use_pct",),
    passed="Lustre OSTs even and none nearly full",
    scope="shared",
    route=Route(
        "filesystem-capacity",
        "hyperpod-performance-debugger § B",
        "grow the file system (rebalances OSTs) and restripe hot directories (lfs setstripe / lfs migrate)",
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
    rows = ctx.rows(
        """
        SELECT fsname, count(DISTINCT target_index) AS osts, max(use_pct) AS max_pct, min(use_pct) AS min_pct,
               arg_max(struct_pack(b := bundle_id, n := node, i := target_index, f := source_file, l := line), use_pct) AS top,
               arg_min(struct_pack(i := target_index, f := source_file, l := line), use_pct) AS bottom,
               list(DISTINCT target_index ORDER BY target_index) FILTER (WHERE use_pct > ?) AS full_osts
        FROM lustre_target WHERE target_type = 'OST' AND use_pct IS NOT NULL
        GROUP BY fsname ORDER BY fsname
        """,
        full_line,
    )
    for r in rows:
        top, bottom = r["top"], r["bottom"]
        spread = round(r["max_pct"] - r["min_pct"], 1)
        full = r["full_osts"] or []
        uneven = r["osts"] > 1 and spread > spread_line and r["max_pct"] >= min_used
        if not (uneven or full):
            continue
        parts = []
        if uneven:
            parts.append(
                f"OST use spreads {spread:g} points (OST{top['i']:04d} {r['max_pct']:g} %, OST{bottom['i']:04d} {r['min_pct']:g} %)"
            )
        if full:
            parts.append(
                f"{len(full)} OST(s) above {full_line:g} %: " + ", ".join(f"OST{i:04d}" for i in full)
            )
        yield RULE.finding(
            node=None,
            message=f"Lustre {r['fsname']} ({r['osts']} OSTs): " + "; ".join(parts),
            params={
                "fsname": r["fsname"],
                "osts": r["osts"],
                "max_pct": r["max_pct"],
                "min_pct": r["min_pct"],
                "spread_pct": spread,
                "full_osts": full,
                "spread_line": spread_line,
                "full_line": full_line,
            },  # fmt: skip
            evidence=[ctx.evidence(top["f"], top["l"]), ctx.evidence(bottom["f"], bottom["l"])],
            bundle_id=top["b"],
            key=(r["fsname"],),
        )
