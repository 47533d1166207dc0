"""The Markdown report: the verdict, the concerns with route and evidence, and what was not examined.

Made for pasting into a support ticket; it says the same as the terminal, HTML and PDF (all read the one
verdict in ``ReportData.verdict``).  Long lists are cut with a count of what was left out, never silently.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from analyzer import __version__
from analyzer.model.records import Finding, Severity
from analyzer.model.report_data import ReportData
from analyzer.model.sections import SECTIONS, section_of

#: Findings of one rule written out in full; the rest are counted.
PER_RULE = 10
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
            f"{i}. **{_cell(r.node)}**: {r.critical} critical, {r.warning} warning, spread {r.score}"
            for i, r in enumerate(v.worst_nodes, start=1)
        ]
        if v.ranked_nodes > len(v.worst_nodes):
            out.append(
                f"\n… and {v.ranked_nodes - len(v.worst_nodes)} more nodes with a concern (see the JSON)."
            )
        out.append("")
    if v.cluster_wide:
        out += ["Cluster-wide causes (the nodes showing them are not ranked for them):", ""]
        out += [f"- `{c['rule']}`: {c['message']}" for c in v.cluster_wide]
        out.append("")
    out += _listed("Given but not judged", list(v.notes))
    out += _listed("Inputs that could not be read", [f"`{u.path}`: {u.reason}" for u in v.unread_inputs])
    out += _listed(
        "Rules that failed to run",
        [f"`{e['rule']}` ({_cell(e['title'])}): {_cell(e['reason'])}" for e in v.rule_errors],
    )
    out += _concerns(data.findings)
    out += _not_examined(v.not_examined)
    problems = data.problems
    if problems:
        rows = [
            f"`{p['file']}`" + (f":{p['line']}" if p.get("line") else "") + f": {p['error']}"
            for p in problems
        ]
        out += _listed("Parse problems", rows)
    return "\n".join(out).rstrip() + "\n"


def _concerns(findings: list[Finding]) -> list[str]:
    concerns = [f for f in findings if f.severity in (Severity.CRITICAL, Severity.WARNING)]
    if not concerns:
        return []
    out = ["## Concerns", ""]
    by_section: dict[str, dict[str, list[Finding]]] = defaultdict(lambda: defaultdict(list))
    for f in concerns:
        by_section[section_of(f.rule)][f.rule].append(f)
    for key, title in SECTIONS.items():
        rules = by_section.get(key)
        if not rules:
            continue
        out += [f"### {title}", ""]
        for rule, group in rules.items():
            first = group[0]
            out.append(
                f"- **{first.severity.value}** `{rule}` — {len(group)} finding(s); "
                f"→ {first.route.owner}: {first.route.action} ({first.route.target})"
            )
            for f in group[:PER_RULE]:
                out.append(f"  - {_cell(f.message)}")
                for ev in f.evidence[:1]:
                    if ev.file:
                        where = f"{ev.file}:{ev.line}" if ev.line else ev.file
                        text = f" `{_code(ev.text)}`" if ev.text else ""
                        out.append(f"    - evidence: `{where}`{text}")
            if len(group) > PER_RULE:
                out.append(f"  - … and {len(group) - PER_RULE} more (see the JSON or HTML report)")
        out.append("")
    return out


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
