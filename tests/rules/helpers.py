"""Build small bundles from real fixtures (values edited to trigger) and run the rules on them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Finding, Outcome
from analyzer.judge.rules import load_rules
from analyzer.judge.settings import Settings, load_settings
from analyzer.store.tables import connect
from tests import rule_record
from tests.conftest import fixture_text

HEADER = "path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote\n"


def write_node(
    root: Path,
    node: str,
    files: dict[str, tuple[str, str]],
    meta: dict[str, str] | None = None,
    probes: list[tuple[str, str, int]] | None = None,
) -> Path:
    """Write a node bundle: files maps 'cmd/x.txt' -> (kind, text); probes adds manifest-only rows
    (path, kind, exit_code) for probes that failed or timed out."""
    dest = root / node
    dest.mkdir(parents=True)
    values = {"bundle_format": "1", "node": node, "collected_at": "2026-12-01T08:00:00Z", "hostname": node}
    values.update(meta or {})
    (dest / "meta.env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    rows = []
    for path, (kind, text) in files.items():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        target.write_bytes(data)
        rows.append(f"{path}\t{kind}\t0\t0.1\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\t-\t-\n")
    for path, kind, code in probes or []:
        rows.append(f"{path}\t{kind}\t{code}\t20.0\t0\t-\t-\t{'timeout' if code == 124 else '-'}\n")
    (dest / "manifest.tsv").write_text(HEADER + "".join(rows))
    return dest


def fixture(kind: str, name: str, edit: dict[str, str] | None = None) -> str:
    """A real fixture's text with optional literal replacements (each must apply)."""
    text = fixture_text(kind, name)
    for old, new in (edit or {}).items():
        assert old in text, f"edit {old!r} does not apply to {kind}/{name}"
        text = text.replace(old, new)
    return text


@dataclass
class Result:
    findings: list[Finding]
    outcomes: dict[str, Outcome]
    con: Any

    def of(self, rule: str) -> list[Finding]:
        """The findings of a rule (noted for tests/rules/test_every_rule_asserted.py when the rule ran)."""
        if rule in self.outcomes:
            rule_record.note(rule)
        return [f for f in self.findings if f.rule == rule]

    def outcome(self, rule: str) -> str:
        """pass, fail, skipped or error (noted for tests/rules/test_every_rule_asserted.py)."""
        outcome = self.outcomes[rule].outcome
        rule_record.note(rule)
        return outcome


def analyze(path: Path, settings: Settings | None = None) -> Result:
    con = connect(None)
    work = path.parent / f"work-{path.name}"
    work.mkdir(exist_ok=True)
    load(con, [path], work, Limits(), jobs=1)
    findings, outcomes = run_rules(con, load_rules(), settings or load_settings())
    return Result(findings, {o.rule: o for o in outcomes}, con)
