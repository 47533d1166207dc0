"""Findings and tables -> one self-contained HTML file (jinja2) -> PDF (WeasyPrint).

Every asset is inlined: CSS from reports/static, charts as inline SVG.  Nothing references the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.findings import Severity
from analyzer.report_data import ReportData
from analyzer.sections import SECTIONS, section_of

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
    sick = set(c.get("sick_nodes", []))
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
        figures.append(
            {
                "section": "A",
                "title": "Pairwise nccl-tests busbw",
                "svg": charts.heatmap(
                    pairs["labels"], pairs["matrix"], set(pairs["highlight"]), "Pairwise busbw (GB/s)", "GB/s"
                ),
                "note": pairs.get("note", ""),
            }
        )
    if c.get("fsx_utilisation"):
        figures.append(
            {
                "section": "B",
                "title": "FSx utilisation",
                "svg": charts.timeseries(c["fsx_utilisation"], c["fsx_line"], "FSx utilisation", "%"),
                "note": "",
            }
        )
    if c.get("fsx_throughput"):
        figures.append(
            {
                "section": "B",
                "title": "FSx throughput",
                "svg": charts.timeseries(c["fsx_throughput"], None, "FSx throughput", "MB/s"),
                "note": "",
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
            sick & set(labels),
            "iowait per node",
            "iowait (%)",
            lower_is_worse=False,
        )
        figures.append({"section": "B", "title": "iowait per node", "svg": svg, "note": _left_out(left_out)})
    for key, title, unit in (
        ("gpu_temp", "GPU temperature", "°C"),
        ("gpu_sm_clock", "GPU SM clock", "MHz"),
        ("gpu_ecc", "GPU corrected ECC (volatile)", "errors"),
    ):
        g = c.get(key)
        if g:
            note = f"{g['left_out']} nodes closest to the median not drawn" if g["left_out"] else ""
            figures.append(
                {
                    "section": "C",
                    "title": title,
                    "svg": charts.grid(g["rows"], g["columns"], g["values"], title, unit),
                    "note": note,
                }
            )
    return figures


def _by_rule(findings: list[Any]) -> list[dict[str, Any]]:
    """One row per rule that fired: worst severity, how many findings and nodes, one example."""
    rows: dict[str, dict[str, Any]] = {}
    for f in findings:  # findings arrive sorted by severity, so the first one is the worst
        row = rows.setdefault(
            f.rule, {"rule": f.rule, "severity": f.severity.value, "count": 0, "nodes": set(), "example": f}
        )
        row["count"] += 1
        if f.node:
            row["nodes"].add(f.node)
    out = sorted(rows.values(), key=lambda r: (Severity(r["severity"]).rank, -r["count"], r["rule"]))
    for r in out:
        r["nodes"] = len(r["nodes"])
    return out


def _left_out(count: int) -> str:
    return (
        f"{count} middle nodes not drawn (the best and worst ends and every flagged node are)"
        if count
        else ""
    )


def context(data: ReportData) -> dict[str, Any]:
    sections = []
    for key, title in SECTIONS.items():
        found = [f for f in data.findings if section_of(f.rule) == key]
        outcomes = [o for o in data.outcomes if section_of(o.rule) == key]
        sections.append({"key": key, "title": title, "findings": found, "outcomes": outcomes})
    return {
        "version": __version__,
        "css": (HERE / "static" / "report.css").read_text(encoding="utf-8"),
        "data": data,
        "verdict": data.verdict,
        "sections": sections,
        "section_titles": SECTIONS,
        "instance_types": sorted({n.get("instance_type") or "unknown" for n in data.nodes}),
        "collected": sorted({n.get("collected_at") or "" for n in data.nodes} - {""}),
        "figures": draw_charts(data),
        "by_rule": _by_rule(data.findings),
        "max_table": MAX_TABLE,
        "per_rule_open": PER_RULE_OPEN,
        "versions": data.charts.get("versions"),
    }


def write_pdf(html: str, path: Path) -> None:
    from analyzer.errors import UsageProblem

    try:
        from weasyprint import HTML
    except (ImportError, OSError) as exc:  # OSError: Pango missing
        raise UsageProblem(
            f"--pdf needs WeasyPrint and Pango ({exc}); on Debian: apt-get install libpango-1.0-0 libpangoft2-1.0-0"
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    HTML(string=html, base_url=None).write_pdf(str(path))
