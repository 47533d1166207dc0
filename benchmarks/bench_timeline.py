"""What the cluster timeline costs: its build, its chart, and its share of the HTML report, per cluster size.

    .venv/bin/python benchmarks/bench_timeline.py [--nodes 64,512] [--jobs J] [--scenario mixed] [--no-record]

For each N a cluster is generated (benchmarks/generate.py) and analyzed once with the chart data
(``pipeline.analyze(..., charts=True)``, the database kept); then, on that database and that report data:

* ``build``: ``analyzer.judge.signals.timeline.build`` from the store (its SQL, the conversions, the
  incident), best of 3 on a fresh context;
* ``chart``: ``analyzer.model.timeline.chart`` (rows, caps, groups not placed), best of 3;
* ``draw``: ``reports.timeline.draw`` (matplotlib SVG; matplotlib already imported), best of 3;
* the HTML: ``reports.render.render_html`` with and without the timeline (best of 3 each), the whole
  report's size and the timeline section's (from its heading to the appendix's).

The events, the events placed and not, the rows and markers drawn are printed beside the times.  Results
are appended to benchmarks/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import generate  # noqa: E402


def best(fn: Any, runs: int = 3) -> tuple[float, Any]:
    """(best wall time of ``runs`` calls, the last result)."""
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def measure(nodes: int, scenario: str, jobs: int, tmp: Path) -> dict[str, Any]:
    import duckdb

    from analyzer.judge.engine import Context
    from analyzer.judge.settings import load_settings
    from analyzer.judge.signals import timeline as tl
    from analyzer.model import timeline as view
    from analyzer.pipeline import analyze
    from reports import timeline as drawing
    from reports.render import render_html

    out = tmp / f"cluster-{nodes}"
    generate.generate(out, nodes, scenario)
    db = tmp / f"cluster-{nodes}.duckdb"
    settings = load_settings()
    start = time.perf_counter()
    data = analyze([out], settings, db_path=db, jobs=jobs, charts=True)
    analyze_s = time.perf_counter() - start
    con = duckdb.connect(str(db), read_only=True)
    build_s, timeline = best(lambda: tl.build(Context(con, settings)))
    chart_s, chart = best(lambda: view.chart(timeline))
    drawing.draw(chart)  # matplotlib imported and warmed once
    draw_s, _ = best(lambda: drawing.draw(chart))
    html_s, html = best(lambda: render_html(data))
    without = replace(data, charts={k: v for k, v in data.charts.items() if k != "timeline"})
    html0_s, html0 = best(lambda: render_html(without))
    section = html.split('<h2 id="timeline">', 1)[1].split('<h2 id="appendix"', 1)[0]
    con.close()
    return {
        "nodes": nodes,
        "events": len(timeline.events),
        "placed": len(timeline.placed),
        "unplaced": len(timeline.unplaced),
        "rows": len(chart["rows"]),
        "markers": sum(len(p) for p in chart["points"].values()),
        "analyze_s": analyze_s,
        "build_s": build_s,
        "chart_s": chart_s,
        "draw_s": draw_s,
        "html_s": html_s,
        "html0_s": html0_s,
        "html_kb": len(html.encode()) / 1024,
        "html0_kb": len(html0.encode()) / 1024,
        "section_kb": len(section.encode()) / 1024,
    }


def machine() -> str:
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    return f"`{uname}`; nproc {os.cpu_count()}; Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="64,512")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--scenario", default="mixed", choices=generate.SCENARIOS)
    ap.add_argument("--no-record", action="store_true", help="do not append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        for n in [int(x) for x in args.nodes.split(",")]:
            r = measure(n, args.scenario, args.jobs, Path(tmp))
            rows.append(r)
            print(r, flush=True)
    head = (
        "| N | events (placed / not) | rows, markers drawn | build s | chart s | draw s | render_html s "
        "(without the timeline) | HTML KiB (without) | timeline section KiB |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r['nodes']} | {r['events']} ({r['placed']} / {r['unplaced']}) | {r['rows']}, {r['markers']} | "
        f"{r['build_s']:.2f} | {r['chart_s']:.3f} | {r['draw_s']:.2f} | {r['html_s']:.2f} ({r['html0_s']:.2f}) | "
        f"{r['html_kb']:.0f} ({r['html0_kb']:.0f}) | {r['section_kb']:.0f} |"
        for r in rows
    ]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"\n## Cluster timeline, {stamp}\n\nMachine: {machine()}. `benchmarks/bench_timeline.py`, scenario "
        f"`{args.scenario}`, seed 0, `--jobs {args.jobs}`; each time the best of 3 on the analyzed cluster's "
        "database and report data (analyze itself: "
        + ", ".join(f"{r['analyze_s']:.1f} s at {r['nodes']}" for r in rows)
        + ").\n\n"
        + head
        + "\n".join(lines)
        + "\n"
    )
    print(text)
    if not args.no_record:
        with RESULTS.open("a") as fh:
            fh.write(text)
        print(f"appended to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
