"""Walk the registries: every parser and rule follows the house contract, docs match the code."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import parsers
from analyzer.judge.findings import OWNERS
from analyzer.judge.rules import load_rules
from parsers._base import COLUMN_TYPES, ParserInfo, sample_of
from tests.conftest import FIXTURES, ROOT, fixture_files

KINDS = list(parsers.KINDS)


def test_every_registered_kind_has_a_module() -> None:
    assert list(parsers.available_kinds()) == KINDS


@pytest.mark.parametrize("kind", KINDS)
def test_parser_module_contract(kind: str) -> None:
    module = parsers.module_for(kind)
    assert module.__name__ == "parsers." + kind.replace("-", "_")
    doc = inspect.getdoc(module) or ""
    assert "Schema" in doc and "Examples" in doc and ">>>" in doc, "docstring needs Schema and Examples"
    assert isinstance(module.INFO, ParserInfo) and module.INFO.kind == kind
    assert set(module.INFO.tables) == set(module.SCHEMA), "INFO.tables must name the SCHEMA tables"
    for table, cols in module.SCHEMA.items():
        names = [c.name for c in cols]
        assert len(names) == len(set(names)), f"{table}: duplicate columns"
        assert all(c.type in COLUMN_TYPES for c in cols)
        assert not {"bundle_id", "node", "source_file"} & set(names), "reserved column names"
    result = module.parse(module.SAMPLE)
    for table, rows in result.table_rows().items():
        assert table in module.SCHEMA
        declared = {c.name for c in module.SCHEMA[table]}
        for row in rows:
            assert set(row) <= declared, f"{table}: undeclared keys {set(row) - declared}"


_SAMPLE_HEADING = re.compile(r"^Sample \((?P<claim>.*)\)::$", re.M)


@pytest.mark.parametrize("kind", KINDS)
def test_sample_says_where_it_comes_from(kind: str) -> None:
    """``Sample (lines of tests/fixtures/<kind>/<file>)::`` or ``Sample (hand-written ...)::``."""
    module = parsers.module_for(kind)
    m = _SAMPLE_HEADING.search(module.__doc__ or "")
    assert m, "the docstring needs a 'Sample (<where it comes from>)::' block"
    assert module.SAMPLE and sample_of(module.__doc__) == module.SAMPLE, "SAMPLE = sample_of(__doc__)"
    claim = m["claim"]
    if "hand-written" in claim:
        return
    named = re.findall(rf"tests/fixtures/{re.escape(kind)}/[\w.+-]+", claim)
    assert len(named) == 1, f"say 'lines of tests/fixtures/{kind}/<file>' or 'hand-written': {claim!r}"
    fixture = ROOT / named[0]
    assert fixture.is_file(), f"{named[0]} does not exist"
    assert not fixture.name.startswith("handwritten"), f"{fixture.name} is hand-written: say so"
    lines = iter(line.rstrip() for line in fixture.read_text(encoding="utf-8").splitlines())
    for wanted in module.SAMPLE.splitlines():
        assert any(line == wanted.rstrip() for line in lines), (
            f"not a line of {fixture.name} (in order): {wanted!r}"
        )


def test_not_collected_reasons_are_sentences() -> None:
    for kind in KINDS:
        reason = parsers.module_for(kind).INFO.not_collected_because
        assert reason is None or (isinstance(reason, str) and len(reason.split()) >= 5), kind


@pytest.mark.parametrize("kind", KINDS)
def test_fixtures_exist_with_provenance_and_are_detected(kind: str) -> None:
    folder = FIXTURES / kind
    assert (folder / "PROVENANCE.md").is_file(), f"tests/fixtures/{kind}/PROVENANCE.md missing"
    files = fixture_files(kind)
    assert files, f"no fixture for {kind}"
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert parsers.detect_kind(text) == kind, f"{path.name} not detected as {kind}"


@pytest.mark.parametrize("module", load_rules(), ids=lambda m: m.RULE.id)
def test_rule_contract(module) -> None:  # type: ignore[no-untyped-def]
    rule = module.RULE
    assert rule.id.count(".") >= 1 and rule.id == rule.id.lower()
    assert rule.route.owner in OWNERS and rule.route.target and rule.route.action
    assert inspect.getdoc(module), "a rule module needs a docstring saying what it detects and why"
    assert rule.requires, "a rule declares the tables it needs"
    # that a test runs the rule and asserts on it: tests/rules/test_every_rule_asserted.py


def test_cli_starts_without_the_heavy_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from analyzer.cli import cli; import parsers; parsers.module_for('dmesg');"
        "heavy = [m for m in ('duckdb', 'polars', 'pyarrow', 'weasyprint', 'matplotlib') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def test_rules_import_cleanly() -> None:
    for module in load_rules():
        importlib.reload(module)


@pytest.mark.parametrize("kind", KINDS)
def test_parse_command_works_for_every_kind(kind: str) -> None:
    import json

    from click.testing import CliRunner

    from analyzer.cli import cli

    for path in fixture_files(kind):
        result = CliRunner().invoke(cli, ["parse", str(path), "--kind", kind])
        assert result.exit_code == 0, f"{path.name}: {result.output}"
        records = json.loads(result.stdout)
        assert isinstance(records, list)
        detected = CliRunner().invoke(cli, ["parse", str(path), "--format", "csv"])
        assert detected.exit_code == 0, f"{path.name}: {detected.output}"
