"""The terminal summary: [OK] / [CONCERN] / [INFO] lines grouped by section, each concern with its route."""

from __future__ import annotations

import os
import sys
from collections import Counter, defaultdict
from typing import TextIO

from analyzer.findings import Finding, Severity
from analyzer.report_data import ReportData

SECTIONS = {
    "A": "A. Uneven NCCL / topology",
    "B": "B. Filesystem",
    "C": "C. GPU and host health",
}
#: Rule area (first part of the rule id) -> report section.
_AREA_SECTION = {
    "nccl": "A",
    "straggler": "A",
    "net": "A",
    "placement": "A",
    "version": "A",
    "fs": "B",
    "gpu": "C",
    "host": "C",
    "bundle": "C",
}
MAX_LINES_PER_SECTION = 25


def section_of(rule_id: str) -> str:
    return _AREA_SECTION.get(rule_id.split(".", 1)[0], "C")


def use_colour(stream: TextIO, mode: str = "auto") -> bool:
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()


def render(data: ReportData, colour: bool = False) -> str:
    paint = _painter(colour)
    out: list[str] = []
    nodes = len(data.nodes)
    out.append(f"hptriage: {nodes} node(s) from {len(data.bundles)} bundle(s)")
    by_section: dict[str, list[Finding]] = defaultdict(list)
    for f in data.findings:
        by_section[section_of(f.rule)].append(f)
    outcomes_by_section: dict[str, list[str]] = defaultdict(list)
    for o in data.outcomes:
        if o.outcome == "pass":
            outcomes_by_section[section_of(o.rule)].append(
                f"{paint('[OK]', 'green')} {data.rule_titles.get(o.rule, o.rule)}"
            )
        elif o.outcome in ("skipped", "error"):
            word = "not checked" if o.outcome == "skipped" else "rule failed to run"
            outcomes_by_section[section_of(o.rule)].append(
                f"{paint('[INFO]', 'blue')} {data.rule_titles.get(o.rule, o.rule)}: {word} ({o.reason})"
            )
    for key, title in SECTIONS.items():
        out.append("")
        out.append(paint(title, "bold"))
        findings = by_section.get(key, [])
        for f in findings[:MAX_LINES_PER_SECTION]:
            tag = "[CONCERN]" if f.severity in (Severity.CRITICAL, Severity.WARNING) else "[INFO]"
            colour_name = (
                "red" if f.severity == Severity.CRITICAL else "yellow" if tag == "[CONCERN]" else "blue"
            )
            out.append(f"  {paint(tag, colour_name)} {f.severity.value}: {f.message}")
            if tag == "[CONCERN]":
                out.append(f"      → {f.route.owner}: {f.route.action} ({f.route.target})")
                if f.evidence and f.evidence[0].file:
                    ev = f.evidence[0]
                    where = f"{ev.file}:{ev.line}" if ev.line else ev.file
                    out.append(f"        {where}: {(ev.text or '').strip()[:120]}")
        if len(findings) > MAX_LINES_PER_SECTION:
            out.append(f"  ... {len(findings) - MAX_LINES_PER_SECTION} more (see --json / --html)")
        for line in outcomes_by_section.get(key, []):
            out.append(f"  {line}")
        if not findings and not outcomes_by_section.get(key):
            out.append(f"  {paint('[INFO]', 'blue')} no rule in this section yet")
    out.append("")
    out.extend(_verdict(data, paint))
    return "\n".join(out) + "\n"


def _verdict(data: ReportData, paint) -> list[str]:  # type: ignore[no-untyped-def]
    concerns = [f for f in data.findings if f.severity in (Severity.CRITICAL, Severity.WARNING)]
    lines = [paint("Verdict", "bold")]
    if not concerns:
        lines.append("  No concerns found in what was collected.")
    else:
        sections = sorted({section_of(f.rule) for f in concerns})
        lines.append("  Read sections: " + ", ".join(SECTIONS[s] for s in sections))
        worst = Counter(f.node for f in concerns if f.severity == Severity.CRITICAL and f.node)
        if not worst:
            worst = Counter(f.node for f in concerns if f.node)
        if worst:
            names = ", ".join(f"{n} ({c})" for n, c in worst.most_common(5))
            lines.append(f"  Worst nodes: {names}")
        counts = Counter(f.severity.value for f in data.findings)
        lines.append(
            "  Findings: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in ("critical", "warning", "info"))
        )
    failed_files = {p["file"] for p in data.problems}
    skipped = sum(1 for o in data.outcomes if o.outcome == "skipped")
    lines.append(
        f"  {len(failed_files)} file(s) with parse problems; {skipped} rule(s) not checked for lack of data"
    )
    return lines


def _painter(enabled: bool):  # type: ignore[no-untyped-def]
    codes = {"red": "31", "yellow": "33", "green": "32", "blue": "34", "bold": "1"}

    def paint(text: str, name: str) -> str:
        return f"\033[{codes[name]}m{text}\033[0m" if enabled else text

    return paint


def write(data: ReportData, stream: TextIO | None = None, colour_mode: str = "auto") -> None:
    stream = stream or sys.stdout
    stream.write(render(data, use_colour(stream, colour_mode)))
