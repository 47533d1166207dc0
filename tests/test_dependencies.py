"""pyproject.toml tells the truth: every runtime dependency is imported, every import is declared."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analyzer", "parsers", "reports")
#: Distribution name -> the module it is imported as, where the two differ.
IMPORT_NAME = {"python-hostlist": "hostlist"}


def _declared() -> dict[str, str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # the runtime dependencies and the optional extras a command imports (ray, mcp), not the test tools
    extras = project.get("optional-dependencies", {})
    deps = project["dependencies"] + [d for name, group in extras.items() if name != "test" for d in group]
    names = [re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].strip().lower() for d in deps]
    return {IMPORT_NAME.get(n, n.replace("-", "_")): n for n in names}


def _imported() -> set[str]:
    found: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    local = set(PACKAGES) | {"__future__"}
    return {m for m in found - local if m not in sys.stdlib_module_names}


def test_every_import_is_declared() -> None:
    missing = _imported() - set(_declared())
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"


def test_every_declared_dependency_is_imported() -> None:
    unused = {dist for module, dist in _declared().items() if module not in _imported()}
    assert not unused, f"declared in pyproject.toml but imported nowhere: {sorted(unused)}"


def test_every_dependency_says_why() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    rows = [r for r in block.splitlines() if r.strip().startswith('"')]
    assert rows and all("#" in r for r in rows), "every dependency line carries a one-line reason"
