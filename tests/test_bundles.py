"""Every sample scenario end to end: findings, verdict, HTML charts and PDF, against hand-written
expectations in sample_bundles/<scenario>/expected/expect.json (not a snapshot of the output)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import SAMPLES

SCENARIOS = sorted(p.name for p in SAMPLES.iterdir() if (p / "expected" / "expect.json").exists())


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    name = request.param
    out = tmp_path_factory.mktemp(name)
    args = [
        "analyze",
        str(SAMPLES / name / "bundle"),
        "--json",
        str(out / "f.json"),
        "--html",
        str(out / "r.html"),
        "--md",
        str(out / "r.md"),
    ]
    pdf = shutil.which("pdftotext") is not None
    if pdf:
        args += ["--pdf", str(out / "r.pdf")]
    result = CliRunner().invoke(cli, [*args, "--color", "never"])
    assert result.exit_code == 0, result.output
    return {
        "name": name,
        "expect": json.loads((SAMPLES / name / "expected" / "expect.json").read_text()),
        "doc": json.loads((out / "f.json").read_text()),
        "html": (out / "r.html").read_text(),
        "terminal": result.output,
        "markdown": (out / "r.md").read_text(),
        "pdf": out / "r.pdf" if pdf else None,
    }


def _matches(finding: dict, want: dict) -> bool:
    for key, value in want.items():
        if key == "params":
            if any(finding["params"].get(k) != v for k, v in value.items()):
                return False
        elif key == "route_owner":
            if finding["route"]["owner"] != value:
                return False
        elif finding.get(key) != value:
            return False
    return True


def test_expected_findings(scenario: dict) -> None:
    for want in scenario["expect"]["findings"]:
        assert any(_matches(f, want) for f in scenario["doc"]["findings"]), f"missing {want}"


def test_healthy_nodes_have_no_concern(scenario: dict) -> None:
    for f in scenario["doc"]["findings"]:
        if f["severity"] in ("critical", "warning"):
            assert f["node"] not in scenario["expect"]["healthy_nodes"], f


def test_verdict_in_terminal_and_html(scenario: dict) -> None:
    verdict_html = scenario["html"].split('id="verdict"', 1)[1].split("</div>", 1)[0]
    terminal_verdict = scenario["terminal"].split("Verdict", 1)[1]
    for section in scenario["expect"]["verdict_sections"]:
        assert section in verdict_html and section in terminal_verdict
    for node in scenario["expect"]["worst_nodes"]:
        assert node in verdict_html and node in terminal_verdict


def test_charts_show_the_culprit(scenario: dict) -> None:
    html = scenario["html"]
    for title in scenario["expect"]["charts"].get("titles", []):
        assert f"<strong>{title}" in html, title
    for node in scenario["expect"]["charts"]["highlight"]:
        # the heatmap marks the node's labels; the bar chart hatches its bar
        assert f"▶ {node}" in html
    if scenario["name"] == "fsx-saturated":
        # the 80 % line is drawn on the DiskIopsUtilization chart, named by the rule that judges by it
        assert "80 % (fs.fsx.utilization_sustained)" in html


def test_pdf_carries_the_verdict(scenario: dict) -> None:
    if scenario["pdf"] is None or not scenario["pdf"].exists():
        pytest.skip("no PDF tooling (WeasyPrint/Pango or poppler-utils) here")
    text = subprocess.run(["pdftotext", str(scenario["pdf"]), "-"], capture_output=True, text=True).stdout
    flat = re.sub(r"\s+", " ", text)
    for section in scenario["expect"]["verdict_sections"]:
        assert section in flat
    for f in scenario["doc"]["findings"]:
        if f["severity"] == "critical":
            assert f["rule"] in flat


#: How each report words the verdict's status.
STATUS_WORDS = {
    "concerns": "Concerns found",
    "no-concerns": "No concerns",
    "incomplete": "Incomplete",
}


def test_expected_verdict(scenario: dict) -> None:
    want = scenario["expect"]["verdict"]
    got = scenario["doc"]["verdict"]
    assert got["status"] == want["status"]
    assert [w["node"] for w in got["worst_nodes"]][: len(want["worst_nodes"])] == want["worst_nodes"]
    assert set(want["cluster_wide"]) <= {c["rule"] for c in got["cluster_wide"]}
    ranked = {w["node"] for w in got["worst_nodes"]}
    assert not ranked & set(want.get("never_ranked", []))


def test_reports_agree_on_the_verdict(scenario: dict) -> None:
    """Terminal, HTML, Markdown and PDF say what the JSON verdict says: status, worst nodes in order."""
    verdict = scenario["doc"]["verdict"]
    texts = {
        "terminal": scenario["terminal"].split("Verdict", 1)[1],
        "html": re.sub(r"<[^>]+>", "", scenario["html"].split('id="verdict"', 1)[1].split("</div>", 1)[0]),
        "markdown": scenario["markdown"].split("## Verdict", 1)[1].replace("*", ""),
    }
    if scenario["pdf"] is not None and scenario["pdf"].exists():
        pdf = subprocess.run(["pdftotext", str(scenario["pdf"]), "-"], capture_output=True, text=True).stdout
        texts["pdf"] = re.sub(r"\s+", " ", pdf.split("Verdict", 1)[1])
    order = [w["node"] for w in verdict["worst_nodes"][:5]]
    for name, text in texts.items():
        flat = re.sub(r"\s+", " ", text)
        assert STATUS_WORDS[verdict["status"]] in flat, name
        positions = [flat.find(n) for n in order]
        assert -1 not in positions and positions == sorted(positions), (name, order)
        for w in verdict["worst_nodes"][:5]:
            counts = f"{w['critical']} critical, {w['warning']} warning"
            assert f"{w['node']} ({counts})" in flat or f"{w['node']}: {counts}" in flat, (name, w)
