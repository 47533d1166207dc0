"""Arrows run one way, from the top of the house to the bottom, and nowhere in a circle.

The order, bottom first (docs/architecture.md draws it):

    parsers               raw text -> rows; the kinds registry
    analyzer.errors       the user-facing errors every stage may raise
    analyzer.store        table schemas from the parsers, coercion, the DuckDB store
    analyzer.intake       untrusted inputs -> the store: safe reading, discovery, per-node reading, loading
    analyzer.judge        engine, coverage, settings, peers, signals, rules, catalogs (and their records)
    analyzer.model        what renderers are given: records, verdict, report data, chart data
    analyzer.pipeline     the one wiring: intake -> judge -> model
    analyzer.history      ingest (through the pipeline), queries, diff, Parquet export
    analyzer.fleet        ingest into a Parquet dataset, read by local processes or on Ray
    analyzer.redact       redaction of bundles and inputs
    analyzer.plan         the remediation plan of an analysis (per-rule actions, guardrails, HyperPod forms)
    analyzer.docgen       generators of the docs pages that match the code
    reports               renderers of the model (and of the history model)
    analyzer.assistants   the front end for assistants: agent skill, summary document, MCP tools
    analyzer.cli          the command line, on top of everything

A module may import from its own layer and the layers below it, never from one above.  Renderers read
only the model (and the history queries they render); no module imports a renderer but the front ends
(the CLI, and the assistants' tools, which write the same JSON documents as its --json options).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: bottom first; a module belongs to the longest prefix that names it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("parsers",),
    ("analyzer.errors", "analyzer"),  # analyzer/__init__: the version
    ("analyzer.store",),
    ("analyzer.intake",),
    ("analyzer.judge",),
    ("analyzer.model",),
    ("analyzer.pipeline",),
    ("analyzer.history", "analyzer.redact", "analyzer.fleet"),
    ("analyzer.plan",),
    ("analyzer.docgen",),
    ("reports",),
    ("analyzer.assistants",),
    ("analyzer.cli",),
)
#: What a renderer may import from the analyzer: the model it is given (and the history model).
RENDERER_MAY_IMPORT = ("analyzer.model", "analyzer.history.query", "analyzer.errors", "analyzer.__version__")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}")
            else:
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}  # from pkg import module
    return found


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            named = module == prefix or module.startswith(prefix + ".")
            if named and (best is None or len(prefix) > best[1]):
                best = (level, len(prefix))
    return None if best is None else best[0]


def _sources() -> list[Path]:
    return sorted(p for top in ("analyzer", "parsers", "reports") for p in (ROOT / top).rglob("*.py"))


def _graph() -> dict[str, set[str]]:
    modules = {_module_of(p): p for p in _sources()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {m for m in _imports(path) if m in modules}
    return graph


def test_every_module_has_a_layer() -> None:
    missing = [m for m in _graph() if layer_of(m) is None]
    assert not missing, f"modules in no layer: {missing}"


def test_imports_run_one_way() -> None:
    wrong = []
    for module, imported in _graph().items():
        here = layer_of(module)
        for target in imported:
            there = layer_of(target)
            if here is not None and there is not None and there > here:
                wrong.append(f"{module} (layer {here}) imports {target} (layer {there})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle() -> None:
    """Between packages (the stages and their sub-packages), no circle; within one module's imports
    none either (a cycle of modules would make a stage impossible to read on its own)."""
    graph = _graph()
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, path: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == node:
                continue
            if state.get(nxt) == 1:
                cycle.extend(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
                return True
            if state.get(nxt) is None and visit(nxt, [*path, nxt]):
                return True
        state[node] = 2
        return False

    for start in sorted(graph):
        if state.get(start) is None and visit(start, [start]):
            break
    assert not cycle, " -> ".join(cycle)


def test_renderers_read_only_the_model() -> None:
    for path in sorted((ROOT / "reports").rglob("*.py")):
        wrong = {
            m
            for m in _imports(path)
            if m.startswith("analyzer.")
            and not any(m == p or m.startswith(p + ".") for p in RENDERER_MAY_IMPORT)
        }
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_only_the_cli_imports_the_renderers() -> None:
    front_ends = (ROOT / "analyzer" / "cli.py", ROOT / "analyzer" / "assistants")
    for path in sorted((ROOT / "analyzer").rglob("*.py")):
        if any(path == f or f in path.parents for f in front_ends):
            continue
        wrong = {m for m in _imports(path) if m.split(".")[0] == "reports"}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_rules_do_not_import_private_helpers_of_other_areas() -> None:
    """Shared queries live in analyzer.judge.signals; a rule's _private module serves its own area only."""
    rules = ROOT / "analyzer" / "judge" / "rules"
    for path in sorted(rules.rglob("*.py")):
        area = path.relative_to(rules).parts[0]
        for module in _imports(path):
            parts = module.split(".")
            if module.startswith("analyzer.judge.rules.") and len(parts) > 4 and parts[4].startswith("_"):
                assert parts[3] == area, f"{path.relative_to(ROOT)} imports {module}"


