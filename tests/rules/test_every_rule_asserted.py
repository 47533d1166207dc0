"""Every rule is tested: some passing test ran it on a bundle and read its outcome or findings.

Mentioning a rule's id in a test file proves nothing (a list of names, a comment, a test that never
runs); this check counts only what happened during the session.  tests/rules/helpers.py ``analyze``
runs every rule on a bundle; ``Result.of(rule)`` (the findings) and ``Result.outcome(rule)`` note the
rule under the running test when the rule ran, and the hooks of tests/conftest.py keep those notes only
for a test whose call passed (tests/rule_record.py).  The conftest orders this test after every other
one, so a rule counts as tested exactly when a test that passed in this session ran it and asserted
on it: a rule no test runs, or whose only test fails or is skipped, fails here.

Only a session that selected every rule test can judge: when some were deselected (``-k``, ``-m``,
``--lf``), a module of tests/rules was left out or single tests were named, this test is skipped with
the reason, never passed.
"""

from __future__ import annotations

import pytest

from analyzer.judge.rules import load_rules
from tests import rule_record
from tests.conftest import PARTIAL


def test_every_rule_was_run_and_asserted_by_a_passing_test(request: pytest.FixtureRequest) -> None:
    partial = request.config.stash.get(PARTIAL, "")
    if partial:
        pytest.skip(f"not every rule test ran in this session ({partial}): run tests/rules whole to judge")
    untested = sorted(m.RULE.id for m in load_rules() if not rule_record.asserted.get(m.RULE.id))
    assert not untested, (
        f"{len(untested)} rules that no passing test ran on a bundle and asserted on "
        f"(Result.of / Result.outcome of tests/rules/helpers.py): {untested}"
    )


def test_the_record_keeps_only_passing_tests() -> None:
    """The bookkeeping itself: notes outside a call are dropped, a failed test's notes are dropped."""
    saved = (
        rule_record.current,
        dict(rule_record.pending),
        {k: set(v) for k, v in rule_record.asserted.items()},
    )
    try:
        rule_record.current = None
        rule_record.note("x.outside")
        rule_record.current = "t::passes"
        rule_record.note("x.passed")
        rule_record.current = "t::fails"
        rule_record.note("x.failed")
        rule_record.settle("t::passes", True)
        rule_record.settle("t::fails", False)
        assert "t::passes" in rule_record.asserted["x.passed"]
        assert "x.failed" not in rule_record.asserted and "x.outside" not in rule_record.asserted
    finally:
        rule_record.current, rule_record.pending, rule_record.asserted = saved
