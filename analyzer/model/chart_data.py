"""The series and tables the reports draw, gathered next to the rules from the same queries (analyzer.judge.signals).

Renderers receive this as plain data in ``ReportData.charts`` and never query the store or reach into a rule.

Everything here is bounded for 1,000-node clusters: per-node lists are cut in the chart functions, grids
keep the most deviating nodes, and the version table lists only drifting columns in full.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

    from analyzer.judge.engine import Context
    from analyzer.judge.findings import Finding
    from analyzer.judge.settings import Settings

VERSION_COLUMNS = ("nvidia_driver", "cuda_driver_max", "nccl", "efa_installer", "ofi_nccl", "kernel")
MAX_GRID_NODES = 40
#: Nodes drawn on the pairwise busbw heatmap; a larger group is cut by badness (:func:`pair_matrix`).
MAX_PAIR_NODES = 32
#: Rule id prefix of the findings about a node's own busbw (what the per-node busbw chart colours).
BUSBW_RULES = "nccl.busbw."
#: The rules whose findings are about a node's iowait (what the iowait chart marks).
IOWAIT_RULES = ("fs.iowait.high", "straggler.host.iowait")
#: The rule that names the node common to the slow pairs (a busbw signal too).
PAIR_SLOW = "nccl.pair.slow"
#: Bottom of the GPU temperature colour scale: an idle GPU in a cooled room sits above it.
TEMP_FLOOR_C = 20.0


def _rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[dict[str, Any]]:
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def gpu_grid(
    con: duckdb.DuckDBPyConnection,
    column: str,
    sick_cells: set[tuple[str, int]] | None = None,
    sick_rows: set[str] | None = None,
    scale: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """node x GPU values of one gpu-table column, with what the renderer needs to draw it honestly.

    Nodes are ordered by how far they sit from the median; MAX_GRID_NODES are kept, the nodes with a
    finding first (at most MAX_GRID_NODES of those, and then at least half as many others), the rest
    counted in ``left_out``.  ``uniform`` is the one value every GPU reads (over all nodes, drawn or
    not), else None: a grid that does not vary is said in a line, not drawn.
    ``marked`` lists the [node, gpu] cells that have a finding and ``marked_rows`` the nodes with a GPU
    or host concern; ``scale`` fixes the colour range (vmin, vmax) and reference ``lines`` when the
    metric has thresholds, so the colour says "cool" or "hot" against them rather than min to max.
    """
    assert column in ("temp_c", "sm_clock_mhz", "ecc_corrected_volatile", "power_draw_w")
    rows = _rows(
        con,
        f'SELECT node, "index" AS gpu, {column} AS v FROM gpu WHERE {column} IS NOT NULL AND node IS NOT NULL ORDER BY node, gpu',
    )
    if not rows:
        return None
    by_node: dict[str, dict[int, float]] = defaultdict(dict)
    for r in rows:
        by_node[r["node"]][r["gpu"]] = float(r["v"])
    all_values = sorted(v for d in by_node.values() for v in d.values())
    median = all_values[len(all_values) // 2]
    sick_cells = {(n, g) for n, g in (sick_cells or set()) if g in by_node.get(n, {})}
    sick_rows = {n for n in (sick_rows or set()) if n in by_node} | {n for n, _ in sick_cells}
    ranked = sorted(by_node, key=lambda n: -max(abs(v - median) for v in by_node[n].values()))
    sick = [n for n in ranked if n in sick_rows][:MAX_GRID_NODES]  # at most MAX_GRID_NODES of them
    others = [n for n in ranked if n not in sick_rows][: max(MAX_GRID_NODES - len(sick), MAX_GRID_NODES // 2)]
    left_out = len(ranked) - len(sick) - len(others)
    nodes = sorted(sick + others)
    gpus = sorted({g for d in by_node.values() for g in d})
    return {
        "rows": nodes,
        "columns": [f"GPU {g}" for g in gpus],
        "values": [[by_node[n].get(g) for g in gpus] for n in nodes],
        "left_out": left_out,
        "uniform": all_values[0] if all_values[0] == all_values[-1] else None,
        "gpus": len(all_values),
        "nodes": len(by_node),
        "marked": sorted([n, g] for n, g in sick_cells if n in nodes),
        "marked_rows": sorted(sick_rows & set(nodes)),
        "scale": scale,
    }


def sick_gpus(findings: list[Finding]) -> tuple[set[tuple[str, int]], set[str]]:
    """The (node, gpu) cells with a critical/warning finding, and the nodes with a GPU or host concern."""
    from analyzer.model.sections import section_of

    concerns = [(f.node, f) for f in findings if f.node and f.severity.value in ("critical", "warning")]
    cells = {(node, int(f.gpu)) for node, f in concerns if f.gpu is not None}
    nodes = {node for node, f in concerns if section_of(f.rule) == "C"}
    return cells, nodes


def temperature_scale(settings: Settings, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The GPU temperature colour range: from a cool floor to the critical line, the warning line marked."""
    warning = float(settings.value("gpu.temperature.high", "warning_c"))
    critical = float(settings.value("gpu.temperature.high", "critical_c"))
    low, high = con.execute("SELECT min(temp_c), max(temp_c) FROM gpu").fetchone() or (None, None)
    return {
        "vmin": min(TEMP_FLOOR_C, float(low)) if low is not None else TEMP_FLOOR_C,
        "vmax": max(critical, float(high)) if high is not None else critical,
        "lines": {"warning": warning, "critical": critical},
        "source": "gpu.temperature.high",
    }


