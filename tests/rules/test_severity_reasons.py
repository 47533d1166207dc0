"""Every built-in rule says why its worst severity is what it is, and names the public source.

The reason is shown in the rule catalog (``hptriage rules``, docs/rules.md) as "Why `<severity>`: ...".
A source is a document a reader can find by name (no URL: "NVIDIA Xid catalog
(docs.nvidia.com/deploy/xid-errors)", "AWS EFA documentation", "nccl-tests PERFORMANCE.md"), an issue
or pull request ``owner/repo#N``, or a clause that starts with "ours:" where the project chose the
level itself.
"""

from __future__ import annotations

import re

import pytest

from analyzer.docgen import rules as rules_doc
from analyzer.judge.engine import RuleInfo
from analyzer.judge.rules import load_rules

RULES: list[RuleInfo] = [m.RULE for m in load_rules(include_plugins=False)]

#: who publishes the documents the reasons name
PUBLISHERS = (
    "NVIDIA",
    "NVML",
    "DCGM",
    "AWS",
    "Amazon",
    "HyperPod",
    "awslabs/agent-plugins",
    "nccl-tests",
    "Linux kernel",
)
#: what makes a publisher's name a document's name
DOCUMENTS = re.compile(
    r"\b(documentation|docs|guides?|catalog|reference|skills?|scripts?|diagnostics|README|PERFORMANCE\.md"
    r"|release notes)\b"
)
ISSUE = re.compile(r"\b[\w.-]+/[\w.-]+#\d+\b")
OURS = re.compile(r"(?:^|[;:.,(]\s*)ours:")
#: a source tag of the team's notes (PD-DET, NC-DBG, ND-TRIAGE ...) or any upper-case hyphenated tag
TAG = re.compile(r"\b[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)+\b")


def names_a_source(reason: str) -> bool:
    named_document = any(p in reason for p in PUBLISHERS) and DOCUMENTS.search(reason) is not None
    return named_document or ISSUE.search(reason) is not None or OURS.search(reason) is not None


def test_every_rule_is_listed() -> None:
    assert len(RULES) >= 70
    assert len({r.id for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_severity_reason_says_why_and_names_a_source(rule: RuleInfo) -> None:
    reason = rule.severity_reason
    assert len(reason) >= 40, f"{rule.id}: severity_reason missing or too short: {reason!r}"
    assert "\n" not in reason, rule.id
    assert names_a_source(reason), f"{rule.id}: the reason names no public source: {reason!r}"
    assert "rules-facts" not in reason.lower(), rule.id
    assert not TAG.search(reason), f"{rule.id}: source tag {TAG.search(reason).group(0)!r} in the reason"  # type: ignore[union-attr]
    assert not re.search(r"https?://", reason), f"{rule.id}: a URL in the reason; name the document"


def test_source_detection() -> None:
    assert names_a_source(
        "the node cannot run jobs. Source: NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors)."
    )
    assert names_a_source("links train after a boot (NVIDIA/NVSentinel#1701).")
    assert names_a_source("a degradation, not a fault; ours: no outside source gives a line.")
    assert not names_a_source("a degradation, not a fault; we think so.")
    assert not names_a_source("as the yours: sheet says")
    assert TAG.search("PD-DET says so") and TAG.search("see NC-DBG") and not TAG.search("NVLink-C2C, x16, P0")


def test_rules_page_renders_every_reason() -> None:
    page = rules_doc.render()
    for rule in RULES:
        assert f"Why `{rule.severity.value}`: {rule.severity_reason}" in page, rule.id
