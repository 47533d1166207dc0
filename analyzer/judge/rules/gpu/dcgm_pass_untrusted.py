"""DCGM diagnostics all passed, but from a DCGM version whose pass is not authoritative (<= 3.3.9).

What it detects: a node whose ``dcgmi diag`` results are all Pass (no Fail or Warn) while the DCGM
version printed in the Metadata section is at or below ``max_version``.  The node-debugger diagnostics guide
§ G.1.b and the NCCL debugging guide § 21 say a Pass from a combined ``-r medium,memtest`` run on these
versions is not to be trusted (info; docs/sources.md#dcgm).  When a memtest result is among the tests the
message says the run combined it; otherwise it says only that a pass from such a version is not authoritative.
Why it matters: a GPU suspected of memory faults can be returned to service on a false "all pass";
rerun the memtest alone, or on DCGM >= 3.3.10 / 4.x, before clearing it.
False positives: a plain ``-r 2``/``-r 3`` run is probably fine on these versions; outputs without a
DCGM version line (DCGM 2.x tables, excerpts) are not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="gpu.dcgm.pass_untrusted",
    cause_kind="setting",
    setting_keys=("dcgm_version",),
    node_local=True,
    title="DCGM pass from a version whose pass is not authoritative",
    severity=Severity.INFO,
    requires=("dcgm_test.dcgm_version",),
    passed="no DCGM all-pass from a version whose pass is untrusted",
    route=Route(
        "node-hardware",
        "hyperpod-node-debugger § G",
        "rerun the memory test alone or with DCGM >= 3.3.10 before trusting the pass",
    ),
    severity_reason=(
        "Nothing is known to be wrong, but a pass from DCGM 3.3.9 or older after a combined medium and "
        "memtest run is not authoritative, so rerun before clearing a suspect GPU. Source: HyperPod "
        "node-debugger skill and NCCL debugging guide (awslabs/agent-plugins)."
    ),
)


def _version(text: str | None) -> tuple[int, ...] | None:
    """'3.3.9' -> (3, 3, 9); None when no version is printed."""
    nums = re.findall(r"\d+", text or "")
    return tuple(int(n) for n in nums[:3]) if nums else None


def check(ctx: Context) -> Iterable[Finding]:
    limit = str(ctx.threshold(RULE, "max_version"))
    newest = _version(limit) or ()
    rows = ctx.rows(
        """
        SELECT bundle_id, node, source_file, any_value(dcgm_version) AS dcgm_version,
               count(*) FILTER (WHERE result = 'pass') AS passed,
               count(*) FILTER (WHERE result IN ('fail', 'warn')) AS failed,
               bool_or(lower(test) LIKE '%memtest%') AS memtest,
               min(line) AS line, string_agg(DISTINCT test, ', ' ORDER BY test) AS tests
        FROM dcgm_test GROUP BY bundle_id, node, source_file ORDER BY node, source_file
        """
    )
    for r in rows:
        version = _version(r["dcgm_version"])
        if version is None or version > newest or r["failed"] or not r["passed"]:
            continue
        how = (
            "a combined medium+memtest run passed"
            if r["memtest"]
            else "all tests passed (run level not visible)"
        )
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']}: DCGM {r['dcgm_version']} (<= {limit}): {how}; a pass from this "
            "DCGM version is not authoritative",
            params={"dcgm_version": r["dcgm_version"], "max_version": limit, "memtest": bool(r["memtest"]),
                    "passed": r["passed"], "tests": r["tests"]},
            evidence=[ctx.evidence(r["source_file"], r["line"])],
            bundle_id=r["bundle_id"],
            key=(r["source_file"],),
        )  # fmt: skip
