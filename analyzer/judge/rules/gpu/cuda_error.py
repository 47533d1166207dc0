"""CUDA errors a training job printed (``CUDA error: uncorrectable ECC error encountered``), on the node
whose rank printed them.

Why it matters: a job's CUDA error is often the first trace of a failing GPU (an uncorrectable ECC or NVLink
error is a hardware fault: the GPU fails every job until it is reset or replaced), and the job's log is
where it is seen even when no probe of the node ran at that moment.  Each error is named from the catalog
parsers/cuda_errors.toml (cudaError_t name, number, family); the family gives the severity and route:
uncorrectable GPU memory or NVLink errors are critical (drain, check ECC and row remapping), illegal
addresses and launch failures a warning (a bug of the job's own kernels as often as a GPU fault: look for a
hardware Xid in the node's dmesg), device-side asserts and out-of-memory info (the job's own).  An error the
catalog does not name is a warning, "unclassified".  One finding per node (or unnamed host) and error.

The node is the host the line names, else the host of its rank (analyzer.judge.signals.job: torchelastic's
failure summary, NCCL's Init lines); a line that names neither is cluster-wide, its rank said.
False positives: an application bug also raises illegal-address errors (hence a warning).
Reference: docs/sources.md#job-logs (NVIDIA CUDA Runtime API error codes; NVIDIA Xid catalog).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.hosts import HostIndex
from analyzer.judge.signals import job
from analyzer.judge.signals.nccl import node_rows
from parsers.job_log import cuda_catalog

RULE = RuleInfo(
    id="gpu.cuda.error",
    title="CUDA errors in the job's logs",
    severity=Severity.CRITICAL,
    requires=("node",),
    requires_any=("job_log_event",),
    passed="no CUDA error in the job logs",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "check the GPU the rank ran on"),
    severity_reason=(
        "Critical for uncorrectable ECC and NVLink errors (a hardware fault: the GPU fails every job until it "
        "is reset or replaced; NVIDIA Xid catalog, Xid 48, 94, 95, 74); a warning for illegal addresses and "
        "launch failures, which a job's own bug causes as often as a failing GPU; info for device-side asserts "
        "and out of memory (the job's own). Source: NVIDIA CUDA Runtime API error codes, the project's "
        "catalog parsers/cuda_errors.toml."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    families, errors = cuda_catalog()
    family_of = {e.name: families[e.family] for e in errors}
    index = HostIndex(node_rows(ctx))
    hosts = job.rank_hosts(ctx)
    rows = ctx.rows(
        "SELECT bundle_id, node, source_file, line, host, rank, pg_rank, code, message FROM job_log_event "
        "WHERE kind = 'cuda_error' ORDER BY bundle_id, source_file, line"
    )
    groups: dict[tuple[str | None, str | None, str], list[dict[str, Any]]] = {}
    for r in rows:
        host = job.host_of(r, hosts)
        node = index.match(host)
        r["host"], r["matched"] = host, node
        groups.setdefault((r["bundle_id"], node or host, r["code"] or r["message"][-120:]), []).append(r)
    ctx.saw(job.job_nodes(ctx, index))  # the nodes whose ranks the job logs cover
    for (_, who, _), hits in groups.items():
        first = hits[0]
        family = family_of.get(first["code"] or "")
        severity = Severity(family.severity) if family else Severity.WARNING
        ranks = sorted({h["rank"] for h in hits if h["rank"] is not None})
        group_ranks = sorted({h["pg_rank"] for h in hits if h["rank"] is None and h["pg_rank"] is not None})
        on = (
            f"rank {', '.join(map(str, ranks))}" if ranks else
            f"group rank {', '.join(map(str, group_ranks))}" if group_ranks else "a rank the log does not name"
        )  # fmt: skip
        name = first["code"] or "unclassified"
        text = first["message"][:200]
        yield RULE.finding(
            severity=severity,
            node=first["matched"],
            message=(
                f"{family.title if family else 'Unclassified CUDA error'}: {name} {len(hits)}x on "
                f"{who or 'an unnamed host'} ({on}); first: {text}"
            ),
            params={
                "code": name,
                "family": family.id if family else None,
                "count": len(hits),
                "host": first["host"],
                "ranks": ranks,
                "group_ranks": group_ranks,
                "first_message": text,
                "files": sorted({h["source_file"] for h in hits}),
                "nodes": [first["matched"]] if first["matched"] else [],
            },
            route=Route(family.owner, family.target, family.action) if family else RULE.route,
            evidence=[ctx.evidence(h["source_file"], h["line"]) for h in hits[:3]],
            bundle_id=first["bundle_id"],
            key=(name, None if first["matched"] else first["source_file"]),
        )