def iowait_by_node(ctx: Context) -> list[tuple[str, float]]:
    """Mean iowait per node: the rows fs.iowait.high judges (analyzer.judge.signals.fs.iowait_by_node)."""
    from analyzer.judge.signals.fs import iowait_by_node as rows

    return [(r["node"], float(r["mean"])) for r in rows(ctx) if r["node"] is not None]


def iowait_flagged(findings: list[Finding], rows: list[tuple[str, float]], line: float) -> list[str]:
    """The nodes the iowait chart marks, by its own signal: mean iowait above the line drawn, or named by
    an iowait finding (IOWAIT_RULES).  A node's other findings do not mark its iowait bar."""
    named = {f.node for f in findings if f.node and f.rule in IOWAIT_RULES and f.severity.value != "ok"}
    return sorted({n for n, v in rows if v > line} | (named & {n for n, _ in rows}))


def fsx_utilisation(ctx: Context) -> tuple[dict[str, tuple[list[Any], list[float]]], list[str]]:
    """Series label -> (timestamps, percent): the series fs.fsx.utilization_sustained judges; and the
    metrics they are, each once ('DiskIopsUtilization (Maximum)'): what the chart's title names."""
    from analyzer.judge.signals.fs import fsx_utilization_series

    found = fsx_utilization_series(ctx)
    series = {s.label: ([p[0] for p in s.points], [float(p[1]) for p in s.points]) for s in found}
    metrics = list(dict.fromkeys(f"{s.metric} ({s.statistic or 'statistic unknown'})" for s in found))
    return series, metrics


#: The AWS/FSx byte counters the throughput chart plots, and the word each series is named by.
FSX_BYTES = {"DataReadBytes": "read", "DataWriteBytes": "write"}


def fsx_throughput(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[list[Any], list[float]]]:
    """Series '<file system> read (DataReadBytes)' -> (timestamps, MB/s): the Sum of each period / period."""
    rows = _rows(
        con,
        """SELECT coalesce(dimension_value, '?') AS fs, metric, ts,
                  sum(value) / any_value(coalesce(period_s, 60)) / 1e6 AS mbps
           FROM cw_metric WHERE namespace = 'AWS/FSx' AND metric IN ('DataReadBytes', 'DataWriteBytes')
             AND statistic = 'Sum' AND ts IS NOT NULL AND value IS NOT NULL
           GROUP BY ALL ORDER BY fs, metric, ts""",
    )
    series: dict[str, tuple[list[Any], list[float]]] = {}
    for r in rows:
        name = f"{r['fs']} {FSX_BYTES[r['metric']]} ({r['metric']})"
        xs, ys = series.setdefault(name, ([], []))
        xs.append(r["ts"])
        ys.append(float(r["mbps"]))
    return series


