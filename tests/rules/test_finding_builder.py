"""RuleInfo.finding, the one way a rule builds a finding."""

from __future__ import annotations

from analyzer.judge.engine import RuleInfo
from analyzer.judge.findings import Evidence, Finding, Route, Severity

RULE = RuleInfo(
    id="test.builder",
    title="builder",
    severity=Severity.WARNING,
    requires=("node",),
    route=Route("node-hardware", "somewhere", "do something"),
    version=3,
)


def test_builder_fills_the_rule_and_its_defaults() -> None:
    ev = Evidence("n1/meta.env", 2, None)
    f = RULE.finding(node="n1", message="m", params={"a": 1}, evidence=(e for e in [ev]))
    assert (f.rule, f.rule_version, f.severity, f.route) == ("test.builder", 3, Severity.WARNING, RULE.route)
    assert (f.gpu, f.bundle_id, f.key, f.evidence) == (None, None, (), [ev])


def test_builder_overrides_and_fingerprint_match_a_hand_built_finding() -> None:
    other = Route("nccl-network", "elsewhere", "act")
    f = RULE.finding(
        node="n1",
        gpu=2,
        message="m",
        params={},
        severity=Severity.INFO,
        route=other,
        bundle_id="b",
        key=("x",),
    )
    by_hand = Finding("test.builder", 3, Severity.INFO, "n1", 2, "m", {}, other, [], "b", ("x",))
    assert f == by_hand and f.fingerprint == by_hand.fingerprint
