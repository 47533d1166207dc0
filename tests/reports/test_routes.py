"""Each finding carries its own route everywhere: Markdown, terminal and HTML group findings for reading,
but a line never shows another finding's severity or action, and a group's header states only what all
of its lines share.

The sample xid-ecc-3node has gpu.xid findings of three severities and five routes (Xid 109 "reset the
GPU", Xid 48 "drain, then reset", Xid 13 "restart the application; no GPU reset or reboot is needed",
Xid 94, and the NVLink Xids 145/149); every finding of its JSON is looked up in each report.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.judge.settings import load_settings
from analyzer.model.report_data import ReportData
from analyzer.model.routes import route_text
from analyzer.pipeline import analyze
from reports import markdown, terminal
from reports.render import render_html
from tests.conftest import SAMPLES

SEVERITIES = ("critical", "warning", "info")


@pytest.fixture(scope="module")
def sample() -> ReportData:
    return analyze([SAMPLES / "xid-ecc-3node" / "bundle"], load_settings(), jobs=1)


@pytest.fixture(scope="module")
def doc(sample: ReportData) -> list[dict[str, Any]]:
    from reports.findings_json import document

    return json.loads(json.dumps(document(sample), default=str))["findings"]


def _route(f: dict[str, Any]) -> str:
    r = f["route"]
    return f"{r['owner']}: {r['action']} ({r['target']})"


def test_the_sample_mixes_severities_and_routes_in_one_rule(doc: list[dict[str, Any]]) -> None:
    xid = [f for f in doc if f["rule"] == "gpu.xid"]
    assert len({f["severity"] for f in xid}) == 3 and len({_route(f) for f in xid}) >= 4
    no_reset = next(f for f in xid if "no GPU reset or reboot is needed" in f["route"]["action"])
    assert no_reset["severity"] == "warning"


# -- Markdown -------------------------------------------------------------------------------------------


def _bullets(text: str) -> list[tuple[int, str]]:
    """(indent, text) of every list line of the Markdown."""
    return [(len(m.group(1)), m.group(2)) for m in re.finditer(r"^( *)- (.*)$", text, re.M)]


def _ancestors(lines: list[tuple[int, str]], at: int) -> list[str]:
    """The list lines a line sits under (nearest first), up to the top of its list."""
    out, indent = [], lines[at][0]
    for i in range(at - 1, -1, -1):
        if lines[i][0] < indent:
            out.append(lines[i][1])
            indent = lines[i][0]
            if indent == 0:
                break
    return out


def test_markdown_every_finding_under_its_own_severity_and_route(
    sample: ReportData, doc: list[dict[str, Any]]
) -> None:
    text = markdown.render(sample)
    lines = _bullets(text)
    for f in doc:
        at = [i for i, (_, line) in enumerate(lines) if line == f["message"].replace("|", "\\|")]
        assert at, f"{f['rule']}: {f['message']} is not a line of the Markdown"
        for i in at:
            above = _ancestors(lines, i)
            said = " ".join(above)
            assert f"**{f['severity']}**" in said, (f["message"], above)
            assert f"→ {_route(f)}" in said, (f["message"], above)
            for header in above:  # no header over it states another severity or another route
                for sev in SEVERITIES:
                    assert f"**{sev}**" not in header or sev == f["severity"], (f["message"], header)
                if "→ " in header:
                    assert f"→ {_route(f)}" in header, (f["message"], header)


def test_markdown_xid13_is_not_under_reset_the_gpu(sample: ReportData) -> None:
    """The issue's case: the warning Xid 13 whose own route says no reset is needed."""
    text = markdown.render(sample)
    lines = _bullets(text)
    i = next(i for i, (_, line) in enumerate(lines) if "Xid 13" in line)
    header = _ancestors(lines, i)[0]
    assert header.startswith("**warning** → node-hardware: restart the application; no GPU reset"), header
    rule_line = _ancestors(lines, i)[-1]
    assert "critical**" not in rule_line and "reset the GPU" not in rule_line
    assert "2 critical, 6 warning" in rule_line and "different routes" in rule_line


