"""Every rule area of analyzer.judge.rules.AREAS is loaded; an area without its package is an error that
names it, never a silently smaller set of rules."""

from __future__ import annotations

import pytest

from analyzer.judge import rules


def test_every_area_gives_rules() -> None:
    areas = {name.split(".")[3] for name in rules.builtin_names()}
    assert areas == set(rules.AREAS)


def test_a_missing_area_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "AREAS", (*rules.AREAS, "acme"))
    with pytest.raises(
        rules.MissingRuleArea, match=r"rule area 'acme' is missing: no package analyzer\.judge\.rules\.acme"
    ):
        rules.builtin_names()
    with pytest.raises(rules.MissingRuleArea, match="'acme'"):
        rules.load_rules(include_plugins=False)
