"""pyproject.toml tells the truth: every runtime dependency is imported, every import is declared."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analyzer", "parsers", "reports")
#: Distribution name -> the module it is imported as, where the two differ.
IMPORT_NAME = {"python-hostlist": "hostlist", "pyyaml": "yaml"}


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


#: modules tests import that come with a declared package as part of its own interface
COMES_WITH = {
    "anyio": "mcp",  # the SDK's client runs on anyio: its sessions are entered under anyio.run
    "markupsafe": "jinja2",  # jinja2's Markup, the escaped string its templates are given
}
#: folders of tests/ run outside pytest, whose tools the test extra does not install
NOT_RUN_BY_PYTEST = ("fuzz",)


def _test_imports() -> dict[str, str]:
    """Each third-party module the tests import (or ``pytest.importorskip``), with a file that does."""
    local = set(PACKAGES) | {"tests", "__future__"}
    local |= {p.stem for folder in ("scripts", "benchmarks") for p in (ROOT / folder).glob("*.py")}
    found: dict[str, str] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.relative_to(ROOT / "tests").parts[0] in NOT_RUN_BY_PYTEST:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [str(node.args[0].value)]
            for name in names:
                top = name.split(".")[0]
                if top not in local and top not in sys.stdlib_module_names:
                    found.setdefault(top, path.relative_to(ROOT).as_posix())
    return found


def test_every_module_a_test_imports_is_declared() -> None:
    """A test's import is declared (runtime, an extra, or the test extra): a module that comes only with
    some other package's dependencies would skip its test, or fail it, where that package changes."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = [re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].strip().lower() for d in extras["test"]]
    declared = set(_declared()) | {IMPORT_NAME.get(n, n.replace("-", "_")) for n in names} | set(COMES_WITH)
    undeclared = {m: path for m, path in _test_imports().items() if m not in declared}
    assert not undeclared, f"imported by tests but declared nowhere in pyproject.toml: {undeclared}"
