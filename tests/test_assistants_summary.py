"""The summary document (analyze --format summary, the MCP analyze tool): valid against its schema, the
same verdict as the findings document it is made from, and bounded whatever the cluster's size."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.assistants.summary import EVIDENCE_LINES, LIST_ITEMS, MAX_TOP, TEXT_CHARS, summarize
from analyzer.cli import cli
from tests.conftest import ROOT, SAMPLES

SCHEMA = json.loads((ROOT / "docs" / "summary.schema.json").read_text(encoding="utf-8"))
#: The verdict fields the summary carries unchanged.
VERDICT_KEYS = ("status", "sections", "counts", "ranked_nodes", "worst_nodes", "cluster_wide", "notes")


def _validate(doc: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per sample scenario: (findings document of `analyze --json`, summary printed by the same run's
    `--format summary`)."""
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    work = tmp_path_factory.mktemp("summary")
    for scenario in ("xid-ecc-3node", "fsx-saturated"):
        findings = work / f"{scenario}.json"
        bundle = SAMPLES / scenario / "bundle"
        result = CliRunner().invoke(
            cli, ["analyze", str(bundle), "--json", str(findings), "--format", "summary"]
        )
        assert result.exit_code == 0, result.output
        out[scenario] = (json.loads(findings.read_text(encoding="utf-8")), json.loads(result.stdout))
    return out


@pytest.mark.parametrize("scenario", ["xid-ecc-3node", "fsx-saturated"])
def test_summary_is_valid_and_made_from_the_findings_document(scenario: str, analyzed: Any) -> None:
    document, printed = analyzed[scenario]
    _validate(printed)
    assert printed == summarize(document)  # the printed summary is the findings document, summarized
    for key in VERDICT_KEYS:
        assert printed["verdict"][key] == document["verdict"][key], key
    assert printed["findings"]["total"] == len(document["findings"])
    assert printed["findings"]["shown"] + printed["findings"]["omitted"] == len(document["findings"])
    by_fingerprint = {f["fingerprint"]: f for f in document["findings"]}
    for shown in printed["findings"]["top"]:
        original = by_fingerprint[shown["fingerprint"]]
        assert shown["route"] == original["route"] and shown["message"] == original["message"]
        assert shown["evidence"] == original["evidence"][:EVIDENCE_LINES]
        assert shown["evidence_total"] == len(original["evidence"])


def test_xid_cluster_summary_names_the_planted_faults(analyzed: Any) -> None:
    _, summary = analyzed["xid-ecc-3node"]
    assert summary["verdict"]["status"] == "concerns"
    assert [n["node"] for n in summary["verdict"]["worst_nodes"]] == [
        "h100-node-04",
        "p5-node-01",
        "p5-node-02",
    ]
    assert summary["scope"] == {
        "bundles": 4,
        "nodes": 4,
        "instance_types": {"p5.48xlarge": 4},
        "clusters": [
            {
                "cluster": "bundle",
                "folder": str(SAMPLES / "xid-ecc-3node" / "bundle"),
                "collected_at": "2026-12-01T08:00:00Z",
                "nodes": 4,
            }
        ],
        "clusters_total": 1,
    }
    top = summary["findings"]["top"]
    severities = [f["severity"] for f in top]
    assert severities == sorted(severities, key=["critical", "warning", "info"].index)
    ecc = next(f for f in top if f["rule"] == "gpu.ecc.uncorrectable")
    assert (ecc["node"], ecc["gpu"], ecc["route"]["owner"]) == ("p5-node-01", 3, "node-hardware")
    assert ecc["evidence"][0]["file"] == "p5-node-01/cmd/nvidia-smi-q.txt"
    assert "DRAM Uncorrectable" in (ecc["evidence"][0]["text"] or "")
    # the first of each (rule, node) before repeats: the Xid 48 of p5-node-01 comes before Xid 109's repeats
    critical = [(f["rule"], f["node"]) for f in top if f["severity"] == "critical"]
    assert ("gpu.count.low", "h100-node-04") in critical and ("gpu.xid", "p5-node-01") in critical
    sections = {s["section"]: s for s in summary["sections"]}
    assert set(sections) == {"A", "C"} and sections["A"]["rules"] == ["version.drift"]
    assert summary["rules"]["fail"] == 5


def test_fsx_summary_carries_cluster_wide_causes_and_gaps(analyzed: Any) -> None:
    document, summary = analyzed["fsx-saturated"]
    rules = [c["rule"] for c in summary["verdict"]["cluster_wide"]]
    assert "fs.fsx.utilization_sustained" in rules
    assert summary["verdict"]["ranked_nodes"] == 0  # its nodes are victims of the file system
    missing = summary["gaps"]["not_examined"]
    assert missing["count"] == len(document["verdict"]["not_examined"]) > 0
    kernel = next(g for g in missing["by_input"] if g["what"].startswith("kernel log"))
    assert kernel["nodes"] == missing["nodes"] and kernel["first_nodes"][0] == "train-01"
    assert summary["findings"]["top"][0]["rule"] == "fs.fsx.utilization_sustained"  # cluster-wide first
    assert summary["findings"]["top"][0]["node"] is None


