"""Run the rules over the store; every rule ends 'fail', 'pass', 'skipped' or 'error'."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from analyzer.findings import Evidence, Finding, Route, Severity
from analyzer.settings import Settings, load_settings

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class RuleInfo:
    """A rule's metadata: what it checks, what it needs, who acts on it."""

    id: str
    title: str
    severity: Severity
    requires: tuple[str, ...]
    route: Route
    version: int = 1
    docs: str = ""
    #: alternative sources: the rule is skipped only when every one of these tables is empty
    requires_any: tuple[str, ...] = ()


class RuleModule(Protocol):
    RULE: RuleInfo

    def check(self, ctx: Context) -> Iterable[Finding]: ...


@dataclass
class Outcome:
    rule: str
    outcome: str  # fail | pass | skipped | error
    findings: int
    reason: str | None = None


class Context:
    """What a rule's check() receives: the database and helpers for evidence."""

    def __init__(self, con: duckdb.DuckDBPyConnection, settings: Settings | None = None) -> None:
        self.con = con
        self.settings = settings or load_settings()

    def threshold(self, rule: RuleInfo, key: str) -> Any:
        """A rule's threshold from thresholds.toml (or the site override)."""
        return self.settings.value(rule.id, key)

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=False)) for row in cur.fetchall()]

    def evidence(self, source_file: str | None, line: int | None) -> Evidence:
        if source_file is None:
            return Evidence("", None, None)
        text = None
        if line is not None:
            hit = self.con.execute(
                "SELECT text FROM source_line WHERE source_file = ? AND line = ? LIMIT 1", [source_file, line]
            ).fetchone()
            text = hit[0] if hit else None
        return Evidence(source_file, line, text)


def run_rules(
    con: duckdb.DuckDBPyConnection, modules: Iterable[RuleModule], settings: Settings | None = None
) -> tuple[list[Finding], list[Outcome]]:
    ctx = Context(con, settings)
    findings: list[Finding] = []
    outcomes: list[Outcome] = []
    for module in modules:
        info = module.RULE
        empty = [t for t in info.requires if _is_empty(con, t)]
        if info.requires_any and all(_is_empty(con, t) for t in info.requires_any):
            empty.append(" or ".join(info.requires_any))
        if empty:
            outcomes.append(Outcome(info.id, "skipped", 0, "no data in " + ", ".join(empty)))
            continue
        try:
            found = list(module.check(ctx))
        except Exception as exc:  # a broken rule is reported, the others still run
            outcomes.append(Outcome(info.id, "error", 0, f"{type(exc).__name__}: {exc}"))
            continue
        findings.extend(found)
        outcomes.append(Outcome(info.id, "fail" if found else "pass", len(found)))
    findings.sort(key=lambda f: (f.severity.rank, f.node or "", f.gpu if f.gpu is not None else -1, f.rule))
    _store(con, findings, outcomes)
    return findings, outcomes


def _is_empty(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    hit = con.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone()
    return hit is None


def _store(con: duckdb.DuckDBPyConnection, findings: list[Finding], outcomes: list[Outcome]) -> None:
    if findings:
        con.executemany(
            "INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    f.fingerprint,
                    f.rule,
                    f.rule_version,
                    f.severity.value,
                    f.bundle_id,
                    f.node,
                    f.gpu,
                    f.message,
                    json.dumps(f.params, default=str),
                    f.route.owner,
                    f.route.target,
                    f.route.action,
                    json.dumps([e.as_dict() for e in f.evidence]),
                ]
                for f in findings
            ],
        )
    if outcomes:
        con.executemany(
            "INSERT INTO rule_outcome VALUES (?, ?, ?, ?)",
            [[o.rule, o.outcome, o.findings, o.reason] for o in outcomes],
        )
