"""The Markdown report: the verdict, the concerns with route and evidence, and what was not examined.

Made for pasting into a support ticket; it says the same as the terminal, HTML and PDF (all read the one
verdict in ``ReportData.verdict``).  Long lists are cut with a count of what was left out, never silently.
Findings are listed by rule, and a rule's findings of different severities or routes under one group per
(severity, route) (:func:`analyzer.model.routes.by_route`): a line never sits under another finding's
severity or action.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from analyzer import __version__
from analyzer.model.plan import Plan
from analyzer.model.records import Finding, Route, Severity
from analyzer.model.report_data import ReportData
from analyzer.model.routes import by_route, concerns_of_rule, node_routes, owners, route_text, shared
from analyzer.model.sections import SECTIONS, Section
from analyzer.model.timeline import words

#: Findings of one rule written out in full; the rest are counted (every route keeps one example).
PER_RULE = 10
#: Routes of one rule given a group of their own; the findings under the rest are counted.
MAX_ROUTES = 20
#: Rows of the worst-nodes, not-examined and unread-inputs lists before the rest is counted.
MAX_ROWS = 50

_STATUS = {
    "concerns": "**Concerns found.**",
    "no-concerns": "**No concerns** in what was collected.",
    "incomplete": "**Incomplete**: no concern found, but something was not judged (below: core inputs not "
    "examined, inputs not read or rules that failed to run), so no clean bill is given.",
}


def render(data: ReportData) -> str:
    v = data.verdict
    assert v is not None
    out = [f"# hptriage report ({__version__})", ""]
    types = sorted({n.get("instance_type") or "unknown" for n in data.nodes})
    out += [
        f"- Nodes: {len(data.nodes)} from {len(data.bundles)} bundle(s); instance types: {', '.join(types) or '—'}",
        f"- Findings: {v.counts.get('critical', 0)} critical, {v.counts.get('warning', 0)} warning, "
        f"{v.counts.get('info', 0)} info",
        "",
        "## Verdict",
        "",
        _STATUS.get(v.status, v.status),
        "",
    ]
    if v.sections:
        out += ["Read sections: " + "; ".join(SECTIONS[s] for s in v.sections), ""]
    if v.worst_nodes:
        out += ["Worst nodes (ranked by critical findings, then warnings, then spread = distinct rules):", ""]
        out += [
            f"{i}. **{_cell(r.node)}**: {r.critical} critical, {r.warning} warning, spread {r.score}; "
            f"who acts: {', '.join(owners(node_routes(data.findings, r.node, r.rules or None))) or '—'}"
            for i, r in enumerate(v.worst_nodes, start=1)
        ]
        if v.ranked_nodes > len(v.worst_nodes):
            out.append(
                f"\n… and {v.ranked_nodes - len(v.worst_nodes)} more nodes with a concern (see the JSON)."
            )
        out.append("")
    if v.cluster_wide:
        out += ["Cluster-wide causes (the nodes showing them are not ranked for them):", ""]
        out += [
            f"- `{c['rule']}` ({_of_rule(data.findings, c['rule'])}): {c['message']}" for c in v.cluster_wide
        ]
        out.append("")
    out += _listed("Given but not judged", list(v.notes))
    out += _listed("Inputs that could not be read", [f"`{u.path}`: {u.reason}" for u in v.unread_inputs])
    out += _listed(
        "Read for people, not parsed (nothing in them was judged)",
        [
            f"`{e['path']}` on {e['nodes']} node(s): {e['reason']}"
            for e in data.inputs.get("not_parsed") or []
        ],
    )
    out += _listed(
        "Rules that failed to run",
        [f"`{e['rule']}` ({_cell(e['title'])}): {_cell(e['reason'])}" for e in v.rule_errors],
    )
    if data.plan is not None:
        out += _plan(data.plan)
    out += _concerns(data.sections, data.rule_titles)
    out += _timeline(data)
    out += _not_examined(v.not_examined)
    problems = data.problems
    if problems:
        rows = [
            f"`{p['file']}`" + (f":{p['line']}" if p.get("line") else "") + f": {p['error']}"
            for p in problems
        ]
        out += _listed("Parse problems", rows)
    return "\n".join(out).rstrip() + "\n"


def _plan(plan: Plan) -> list[str]:
    """The remediation plan: the warnings at its top, a row per node with its action and why, the held-back
    actions, the cluster fixes, and per wave the HyperPod request bodies, Slurm and EKS commands."""
    import json

    out = ["## Remediation plan", "", f"**{plan.read_only}**", ""]
    out += [f"- ⚠ {_cell(w)}" for w in plan.warnings] + ([""] if plan.warnings else [])
    if plan.actions:
        out += ["| node | action | wave | why | rests on |", "|---|---|---|---|---|"]
        for a in plan.actions[:MAX_ROWS]:
            why = a.why + (
                f" (held back: {a.held_back['action']}: {a.held_back['why']})" if a.held_back else ""
            )
            rests = "; ".join(
                f"{f.severity} `{f.rule}`"
                + (
                    f" `{f.evidence[0]['file']}:{f.evidence[0]['line']}`"
                    if f.evidence and f.evidence[0].get("file")
                    else ""
                )
                for f in a.findings[:3]
            )
            out.append(
                f"| {_cell(a.node)} | **{a.action}** | {a.wave or ''} | {_cell(why)} | {_cell(rests)} |"
            )
        if len(plan.actions) > MAX_ROWS:
            out.append(f"\n… and {len(plan.actions) - MAX_ROWS} more nodes (see the plan's JSON).")
        out.append("")
    else:
        out += ["No node needs an action.", ""]
    if plan.cluster_actions:
        out += ["Cluster-wide fixes (one each, not a node action per node):", ""]
        out += [
            f"- **{c.action}** `{c.rule}` on {len(c.nodes) or 'the cluster'} node(s): {_cell(c.step)}"
            for c in plan.cluster_actions
        ]
        out.append("")
    for wave in plan.waves:
        out += [f"### Wave {wave['wave']}: {', '.join(wave['nodes'])}", ""]
        bodies = {k: v for k, v in (wave.get("hyperpod") or {}).items() if v}
        if bodies:
            out += ["HyperPod requests:", "", "```json", json.dumps(bodies, indent=2), "```", ""]
        commands = list(wave.get("slurm") or []) + list(wave.get("eks") or [])
        if commands:
            out += ["Slurm and EKS forms:", "", "```sh", *commands, "```", ""]
    missing = plan.hyperpod.get("nodes_without_instance_id") or []
    if missing:
        out += [f"Not in the HyperPod requests (no instance id): {', '.join(m['node'] for m in missing)}", ""]
    return out


def _concerns(sections: list[Section], titles: dict[str, str]) -> list[str]:
    out = _by_section("Concerns", sections, titles, concern=True)
    return out + _by_section("Other findings (information)", sections, titles, concern=False)


def _by_section(heading: str, sections: list[Section], titles: dict[str, str], *, concern: bool) -> list[str]:
    """The concerns (or the other findings) by section and rule; a rule's findings that differ in
    severity or route are cut into one group per (severity, route), each saying its own: a header
    states only what all below share."""
    chosen = [
        (
            s,
            s.by_rule(
                f for f in s.findings if (f.severity in (Severity.CRITICAL, Severity.WARNING)) == concern
            ),
        )
        for s in sections
    ]
    if not any(rules for _, rules in chosen):
        return []
    out = [f"## {heading}", ""]
    for section, rules in chosen:
        if not rules:
            continue
        out += [f"### {section.title}", ""]
        for rule, group in rules.items():
            out += _rule_group(rule, titles.get(rule, ""), group)
        out.append("")
    return out


def _rule_group(rule: str, title: str, group: list[Finding]) -> list[str]:
    name = f"`{rule}`" + (f" {_cell(title)}" if title else "")
    routes = by_route(group)
    if len(routes) == 1:  # one severity, one route: said once, on the rule's line
        only = routes[0]
        out = [f"- **{only.severity.value}** {name} — {len(group)} finding(s); → {_route(only.route)}"]
        return out + _finding_lines(list(only.findings), PER_RULE, "  ")
    common = shared(group)
    what = [common.counts_text()]
    what.append(f"{common.routes} different routes" if common.route is None else f"→ {_route(common.route)}")
    lead = f"**{common.severity.value}** " if common.severity else ""
    out = [
        f"- {lead}{name} — {len(group)} finding(s): " + "; ".join(what) + "; each group below says its own"
    ]
    budget = PER_RULE
    for i, sub in enumerate(routes):
        if i == MAX_ROUTES:
            rest = routes[i:]
            left = sum(len(r.findings) for r in rest)
            out.append(
                f"  - … and {left} more finding(s) under {len(rest)} other route(s) (see the JSON or HTML report)"
            )
            break
        out.append(f"  - **{sub.severity.value}** → {_route(sub.route)} — {len(sub.findings)} finding(s)")
        shown = min(len(sub.findings), max(1, budget))
        budget -= shown
        out += _finding_lines(list(sub.findings), shown, "    ")
    return out


def _finding_lines(findings: list[Finding], shown: int, indent: str) -> list[str]:
    out = []
    for f in findings[:shown]:
        out.append(f"{indent}- {_cell(f.message)}")
        for ev in f.evidence[:1]:
            if ev.file:
                where = f"{ev.file}:{ev.line}" if ev.line else ev.file
                text = f" `{_code(ev.text)}`" if ev.text else ""
                out.append(f"{indent}  - evidence: `{where}`{text}")
    if len(findings) > shown:
        out.append(
            f"{indent}- … and {len(findings) - shown} more with this severity and route (see the JSON or HTML report)"
        )
    return out


def _of_rule(findings: list[Finding], rule: str) -> str:
    """The severity and route a rule's concerns share, or how they differ: a cluster-wide cause's label."""
    common = concerns_of_rule(findings, rule)
    if common is None:
        return "no finding listed"
    severity = common.severity.value if common.severity else common.counts_text()
    if common.route is not None:
        return f"{severity}; → {_route(common.route)}"
    return f"{severity}; {common.routes} different routes, each under Concerns"


def _route(route: Route) -> str:
    return _cell(route_text(route))


def _timeline(data: ReportData) -> list[str]:
    """The first events of the incident in words (analyzer.model.timeline.words)."""
    if data.timeline is None:
        return []
    lines = words(data.timeline)
    return ["## Timeline", "", _cell(lines[0]), "", *[f"- {_cell(line)}" for line in lines[1:]], ""]


def _not_examined(rows: list[dict[str, Any]]) -> list[str]:
    by_what: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        by_what[r["what"]].append(r["node"])
    lines = []
    for what, nodes in sorted(by_what.items()):
        named = ", ".join(nodes[:10]) + (f" and {len(nodes) - 10} more" if len(nodes) > 10 else "")
        lines.append(f"{what}: {named}")
    return _listed("Not examined", lines)


def _listed(title: str, rows: list[str]) -> list[str]:
    if not rows:
        return []
    out = [f"## {title}", ""] + [f"- {r}" for r in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        out.append(f"- … and {len(rows) - MAX_ROWS} more (see the JSON)")
    return [*out, ""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str | None) -> str:
    return (text or "").strip().replace("`", "'")[:160]
