"""The project carries its sources: docs/sources.md explains every source the code and the docs cite.

- No file of analyzer/, parsers/, reports/, docs/ or the README cites a source by a short tag the
  repository explains nowhere (PD-DET, NC-DBG, NV-XID ...), a notes file by name, or a path outside the
  repository: a source is named in words, with an anchor of docs/sources.md.
- Every ``docs/sources.md#<anchor>`` cited anywhere in the repository exists on that page.
- Every threshold (and every instance type of sku.toml) names a public source, a document of the page's
  Documents section or an issue ``owner/repo#N``, with the page's anchor, or says "ours:".
- Every route target a rule uses is explained in the page's Routes section.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from analyzer.judge.rules import load_rules
from analyzer.judge.settings import DEFAULTS, load_settings
from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PAGE = ROOT / "docs" / "sources.md"
#: Source tags that stand for documents without saying which; docs/sources.md#documents names them.
TAGS = (
    "PD-SKILL", "PD-DET", "PD-SNAP", "ND-SKILL", "ND-CAT", "ND-DET", "ND-TRIAGE", "NC-SKILL", "NC-ERR",
    "NC-PERF", "NC-DBG", "NC-DIAG", "MFU-2C", "MFU-NODE", "MFU-NET", "MFU-FAIL", "VC-SKILL", "VC-SH",
    "IR-PY", "CD-CAP", "NV-XID", "MODAL-XID", "ADT", "AWS-DHC", "NV-HV", "NVML-FAB", "NVS-883", "TORCHX",
    "DSTACK", "MLC", "BUNDLE-GAP",
)  # fmt: skip
CITATION = re.compile(
    r"\b(?:" + "|".join(re.escape(t) for t in TAGS) + r")\b"
    r"|\bMFU-[A-Z0-9]+\b|(?i:rules[- ]facts|facts[- ]sheet)|\.\./shared\b"
)
#: Where the rule holds: the shipped code, its thresholds and templates, and the documents.
SCANNED = ("analyzer", "parsers", "reports", "docs")
SUFFIXES = {".py", ".toml", ".md", ".j2", ".json", ".css", ".txt"}
ANCHOR = re.compile(r"sources\.md#([A-Za-z0-9_-]+)")
ISSUE = re.compile(r"\b[\w.-]+/[\w.-]+#\d+\b")
OURS = re.compile(r"(?:^|[;:.,(]\s*)ours\b")


def _files() -> list[Path]:
    out = [ROOT / "README.md"]
    for top in SCANNED:
        out += [
            p
            for p in sorted((ROOT / top).rglob("*"))
            if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
        ]
    return out


def _section(page: str, anchor: str) -> str:
    """The text of the page's ``##`` section whose anchor is ``anchor``, down to the next ``##``."""
    start = page.index(f'<a id="{anchor}"></a>')
    end = page.find("\n## ", start)
    return page[start : end if end >= 0 else len(page)]


def _anchors(page: str) -> set[str]:
    return set(re.findall(r'<a id="([^"]+)"></a>', page))


def _document_names(page: str) -> list[str]:
    """First cells of the tables under Documents: the names the code and thresholds use."""
    names = []
    for line in _section(page, "documents").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] not in ("name in the project", "") and set(cells[0]) != {"-"}:
            names.append(cells[0])
    return names


def _route_targets() -> set[str]:
    targets = {m.RULE.route.target for m in load_rules(include_plugins=False) if m.RULE.route}
    for path in sorted((ROOT / "analyzer" / "judge" / "rules").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Route":
                args = list(node.args[1:2]) + [k.value for k in node.keywords if k.arg == "target"]
                targets |= {a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return {part.strip() for target in targets for part in target.split(";")}


def _threshold_sources() -> list[tuple[str, str]]:
    settings = load_settings()
    out = [
        (f"{section}.{key}", str(entry["source"]))
        for section, body in settings.sections.items()
        for key, entry in body.items()
    ]
    sku = tomllib.loads((DEFAULTS / "sku.toml").read_text(encoding="utf-8"))["sku"]
    out += [(f"sku.{name}", str(body.get("source", ""))) for name, body in sku.items()]
    return out


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_cites_a_source_the_repository_does_not_explain(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    text = path.read_text(encoding="utf-8")
    hits = sorted({m.group(0) for m in CITATION.finditer(text)})
    assert not hits, f"{rel} cites {hits}: name the source in words and cite docs/sources.md#<anchor>"


def test_every_cited_anchor_exists() -> None:
    anchors = _anchors(PAGE.read_text(encoding="utf-8"))
    missing = []
    skip = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    for path in sorted(ROOT.rglob("*")):
        if (
            not path.is_file()
            or skip & set(path.relative_to(ROOT).parts)
            or path.suffix not in SUFFIXES | {".py"}
        ):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        missing += [f"{path.relative_to(ROOT)}: #{a}" for a in ANCHOR.findall(text) if a not in anchors]
    page = PAGE.read_text(encoding="utf-8")
    missing += [
        f"docs/sources.md: #{a}" for a in re.findall(r"\]\(#([A-Za-z0-9_-]+)\)", page) if a not in anchors
    ]
    assert not missing, f"anchors cited but not on docs/sources.md: {missing}"


def test_anchors_are_unique_and_the_kept_ones_stay() -> None:
    page = PAGE.read_text(encoding="utf-8")
    ids = re.findall(r'<a id="([^"]+)"></a>', page)
    assert len(ids) == len(set(ids)), "an anchor is defined twice"
    for kept in (
        "probe-failure-answers",
        "nvidia-smi-failure-answers",
        "boot-settling",
        "routes",
        "documents",
    ):
        assert kept in ids, kept


THRESHOLDS = _threshold_sources()


@pytest.mark.parametrize("name,source", THRESHOLDS, ids=[name for name, _ in THRESHOLDS])
def test_every_threshold_names_a_public_source_or_ours(name: str, source: str) -> None:
    page = PAGE.read_text(encoding="utf-8")
    documents = _document_names(page)
    assert documents, "no document names found under docs/sources.md#documents"
    if source.startswith("site override"):
        return
    named = [d for d in documents if d in source] or ISSUE.findall(source)
    assert named or OURS.search(source), (
        f"{name}: the source {source!r} names no document of docs/sources.md#documents, no owner/repo#N and "
        "no 'ours:'"
    )
    if named:
        assert ANCHOR.search(source), (
            f"{name}: {source!r} names a source but cites no docs/sources.md#<anchor>"
        )


def test_every_route_target_is_explained() -> None:
    routes = _section(PAGE.read_text(encoding="utf-8"), "routes")
    missing = sorted(t for t in _route_targets() if f"`{t}`" not in routes)
    assert not missing, f"route targets not explained under docs/sources.md#routes: {missing}"


def test_document_names_and_routes_are_read() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert "NVIDIA Xid catalog" in _document_names(page)
    assert "HyperPod node-debugger skill" in _document_names(page)
    assert "hyperpod-node-debugger § F" in _route_targets()
    assert (
        CITATION.search("see PD-DET") and CITATION.search("(rules-facts § 8)") and CITATION.search("MFU-NODE")
    )
    assert not CITATION.search("the ADTs, NVLink-C2C, P0, ours: MLCommons")