def test_the_layer_test_sees_an_upward_import() -> None:
    """The check itself: a judge module importing the model is an upward import."""
    assert layer_of("analyzer.judge.engine") is not None
    assert layer_of("analyzer.model.verdict") > layer_of("analyzer.judge.engine")  # type: ignore[operator]
    assert layer_of("reports.terminal") > layer_of("analyzer.model.report_data")  # type: ignore[operator]
    assert layer_of("analyzer.cli") == len(LAYERS) - 1


#: The stages' entrances that only the pipeline (and the stages below it) may use at run time:
#: discovery and planning of the inputs, the loader, the node reader, and the rule engine.
STAGE_ENTRANCES = (
    "analyzer.intake.load",
    "analyzer.intake.read_node",
    "analyzer.intake.bundle.discover",
    "analyzer.intake.bundle.content_digest",
    "analyzer.judge.engine",
)


def _run_time_imports(source: str, module: str, is_package: bool = False) -> set[str]:
    """The modules (and ``module.name`` of a ``from`` import) imported at run time: an import under
    ``if TYPE_CHECKING:`` names a type only and is left out."""
    tree = ast.parse(source)
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            base = node.module
            if node.level:
                base = (
                    (package.rsplit(".", node.level - 1)[0] if node.level > 1 else package)
                    + "."
                    + node.module
                )
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return found


def _entered(imported: set[str]) -> set[str]:
    return {m for m in imported if any(m == e or m.startswith(e + ".") for e in STAGE_ENTRANCES)}


def test_only_the_pipeline_enters_the_stages() -> None:
    """The pipeline is the one door to the stages: above it (history, fleet, redaction, the plan, the
    renderers, the front ends), nothing discovers or loads inputs, reads a node or runs the rules but
    through the pipeline's steps (a type named for mypy alone is no entrance)."""
    pipeline = layer_of("analyzer.pipeline")
    assert pipeline is not None
    wrong = []
    for path in _sources():
        module = _module_of(path)
        here = layer_of(module)
        if here is None or here <= pipeline:
            continue
        entered = _entered(
            _run_time_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        )
        wrong += [f"{module} imports {m}" for m in sorted(entered)]
    assert not wrong, "\n".join(wrong)


def test_the_door_test_sees_an_entrance() -> None:
    """The check itself: a run-time import of the loader or the engine is seen, a typing-only one is not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from analyzer.judge.engine import run_rules\n"
        "from analyzer.intake.bundle import discover, folder_name\n"
        "if TYPE_CHECKING:\n"
        "    from analyzer.intake.load import LoadSummary\n"
        "def f():\n"
        "    from ..intake.read_node import read_node\n"
    )
    entered = _entered(_run_time_imports(source, "analyzer.fleet.x"))
    assert entered == {
        "analyzer.judge.engine",
        "analyzer.judge.engine.run_rules",
        "analyzer.intake.bundle.discover",
        "analyzer.intake.read_node",
        "analyzer.intake.read_node.read_node",
    }
