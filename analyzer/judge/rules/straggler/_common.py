"""Shared code of the straggler rules: one value per node, judged against same-type peers.

Each GPU metric is reduced to one value per node: the node's worst GPU (lowest SM clock, highest
temperature, ...), since one slow GPU slows every collective the node takes part in.  The node is then
compared with the other nodes of its instance type through :mod:`analyzer.judge.peers` (median +/- k x MAD,
widened to a per-metric floor; at least ``min_nodes`` nodes of the type: the nodes of a smaller group are
not examined, "too few peers").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL, Outlier, judge

#: Where the straggler procedure is written down.
STRAGGLER_GUIDE = "hyperpod-mfu-debugger steps/2c-straggler.md"


def gpu_rule(
    id: str,
    title: str,
    action: str,
    column: str,
    passed: str,
    target: str = STRAGGLER_GUIDE,
    severity_reason: str = "",
) -> RuleInfo:
    """The RuleInfo of a per-GPU straggler rule: a warning for node hardware, read from ``column`` of the
    ``gpu`` table (``nvidia-smi -q``) or else of ``gpu_query`` (the --query-gpu CSV)."""
    return RuleInfo(
        id=id,
        title=title,
        severity=Severity.WARNING,
        requires=("node",),
        requires_any=(f"gpu.{column}", f"gpu_query.{column}"),
        peers="min_nodes",
        passed=passed,
        route=Route("node-hardware", target, action),
        severity_reason=severity_reason,
    )


#: per-GPU rows from `nvidia-smi -q` (table gpu), else the --query-gpu CSV (gpu_query) for nodes
#: that have no `-q` dump; {col} is the metric column, {line} its evidence-line column in `gpu`.
_GPU_VALUES = """
    WITH g AS (
        SELECT bundle_id, node, "index" AS gpu, source_file, coalesce({line}, line) AS ev_line,
               CAST({col} AS DOUBLE) AS value
        FROM gpu WHERE {col} IS NOT NULL
        UNION ALL
        SELECT bundle_id, node, "index", source_file, line, CAST({col} AS DOUBLE)
        FROM gpu_query q
        WHERE {col} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM gpu WHERE gpu.bundle_id = q.bundle_id)
    ),
    per_gpu AS (
        SELECT bundle_id, node, gpu, avg(value) AS value, min(source_file) AS source_file,
               min(ev_line) AS ev_line
        FROM g GROUP BY bundle_id, node, gpu
    )
    SELECT t.instance_type AS peer_group, p.bundle_id, p.node, {worst}(p.value) AS value,
           {arg}(struct_pack(gpu := p.gpu, f := p.source_file, l := p.ev_line), [p.value, {tie}p.gpu]) AS at,
           count(*) AS gpus
    FROM per_gpu p JOIN ({types}) t ON t.bundle_id = p.bundle_id
    GROUP BY t.instance_type, p.bundle_id, p.node
"""


def gpu_values_sql(col: str, line_col: str, worst: str) -> str:
    """One row per node: the value of its worst GPU for ``col`` (worst = 'min' or 'max').

    GPUs tied for the worst value: the lowest index is named (the same one on every run)."""
    arg, tie = {"min": ("arg_min", ""), "max": ("arg_max", "-")}[worst]
    return _GPU_VALUES.format(col=col, line=line_col, worst=worst, arg=arg, tie=tie, types=NODE_TYPE_SQL)


def find(
    ctx: Context, rule: RuleInfo, values_sql: str, direction: str, params: tuple[Any, ...] = ()
) -> list[Outlier]:
    """The outliers of a per-node value query, with the rule's k, floor and group size (the nodes of a
    smaller group are not examined: too few peers)."""
    return judge(
        ctx,
        values_sql,
        params,
        direction=direction,
        k=ctx.threshold(rule, "k_mad"),
        min_nodes=ctx.threshold(rule, "min_nodes"),
        min_delta=ctx.threshold(rule, "min_delta"),
    )


def gpu_findings(
    ctx: Context, rule: RuleInfo, outs: list[Outlier], label: str, unit: str, worst_word: str
) -> Iterator[Finding]:
    """One finding per outlier node, naming its worst GPU, the value and the peer band."""
    k = ctx.threshold(rule, "k_mad")
    for o in outs:
        at = o.row["at"]
        value = round(float(o.row["value"]), 3)
        band = o.band
        params = {
            "metric": label,
            "value": value,
            "unit": unit,
            "gpu": at["gpu"],
            "gpus": o.row["gpus"],
            "direction": o.direction,
            "k_mad": k,
            **band.as_params(),
        }
        side = "below" if o.direction == "low" else "above"
        message = (
            f"{o.row['node']} {label} {value:g} {unit} (GPU {at['gpu']}, {worst_word} of {o.row['gpus']}) is "
            f"{side} its peers' band {params['band_low']:g}..{params['band_high']:g} {unit} "
            f"(median {params['peer_median']:g} +/- max({k:g} x MAD {params['peer_mad']:g}, floor), "
            f"{band.nodes} {band.group} nodes)"
        )
        yield rule.finding(
            node=o.row["node"],
            gpu=at["gpu"],
            message=message,
            params=params,
            evidence=[ctx.evidence(at["f"], at["l"])],
            bundle_id=o.row["bundle_id"],
            key=(label,),
        )
