"""The summary document: an analysis sized for a model's context (schema in docs/summary.schema.json).

It is made from the findings document ``analyze --json`` writes (``hptriage/findings/v1``), never from
a second analysis: the verdict block is that document's verdict (status, sections, counts, worst nodes,
cluster-wide causes, notes), the rest is counted, grouped and cut to a few kilobytes however many nodes
were analyzed.  What it leaves out it counts, and ``more`` says where the rest is.

>>> doc = {"schema": "hptriage/findings/v1", "tool_version": "0", "bundles": [], "nodes": [],
...        "verdict": {"status": "no-concerns", "sections": [], "worst_nodes": [], "ranked_nodes": 0,
...                    "counts": {"critical": 0, "warning": 0, "info": 0}, "cluster_wide": [],
...                    "unread_inputs": [], "not_examined": [], "notes": []},
...        "inputs": {}, "findings": [], "rules": [], "parse_problems": []}
>>> s = summarize(doc)
>>> s["schema"], s["verdict"]["status"], s["findings"]["total"]
('hptriage/summary/v1', 'no-concerns', 0)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from analyzer.model.sections import SECTIONS, section_of

SCHEMA_ID = "hptriage/summary/v1"
#: Findings shown in full (route, first evidence lines) unless the caller asks for another number.
TOP_FINDINGS = 10
#: The most findings a summary shows, whatever is asked.
MAX_TOP = 50
#: Evidence lines shown per finding (``finding(fingerprint)`` gives them all).
EVIDENCE_LINES = 3
#: Characters kept of one message or evidence line; longer ones end in an ellipsis.
TEXT_CHARS = 400
#: Entries kept of each list that grows with the cluster (clusters, unread inputs, not-examined groups).
LIST_ITEMS = 20
#: Nodes named per not-examined group.
NODES_NAMED = 5
#: Where the rest is: what a summary reader does next.
MORE = {
    "finding": "one finding with all its evidence lines: the MCP tool finding(fingerprint), or the entry"
    " with that fingerprint in findings[] of `hptriage analyze PATH... --json FILE`",
    "all_findings": "`hptriage analyze PATH... --json FILE` writes every finding, rule outcome and parse"
    " problem (schema docs/findings.schema.json); `--html FILE` the full report with charts",
    "rules": "`hptriage rules` (or the MCP tool rules(rule)) gives each rule's thresholds and route",
}
_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}
#: Nodes named per cluster-wide cause in the summary (the findings document names them all).
CLUSTER_NODES_NAMED = 20


def summarize(document: dict[str, Any], top: int = TOP_FINDINGS) -> dict[str, Any]:
    """The summary of one findings document, with its ``top`` most telling findings (at most MAX_TOP)."""
    top = max(0, min(top, MAX_TOP))
    verdict = document["verdict"]
    findings: list[dict[str, Any]] = document["findings"]
    ranked = [r["node"] for r in verdict["worst_nodes"]]
    shown = _ordered(findings, ranked)[:top]
    return {
        "schema": SCHEMA_ID,
        "tool_version": document["tool_version"],
        "source_schema": document["schema"],
        "verdict": {
            "status": verdict["status"],
            "sections": verdict["sections"],
            "counts": verdict["counts"],
            "ranked_nodes": verdict["ranked_nodes"],
            "worst_nodes": verdict["worst_nodes"],
            # each cause with its first nodes by name (``nodes`` counts them all)
            "cluster_wide": [
                {**c, "node_names": c["node_names"][:CLUSTER_NODES_NAMED]} if "node_names" in c else c
                for c in verdict["cluster_wide"]
            ],
            "notes": verdict.get("notes", []),
        },
        "sections": _sections(findings),
        "scope": _scope(document),
        "gaps": _gaps(document),
        "rules": dict(sorted(Counter(r["outcome"] for r in document["rules"]).items())),
        "findings": {
            "total": len(findings),
            "shown": len(shown),
            "omitted": len(findings) - len(shown),
            "by_rule": _by_rule(findings, {r["rule"]: r.get("title", "") for r in document["rules"]}),
            "top": [_finding(f) for f in shown],
        },
        "more": MORE,
    }


def _ordered(findings: Sequence[dict[str, Any]], ranked: Sequence[str]) -> list[dict[str, Any]]:
    """Critical before warning before info; within a severity, each rule's first finding on a node
    before its repeats (four GPUs with the same Xid do not crowd out another fault), cluster-wide
    findings first, then the nodes in the verdict's ranking, then the rest by name."""
    place = {node: i for i, node in enumerate(ranked)}
    seen: Counter[tuple[str, str]] = Counter()
    keyed = []
    for f in findings:
        group = (f["rule"], f.get("node") or "")
        repeat = seen[group]
        seen[group] += 1
        node = f.get("node")
        where = -1 if node is None else place.get(node, len(place))
        gpu = f.get("gpu")
        key = (
            _SEVERITY_RANK.get(f["severity"], 3),
            repeat,
            where,
            node or "",
            -1 if gpu is None else gpu,
            f["rule"],
        )
        keyed.append((key, f))
    keyed.sort(key=lambda kf: kf[0])
    return [f for _, f in keyed]


