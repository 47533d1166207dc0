"""One merge of rule outcomes and one order of findings, used by the pipeline (a cluster's folders
judged apart) and the fleet (node-local outcomes of workers with the snapshot's own)."""

from __future__ import annotations

from analyzer.judge.engine import TOO_FEW_PEERS, merge_outcomes
from analyzer.judge.findings import Finding, Outcome, Route, Severity, finding_order


def test_the_worst_outcome_wins_findings_add_up_and_nodes_join() -> None:
    merged = merge_outcomes(
        [
            Outcome("gpu.a", "pass", 0, None, nodes_checked=["n2"]),
            Outcome("gpu.b", "skipped", 0, "no input: gpu", nodes_without_data=["n1"]),
            Outcome("gpu.a", "fail", 2, None, nodes_checked=["n1"], nodes_without_data=["n3"]),
            Outcome("gpu.b", "skipped", 0, "no input: gpu_query", nodes_without_data=["n2"]),
            Outcome("gpu.a", "fail", 1, None, nodes_checked=["n4"]),
        ]
    )
    assert [(o.rule, o.outcome, o.findings) for o in merged] == [
        ("gpu.a", "fail", 3),
        ("gpu.b", "skipped", 0),
    ]
    assert merged[0].nodes_checked == ["n1", "n2", "n4"] and merged[0].nodes_without_data == ["n3"]
    assert merged[1].reason == "no input: gpu; no input: gpu_query"
    assert merged[1].nodes_without_data == ["n1", "n2"]


def test_an_error_outranks_a_failure_and_a_pass_a_skip() -> None:
    merged = merge_outcomes(
        [
            Outcome("r.x", "fail", 1),
            Outcome("r.x", "error", 0, "ValueError: boom"),
            Outcome("r.y", "skipped", 0, "no input: gpu"),
            Outcome("r.y", "pass", 0),
        ]
    )
    assert [(o.outcome, o.findings, o.reason) for o in merged] == [
        ("error", 1, "ValueError: boom"),
        ("pass", 0, None),  # a skipped run's why is not the pass's
    ]


def test_a_run_with_too_few_peers_keeps_its_why_beside_a_judged_one() -> None:
    why = f"{TOO_FEW_PEERS}: 1 node of p5.48xlarge (needs 3)"
    merged = merge_outcomes([Outcome("gpu.peer", "pass", 0), Outcome("gpu.peer", "skipped", 0, why)])
    assert [(o.outcome, o.reason) for o in merged] == [("pass", why)]


def _finding(severity: Severity, node: str | None, gpu: int | None, rule: str) -> Finding:
    route = Route("node-hardware", "runbook", "drain")
    return Finding(rule, 1, severity, node, gpu, "m", {}, route)


def test_findings_order_worst_first_then_node_gpu_rule() -> None:
    found = [
        _finding(Severity.INFO, "a", None, "r.z"),
        _finding(Severity.CRITICAL, "b", 3, "r.b"),
        _finding(Severity.CRITICAL, "b", None, "r.c"),
        _finding(Severity.CRITICAL, None, None, "r.d"),
        _finding(Severity.WARNING, "a", 0, "r.a"),
        _finding(Severity.CRITICAL, "b", 3, "r.a"),
    ]
    found.sort(key=finding_order)
    assert [(f.severity.value, f.node, f.gpu, f.rule) for f in found] == [
        ("critical", None, None, "r.d"),
        ("critical", "b", None, "r.c"),
        ("critical", "b", 3, "r.a"),
        ("critical", "b", 3, "r.b"),
        ("warning", "a", 0, "r.a"),
        ("info", "a", None, "r.z"),
    ]
