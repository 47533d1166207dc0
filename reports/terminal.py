"""The terminal summary: [OK] / [CONCERN] / [INFO] lines grouped by section, each finding with its route.

Lines wrap to the terminal width (``COLUMNS``, else the terminal's size, else 100).  Nothing is cut
silently: a rule firing on many nodes with one severity and one route folds into one line that says how
many it folded and that ``-v`` unfolds them (findings of another severity or route get lines of their
own, so the route printed under a line is that of every finding it stands for); every list that is cut
says how many it left out and where they are.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections import defaultdict
from typing import TextIO

import click

from analyzer.model.plan import Plan
from analyzer.model.records import Finding, Outcome, Route, Severity
from analyzer.model.report_data import ReportData
from analyzer.model.routes import concerns_of_rule, node_routes, owners, route_text
from analyzer.model.sections import SECTIONS
from analyzer.model.timeline import words

#: Concern lines per section before the rest is counted (unless --verbose).
MAX_LINES_PER_SECTION = 25
#: A rule with more findings than this in one section is one line naming the worst nodes (unless --verbose).
GROUP_ABOVE = 3
#: Items named in a folded list before "and N more".
NAMED = 5
DEFAULT_WIDTH = 100
MIN_WIDTH = 60

_COLOURS = {"red": "red", "yellow": "yellow", "green": "green", "blue": "blue"}
_STATUS = {
    "concerns": "Concerns found.",
    "no-concerns": "No concerns found in what was collected.",
    "incomplete": "Incomplete: no concern found, but something was not judged (below: core inputs not examined, "
    "inputs not read or rules that failed to run), so no clean bill is given.",
}


def colour_policy(mode: str = "auto") -> bool | None:
    """``--color`` as click's ``color`` argument: None lets click decide by whether the stream is a TTY."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return None


def width() -> int:
    """The terminal width: ``COLUMNS`` first (shutil reads it), the terminal's size, else 100."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def paint(text: str, name: str) -> str:
    """click.style by role name ('bold' or a colour)."""
    return click.style(text, bold=True) if name == "bold" else click.style(text, fg=_COLOURS[name])


class _Writer:
    """Collects lines, wrapping each to the width; a leading tag is painted after wrapping."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.lines: list[str] = []

    def add(self, text: str, indent: int = 2, hang: int = 4, tag: str = "", colour: str = "") -> None:
        body = f"{tag} {text}" if tag else text
        wrapped = textwrap.wrap(
            body,
            width=self.columns,
            initial_indent=" " * indent,
            subsequent_indent=" " * (indent + hang),
            break_on_hyphens=False,
            break_long_words=True,
        ) or [" " * indent]
        if tag and colour:
            wrapped[0] = wrapped[0].replace(tag, paint(tag, colour), 1)
        self.lines += wrapped

    def plain(self, text: str) -> None:
        self.lines.append(text)


def render(data: ReportData, verbose: bool = False, columns: int | None = None) -> str:
    """The summary with click styles; ``write`` (click.echo) strips them where colour is off."""
    out = _Writer(columns or width())
    out.plain(f"hptriage: {len(data.nodes)} node(s) from {len(data.bundles)} bundle(s)")
    for section in data.sections:
        out.plain("")
        out.plain(paint(section.title, "bold"))
        _findings_lines(out, section.findings, data.rule_titles, verbose)
        _outcome_lines(out, section.outcomes, data, verbose)
    out.plain("")
    _timeline(out, data)
    _verdict(out, data, verbose)
    if data.plan is not None:
        out.plain("")
        _plan(out, data.plan, verbose)
    return "\n".join(out.lines) + "\n"


def _findings_lines(out: _Writer, findings: list[Finding], titles: dict[str, str], verbose: bool) -> None:
    """One line per finding; without -v a rule firing on many nodes is one line naming the worst ones.

    Only findings of one rule, one severity and one route fold into a line, so the severity and route
    that line prints are those of every finding it stands for."""
    by_rule: dict[tuple[str, str, Route], list[Finding]] = defaultdict(list)
    for f in findings:
        by_rule[(f.rule, f.severity.value, f.route)].append(f)
    shown = hidden = 0
    for f in findings:
        key = (f.rule, f.severity.value, f.route)
        group = by_rule.get(key)
        if not group:
            continue  # already printed as part of its group
        if not verbose and len(group) > GROUP_ABOVE:
            del by_rule[key]
            nodes = sorted(set().union(*(g.nodes_named for g in group)))
            where = f"{len(nodes)} node(s) ({_named(nodes, NAMED)})" if nodes else "the cluster"
            text = (
                f"{titles.get(f.rule, f.rule)}: {len(group)} findings on {where}, each of this severity and "
                f"route; first: {f.message} [-v lists every one]"
            )
            _one(out, f, text)
            shown += 1
            continue
        group.remove(f)
        if not verbose and shown >= MAX_LINES_PER_SECTION:
            hidden += 1
            continue
        _one(out, f, f.message)
        shown += 1
    if hidden:
        out.add(f"... and {hidden} more finding(s) in this section: see -v, --json or --html")