def test_markdown_worst_nodes_say_who_acts(sample: ReportData) -> None:
    text = markdown.render(sample)
    verdict = sample.verdict
    assert verdict is not None and verdict.worst_nodes
    for r in verdict.worst_nodes:
        line = next(x for x in text.splitlines() if f"**{r.node}**:" in x)
        owners = {f.route.owner for f in sample.findings if f.node == r.node and f.rule in r.rules}
        assert owners and all(o in line.split("who acts:", 1)[1] for o in owners), line


# -- terminal -------------------------------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[str, str]]:
    """(finding line, the route line under it) of a terminal report rendered without wrapping."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if re.match(r"\s*\[(CONCERN|INFO)\] (critical|warning|info): ", line):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            out.append((line.strip(), nxt))
    return out


@pytest.mark.parametrize("verbose", [True, False])
def test_terminal_every_finding_with_its_own_severity_and_route(
    sample: ReportData, doc: list[dict[str, Any]], verbose: bool
) -> None:
    text = click_unstyle(terminal.render(sample, verbose=verbose, columns=100_000))
    blocks = _blocks(text)
    for f in doc:
        own = [(line, route) for line, route in blocks if line.endswith(f["message"])]
        folded = [
            (line, route)
            for line, route in blocks
            if "each of this severity and route" in line and f["node"] in line
        ]
        if verbose or own:
            assert own, f"{f['message']} has no line of its own"
        else:
            assert folded, f"{f['message']} is neither on a line nor folded into one"
        for line, route in own + folded:
            assert line.split("] ", 1)[1].startswith(f"{f['severity']}: "), (f["message"], line)
            assert route == f"→ {_route(f)}", (f["message"], route)


def test_terminal_folds_only_findings_of_one_route(sample: ReportData) -> None:
    """Derived from the sample: its gpu.xid findings copied onto 5 more nodes each, so every route has
    more findings than fold into one line; the folded lines are one per (severity, route)."""
    xid = [f for f in sample.findings if f.rule == "gpu.xid"]
    many = [replace(f, node=f"copy-{i}-{f.node}") for i in range(5) for f in xid]
    data = ReportData(sample.bundles, sample.nodes, xid + many, sample.outcomes, [], sample.rule_titles)
    text = click_unstyle(terminal.render(data, columns=100_000))
    folds = [(line, route) for line, route in _blocks(text) if "each of this severity and route" in line]
    routes = {(f.severity.value, route_text(f.route)) for f in xid}
    assert len(folds) == len(routes), folds
    for line, route in folds:
        severity = line.split("] ", 1)[1].split(":", 1)[0]
        assert (severity, route.removeprefix("→ ")) in routes
        count = int(re.search(r": (\d+) findings on ", line).group(1))  # type: ignore[union-attr]
        members = [
            f for f in xid + many if f.severity.value == severity and f"→ {route_text(f.route)}" == route
        ]
        assert count == len(members), line


def test_terminal_worst_nodes_say_who_acts(sample: ReportData) -> None:
    text = click_unstyle(terminal.render(sample, columns=100_000))
    verdict = sample.verdict
    assert verdict is not None
    line = next(x for x in text.splitlines() if "Worst nodes" in x)
    for r in verdict.worst_nodes:
        owners = {f.route.owner for f in sample.findings if f.node == r.node and f.rule in r.rules}
        part = line.split(f"{r.node} ({r.critical} critical, {r.warning} warning) → ", 1)[1].split(";")[0]
        assert set(part.split(", ")) == owners, (r.node, part)


def click_unstyle(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# -- HTML -----------------------------------------------------------------------------------------------


def _plain(fragment: str) -> str:
    """The text of an HTML fragment: inline tags dropped, block tags a space, white space collapsed."""
    inline = re.sub(r"</?(?:strong|span|code|a|em|b)\b[^>]*>", "", fragment)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", inline))).strip()


def test_html_every_finding_card_and_row_has_its_own_severity_and_route(
    sample: ReportData, doc: list[dict[str, Any]]
) -> None:
    page = render_html(sample)
    sections = page.split('id="appendix"', 1)[0]
    for f in doc:
        card = sections.split(f'<div class="finding" id="f-{f["fingerprint"][:12]}">', 1)[1].split(
            '<div class="finding"', 1
        )[0]
        text = _plain(card)
        assert text.startswith(f"{f['severity']} {f['rule']}"), text[:80]
        assert f"→ {_route(f)}" in text, text
        # the heading of its group states a route only when it is this finding's
        heading = _plain(sections.split(card, 1)[0].rsplit('<h3 class="group"', 1)[1].split("</h3>", 1)[0])
        if "different actions" not in heading:
            assert f"→ {_route(f)}" in heading, heading
        else:
            rule = [g for g in doc if g["rule"] == f["rule"]]
            assert len({_route(g) for g in rule}) > 1
    table = page.split('id="findings"', 1)[1].split("</table>", 1)[0]
    rows = table.split("<tr>")[2:]
    assert len(rows) == len(doc)
    for f, row in zip(doc, rows, strict=True):  # the table lists the findings in the JSON's order
        cells = [_plain(c) for c in row.split("</td>")[:6]]
        assert cells[0] == f["severity"] and cells[1] == f["rule"], cells
        assert cells[5] == f"{f['route']['owner']}: {f['route']['action']}", cells


def test_html_first_screen_says_who_acts_on_each_worst_node(sample: ReportData) -> None:
    page = render_html(sample)
    verdict = sample.verdict
    assert verdict is not None
    box = _plain(page.split('id="verdict"', 1)[1].split("</div>", 1)[0])
    table = page.split('id="worst-nodes"', 1)[1].split("</table>", 1)[0]
    for r in verdict.worst_nodes:
        concerns = [
            f
            for f in sample.findings
            if f.node == r.node and f.rule in r.rules and f.severity.value != "info"
        ]
        owners = sorted({f.route.owner for f in concerns})
        said = box.split(f"{r.node} ({r.critical} critical, {r.warning} warning) → ", 1)[1].split(";")[0]
        assert sorted(said.rstrip(".").split(", ")) == owners, said
        row = _plain(table.split(f"<tr><td>{r.node}</td>", 1)[1].split("</tr>", 1)[0])
        for f in concerns:  # every action, each under its own severity
            worst = min((g.severity.rank, g.severity.value) for g in concerns if g.route == f.route)[1]
            assert f"{worst} {f.route.owner}: {f.route.action}" in row, (r.node, f.message)


# -- the header names the cluster(s) ------------------------------------------------------------------


def _meta_header(page: str) -> str:
    return _plain(page.split('id="meta">', 1)[1].split("</p>", 1)[0])


def test_header_names_the_folder_when_no_meta_env_names_a_cluster(sample: ReportData) -> None:
    assert {n["cluster"] for n in sample.nodes} == {"bundle"}
    assert not any(n["cluster_in_meta"] for n in sample.nodes)
    assert _meta_header(render_html(sample)).startswith("Cluster bundle (folder name) ·")


def test_header_names_every_cluster_meta_env_names(tmp_path: Path) -> None:
    """Derived from the sample: its four node bundles with cluster= added to meta.env, two clusters."""
    root = tmp_path / "two"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", root)
    for i, meta in enumerate(sorted(root.glob("*/meta.env"))):
        cluster = "alpha-train" if i < 2 else "beta-infer"
        meta.write_text(meta.read_text() + f"cluster={cluster}\n")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        cli, ["analyze", str(root), "--html", str(out), "--json", str(tmp_path / "f.json")]
    )
    assert result.exit_code == 0, result.output
    header = _meta_header(out.read_text(encoding="utf-8"))
    assert header.startswith("Clusters alpha-train, beta-infer ·"), header
    nodes = json.loads((tmp_path / "f.json").read_text())["nodes"]
    assert {n["cluster"] for n in nodes} == {"alpha-train", "beta-infer"} and all(
        n["cluster_in_meta"] for n in nodes
    )
