"""Findings and tables -> one self-contained HTML file (jinja2) -> PDF (WeasyPrint).

Every asset is inlined: CSS from reports/static, charts as inline SVG.  Nothing references the network.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.model.records import Severity
from analyzer.model.report_data import ReportData
from analyzer.model.routes import concerns_of_rule, node_routes, owners, shared
from analyzer.model.sections import SECTIONS, by_rule
from analyzer.model.verdict import CONCERN

HERE = Path(__file__).resolve().parent
#: Rows of the findings table before the rest is left to the JSON output.
MAX_TABLE = 200
#: Findings of one rule shown open in a section; the rest sit in a collapsed <details>.
PER_RULE_OPEN = 5


def render_html(data: ReportData, paper: str = "A4") -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template("report.html.j2")
    return template.render(paper=paper, **context(data))


def draw_charts(data: ReportData) -> list[dict[str, Any]]:
    """Turn the gathered chart data into inline SVG figures, in report order."""
    from reports import charts

    c = data.charts
    if not c:
        return []
    figures: list[dict[str, Any]] = []
    for item in c.get("busbw", []):
        svg, left_out = charts.bars_with_lines(
            item["labels"],
            item["values"],
            item["lines"],
            set(item["highlight"]),
            item["title"],
            "busbw (GB/s)",
        )
        note = "; ".join(x for x in (item.get("note", ""), _left_out(left_out)) if x)
        figures.append({"section": "A", "title": item["title"], "svg": svg, "note": note})
    pairs = c.get("pairs")
    if pairs:
        cells = [v for row in pairs["matrix"] for v in row if v is not None]
        scale = _colour_range(min(cells), max(cells), "GB/s", "the pairs' range") if cells else ""
        figures.append(
            {
                "section": "A",
                "title": "Pairwise nccl-tests busbw",
                "svg": charts.heatmap(
                    pairs["labels"],
                    pairs["matrix"],
                    set(pairs["highlight"]),
                    "Pairwise nccl-tests busbw (GB/s)",
                    "busbw (GB/s)",
                ),
                "note": pairs.get("note", ""),
                "scale": scale,
            }
        )
    if c.get("fsx_utilisation"):
        # titled by the metrics plotted (DiskIopsUtilization, ...), not by a word none of them is
        metrics = c.get("fsx_utilisation_metrics") or sorted(c["fsx_utilisation"])
        title = f"FSx {', '.join(metrics)}, %"
        figures.append(
            {
                "section": "B",
                "title": title,
                "svg": charts.timeseries(
                    c["fsx_utilisation"],
                    c["fsx_line"],
                    title,
                    "% of the limit",
                    line_label=f"{c['fsx_line']:g} % (fs.fsx.utilization_sustained)",
                    top=100.0,
                ),
                "note": "",
            }
        )
    if c.get("fsx_throughput"):
        metrics = c.get("fsx_throughput_metrics") or ["DataReadBytes", "DataWriteBytes"]
        title = f"FSx {' and '.join(metrics)} per second, MB/s"
        figures.append(
            {
                "section": "B",
                "title": title,
                "svg": charts.timeseries(c["fsx_throughput"], None, title, "MB/s"),
                "note": "each period's Sum divided by the period",
            }
        )
    if c.get("iowait"):
        labels = [n for n, _ in c["iowait"]]
        values = [v for _, v in c["iowait"]]
        line = c["iowait_line"]
        svg, left_out = charts.bars_with_lines(
            labels,
            values,
            {"warning": line},
            set(c.get("iowait_highlight", [])) & set(labels),
            "CPU iowait per node (mean of its reports)",
            "iowait (%)",
            lower_is_worse=False,
        )
        figures.append(
            {
                "section": "B",
                "title": "CPU iowait per node",
                "svg": svg,
                "note": _left_out(left_out),
            }
        )
    for key, title, unit in (
        ("gpu_temp", "GPU temperature", "°C"),
        ("gpu_sm_clock", "GPU SM clock", "MHz"),
        ("gpu_ecc", "GPU corrected ECC (volatile)", "errors"),
    ):
        g = c.get(key)
        if g:
            figures.append(_grid_figure(key, title, unit, g))
    return figures


#: Colour maps: light = low, dark = high, so "cool" and "hot" read the same in grey.
GRID_CMAPS = {"gpu_temp": "YlOrRd", "gpu_ecc": "YlOrRd", "gpu_sm_clock": "cividis"}


def _grid_figure(key: str, title: str, unit: str, g: dict[str, Any]) -> dict[str, Any]:
    """One node x GPU grid: a line when every GPU reads the same value, else the drawn grid."""
    from reports import charts

    if g.get("uniform") is not None:
        count = f" ({g['gpus']} GPUs on {g['nodes']} nodes)" if g.get("gpus") else ""
        return {
            "section": "C",
            "title": title,
            "svg": "",
            "note": f"every GPU reads {g['uniform']:g} {unit}{count}; no grid drawn",
        }
    scale = g.get("scale") or {}
    lines = scale.get("lines") or {}
    marked = [(node, f"GPU {gpu}") for node, gpu in g.get("marked", [])]
    notes = []
    finite = [float(v) for row in g["values"] for v in row if v is not None]
    low = float(scale["vmin"]) if scale.get("vmin") is not None else min(finite, default=0.0)
    high = float(scale["vmax"]) if scale.get("vmax") is not None else max(finite, default=0.0)
    if lines:
        marks = ", ".join(f"{name} {value:g} {unit}" for name, value in lines.items())
        source = f" ({scale['source']})" if scale.get("source") else ""
        notes.append(f"colour from {low:g} to {high:g} {unit}, lines at {marks}{source}")
        if low != 0:
            notes.append("the colour scale does not start at 0")
    else:
        notes.append(
            _colour_range(
                low,
                high,
                unit,
                "its lower end fixed" if scale.get("vmin") is not None else "the data's range",
            )
        )
    if marked:
        cells = ", ".join(f"{node} {gpu}" for node, gpu in marked[:8])
        more = f" and {len(marked) - 8} more" if len(marked) > 8 else ""
        notes.append(f"hatched, outlined cells: GPUs with a finding ({cells}{more})")
    if g.get("marked_rows"):
        notes.append("▶ nodes with a GPU or host concern")
    if g.get("left_out"):
        notes.append(f"{g['left_out']} nodes closest to the median not drawn")
    svg = charts.grid(
        g["rows"],
        g["columns"],
        g["values"],
        title,
        unit,
        marked=marked,
        marked_rows=g.get("marked_rows", []),
        vmin=scale.get("vmin"),
        vmax=scale.get("vmax"),
        lines=lines,
        label=f"{title} ({unit})",
        cmap=GRID_CMAPS.get(key, "cividis"),
        gid=key,
    )
    return {"section": "C", "title": title, "svg": svg, "note": "; ".join(notes)}


def severity_counts(findings: list[Any]) -> list[tuple[str, int]]:
    """(severity, count) pairs, worst first, only those present: a group's label ("2 critical, 5 warning")."""
    counts = Counter(f.severity.value for f in findings)
    return [(s.value, counts[s.value]) for s in sorted(Severity, key=lambda s: s.rank) if counts[s.value]]