def _finding(f: dict[str, Any]) -> dict[str, Any]:
    evidence = f.get("evidence") or []
    return {
        "fingerprint": f["fingerprint"],
        "rule": f["rule"],
        "severity": f["severity"],
        "section": section_of(f["rule"]),
        "node": f.get("node"),
        "gpu": f.get("gpu"),
        "message": _cut(f["message"]),
        "route": f["route"],
        "evidence": [
            {
                "file": e["file"],
                "line": e.get("line"),
                "text": None if e.get("text") is None else _cut(e["text"]),
            }
            for e in evidence[:EVIDENCE_LINES]
        ],
        "evidence_total": len(evidence),
    }


def _sections(findings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per report section with a concern: its title, concern counts and the rules that raised them."""
    out = []
    for key, title in SECTIONS.items():
        concerns = [
            f for f in findings if section_of(f["rule"]) == key and f["severity"] in ("critical", "warning")
        ]
        if concerns:
            out.append(
                {
                    "section": key,
                    "title": title,
                    "critical": sum(f["severity"] == "critical" for f in concerns),
                    "warning": sum(f["severity"] == "warning" for f in concerns),
                    "rules": sorted({f["rule"] for f in concerns}),
                }
            )
    return out


def _by_rule(findings: Sequence[dict[str, Any]], titles: dict[str, str]) -> list[dict[str, Any]]:
    """One line per rule that raised a finding: its worst severity, how many findings, on how many nodes."""
    rules: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        rules.setdefault(f["rule"], []).append(f)
    out = [
        {
            "rule": rule,
            "title": titles.get(rule, ""),
            "section": section_of(rule),
            "severity": min((f["severity"] for f in group), key=lambda s: _SEVERITY_RANK.get(s, 3)),
            "findings": len(group),
            "nodes": len({f["node"] for f in group if f.get("node")}),
        }
        for rule, group in rules.items()
    ]
    out.sort(key=lambda r: (_SEVERITY_RANK.get(r["severity"], 3), -r["findings"], r["rule"]))
    return out


def _scope(document: dict[str, Any]) -> dict[str, Any]:
    parts = document.get("inputs", {}).get("parts") or []
    types = Counter(n.get("instance_type") or "unknown" for n in document["nodes"])
    return {
        "bundles": len(document["bundles"]),
        "nodes": len(document["nodes"]),
        "instance_types": dict(sorted(types.items())),
        "clusters": [
            {
                "cluster": p.get("cluster", ""),
                "folder": p.get("folder", ""),
                "collected_at": p.get("collected_at"),
                "nodes": len(p.get("nodes") or []),
            }
            for p in parts[:LIST_ITEMS]
        ],
        "clusters_total": len(parts),
    }


def _gaps(document: dict[str, Any]) -> dict[str, Any]:
    """What was not judged: unread inputs, core inputs missing per node, rules that failed, parse problems."""
    verdict = document["verdict"]
    inputs = document.get("inputs", {})
    unread = verdict.get("unread_inputs") or []
    missing = verdict.get("not_examined") or []
    groups: dict[str, list[str]] = {}
    for row in missing:
        groups.setdefault(row["what"], []).append(row["node"])
    by_input = [
        {"what": what, "nodes": len(nodes), "first_nodes": sorted(nodes)[:NODES_NAMED]}
        for what, nodes in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    ]
    return {
        "unread_inputs": {
            "count": len(unread),
            "first": [{"path": u["path"], "reason": _cut(u["reason"])} for u in unread[:LIST_ITEMS]],
        },
        "not_examined": {
            "count": len(missing),
            "nodes": len({row["node"] for row in missing}),
            "by_input": by_input[:LIST_ITEMS],
        },
        "rule_errors": [
            {"rule": r["rule"], "title": r.get("title", ""), "reason": _cut(r.get("reason") or "")}
            for r in document["rules"]
            if r["outcome"] == "error"
        ][:LIST_ITEMS],
        "parse_problems": len(document.get("parse_problems") or []),
        "duplicates": len(inputs.get("duplicates") or []),
        "node_conflicts": len(inputs.get("node_conflicts") or []),
    }


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    """Text as it is, or its first ``limit`` characters ending in an ellipsis.

    >>> _cut("abcdef", 4)
    'abc…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"
