"""Every rule gives the remediation plan an action: analyzer/plan/actions.toml holds one table per rule.

A rule added without its table fails here, with the table to add; a table whose rule is gone fails too.
The catalog's own promises are held: a disruptive action only at critical, every entry's source a
document of docs/sources.md (or "ours:") with its anchor, every refinement in analyzer/plan/decide.py
described by its rule's ``refined``.
"""

from __future__ import annotations

import re

import pytest

from analyzer.judge.rules import load_rules
from analyzer.model.plan import ACTIONS, DISRUPTIVE, weight
from analyzer.plan.catalog import WHERE, catalog
from analyzer.plan.decide import REFINE
from tests.test_sources import ANCHOR, ISSUE, OURS, PAGE, _anchors, _document_names

RULES = {m.RULE.id: m.RULE for m in load_rules(include_plugins=False)}
CATALOG = catalog()


def _table_for(rule: str) -> str:
    info = RULES[rule]
    return (
        f'[rules."{rule}"]\n'
        f'action = "investigate"  # what a finding at its worst severity ({info.severity.value}) calls for: one of '
        f"{', '.join(ACTIONS)}; a disruptive one ({', '.join(sorted(DISRUPTIVE))}) only for a critical rule whose "
        "finding shows the node's own fault\n"
        '# then = "replace"     # when the same fault is back after a reboot\n'
        'why = "why this action and not a lighter one"\n'
        'source = "the public source, a document of docs/sources.md#documents (docs/sources.md#<anchor>)"'
    )


def test_every_registered_rule_has_an_action() -> None:
    missing = sorted(set(RULES) - set(CATALOG))
    assert not missing, (
        f"rule(s) {', '.join(missing)} have no remediation action: add a table to {WHERE} for each (docs/plan.md"
        "#rule-actions says what the keys mean), e.g.\n\n"
        + "\n\n".join(_table_for(r) for r in missing)
        + "\n\nthen regenerate docs/rules.md (python -m analyzer.docgen.rules > docs/rules.md)"
    )


def test_no_table_for_a_rule_that_is_gone() -> None:
    stale = sorted(set(CATALOG) - set(RULES))
    assert not stale, f"{WHERE} has tables for rules that are not registered: {stale}; remove them"


@pytest.mark.parametrize("rule", sorted(CATALOG))
def test_disruptive_actions_only_where_a_critical_finding_can_ask(rule: str) -> None:
    entry, info = CATALOG[rule], RULES.get(rule)
    if info is None:
        pytest.skip("not registered (test_no_table_for_a_rule_that_is_gone says so)")
    if entry.action in DISRUPTIVE:
        assert info.severity.value == "critical", (
            f"{rule}: action {entry.action!r} takes the node down, but the rule's worst severity is "
            f"{info.severity.value}: every disruptive action rests on a critical finding"
        )
    assert entry.warning not in DISRUPTIVE and entry.info not in DISRUPTIVE, rule
    if entry.then is not None:
        assert weight(entry.then) >= weight(entry.action), (
            f"{rule}: then {entry.then!r} is lighter than the action"
        )
    if entry.hardware:
        assert entry.action == "replace", f"{rule}: hardware = true is for a rule whose action is replace"


@pytest.mark.parametrize("rule", sorted(CATALOG))
def test_every_source_is_a_document_of_the_sources_page(rule: str) -> None:
    page = PAGE.read_text(encoding="utf-8")
    source = CATALOG[rule].source
    named = [d for d in _document_names(page) if d in source] or ISSUE.findall(source)
    assert named or OURS.search(source), f"{rule}: {source!r} names no document of docs/sources.md#documents"
    anchors = ANCHOR.findall(source)
    assert anchors, f"{rule}: {source!r} cites no docs/sources.md#<anchor>"
    missing = [a for a in anchors if a not in _anchors(page)]
    assert not missing, f"{rule}: anchors {missing} are not on docs/sources.md"


def test_every_refinement_is_described() -> None:
    for rule in REFINE:
        assert rule in CATALOG and CATALOG[rule].refined, (
            f"{rule}: decide.py refines it; say how in `refined`"
        )


def test_same_fault_names_params_the_rule_writes() -> None:
    """A ``same_fault`` key is a param the rule's findings carry (read in the rule's source)."""
    import inspect

    for rule, entry in CATALOG.items():
        module = next((m for m in load_rules(include_plugins=False) if m.RULE.id == rule), None)
        if module is None or not entry.same_fault:
            continue
        text = inspect.getsource(module)
        for key in entry.same_fault:
            assert re.search(rf"[\"']{re.escape(key)}[\"']\s*:", text), (
                f"{rule}: same_fault {key!r} is no param it writes"
            )
