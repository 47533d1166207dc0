"""The documents say what the code does."""

from __future__ import annotations

import re

from analyzer.cli import cli
from analyzer.docgen import schema as schema_doc
from analyzer.intake.meta import KNOWN_META, MANIFEST_COLUMNS
from tests.conftest import ROOT


def test_schema_doc_matches_the_code() -> None:
    on_disk = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    assert on_disk == schema_doc.render(), (
        "docs/schema.md is stale: python -m analyzer.docgen.schema > docs/schema.md"
    )


def test_bundle_format_doc_names_every_meta_key_and_manifest_column() -> None:
    doc = (ROOT / "docs" / "bundle-format.md").read_text(encoding="utf-8")
    for key in KNOWN_META:
        assert f"`{key}`" in doc, f"meta.env key {key} undocumented"
    for column in MANIFEST_COLUMNS:
        assert f"`{column}`" in doc, f"manifest column {column} undocumented"


def test_readme_lists_every_command_and_exit_code() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in cli.commands:
        assert f"hptriage {name}" in readme
    for code in range(5):
        assert re.search(rf"^\| {code} \|", readme, re.M), f"exit code {code} missing from README"


def test_rules_doc_matches_the_code() -> None:
    from analyzer.docgen import rules as rules_doc

    on_disk = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert on_disk == rules_doc.render(), (
        "docs/rules.md is stale: python -m analyzer.docgen.rules > docs/rules.md"
    )


def test_rules_coverage_names_real_rules_and_every_rule() -> None:
    from analyzer.judge.rules import load_rules

    doc = (ROOT / "docs" / "rules-coverage.md").read_text(encoding="utf-8")
    cited = set(
        re.findall(r"`((?:gpu|host|net|nccl|straggler|version|placement|fs|bundle)\.[a-z0-9_.]+)`", doc)
    )
    catalog = {m.RULE.id for m in load_rules(include_plugins=False)}
    assert cited <= catalog, f"unknown rules cited: {cited - catalog}"
    assert catalog <= cited, f"rules not in the coverage page: {catalog - cited}"


def test_bundle_format_kinds_table_matches_the_registry() -> None:
    from analyzer.docgen import kinds as kinds_doc

    on_disk = (ROOT / "docs" / "bundle-format.md").read_text(encoding="utf-8")
    assert on_disk == kinds_doc.update(on_disk), (
        "the kinds table of docs/bundle-format.md is stale: python -m analyzer.docgen.kinds"
    )


def test_findings_schema_enums_match_the_code() -> None:
    import json

    from analyzer.judge.findings import OWNERS, Severity

    schema = json.loads((ROOT / "docs" / "findings.schema.json").read_text(encoding="utf-8"))
    finding = schema["$defs"]["finding"]["properties"]
    assert finding["route"]["properties"]["owner"]["enum"] == list(OWNERS), (
        "docs/findings.schema.json: the owner enum is not analyzer.judge.findings.OWNERS"
    )
    assert finding["severity"]["enum"] == [s.value for s in Severity], (
        "docs/findings.schema.json: the severity enum is not analyzer.judge.findings.Severity"
    )


def test_every_sample_scenario_has_a_readme_naming_its_nodes() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("sample_build", ROOT / "sample_bundles" / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    for scenario, nodes in build.SCENARIOS.items():
        readme = ROOT / "sample_bundles" / scenario / "README.md"
        assert readme.is_file(), f"sample_bundles/{scenario}/README.md missing (build.py names it)"
        text = readme.read_text(encoding="utf-8")
        assert "expected/expect.json" in text
        names = list(nodes)
        ranged = f"`{names[0]}` ... `{names[-1]}`" in text  # as in "`p5-node-01` ... `p5-node-08`"
        for node, node_spec in nodes.items():
            assert ranged or f"`{node}`" in text, f"{scenario}/README.md does not name node {node}"
            for fixture, _edit in node_spec["probes"].values():
                assert fixture.rsplit("/", 1)[-1] in text, f"{scenario}/README.md: {fixture} not named"
