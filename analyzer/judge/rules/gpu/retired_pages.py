"""Page retirement pending on a GPU (pre-Ampere GPUs retire bad memory pages instead of remapping rows).

Why it matters: a page marked for retirement is only blacklisted at the next driver reload; until then
it can still be used and produce errors.  Treated as the older counterpart of a pending row remap:
warning, reboot to apply (by analogy with gpu.remap.pending; NVIDIA Xid catalog, Xid 63/64;
docs/sources.md#gpu-memory-errors).  Read from
``nvidia-smi -q`` "Retired Pages / Pending Page Blacklist", else ``retired_pages.pending`` in the CSV.
False positives: none known; Ampere and later print N/A and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import flagged

RULE = RuleInfo(
    id="gpu.retired_pages",
    node_local=True,
    title="GPU page retirement pending",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("gpu.retired_pages_pending", "gpu_query.retired_pages_pending"),
    passed="no GPU has a page retirement pending",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "reboot the node to apply the retirement"),
    severity_reason=(
        "A page marked for retirement stays usable, and can fail again, until the next driver reload, so "
        "reboot soon; the older counterpart of a pending row remap. Source: NVIDIA dynamic page retirement "
        "documentation (docs.nvidia.com/deploy/dynamic-page-retirement); ours: warning by analogy with "
        "gpu.remap.pending."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    return flagged(
        ctx,
        RULE,
        "retired_pages_pending",
        "{label} has a page retirement pending (takes effect at the next reboot)",
        "retired_pages_pending",
    )