def _by_rule(groups: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """One row per rule that fired: its severity counts, how many findings and nodes, one example
    (the findings arrive sorted by severity, so each rule's first one is its worst)."""
    out = [
        {
            "rule": rule,
            "severity": group[0].severity.value,  # the worst: used only to order and colour
            "counts": severity_counts(group),
            "count": len(group),
            "nodes": len({f.node for f in group if f.node}),
            "example": group[0],
            "findings": group,
            # the route every finding of the rule shares, else None (each finding then says its own)
            "shared": shared(group),
        }
        for rule, group in groups.items()
    ]
    return sorted(out, key=lambda r: (Severity(r["severity"]).rank, -r["count"], r["rule"]))


def _check_rows(data: ReportData, outcomes: list[Any], all_nodes: int) -> list[dict[str, Any]]:
    """The appendix rows of one section: rule, outcome, pass phrase or reason, nodes checked, not examined."""
    label = {"fail": "concern", "pass": "OK", "skipped": "not examined", "error": "rule error"}
    rows = []
    for o in outcomes:
        if o.outcome == "pass":
            detail = data.rule_passed.get(o.rule) or data.rule_titles.get(o.rule, "")
        elif o.outcome == "fail":
            detail = f"{o.findings} finding(s), shown above"
        else:
            detail = o.reason or ""
        if o.outcome in ("pass", "fail") and o.reason:  # why some nodes were not examined (too few peers)
            detail += f"; not examined on some nodes: {o.reason}"
        missing = list(o.nodes_without_data or [])
        if not missing:
            without = "all (no input)" if o.outcome == "skipped" else "—"
        elif all_nodes and len(missing) >= all_nodes:
            without = f"all {len(missing)}"
        else:
            without = f"{len(missing)}: " + ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        checked = list(getattr(o, "nodes_checked", []) or [])
        rows.append(
            {
                "rule": o.rule,
                "title": data.rule_titles.get(o.rule, ""),
                "outcome": o.outcome,
                "label": label.get(o.outcome, o.outcome),
                "detail": detail,
                "checked": len(checked) if checked else ("cluster" if o.outcome in ("pass", "fail") else 0),
                "without": without,
            }
        )
    return rows


def _summary(outcomes: list[Any]) -> str:
    """One line per section: how its checks came out; the detail is in the appendix."""
    n = Counter(o.outcome for o in outcomes)
    partial = sum(1 for o in outcomes if o.outcome == "pass" and o.nodes_without_data)
    parts = []
    if n["fail"]:
        parts.append(f"{n['fail']} with concerns")
    passed = (
        f"{n['pass']} {'check' if n['pass'] == 1 else 'checks'} passed"
        if not parts
        else f"{n['pass']} passed"
    )
    if partial:
        passed += f" ({partial} of them not on every node)"
    parts.append(passed)
    parts.append(f"{n['skipped']} not examined")
    if n["error"]:
        parts.append(f"{n['error']} rule error(s)")
    return ", ".join(parts)


def _colour_range(low: float, high: float, unit: str, what: str) -> str:
    """The range a colour scale spans, and that it does not start at 0 where it does not."""
    start = "" if low == 0 else "; the colour scale does not start at 0"
    return f"colour from {low:g} to {high:g} {unit} ({what}{start})"


def _left_out(count: int) -> str:
    return (
        f"{count} middle nodes not drawn (the best and worst ends and every flagged node are)"
        if count
        else ""
    )


def context(data: ReportData) -> dict[str, Any]:
    figures = draw_charts(data)
    sections = []
    for section in data.sections:
        key, title, found, outcomes = section.key, section.title, section.findings, section.outcomes
        groups = _by_rule(section.by_rule())
        concerns = [f for f in found if f.severity in CONCERN]
        sections.append(
            {
                "key": key,
                "title": title,
                "findings": found,
                "groups": groups,
                "concerns": len(concerns),
                "rank": min((f.severity.rank for f in concerns), default=len(Severity)),
                "outcomes": outcomes,
                "summary": _summary(outcomes) if outcomes else "",
                "checks": _check_rows(data, outcomes, len(data.nodes)),
                "figures": [f for f in figures if f["section"] == key],
            }
        )
    # concerns first: sections by their worst concern (critical, then warning), then in report order
    order = sorted(sections, key=lambda s: (s["rank"], s["key"]))
    verdict = data.verdict
    not_examined: dict[str, list[str]] = {}
    for row in getattr(verdict, "not_examined", None) or []:
        not_examined.setdefault(row.get("what", "?"), []).append(row.get("node", "?"))
    read = [s["key"] for s in order if s["key"] in (verdict.sections if verdict else [])]
    # who acts on each worst node: the routes of the concerns its rank counts, worst first
    acts = {
        r.node: node_routes(data.findings, r.node, r.rules or None)
        for r in (verdict.worst_nodes if verdict else [])
    }
    return {
        "version": __version__,
        "css": (HERE / "static" / "report.css").read_text(encoding="utf-8"),
        "data": data,
        "verdict": verdict,
        "read_sections": read,
        "not_examined": not_examined,
        "sections": order,
        "appendix_sections": sections,
        "section_titles": SECTIONS,
        "instance_types": sorted({n.get("instance_type") or "unknown" for n in data.nodes}),
        "clusters": clusters(data.nodes),
        "acts": acts,
        "owners": {node: owners(routes) for node, routes in acts.items()},
        "cluster_causes": {
            c["rule"]: concerns_of_rule(data.findings, c["rule"])
            for c in (verdict.cluster_wide if verdict else [])
        },
        "collected": sorted({n.get("collected_at") or "" for n in data.nodes} - {""}),
        "figures": figures,
        "by_rule": _by_rule(by_rule(data.findings)),
        "max_table": MAX_TABLE,
        "per_rule_open": PER_RULE_OPEN,
        "versions": data.charts.get("versions"),
        "problem_files": len({p.get("file") for p in data.problems}),
        "timeline": _timeline(data),
        "plan": data.plan,
        "plan_waves": _plan_waves(data),
    }


def _plan_waves(data: ReportData) -> list[dict[str, Any]]:
    """The plan's waves for the HTML: nodes, the HyperPod request bodies as JSON text, the commands."""
    import json

    if data.plan is None:
        return []
    out = []
    for wave in data.plan.waves:
        bodies = {k: v for k, v in (wave.get("hyperpod") or {}).items() if v}
        out.append(
            {
                "wave": wave["wave"],
                "nodes": wave["nodes"],
                "hyperpod_json": json.dumps(bodies, indent=2) if bodies else "",
                "commands": list(wave.get("slurm") or []) + list(wave.get("eks") or []),
            }
        )
    return out


def _timeline(data: ReportData) -> dict[str, Any] | None:
    """The cluster timeline's chart data and SVG (reports/timeline.py), where charts were gathered."""
    from reports import timeline

    return timeline.context(data.charts.get("timeline"))


def clusters(nodes: list[dict[str, Any]]) -> list[str]:
    """The clusters the nodes belong to, each once: the name meta.env gives (``cluster=``), else the name
    of the folder the bundles were found in, said as such; "not named" for nodes with neither."""
    named: dict[str, bool] = {}
    for n in nodes:
        name = n.get("cluster")
        if name:
            named[name] = named.get(name, False) or bool(n.get("cluster_in_meta"))
        else:
            named.setdefault("", False)
    out = [name if by_meta else f"{name} (folder name)" for name, by_meta in named.items() if name]
    if "" in named:
        out.append("not named")
    return out


PANGO_INSTALL = (
    "Debian/Ubuntu: apt-get install libpango-1.0-0 libpangoft2-1.0-0; RHEL/Amazon Linux: dnf install pango"
)


def pdf_problem() -> str | None:
    """Why ``--pdf`` cannot be written here, in one line, or None when WeasyPrint loads.

    WeasyPrint loads Pango (through cffi) when it is imported: without Pango the import raises OSError
    after printing a block of advice to standard output, which is kept off ours (``--format summary``
    writes JSON there) and off the terminal.
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import weasyprint  # noqa: F401
    except ImportError as exc:
        return f"--pdf needs WeasyPrint, which is not installed ({exc}): pip install weasyprint"
    except OSError as exc:
        why = " ".join(str(exc).split("  Additionally", 1)[0].split()).rstrip(".")
        return f"--pdf needs Pango, which WeasyPrint cannot load here ({why}); {PANGO_INSTALL}"
    return None


def write_pdf(html: str, path: Path) -> None:
    from analyzer.errors import UsageProblem

    if problem := pdf_problem():
        raise UsageProblem(problem)
    from weasyprint import HTML

    path.parent.mkdir(parents=True, exist_ok=True)
    HTML(string=html, base_url=None).write_pdf(str(path))
