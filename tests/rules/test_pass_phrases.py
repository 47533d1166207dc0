"""Rule metadata that reports read: the [OK] phrase, where a cause lies (scope), and what explains a symptom.

Every rule says in ``passed`` what it checked and found fine; rules whose cause is shared by many
nodes (a file system, the placement, a pair's link) are ``scope="shared"``; per-node symptoms of such a
cause (iowait on the clients of a saturated file system) name the rules that explain them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.judge.rules import load_rules
from tests.conftest import SAMPLES
from tests.rules.helpers import analyze

RULES = {m.RULE.id: m.RULE for m in load_rules()}
#: The file-system capacity rules whose finding explains iowait on the nodes.
FS_CAUSES = {
    "fs.fsx.utilization_sustained",
    "fs.fsx.free_capacity_low",
    "fs.ebs.queue_sustained",
    "fs.verdict",
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_says_what_passed(rule: str) -> None:
    info = RULES[rule]
    assert info.passed.strip(), f"{rule}: no passed phrase"
    assert info.passed.strip().lower() != info.title.strip().lower(), f"{rule}: passed phrase is the title"
    assert len(info.passed) <= 60, f"{rule}: passed phrase is {len(info.passed)} characters"
    assert info.passed == info.passed.strip() and not info.passed.endswith("."), rule


def test_no_two_rules_pass_with_the_same_words() -> None:
    seen: dict[str, str] = {}
    for rule, info in sorted(RULES.items()):
        key = info.passed.strip().lower()
        assert key not in seen, f"{rule} and {seen.get(key)} share the passed phrase {info.passed!r}"
        seen[key] = rule


def test_explained_by_names_real_shared_rules() -> None:
    for rule, info in RULES.items():
        for cause in info.explained_by:
            assert cause in RULES, f"{rule}: explained_by names unknown rule {cause}"
            assert cause != rule, rule
        assert info.scope in ("node", "shared"), rule


def test_iowait_is_explained_by_the_file_system() -> None:
    for rule in ("fs.iowait.high", "straggler.host.iowait"):
        assert set(RULES[rule].explained_by) >= FS_CAUSES, rule
        assert RULES[rule].scope == "node"  # iowait is read per node; the cause is elsewhere


def test_placement_and_file_system_wide_rules_are_shared() -> None:
    shared = {r for r, info in RULES.items() if info.scope == "shared"}
    assert {r for r in RULES if r.startswith(("placement.", "fs.fsx.", "fs.lustre."))} <= shared
    assert "fs.verdict" in shared


def test_shared_causes_on_the_saturated_file_system_sample(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(SAMPLES / "fsx-saturated" / "bundle", bundle)  # analyze() works beside its input
    res = analyze(bundle)
    fired = {f.rule for f in res.findings}
    assert {"fs.fsx.utilization_sustained", "fs.verdict", "fs.iowait.high"} <= fired
    for rule in ("fs.fsx.utilization_sustained", "fs.verdict"):
        assert RULES[rule].scope == "shared", rule
        assert res.of(rule), rule
    # every iowait finding names a node, and one of the rules that explain it fired
    iowait = res.of("fs.iowait.high")
    assert iowait and all(f.node for f in iowait)
    assert set(RULES["fs.iowait.high"].explained_by) & fired
    # no finding of a shared rule there is ranked against a node: each is scope "shared" or names none
    for f in res.findings:
        if f.rule.startswith(("fs.fsx.", "fs.lustre.", "placement.")) or f.rule == "fs.verdict":
            assert RULES[f.rule].scope == "shared" and f.node is None, f.rule
