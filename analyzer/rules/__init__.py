"""The built-in rules, listed explicitly (no discovery magic).

External rule packs register modules with the same interface (``RULE`` and ``check``) under the
``hptriage.rules`` entry-point group; built-ins are loaded through the same function.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from types import ModuleType

BUILTIN: tuple[str, ...] = (
    "analyzer.rules.gpu.xid",
    "analyzer.rules.gpu.ecc_uncorrectable",
)


def load_rules(include_plugins: bool = True) -> list[ModuleType]:
    modules = [importlib.import_module(name) for name in BUILTIN]
    if include_plugins:
        for ep in entry_points(group="hptriage.rules"):
            modules.append(ep.load())
    return modules
