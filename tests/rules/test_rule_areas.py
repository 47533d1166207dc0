"""Every rule area of analyzer.judge.rules.AREAS is loaded; an area without its package is an error that
names it, never a silently smaller set of rules.  An area is declared once, with its report section: a
rule of an undeclared area, or an area of no section, is an error at load, never a finding that falls
into some section."""

from __future__ import annotations

import pytest

from analyzer.judge import rules


def test_every_area_gives_rules() -> None:
    areas = {name.split(".")[3] for name in rules.builtin_names()}
    assert areas == set(rules.AREAS)


def test_a_missing_area_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "AREAS", {**rules.AREAS, "acme": "C"})
    with pytest.raises(
        rules.MissingRuleArea, match=r"rule area 'acme' is missing: no package analyzer\.judge\.rules\.acme"
    ):
        rules.builtin_names()
    with pytest.raises(rules.MissingRuleArea, match="'acme'"):
        rules.load_rules(include_plugins=False)


def test_every_area_has_its_section_and_every_section_an_area() -> None:
    assert set(rules.AREAS.values()) == set(rules.SECTIONS)
    rules.check_areas(rules.load_rules(include_plugins=False))  # the built-ins load as declared


def _plugin(rule_id: str) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(RULE=SimpleNamespace(id=rule_id), check=lambda ctx: [])


def test_a_rule_of_an_undeclared_area_is_an_error_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = [_plugin("acme.widget.broken")]

    class EntryPoint:
        def __init__(self, module: object) -> None:
            self.module = module

        def load(self) -> object:
            return self.module

    def entry_points(group: str) -> list[EntryPoint]:
        assert group == "hptriage.rules"
        return [EntryPoint(m) for m in plugins]

    monkeypatch.setattr(rules, "entry_points", entry_points)
    with pytest.raises(
        rules.UndeclaredRuleArea, match=r"rule 'acme\.widget\.broken': its area 'acme' is not declared"
    ):
        rules.load_rules()
    rules.load_rules(include_plugins=False)  # the built-ins alone still load

    plugins[:] = [
        _plugin("gpu.widget.custom")
    ]  # a plugin's rule of a declared area: its section is the area's
    assert rules.load_rules()[-1].RULE.id == "gpu.widget.custom"
    assert rules.section_of("gpu.widget.custom") == "C"


def test_an_area_of_no_section_is_an_error_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "AREAS", {**rules.AREAS, "gpu": "D"})
    with pytest.raises(
        rules.UndeclaredRuleArea, match=r"rule area 'gpu': its report section 'D' is not one of"
    ):
        rules.load_rules(include_plugins=False)


def test_no_section_for_an_undeclared_area() -> None:
    from analyzer.model.sections import section_of

    assert section_of("fs.iowait.high") == "B"
    with pytest.raises(rules.UndeclaredRuleArea, match="'acme' is not declared"):
        section_of("acme.custom")
