"""Which rules each passing test ran on a bundle and then read the outcome or findings of.

tests/rules/helpers.py ``Result.of(rule)`` and ``Result.outcome(rule)`` note the rule under the test
that is running (only when the rule ran: its outcome is in the result); the hooks in tests/conftest.py
keep a test's notes when its call passed and drop them otherwise.  Kept free of heavy imports: the
conftest imports it in every session.  tests/rules/test_every_rule_asserted.py reads it last.
"""

from __future__ import annotations

#: the node id of the test whose call is running, None outside a call (setup, fixtures, teardown)
current: str | None = None
#: test id -> rules it read while running, kept until its call's result is known
pending: dict[str, set[str]] = {}
#: rule id -> the passing tests that ran it and read its outcome or findings
asserted: dict[str, set[str]] = {}


def note(rule: str) -> None:
    if current is not None:
        pending.setdefault(current, set()).add(rule)


def settle(test_id: str, passed: bool) -> None:
    for rule in pending.pop(test_id, set()):
        if passed:
            asserted.setdefault(rule, set()).add(test_id)
