"""The built-in rules, listed explicitly (no discovery magic).

External rule packs register modules with the same interface (``RULE`` and ``check``) under the
``hptriage.rules`` entry-point group; built-ins are loaded through the same function.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import entry_points
from types import ModuleType

#: Report sections, in report order: key -> title.
SECTIONS: dict[str, str] = {
    "A": "A. Uneven NCCL / topology",
    "B": "B. Filesystem",
    "C": "C. GPU and host health",
}

#: Rule areas (the first part of a rule id), in report order, each with its report section (a key of
#: SECTIONS): the one place an area is declared.  Each area package lists its rule modules in ``RULES``;
#: a rule (built-in or a plugin's) of an area not declared here is an error at load.
AREAS: dict[str, str] = {
    "gpu": "C",
    "host": "C",
    "net": "A",
    "nccl": "A",
    "straggler": "A",
    "version": "A",
    "placement": "A",
    "fs": "B",
    "bundle": "C",
}


class MissingRuleArea(ImportError):
    """A rule area of AREAS has no package: its rules would silently not run (a broken install)."""


class UndeclaredRuleArea(ImportError):
    """A rule whose area (the first part of its id) AREAS does not declare, or an area whose section
    SECTIONS lacks: its findings would have no report section."""


def area_of(rule_id: str) -> str:
    """The area of a rule id.

    >>> area_of("fs.iowait.high")
    'fs'
    """
    return rule_id.split(".", 1)[0]


def section_of(rule_id: str) -> str:
    """The report section key of a rule id (of a rule that loaded: its area is declared).

    >>> section_of("fs.iowait.high"), section_of("gpu.xid.fallen_off_bus"), section_of("nccl.busbw.low")
    ('B', 'C', 'A')
    """
    area = area_of(rule_id)
    if area not in AREAS:
        raise UndeclaredRuleArea(_undeclared(rule_id))
    return AREAS[area]


def _undeclared(rule_id: str) -> str:
    return (
        f"rule {rule_id!r}: its area {area_of(rule_id)!r} is not declared (analyzer.judge.rules.AREAS"
        f" declares {', '.join(AREAS)}, each with its report section)"
    )


def check_areas(modules: list[ModuleType]) -> None:
    """Raise UndeclaredRuleArea unless every area has a section and every rule's area is declared."""
    for area, section in AREAS.items():
        if section not in SECTIONS:
            raise UndeclaredRuleArea(
                f"rule area {area!r}: its report section {section!r} is not one of {', '.join(SECTIONS)}"
            )
    for module in modules:
        rule_id = module.RULE.id
        if area_of(rule_id) not in AREAS:
            raise UndeclaredRuleArea(_undeclared(rule_id))


def builtin_names() -> list[str]:
    """The built-in rule modules of every area, in report order; an area without its package is an
    error, never a smaller set of rules."""
    names: list[str] = []
    for area in AREAS:
        package = f"analyzer.judge.rules.{area}"
        if importlib.util.find_spec(package) is None:
            raise MissingRuleArea(
                f"rule area {area!r} is missing: no package {package} (reinstall hptriage)", name=package
            )
        names.extend(f"{package}.{name}" for name in importlib.import_module(package).RULES)
    return names


def load_rules(include_plugins: bool = True) -> list[ModuleType]:
    """The rule modules, built-in then plugins; a rule of an undeclared area is an error (UndeclaredRuleArea)."""
    modules = [importlib.import_module(name) for name in builtin_names()]
    if include_plugins:
        for ep in entry_points(group="hptriage.rules"):
            modules.append(ep.load())
    check_areas(modules)
    return modules
