"""Findings and tables -> one self-contained HTML file (jinja2) -> PDF (WeasyPrint).

Every asset is inlined: CSS from reports/static, charts as inline SVG.  Nothing references the network.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.findings import Severity
from analyzer.report_data import ReportData
from reports.terminal import SECTIONS, section_of

HERE = Path(__file__).resolve().parent
TOP_NODES = 20


def render_html(data: ReportData) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template("report.html.j2")
    return template.render(**context(data))


def context(data: ReportData) -> dict[str, Any]:
    concerns = [f for f in data.findings if f.severity in (Severity.CRITICAL, Severity.WARNING)]
    worst = Counter(f.node for f in concerns if f.node).most_common(TOP_NODES)
    counts = Counter(f.severity.value for f in data.findings)
    sections = []
    for key, title in SECTIONS.items():
        found = [f for f in data.findings if section_of(f.rule) == key]
        outcomes = [o for o in data.outcomes if section_of(o.rule) == key]
        sections.append({"key": key, "title": title, "findings": found, "outcomes": outcomes})
    return {
        "version": __version__,
        "css": (HERE / "static" / "report.css").read_text(encoding="utf-8"),
        "data": data,
        "counts": counts,
        "worst": worst,
        "sections": sections,
        "concern_sections": sorted({section_of(f.rule) for f in concerns}),
        "section_titles": SECTIONS,
        "instance_types": sorted({n.get("instance_type") or "unknown" for n in data.nodes}),
        "collected": sorted({n.get("collected_at") or "" for n in data.nodes} - {""}),
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
