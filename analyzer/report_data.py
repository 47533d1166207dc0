"""Everything a report shows, gathered once from the store after the rules ran."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analyzer.engine import Outcome
from analyzer.findings import Finding
from analyzer.verdict import Verdict, compute

if TYPE_CHECKING:
    import duckdb


@dataclass
class ReportData:
    bundles: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    findings: list[Finding]
    outcomes: list[Outcome]
    problems: list[dict[str, Any]]
    rule_titles: dict[str, str] = field(default_factory=dict)
    #: each rule's pass phrase ("no TCP fallback seen"), shown for [OK] outcomes instead of the title
    rule_passed: dict[str, str] = field(default_factory=dict)
    verdict: Verdict | None = None  # computed from the rest when not given

    def __post_init__(self) -> None:
        if self.verdict is None:
            self.verdict = compute(self.findings, self.outcomes, self.nodes)

    charts: dict[str, Any] = field(default_factory=dict)  # chart data, gathered only for HTML/PDF


def gather(
    con: duckdb.DuckDBPyConnection,
    bundles: list[dict[str, str]],
    findings: list[Finding],
    outcomes: list[Outcome],
    rule_titles: dict[str, str],
) -> ReportData:
    nodes = _rows(
        con,
        """
        SELECT n.node, n.bundle_id, n.hostname, n.instance_type, n.instance_id, n.availability_zone,
               strftime(n.collected_at, '%Y-%m-%dT%H:%M:%SZ') AS collected_at, n.source,
               (SELECT count(*) FROM gpu g WHERE g.bundle_id = n.bundle_id) AS gpus,
               (SELECT count(*) FROM file f WHERE f.bundle_id = n.bundle_id AND f.status = 'parsed') AS files_parsed,
               (SELECT count(*) FROM parse_problems p WHERE p.bundle_id = n.bundle_id) AS problems
        FROM node n ORDER BY n.node, n.collected_at
        """,
    )
    problems = _rows(
        con,
        "SELECT bundle_id, node, file, kind, error, line, text FROM parse_problems ORDER BY node, file, line",
    )
    return ReportData(bundles, nodes, findings, outcomes, problems, rule_titles)


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [json.loads(json.dumps(dict(zip(names, r, strict=False)), default=str)) for r in cur.fetchall()]