def _one(out: _Writer, f: Finding, text: str) -> None:
    concern = f.severity in (Severity.CRITICAL, Severity.WARNING)
    tag = "[CONCERN]" if concern else "[INFO]"
    colour = "red" if f.severity == Severity.CRITICAL else "yellow" if concern else "blue"
    out.add(f"{f.severity.value}: {text}", tag=tag, colour=colour)
    out.add(f"→ {route_text(f.route)}", indent=6)
    if concern and f.evidence and f.evidence[0].file:
        ev = f.evidence[0]
        where = f"{ev.file}:{ev.line}" if ev.line else ev.file
        out.add(f"{where}: {(ev.text or '').strip()}", indent=8)


def _outcome_lines(out: _Writer, outcomes: list[Outcome], data: ReportData, verbose: bool) -> None:
    """Passed and not-examined rules, compactly: what was checked and found fine, and what was not."""
    titles, phrases = data.rule_titles, data.rule_passed
    passed = [phrases.get(o.rule) or titles.get(o.rule, o.rule) for o in outcomes if o.outcome == "pass"]
    no_input = [
        o for o in outcomes if o.outcome == "skipped" and (o.reason or "no input").startswith("no input")
    ]
    skipped = [titles.get(o.rule, o.rule) for o in no_input]
    # skipped for another reason than a missing input (too few peers to compare with): said with it
    unjudged = [
        f"{titles.get(o.rule, o.rule)} — {o.reason}"
        for o in outcomes
        if o.outcome == "skipped" and o not in no_input
    ]
    if passed:
        out.add(f"{len(passed)} check(s) passed: " + "; ".join(passed), tag="[OK]", colour="green")
    if skipped:
        out.add("not examined (no input on any node): " + "; ".join(skipped), tag="[INFO]", colour="blue")
    if unjudged:
        out.add("not examined: " + "; ".join(unjudged), tag="[INFO]", colour="blue")
    partial = [o for o in outcomes if o.outcome in ("pass", "fail") and o.nodes_without_data]
    if partial:
        limit = None if verbose else 3
        parts = [
            f"{titles.get(o.rule, o.rule)} ({_named(o.nodes_without_data, limit)}"
            + (f" — {o.reason})" if o.reason else ")")
            for o in partial
        ]
        out.add(
            "checked only where the input exists; not examined on: " + "; ".join(parts),
            tag="[INFO]",
            colour="blue",
        )
    for o in outcomes:
        if o.outcome == "error":
            out.add(
                f"rule error: {titles.get(o.rule, o.rule)} ({o.rule}) failed to run; nothing it judges was "
                "judged (the reason is under Verdict)",
                tag="[CONCERN]",
                colour="yellow",
            )
    if not outcomes:
        out.add("no rule in this section", tag="[INFO]", colour="blue")


def _of_rule(findings: list[Finding], rule: str) -> str:
    """The severity and route a rule's concerns share, or how they differ."""
    common = concerns_of_rule(findings, rule)
    if common is None:
        return "no finding listed"
    severity = common.severity.value if common.severity else common.counts_text()
    if common.route is not None:
        return f"{severity} → {route_text(common.route)}"
    return f"{severity}; {common.routes} different routes, each on its finding's line"


def _named(items: list[str], limit: int | None) -> str:
    if limit is None or len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


def _timeline(out: _Writer, data: ReportData) -> None:
    """The first events of the incident in words: time, node, event, source and its clock
    (analyzer.model.timeline.words)."""
    if data.timeline is None:
        return
    out.plain(paint("Timeline", "bold"))
    for line in words(data.timeline):
        out.add(line)
    out.plain("")


