"""Everything a report shows, gathered once from the store after the rules ran."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analyzer.judge.coverage import COLLECTION_FAILED, NOT_CARRIED, SKIPPED_BY_COLLECTOR, Coverage
from analyzer.judge.engine import RuleModule
from analyzer.judge.findings import Finding, Outcome
from analyzer.judge.settings import Settings, load_settings
from analyzer.model.plan import Plan
from analyzer.model.sections import Section, by_section
from analyzer.model.timeline import Timeline
from analyzer.model.verdict import CORE_INPUTS, RuleScope, Verdict, compute

if TYPE_CHECKING:
    import duckdb

    from analyzer.intake.load import LoadSummary


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
    charts: dict[str, Any] = field(default_factory=dict)  # chart data, gathered only for HTML/PDF
    #: how the inputs were read: duplicates, node-name conflicts, checksums, extras, files not parsed
    inputs: dict[str, Any] = field(default_factory=dict)
    #: the remediation plan, where one was asked for (analyze --plan: analyzer.plan.build)
    plan: Plan | None = None
    #: every node's dated events on one UTC axis and the incident's first event (analyzer.model.timeline)
    timeline: Timeline | None = None

    def __post_init__(self) -> None:
        if self.verdict is None:
            self.verdict = compute(self.findings, self.outcomes, self.nodes)

    @property
    def sections(self) -> list[Section]:
        """The findings and outcomes grouped by report section, once for every renderer: each section
        in report order with its findings (in the judge's order) and its rules' outcomes."""
        return by_section(self.findings, self.outcomes)


def gather(
    con: duckdb.DuckDBPyConnection,
    summary: LoadSummary,
    findings: list[Finding],
    outcomes: list[Outcome],
    modules: Sequence[RuleModule],
    settings: Settings | None = None,
    charts: bool = False,
) -> ReportData:
    """The report-data model every renderer reads: findings, outcomes, verdict and (for HTML/PDF) charts."""
    nodes = _rows(
        con,
        """
        SELECT n.node, n.bundle_id, n.hostname, n.instance_type, n.instance_id, n.availability_zone,
               n.cluster, coalesce(json_extract_string(n.meta_json, '$.cluster') <> '', false) AS cluster_in_meta,
               strftime(n.collected_at, '%Y-%m-%dT%H:%M:%SZ') AS collected_at, n.source, n.instance_group,
               (SELECT max(u.uptime_s) FROM host_uptime u WHERE u.bundle_id = n.bundle_id) AS uptime_s,
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
    settings = settings or load_settings()
    # titles and pass phrases say the thresholds the rules judged by (a site's --config included)
    titles = {m.RULE.id: m.RULE.title_for(settings) for m in modules}
    rules = {m.RULE.id: RuleScope.of(m.RULE, titles[m.RULE.id]) for m in modules}
    verdict = compute(
        findings,
        outcomes,
        nodes,
        rules,
        unread_inputs=summary.unread_inputs,
        not_examined=not_examined(Coverage(con)),
    )
    data = ReportData(
        summary.bundles,
        nodes,
        findings,
        outcomes,
        problems,
        rule_titles=titles,
        rule_passed={m.RULE.id: m.RULE.passed_for(settings) for m in modules if m.RULE.passed},
        verdict=verdict,
        inputs={
            "duplicates": summary.duplicates,
            "node_conflicts": summary.node_conflicts,
            "checksums": summary.checksums,
            "extras": summary.extras,
            # files read and kept for people but parsed by no parser: nothing in them was judged
            "not_parsed": summary.not_parsed,
        },
    )
    from analyzer.model import timeline

    data.timeline = timeline.gather(con, settings)
    if charts:
        from analyzer.model.chart_data import collect

        data.charts = collect(con, settings, findings)
        data.charts["timeline"] = timeline.chart(data.timeline)
    return data


def not_examined(coverage: Coverage) -> list[dict[str, str]]:
    """Per node, the core inputs (analyzer.model.verdict.CORE_INPUTS) it lacks, and the kinds its input
    type cannot carry (a foreign input's manifest rows noted 'not carried by ...')."""
    out = []
    for what, requirements in CORE_INPUTS.items():
        have: set[str] = set()
        for req in requirements:
            have |= coverage.nodes_with(req) or set()
        out += [{"node": node, "what": what} for node in coverage.nodes if node not in have]
    # kinds the node's input type cannot carry (manifest note 'not carried by <source>'), kinds of a
    # node whose collection failed ('collection failed: <error>') and kinds the input's own collector
    # skipped ('nvidia-bug-report: <its reason>'): named with why
    prefixes = (NOT_CARRIED, COLLECTION_FAILED, *SKIPPED_BY_COLLECTOR)
    noted = " OR ".join("starts_with(note, ?)" for _ in prefixes)
    for node, kind, note in coverage.con.execute(
        "SELECT DISTINCT node, kind, note FROM probe WHERE NOT coalesce(present, false) "
        f"AND ({noted}) AND kind IS NOT NULL ORDER BY node, kind",
        list(prefixes),
    ).fetchall():
        out.append({"node": node, "what": f"{kind} ({note})", "reason": note})
    return sorted(out, key=lambda r: (r["node"], r["what"]))


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [{name: _plain(value) for name, value in zip(names, r, strict=True)} for r in cur.fetchall()]


def _plain(value: object) -> object:
    """A value of a row as the JSON report carries it: text, numbers, booleans and None as they are,
    lists and maps value by value, anything else (a timestamp, a decimal) as its ``str()``
    (``2026-01-05 10:00:00``).

    >>> from datetime import datetime
    >>> _plain([datetime(2026, 1, 5, 10), (1, None), {2: 1.5}])
    ['2026-01-05 10:00:00', [1, None], {'2': 1.5}]
    """
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)
