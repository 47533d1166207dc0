"""A rule cannot end the run: a requirement the store cannot answer and a check() that raises both end
``error`` with the reason, every other rule still runs, every report names the broken rules, and the
verdict gives no clean bill."""

from __future__ import annotations

import types
from collections.abc import Iterable

import click
import pytest

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import Context, RuleInfo, RuleModule, run_rules
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.rules import load_rules
from analyzer.judge.settings import load_settings
from analyzer.model.report_data import ReportData, gather
from analyzer.model.verdict import compute
from analyzer.store.tables import connect
from reports import findings_json, markdown, terminal
from reports.render import render_html
from tests.rules.helpers import fixture, write_node
from tests.rules.test_healthy_cluster import HEALTHY

ROUTE = Route("support-bundle", "docs/rules.md", "fix the rule")


def _module(name: str, info: RuleInfo, check: object) -> RuleModule:
    module = types.ModuleType(name)
    module.RULE = info  # type: ignore[attr-defined]
    module.check = check  # type: ignore[attr-defined]
    return module  # type: ignore[return-value]


def _never_called(ctx: Context) -> Iterable[Finding]:
    raise AssertionError("check() of a rule whose requirement failed must not run")


def _raises(ctx: Context) -> Iterable[Finding]:
    ctx.rows("SELECT 1")
    raise RuntimeError("boom in check")


MISSING_TABLE = _module(
    "acme_missing_table",
    RuleInfo(
        "host.acme_missing.table",
        "Needs a table no parser makes",
        Severity.WARNING,
        ("no_such_table",),
        ROUTE,
    ),
    _never_called,
)
MISSING_COLUMN = _module(
    "acme_missing_column",
    RuleInfo(
        "host.acme_missing.column",
        "Needs a column the node table lacks",
        Severity.WARNING,
        ("gpu",),
        ROUTE,
        requires_any=("node.no_such_column",),
    ),
    _never_called,
)
RAISES = _module(
    "acme_raises",
    RuleInfo("host.acme_check.raises", "A check that raises", Severity.CRITICAL, ("kernel_event",), ROUTE),
    _raises,
)
BROKEN = {"host.acme_missing.table", "host.acme_missing.column", "host.acme_check.raises"}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    root = tmp_path_factory.mktemp("rule-errors")
    cluster = root / "cluster"
    for i in range(1, 5):
        files = {path: (kind, fixture(kind, name)) for path, (kind, name) in HEALTHY.items()}
        meta = {"instance_type": "p5.48xlarge", "availability_zone": "us-east-1a", "placement_group": "pg-a"}
        write_node(cluster, f"node-{i}", files, meta=meta)
    con = connect(None)
    work = root / "work"
    work.mkdir()
    summary = load(con, [cluster], work, Limits(), jobs=1)
    real = load_rules(include_plugins=False)
    # the broken rules first, between and last: none of them stops the ones after it
    modules: list[RuleModule] = [MISSING_TABLE, *real[:10], RAISES, *real[10:], MISSING_COLUMN]
    settings = load_settings()
    findings, outcomes = run_rules(con, modules, settings)
    return gather(con, summary, findings, outcomes, modules, settings)


def _errors(data: ReportData) -> dict[str, str]:
    return {o.rule: o.reason or "" for o in data.outcomes if o.outcome == "error"}


def test_broken_rules_end_error_with_the_reason(data: ReportData) -> None:
    errors = _errors(data)
    assert set(errors) == BROKEN
    assert errors["host.acme_missing.table"].startswith("CatalogException: ")
    assert "no_such_table" in errors["host.acme_missing.table"]
    assert errors["host.acme_missing.column"].startswith("BinderException: ")
    assert "no_such_column" in errors["host.acme_missing.column"]
    assert errors["host.acme_check.raises"] == "RuntimeError: boom in check"
    assert all("\n" not in reason and "LINE 1" not in reason for reason in errors.values())


def test_the_real_rules_still_run(data: ReportData) -> None:
    outcomes = {o.rule: o.outcome for o in data.outcomes}
    real = {m.RULE.id for m in load_rules(include_plugins=False)}
    assert real <= set(outcomes) and len(data.outcomes) == len(real) + len(BROKEN)
    assert all(outcomes[r] in ("pass", "fail", "skipped") for r in real)
    assert outcomes["gpu.ecc.uncorrectable"] == "pass" and outcomes["gpu.fabric.state"] == "pass"
    assert "pass" in outcomes.values()


def test_the_verdict_gives_no_clean_bill(data: ReportData) -> None:
    v = data.verdict
    assert v is not None
    assert not [f for f in data.findings if f.severity in (Severity.CRITICAL, Severity.WARNING)]
    assert v.status == "incomplete"
    # the same analysis without the broken rules is a clean bill: the errors alone make it incomplete
    rest = [o for o in data.outcomes if o.outcome != "error"]
    assert compute(data.findings, rest, data.nodes, not_examined=v.not_examined).status == "no-concerns"
    assert {e["rule"] for e in v.rule_errors} == BROKEN
    assert {e["title"] for e in v.rule_errors} >= {"A check that raises"}


def test_every_report_names_the_broken_rules(data: ReportData) -> None:
    text = click.unstyle(terminal.render(data, columns=200))
    verdict = text.split("\nVerdict\n", 1)[1]
    assert "No concerns" not in text and "Incomplete" in verdict
    assert "[CONCERN] 3 rule(s) failed to run:" in verdict
    md = markdown.render(data)
    assert "**No concerns**" not in md and "## Rules that failed to run" in md
    html = render_html(data)
    box = html.split('id="verdict"', 1)[1].split("</div>", 1)[0]
    assert "Incomplete" in box and "No concerns" not in box and "Rules that failed to run" in box
    for report in (verdict, md, box):
        for rule in BROKEN:
            assert rule in report
        assert "RuntimeError: boom in check" in report
        assert "Needs a table no parser makes" in report
    # the sections carry them as concerns too
    section_c = text.split("C. GPU and host health", 1)[1].split("\nVerdict\n", 1)[0]
    assert "[CONCERN] rule error: A check that raises (host.acme_check.raises) failed to run;" in section_c
    doc = findings_json.document(data)
    assert doc["verdict"]["status"] == "incomplete"
    errors = {r["rule"]: r["reason"] for r in doc["rules"] if r["outcome"] == "error"}
    assert errors == _errors(data)