def test_the_example_turn_in_the_docs_is_current(analyzed: Any) -> None:
    """docs/assistants.md shows what analyze and finding returned on the xid sample: still what they return
    (only findings.top was shortened there, and the folder is where the sample was copied)."""
    document, _ = analyzed["xid-ecc-3node"]
    text = (ROOT / "docs" / "assistants.md").read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(\{\n  \"(?:schema|rule)\".*?)\n```", text, re.S)]
    shown, finding = blocks
    _validate(shown)
    now = summarize(document, top=3)
    for key in ("verdict", "sections", "gaps", "rules", "more"):
        assert shown[key] == now[key], key
    assert {k: v for k, v in shown["findings"].items() if k != "top"} == {
        k: v for k, v in now["findings"].items() if k != "top"
    }
    assert shown["findings"]["top"] == [
        f for f in now["findings"]["top"] if f["rule"] == "gpu.ecc.uncorrectable"
    ]
    original = next(f for f in document["findings"] if f["fingerprint"] == finding["fingerprint"])
    assert finding == {**original, "evidence_total": len(original["evidence"])}


def test_top_is_bounded(analyzed: Any) -> None:
    document, _ = analyzed["xid-ecc-3node"]
    assert summarize(document, top=0)["findings"]["top"] == []
    assert summarize(document, top=3)["findings"]["shown"] == 3
    assert summarize(document, top=10_000)["findings"]["shown"] == len(document["findings"])


def test_summary_stays_small_for_a_large_cluster(analyzed: Any) -> None:
    """The real fsx-saturated document, blown up to 2,000 nodes (each finding and gap repeated per
    node, with long evidence lines): the summary stays a few kilobytes and counts what it cut."""
    document, _ = analyzed["fsx-saturated"]
    big = copy.deepcopy(document)
    nodes = [f"node-{i:04d}" for i in range(2_000)]
    big["findings"] = [
        {
            **f,
            "node": n,
            "fingerprint": f"{i:064x}",
            "evidence": f["evidence"] * 50,
            "message": f["message"] * 20,
        }
        for i, (n, f) in enumerate((n, f) for n in nodes for f in document["findings"][:3])
    ]
    big["verdict"]["not_examined"] = [
        {"node": n, "what": w} for n in nodes for w in ("kernel log", f"probe {n}")
    ]
    big["verdict"]["unread_inputs"] = [{"path": f"{n}.tar.gz", "reason": "damaged gzip"} for n in nodes]
    big["inputs"]["parts"] = [{"cluster": n, "folder": n, "nodes": [n]} for n in nodes]
    summary = summarize(big, top=MAX_TOP)
    _validate(summary)
    size = len(json.dumps(summary))
    assert size < 200_000, size
    assert len(json.dumps(summarize(big))) < 40_000
    assert summary["findings"]["shown"] == MAX_TOP and summary["findings"]["total"] == len(big["findings"])
    assert all(len(f["message"]) <= TEXT_CHARS for f in summary["findings"]["top"])
    assert summary["gaps"]["unread_inputs"]["count"] == 2_000
    assert len(summary["gaps"]["unread_inputs"]["first"]) == LIST_ITEMS
    assert summary["gaps"]["not_examined"]["nodes"] == 2_000
    assert len(summary["gaps"]["not_examined"]["by_input"]) == LIST_ITEMS
    assert summary["scope"]["clusters_total"] == 2_000 and len(summary["scope"]["clusters"]) == LIST_ITEMS


def test_schema_enums_match_the_code() -> None:
    from analyzer.judge.findings import OWNERS, Severity
    from analyzer.model.sections import SECTIONS

    top = SCHEMA["properties"]["findings"]["properties"]["top"]["items"]["properties"]
    assert top["route"]["properties"]["owner"]["enum"] == list(OWNERS)
    assert top["severity"]["enum"] == [s.value for s in Severity]
    assert top["section"]["enum"] == list(SECTIONS)
    assert top["message"]["maxLength"] == TEXT_CHARS
    assert SCHEMA["properties"]["findings"]["properties"]["top"]["maxItems"] == MAX_TOP


def test_cli_summary_goes_to_stdout_alone(tmp_path: Path) -> None:
    """--format summary prints only the JSON (no terminal report), with --top honoured."""
    result = CliRunner().invoke(
        cli, ["analyze", str(SAMPLES / "nccl-slow-node" / "bundle"), "--format", "summary", "--top", "1"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    _validate(summary)
    assert summary["findings"]["shown"] == 1
    assert summary["verdict"]["sections"] == ["A"]
    bad = CliRunner().invoke(cli, ["analyze", str(SAMPLES / "nccl-slow-node" / "bundle"), "--format", "html"])
    assert bad.exit_code == 2
