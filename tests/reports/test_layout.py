"""Concerns first: verdict, worst nodes, findings by rule and the concerns come before any check table;
passed and not-examined checks fold into one line per section, their detail in the appendix."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from analyzer.judge.findings import Evidence, Finding, Outcome, Route, Severity
from analyzer.model.records import UnreadInput
from analyzer.model.report_data import ReportData
from analyzer.model.verdict import Verdict
from reports.render import render_html


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_group_label_counts_each_severity(rendered: dict[str, Path], findings: list[dict]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    xid = Counter(f["severity"] for f in findings if f["rule"] == "gpu.xid")
    assert len(xid) > 1, "the sample's gpu.xid group mixes severities"
    label = ", ".join(f"{xid[s]} {s}" for s in ("critical", "warning", "info") if xid[s])
    by_rule = html.split('id="by-rule"', 1)[1].split("</table>", 1)[0]
    row = next(r for r in by_rule.split("<tr>") if "<code>gpu.xid</code>" in r)
    assert _text(row.split("</td>", 1)[0]).strip() == label  # "2 critical, 6 warning, 1 info"
    heading = html.split('<h3 class="group"', 1)[1].split("</h3>", 1)[0]
    assert "gpu.xid" in heading and label in _text(heading)


def test_appendix_comes_after_every_concern(rendered: dict[str, Path], findings: list[dict]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    appendix = html.index('id="appendix"')
    order = [html.index(f'id="{k}"') for k in ("verdict", "worst-nodes", "by-rule", "sec-C", "sec-A")]
    assert order == sorted(order) and order[-1] < appendix, "verdict, worst nodes, by rule, C (criticals), A"
    cards = [m.start() for m in re.finditer(r'<div class="finding" id="f-', html)]
    assert len(cards) == len(findings) and max(cards) < appendix
    body = html[:appendix]
    assert "Outcome</th>" not in body and "not examined</td>" not in body, (
        "no check table before the appendix"
    )
    for key in ("A", "B", "C"):
        assert html.index(f'id="checks-{key}"') > appendix
        section = body.split(f'id="sec-{key}"', 1)[1].split("<h2", 1)[0]
        summary = re.findall(r'<p class="checks-summary">(.*?)</p>', section)
        assert len(summary) == 1 and "not examined" in summary[0] and "appendix" in summary[0]
    # the detail rows: rule, outcome, pass phrase or reason, nodes checked, nodes not examined
    checks = html.split('id="checks-C"', 1)[1].split("</table>", 1)[0]
    row = next(r for r in checks.split("<tr>") if "gpu.temperature.high" in r)
    cells = [_text(c).strip() for c in row.split("</td>")[:5]]
    assert cells[1] == "OK" and cells[2] and cells[3] == "4" and cells[4] == "—", cells
    assert html.index('id="findings"') > appendix and html.index('id="health-coverage"') > appendix


def _one(verdict: Verdict, outcomes: list[Outcome]) -> str:
    return render_html(
        ReportData(
            bundles=[],
            nodes=[{"node": "n1"}, {"node": "n2"}],
            findings=[],
            outcomes=outcomes,
            problems=[],
            rule_titles={"gpu.xid": "Xid errors in the kernel log"},
            rule_passed={"gpu.xid": "no Xid in the kernel log"},
            verdict=verdict,
        )
    )


def test_incomplete_never_reads_as_no_concerns() -> None:
    verdict = Verdict(
        status="incomplete",
        sections=[],
        worst_nodes=[],
        ranked_nodes=0,
        counts={"critical": 0, "warning": 0, "info": 0},
        unread_inputs=[UnreadInput("n2.tar.gz", "not a gzip file")],
        not_examined=[{"node": "n2", "what": "kernel log (dmesg / journalctl -k)"}],
    )
    outcomes = [
        Outcome("gpu.xid", "pass", 0, nodes_without_data=["n2"], nodes_checked=["n1"]),
        Outcome("gpu.dcgm.failed", "skipped", 0, "no input: dcgm_test", ["n1", "n2"]),
    ]
    html = _one(verdict, outcomes)
    box = _text(html.split('id="verdict"', 1)[1].split("</div>", 1)[0])
    assert "Incomplete" in box and "No concerns" not in box and "not a clean bill of health" in box
    assert "n2.tar.gz: not a gzip file" in box
    assert "kernel log (dmesg / journalctl -k): missing on 1 node(s): n2" in box
    summary = _text(html.split('class="checks-summary">', 1)[1].split("</p>", 1)[0])
    assert summary.startswith("Checks: 1 check passed (1 of them not on every node), 1 not examined")
    checks = html.split('id="checks-C"', 1)[1].split("</table>", 1)[0]
    assert "no Xid in the kernel log" in checks  # the pass phrase, not the title
    row = next(r for r in checks.split("<tr>") if "gpu.dcgm.failed" in r)
    assert "no input: dcgm_test" in row and "all 2" in row


def test_cluster_wide_causes_in_the_verdict() -> None:
    route = Route("filesystem-capacity", "hyperpod-performance-debugger § B", "scale the file system")
    f = Finding(
        "fs.iowait.high",
        1,
        Severity.WARNING,
        "n1",
        None,
        "n1 iowait 31 %",
        {},
        route,
        [Evidence("x", 1, "y")],
    )
    verdict = Verdict(
        status="concerns",
        sections=["B"],
        worst_nodes=[],
        ranked_nodes=0,
        counts={"critical": 0, "warning": 1, "info": 0},
        cluster_wide=[{"rule": "fs.iowait.high", "severity": "warning", "message": "iowait on every node"}],
    )
    data = ReportData([], [{"node": "n1"}], [f], [Outcome("fs.iowait.high", "fail", 1)], [], verdict=verdict)
    box = _text(render_html(data).split('id="verdict"', 1)[1].split("</div>", 1)[0])
    assert "Concerns found" in box and "fs.iowait.high — iowait on every node" in box