def version_table(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per node: instance type, AZ and versions; cells differing from their instance type's majority marked."""
    nodes = _rows(
        con,
        "SELECT node, instance_type, availability_zone, kernel FROM node WHERE node IS NOT NULL ORDER BY node",
    )
    versions: dict[str, dict[str, str]] = defaultdict(dict)
    for r in _rows(
        con,
        """SELECT node, component, string_agg(DISTINCT version, ', ' ORDER BY version) AS v
           FROM software_version WHERE version IS NOT NULL AND node IS NOT NULL GROUP BY ALL""",
    ):
        versions[r["node"]][r["component"]] = r["v"]
    for r in _rows(
        con,
        """SELECT node, string_agg(DISTINCT driver_version, ', ') AS drv, string_agg(DISTINCT cuda_version, ', ') AS cuda
           FROM gpu WHERE node IS NOT NULL GROUP BY node""",
    ):
        if r["drv"]:
            versions[r["node"]].setdefault("nvidia_driver", r["drv"])
        if r["cuda"]:
            versions[r["node"]].setdefault("cuda_driver_max", r["cuda"])
    table = []
    for n in nodes:
        cells = dict(versions.get(n["node"], {}))
        if n["kernel"]:
            cells.setdefault("kernel", n["kernel"])
        table.append(
            {"node": n["node"], "instance_type": n["instance_type"], "az": n["availability_zone"], **cells}
        )
    from analyzer.judge.signals.versions import majorities

    drift: dict[str, set[str]] = defaultdict(set)  # column -> nodes whose value is not the majority
    for (_, column), m in majorities(table, VERSION_COLUMNS).items():
        drift[column] |= set(m.deviating)
    return {
        "columns": list(VERSION_COLUMNS),
        "rows": table,
        "drift": {k: sorted(v) for k, v in drift.items()},
    }


def busbw_flagged(findings: list[Finding]) -> dict[str, set[str]]:
    """Per busbw chart scope ('multi_node', 'single_node'), the nodes a busbw finding names.

    Only findings about a node's busbw count: nccl.busbw.* (below the lines, or an outlier among its
    peers) and the node nccl.pair.slow finds common to the slow pairs.  A finding of any other rule (a
    GPU with persistence mode off, an Xid) says nothing about busbw and does not colour a bar.
    """
    out: dict[str, set[str]] = {"multi_node": set(), "single_node": set()}
    for f in findings:
        if not f.node or f.severity.value not in ("critical", "warning"):
            continue
        if f.rule.startswith(BUSBW_RULES):
            scope = f.params.get("scope")
            if scope not in out:
                single = str(f.params.get("metric", "")).startswith("single-node")
                scope = "single_node" if single else "multi_node"
            out[scope].add(f.node)
        elif f.rule == PAIR_SLOW:
            out["multi_node"].add(f.node)
    return out


def pair_flagged(findings: list[Finding]) -> set[str]:
    """The nodes pairwise findings name: nccl.pair.* (the node and every node of a slow pair), the
    straggler on pairwise busbw, and the two nodes of a pair run below the busbw lines."""
    out: set[str] = set()
    for f in findings:
        if f.severity.value == "ok":
            continue
        pairwise = (
            f.rule.startswith("nccl.pair.")
            or (f.rule == "nccl.busbw.straggler" and str(f.params.get("metric", "")).startswith("pairwise"))
            or (f.rule == "nccl.busbw.below_expected" and len(set(f.params.get("members") or [])) == 2)
        )
        if pairwise:
            out |= {f.node} if f.node else set()
            out |= {n for n in f.params.get("nodes") or [] if isinstance(n, str)}
    return out


def busbw_bars(ctx: Context, settings: Settings, findings: list[Finding]) -> list[dict[str, Any]]:
    """Per scope, each node's large-message busbw (median of its runs) against the expectation lines.

    ``highlight`` is this chart's own signal: the nodes below the warning line drawn and the nodes a busbw
    finding names (:func:`busbw_flagged`); ``note`` says so.
    """
    from statistics import median

    from analyzer.judge.signals.nccl import load_runs

    runs = [r for r in load_runs(ctx, 1 << 30) if r.busbw is not None]
    flagged = busbw_flagged(findings)
    bars: list[dict[str, Any]] = []
    for scope in ("multi_node", "single_node"):
        per_node: dict[str, list[float]] = defaultdict(list)
        types: Counter[str] = Counter()
        for run in runs:
            if run.scope != scope or run.busbw is None:
                continue
            for member in set(run.members):
                per_node[member].append(run.busbw)
            if run.instance_type:
                types[run.instance_type] += 1
        if not per_node:
            continue
        labels = sorted(per_node)
        values = [median(per_node[n]) for n in labels]
        lines: dict[str, float] = {}
        notes = []
        sku = settings.instance(types.most_common(1)[0][0]) if types else None
        if sku:
            for name in ("expected", "warning", "failure"):
                value = sku.get(f"{scope}_busbw_{name}")
                if value is not None:
                    lines[name] = float(value)
            if lines and not sku.get(f"{scope}_verified", False):
                notes.append("expectation lines are unverified figures (see sku.toml)")
        bar_line = lines.get("warning", lines.get("failure"))
        below = {n for n, v in zip(labels, values, strict=True) if bar_line is not None and v < bar_line}
        highlight = sorted(below | (flagged[scope] & set(labels)))
        if highlight:
            line_name = "warning" if "warning" in lines else "failure"
            what = f"below the {line_name} line or " if bar_line is not None else ""
            notes.append(f"red hatched: {len(highlight)} node(s) {what}named by a busbw finding")
        title = f"{'Multi' if scope == 'multi_node' else 'Single'}-node all_reduce busbw per node (median of its runs)"
        bars.append(
            {
                "labels": labels,
                "values": values,
                "lines": lines,
                "highlight": highlight,
                "title": title,
                "note": "; ".join(notes),
            }
        )
    return bars


def pair_matrix(ctx: Context, findings: list[Finding]) -> dict[str, Any] | None:
    """The pairwise busbw matrix of the largest (instance type, collective) group of 2-node runs.

    Up to MAX_PAIR_NODES nodes are drawn.  A larger group is cut by badness: the nodes pairwise findings
    name first (:func:`pair_flagged`), then their partners (the nodes they ran with, slowest pair first),
    then the lowest pair median; the flagged node's row is never emptied by the cut.  ``note`` says what
    was kept and how many nodes were left out; ``flagged``, ``partners`` and ``left_out`` carry it as data.
    """
    from statistics import median

    from analyzer.judge.signals.nccl import load_runs, sweeps

    # runs are never pooled: one sweep is drawn (the largest; of equal ones, the one holding the slowest
    # pair), and the note names the other sweeps of its pairs
    groups = sweeps(load_runs(ctx, 1 << 30), 2, 1)
    if not groups:
        return None
    siblings = max(groups.values(), key=lambda g: max(len(s.runs) for s in g))
    drawn = max(siblings, key=lambda s: (len(s.runs), -min(s.values.values())))
    group = drawn.pairs
    nodes = sorted({m for key in group for m in key})
    of_node: dict[str, list[float]] = defaultdict(list)
    for (a, b), pair in group.items():
        of_node[a].append(pair.busbw)
        of_node[b].append(pair.busbw)

    def badness(n: str) -> tuple[float, float, str]:
        return (median(of_node[n]), min(of_node[n]), n)

    named = sorted(pair_flagged(findings) & set(nodes), key=badness)
    flagged = named[:MAX_PAIR_NODES]
    partner_pair: dict[str, float] = {}  # partner -> its slowest pair with a flagged node
    for (a, b), pair in group.items():
        for node, other in ((a, b), (b, a)):
            if node in flagged and other not in flagged:
                partner_pair[other] = min(partner_pair.get(other, pair.busbw), pair.busbw)
    partners_all = sorted(partner_pair, key=lambda n: (partner_pair[n], *badness(n)))
    partners = partners_all[: MAX_PAIR_NODES - len(flagged)]
    chosen = set(flagged) | set(partners)
    rest = sorted((n for n in nodes if n not in chosen), key=badness)[: max(0, MAX_PAIR_NODES - len(chosen))]
    kept = sorted(chosen | set(rest))
    left_out = len(nodes) - len(kept)
    note = _pair_note(len(kept), len(nodes), flagged, named, partners, partners_all, rest) if left_out else ""
    if len(siblings) > 1:
        others = ", ".join(s.label for s in siblings if s is not drawn)
        note = "; ".join(
            x
            for x in (f"the pairwise runs of {drawn.label} (other runs of these pairs: {others})", note)
            if x
        )
    pos = {n: i for i, n in enumerate(kept)}
    cells: list[list[float | None]] = [[None] * len(kept) for _ in kept]
    for (a, b), pair in group.items():
        if a in pos and b in pos:
            cells[pos[a]][pos[b]] = cells[pos[b]][pos[a]] = pair.busbw
    return {
        "labels": kept,
        "matrix": cells,
        "highlight": sorted(set(named) & set(kept)),
        "note": note,
        "nodes": len(nodes),
        "left_out": left_out,
        "flagged": sorted(flagged),
        "partners": sorted(partners),
    }


def _pair_note(
    shown: int,
    total: int,
    flagged: list[str],
    named: list[str],
    partners: list[str],
    partners_all: list[str],
    rest: list[str],
) -> str:
    """What a cut heatmap shows and leaves out, e.g. '32 of 64 nodes shown: the flagged node
    (p5-node-0018), its 4 partners and the 27 slowest others (lowest pair median); 32 nodes with no
    pairwise finding left out'."""
    parts = []
    if flagged:
        listed = ", ".join(flagged[:4]) + (f" and {len(flagged) - 4} more" if len(flagged) > 4 else "")
        parts.append(f"the flagged node{_s(flagged)} ({listed})")
    if partners_all:
        whose = "its" if len(flagged) == 1 else "their"
        if len(partners) == len(partners_all):
            parts.append(f"{whose} {len(partners)} partner{_s(partners)}")
        else:
            parts.append(f"{len(partners)} of {whose} {len(partners_all)} partners (slowest pairs first)")
    if rest:
        others = " others" if parts else ""
        parts.append(f"the {len(rest)} slowest{others} (lowest pair median)")
    if not parts:
        parts.append(f"the {len(flagged)} flagged nodes")
    what = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    left = total - shown
    if len(named) > len(flagged):
        why = f"{len(named) - len(flagged)} flagged, "
    else:
        why = "with no pairwise finding "
    return f"{shown} of {total} nodes shown: {what}; {left} node{'s' if left != 1 else ''} {why}left out"


def _s(items: list[str]) -> str:
    return "" if len(items) == 1 else "s"


def collect(con: duckdb.DuckDBPyConnection, settings: Settings, findings: list[Finding]) -> dict[str, Any]:
    """Everything the HTML/PDF report draws, as plain data."""
    from analyzer.judge.engine import Context

    ctx = Context(con, settings)
    sick = {f.node for f in findings if f.node and f.severity.value in ("critical", "warning")}
    cells, rows = sick_gpus(findings)
    iowait = iowait_by_node(ctx)
    iowait_line = float(settings.value("fs.iowait.high", "iowait_pct"))
    utilisation, utilisation_metrics = fsx_utilisation(ctx)
    throughput = fsx_throughput(con)
    return {
        "busbw": busbw_bars(ctx, settings, findings),
        "pairs": pair_matrix(ctx, findings),
        "sick_nodes": sorted(sick),
        "gpu_temp": gpu_grid(con, "temp_c", cells, rows, temperature_scale(settings, con)),
        "gpu_sm_clock": gpu_grid(con, "sm_clock_mhz", cells, rows),
        "gpu_ecc": gpu_grid(con, "ecc_corrected_volatile", cells, rows, {"vmin": 0.0}),
        "iowait": iowait,
        "iowait_highlight": iowait_flagged(findings, iowait, iowait_line),
        "fsx_utilisation": utilisation,
        "fsx_utilisation_metrics": utilisation_metrics,
        "fsx_throughput": throughput,
        "fsx_throughput_metrics": [m for m in FSX_BYTES if any(f"({m})" in name for name in throughput)],
        "versions": version_table(con),
        "fsx_line": float(settings.value("fs.fsx.utilization_sustained", "utilization_pct")),
        "iowait_line": iowait_line,
    }
