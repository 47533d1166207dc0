"""The HTML report is one self-contained file that names every finding."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "data", "poster", "srcset") and value:
                self.refs.append((tag, name, value))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_no_external_assets_and_parses(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    parser = _Collector()
    parser.feed(html)
    parser.close()
    assert parser.tags[:2] == ["html", "head"] and "body" in parser.tags
    assert "script" not in parser.tags, "the report needs no JavaScript"
    for tag, name, value in parser.refs:
        assert value.startswith(("#", "data:")), f"<{tag} {name}={value[:60]!r}> is not inline"
    assert not re.search(r"https?://", html), "no http(s) reference anywhere, not even in CSS or SVG"
    assert not re.search(r"url\((?![\x27\"]?#)", html), "CSS/SVG url() may only point inside the page"


def test_every_finding_rule_and_node_appears(rendered: dict[str, Path], findings: list[dict]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    assert findings
    for f in findings:
        assert f["rule"] in html
        if f["node"]:
            assert f["node"] in html
        for ev in f["evidence"]:
            assert f"{ev['file']}:{ev['line']}" in html


def test_verdict_charts_and_sections(rendered: dict[str, Path]) -> None:
    html = rendered["html"].read_text(encoding="utf-8")
    verdict = html.split('id="verdict"', 1)[1].split("</div>", 1)[0]
    assert "C. GPU and host health" in verdict and "p5-node-01" in verdict
    assert html.count("<svg") >= 1, "the GPU temperature grid is drawn (the uniform ones are said in a line)"
    for heading in (
        "Findings",
        "Appendix",
        "Continuous health coverage",
        "Parse problems",
        "Nodes: instance types and versions",
    ):
        assert heading in html
    # drift: h100-node-04 runs driver 545 while the other p5 nodes run 565
    versions = html.split('id="versions"', 1)[1].split("</table>", 1)[0]
    row = versions.split("<td>h100-node-04</td>", 1)[1].split("</tr>", 1)[0]
    assert 'class="drift"' in row and "545.23.08" in row