def _verdict(out: _Writer, data: ReportData, verbose: bool) -> None:
    v = data.verdict
    assert v is not None
    out.plain(paint("Verdict", "bold"))
    out.add(_STATUS.get(v.status, v.status))
    if v.sections:
        out.add("Read sections: " + ", ".join(SECTIONS[s] for s in v.sections))
    if v.worst_nodes:
        shown = v.worst_nodes if verbose else v.worst_nodes[:NAMED]
        names = "; ".join(
            f"{r.node} ({r.critical} critical, {r.warning} warning) → "
            + (", ".join(owners(node_routes(data.findings, r.node, r.rules or None))) or "—")
            for r in shown
        )
        more = v.ranked_nodes - len(shown)
        out.add(
            "Worst nodes (→ who acts): "
            + names
            + (f"; and {more} more: see -v, --json or --html" if more else "")
        )
    for c in v.cluster_wide:
        out.add(f"Cluster-wide: {c['message']} ({c['rule']}; {_of_rule(data.findings, c['rule'])})")
    for note in v.notes:
        out.add(note, tag="[INFO]", colour="blue")
    if v.unread_inputs:
        out.add(f"{len(v.unread_inputs)} input(s) could not be read:", tag="[CONCERN]", colour="yellow")
        rows = v.unread_inputs if verbose else v.unread_inputs[:10]
        for u in rows:
            out.add(f"{u.path}: {u.reason}", indent=6)
        if len(rows) < len(v.unread_inputs):
            out.add(f"... and {len(v.unread_inputs) - len(rows)} more: see -v or --json", indent=6)
    not_parsed = data.inputs.get("not_parsed") or []
    if not_parsed:  # read and kept for people, parsed by no parser: nobody takes them for judged
        listed = "; ".join(f"{e['path']} on {e['nodes']} node(s) ({e['reason']})" for e in not_parsed)
        out.add(
            f"read for people, not parsed (nothing in them judged): {listed}", tag="[INFO]", colour="blue"
        )
    if v.rule_errors:
        out.add(f"{len(v.rule_errors)} rule(s) failed to run:", tag="[CONCERN]", colour="yellow")
        for e in v.rule_errors:
            out.add(f"{e['title']} ({e['rule']}): {e['reason']}", indent=6)
    if v.not_examined:
        by_what: dict[str, list[str]] = defaultdict(list)
        for r in v.not_examined:
            by_what[r["what"]].append(r["node"])
        for what, nodes in sorted(by_what.items()):
            out.add(
                f"not examined: {what} on {_named(nodes, None if verbose else NAMED)}",
                tag="[INFO]",
                colour="blue",
            )
    out.add("Findings: " + ", ".join(f"{v.counts.get(s, 0)} {s}" for s in ("critical", "warning", "info")))
    failed = sorted({p["file"] for p in data.problems})
    if failed:
        out.add(f"{len(failed)} file(s) with parse problems: {_named(failed, None if verbose else NAMED)}")
    else:
        out.add("0 files with parse problems")


def _plan(out: _Writer, plan: Plan, verbose: bool) -> None:
    """The remediation plan: what the top says, each node's action with why, the cluster fixes, the waves
    and the Slurm commands (the HyperPod request bodies and EKS labels are in the plan's JSON)."""
    out.plain(paint("Remediation plan", "bold"))
    out.add(plan.read_only)
    for w in plan.warnings:
        out.add(w, tag="[PLAN]", colour="yellow")
    counts = plan.counts()
    out.add(
        "Nodes: "
        + (", ".join(f"{n} {a}" for a, n in counts.items()) or "none needs an action")
        + (f"; {len(plan.nodes_without_action)} need nothing" if plan.nodes_without_action else "")
    )
    shown = plan.actions if verbose else plan.actions[:MAX_LINES_PER_SECTION]
    for a in shown:
        wave = f" (wave {a.wave})" if a.wave else ""
        colour = "red" if a.disruptive else "yellow" if a.action == "investigate" else "blue"
        out.add(f"{a.action}{wave}: {a.node} — {a.why}", tag="[PLAN]", colour=colour)
        if a.held_back:
            out.add(f"held back: {a.held_back['action']} — {a.held_back['why']}", indent=6)
        for f in a.findings[: None if verbose else 3]:
            ev = f.evidence[0] if f.evidence else {}
            where = f" [{ev.get('file')}:{ev.get('line')}]" if ev.get("file") else ""
            out.add(f"{f.severity} {f.rule} → {f.action}{where}", indent=8)
    if len(shown) < len(plan.actions):
        out.add(f"... and {len(plan.actions) - len(shown)} more node(s): see -v or the plan's JSON")
    for c in plan.cluster_actions:
        out.add(f"{c.action}: {c.rule} on {len(c.nodes) or 'the cluster'} node(s) — {c.step}", tag="[PLAN]",
                colour="blue")  # fmt: skip
    for s in plan.slurm:
        out.add(f"wave {s['wave']} (Slurm): {s['command']}", indent=4)
    calls = {k: len(v) for k, v in plan.hyperpod.items() if k != "nodes_without_instance_id" and v}
    if calls:
        out.add("HyperPod requests (in the plan's JSON): " + ", ".join(f"{n} {k}" for k, n in calls.items()))


def write(
    data: ReportData, stream: TextIO | None = None, colour_mode: str = "auto", verbose: bool = False
) -> None:
    click.echo(render(data, verbose), file=stream or sys.stdout, color=colour_policy(colour_mode), nl=False)
