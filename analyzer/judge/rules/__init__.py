"""The built-in rules, listed explicitly (no discovery magic).

External rule packs register modules with the same interface (``RULE`` and ``check``) under the
``hptriage.rules`` entry-point group; built-ins are loaded through the same function.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import entry_points
from types import ModuleType

#: Rule areas, in report order; each area package lists its rule modules in ``RULES``.
AREAS: tuple[str, ...] = ("gpu", "host", "net", "nccl", "straggler", "version", "placement", "fs", "bundle")


class MissingRuleArea(ImportError):
    """A rule area of AREAS has no package: its rules would silently not run (a broken install)."""


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
    modules = [importlib.import_module(name) for name in builtin_names()]
    if include_plugins:
        for ep in entry_points(group="hptriage.rules"):
            modules.append(ep.load())
    return modules
