"""Arrows run one way: renderers read the report-data model; only the CLI wires analysis to rendering."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What a renderer may import from the analyzer: the report-data model and the records in it.
RENDERER_MAY_IMPORT = {
    "analyzer",  # __version__
    "analyzer.engine",  # Outcome (a record)
    "analyzer.errors",
    "analyzer.findings",
    "analyzer.report_data",
    "analyzer.sections",
    "analyzer.verdict",
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_renderers_never_reach_into_rules_or_the_store() -> None:
    for path in sorted((ROOT / "reports").rglob("*.py")):
        wrong = {m for m in _imports(path) if m.startswith("analyzer") and m not in RENDERER_MAY_IMPORT}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_only_the_cli_imports_the_renderers() -> None:
    for path in sorted((ROOT / "analyzer").rglob("*.py")):
        if path.name == "cli.py":
            continue
        wrong = {m for m in _imports(path) if m.split(".")[0] == "reports"}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_rules_do_not_import_private_helpers_of_other_areas() -> None:
    """Shared queries live in analyzer.signals; a rule's _private module serves its own area only."""
    for path in sorted((ROOT / "analyzer" / "rules").rglob("*.py")):
        area = path.relative_to(ROOT / "analyzer" / "rules").parts[0]
        for module in _imports(path):
            parts = module.split(".")
            if module.startswith("analyzer.rules.") and len(parts) > 3 and parts[3].startswith("_"):
                assert parts[2] == area, f"{path.relative_to(ROOT)} imports {module}"
