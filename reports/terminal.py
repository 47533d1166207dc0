"""The terminal summary: [OK] / [CONCERN] / [INFO] lines grouped by section, each concern with its route."""

from __future__ import annotations

import os
import sys
import textwrap
from collections import defaultdict
from typing import TextIO

import click

from analyzer.engine import Outcome
from analyzer.findings import Finding, Severity
from analyzer.report_data import ReportData
from analyzer.sections import SECTIONS, section_of

MAX_LINES_PER_SECTION = 25
#: A rule with more findings than this in one section is printed as one line naming the worst nodes.
GROUP_ABOVE = 3


def colour_policy(mode: str = "auto") -> bool | None:
    """``--color`` as click's ``color`` argument: None lets click decide by whether the stream is a TTY."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return None


def render(data: ReportData) -> str:
    """The summary with click styles; ``write`` (click.echo) strips them where colour is off."""
    out: list[str] = [f"hptriage: {len(data.nodes)} node(s) from {len(data.bundles)} bundle(s)"]
    by_section: dict[str, list[Finding]] = defaultdict(list)
    for f in data.findings:
        by_section[section_of(f.rule)].append(f)
    for key, title in SECTIONS.items():
        out += ["", paint(title, "bold")]
        out += _findings_lines(by_section.get(key, []), data.rule_titles)
        out += _outcome_lines(
            [o for o in data.outcomes if section_of(o.rule) == key], data.rule_titles
        )
    out.append("")
    out.extend(_verdict(data))
    return "\n".join(out) + "\n"


def _findings_lines(findings: list[Finding], titles: dict[str, str]) -> list[str]:
    """One line per finding; a rule that fires on many nodes becomes one line naming the worst ones."""
    lines: list[str] = []
    by_rule: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        by_rule[(f.rule, f.severity.value)].append(f)
    shown = 0
    for f in findings:
        group = by_rule.get((f.rule, f.severity.value))
        if not group:
            continue  # already printed as part of its group
        if len(group) > GROUP_ABOVE:
            del by_rule[(f.rule, f.severity.value)]
            nodes = sorted({g.node for g in group if g.node})
            named = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
            text = f"{titles.get(f.rule, f.rule)}: {len(group)} findings on {len(nodes)} node(s) ({named}); first: {f.message}"
            lines += _one(f, text)
        else:
            group.remove(f)
            if shown >= MAX_LINES_PER_SECTION:
                continue
            lines += _one(f, f.message)
        shown += 1
    if shown > MAX_LINES_PER_SECTION:
        lines.append(f"  ... {shown - MAX_LINES_PER_SECTION} more (see --json / --html)")
    return lines


def _one(f: Finding, text: str) -> list[str]:
    concern = f.severity in (Severity.CRITICAL, Severity.WARNING)
    tag = "[CONCERN]" if concern else "[INFO]"
    colour_name = "red" if f.severity == Severity.CRITICAL else "yellow" if concern else "blue"
    lines = [f"  {paint(tag, colour_name)} {f.severity.value}: {text}"]
    if concern:
        lines.append(f"      → {f.route.owner}: {f.route.action} ({f.route.target})")
        if f.evidence and f.evidence[0].file:
            ev = f.evidence[0]
            where = f"{ev.file}:{ev.line}" if ev.line else ev.file
            lines.append(f"        {where}: {(ev.text or '').strip()[:120]}")
    return lines


def _outcome_lines(outcomes: list[Outcome], titles: dict[str, str]) -> list[str]:
    """Passed and unchecked rules, compactly: what was checked and found fine, and what was not checked."""
    lines: list[str] = []
    passed = [titles.get(o.rule, o.rule) for o in outcomes if o.outcome == "pass"]
    skipped = [
        titles.get(o.rule, o.rule) for o in outcomes if o.outcome == "skipped"
    ]  # reasons: --json/--html
    if passed:
        lines += _wrapped(f"{paint('[OK]', 'green')} {len(passed)} check(s) passed: " + "; ".join(passed))
    if skipped:
        lines += _wrapped(f"{paint('[INFO]', 'blue')} not checked, no data: " + "; ".join(skipped))
    partial = [o for o in outcomes if o.outcome in ("pass", "fail") and o.nodes_without_data]
    if partial:
        parts = []
        for o in partial:
            nodes = o.nodes_without_data
            named = ", ".join(nodes[:3]) + (f" +{len(nodes) - 3}" if len(nodes) > 3 else "")
            parts.append(f"{titles.get(o.rule, o.rule)} ({named})")
        lines += _wrapped(
            f"{paint('[INFO]', 'blue')} checked only where data exists; no data on: " + "; ".join(parts)
        )
    for o in outcomes:
        if o.outcome == "error":
            lines.append(
                f"  {paint('[INFO]', 'blue')} {titles.get(o.rule, o.rule)}: rule failed to run ({o.reason})"
            )
    if not outcomes:
        lines.append(f"  {paint('[INFO]', 'blue')} no rule in this section")
    return lines


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(
        text, width=110, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False
    )


def _verdict(data: ReportData) -> list[str]:
    v = data.verdict
    lines = [paint("Verdict", "bold")]
    if v.status == "no-concerns":
        lines.append("  No concerns found in what was collected.")
    else:
        lines.append("  Read sections: " + ", ".join(SECTIONS[s] for s in v.sections))
        if v.worst_nodes:
            shown = v.worst_nodes[:5]
            names = ", ".join(f"{r.node} ({r.critical} critical, {r.warning} warning)" for r in shown)
            more = v.ranked_nodes - len(shown)
            lines += _wrapped("Worst nodes: " + names + (f" and {more} more (see --json / --html)" if more else ""))
        lines.append(
            "  Findings: " + ", ".join(f"{v.counts.get(s, 0)} {s}" for s in ("critical", "warning", "info"))
        )
    failed_files = {p["file"] for p in data.problems}
    skipped = sum(1 for o in data.outcomes if o.outcome == "skipped")
    lines.append(
        f"  {len(failed_files)} file(s) with parse problems; {skipped} rule(s) not checked for lack of data"
    )
    return lines


_COLOURS = {"red": {"fg": "red"}, "yellow": {"fg": "yellow"}, "green": {"fg": "green"}, "blue": {"fg": "blue"}}


def paint(text: str, name: str) -> str:
    """click.style by role name ('bold' or a colour)."""
    return click.style(text, bold=True) if name == "bold" else click.style(text, **_COLOURS[name])


def write(data: ReportData, stream: TextIO | None = None, colour_mode: str = "auto") -> None:
    click.echo(render(data), file=stream or sys.stdout, color=colour_policy(colour_mode), nl=False)
