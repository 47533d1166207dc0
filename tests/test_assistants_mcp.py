"""hptriage mcp, for real: the server started over stdio and driven by the MCP SDK's own client.

One server session (module fixture) lists the tools and calls each of them on copies of the sample
bundles under a temporary root; the tests then assert on what came back.  The whole session runs under
a deadline, so a server that hangs fails the tests instead of blocking them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.assistants.roots import OutsideRoots, Roots
from analyzer.cli import cli
from tests.conftest import ROOT, SAMPLES

SCHEMA = json.loads((ROOT / "docs" / "summary.schema.json").read_text(encoding="utf-8"))
TOOLS = {"analyze", "finding", "parse", "rules", "history", "diff", "redact", "plan"}
#: Seconds the whole session may take (a handful of analyses of 3-4 nodes on a slow shared machine).
DEADLINE = 300


Call = tuple[str, str, "dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]"]


def _session(root: Path, calls: list[Call], errlog: Path) -> dict[str, Any]:
    """Start `hptriage mcp --root ROOT`, list its tools, make the calls (label, tool, arguments, or a
    function of the answers so far giving them) in order; label -> (is_error, structured content or the
    error text)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    found: dict[str, Any] = {}

    async def run() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "analyzer.cli", "mcp", "--root", str(root)],
            cwd=str(ROOT),
            env={"PYTHONPATH": str(ROOT)},
        )
        with anyio.fail_after(DEADLINE), errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                found["init"] = await session.initialize()
                found["tools"] = (await session.list_tools()).tools
                for label, tool, arguments in calls:
                    result = await session.call_tool(
                        tool, arguments(found) if callable(arguments) else arguments
                    )
                    text = " ".join(c.text for c in result.content if hasattr(c, "text"))
                    found[label] = (result.is_error, text if result.is_error else result.structured_content)

    anyio.run(run)
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("mcp")
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", root / "cluster")
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", root / "later")
    shutil.rmtree(root / "later" / "p5-node-03")  # the later snapshot lost a node
    (root / "escape").symlink_to(SAMPLES / "xid-ecc-3node" / "bundle", target_is_directory=True)
    from analyzer.history.ingest import ingest
    from analyzer.judge.settings import load_settings

    ingest([root / "cluster"], root / "history.duckdb", 1, load_settings())
    # what `hptriage analyze --json` says of the same bundles
    expected = root.parent / "expected.json"
    result = CliRunner().invoke(cli, ["analyze", str(root / "cluster"), "--json", str(expected), "-q"])
    assert result.exit_code == 0, result.output
    calls: list[Call] = [
        ("analyze", "analyze", {"paths": ["cluster"]}),
        # a fingerprint from the answer above, by its first 12 characters
        (
            "finding",
            "finding",
            lambda found: {"fingerprint": found["analyze"][1]["findings"]["top"][0]["fingerprint"][:12]},
        ),
        ("analyze_abs", "analyze", {"paths": [str(root / "cluster")], "top": 2}),
        ("plan", "plan", {"paths": ["cluster"], "max_age_hours": 0, "history_db": "history.duckdb"}),
        ("outside", "analyze", {"paths": [str(SAMPLES / "xid-ecc-3node" / "bundle")]}),
        ("dotdot", "analyze", {"paths": ["cluster/../.."]}),
        ("symlink", "analyze", {"paths": ["escape"]}),
        ("missing", "analyze", {"paths": ["nowhere"]}),
        ("finding_unknown", "finding", {"fingerprint": "0123456789abcdef"}),
        ("parse", "parse", {"path": "cluster/p5-node-01/cmd/nvidia-smi-q.txt", "limit": 2}),
        ("parse_outside", "parse", {"path": "/etc/hostname"}),
        ("rules_list", "rules", {}),
        ("rules_xid", "rules", {"rule": "gpu.xid"}),
        ("rules_fs", "rules", {"rule": "fs."}),
        ("rules_unknown", "rules", {"rule": "gpu.xyd"}),
        ("history", "history", {"db": "history.duckdb"}),
        ("history_node", "history", {"db": "history.duckdb", "node": "p5-node-01"}),
        ("history_bad_node", "history", {"db": "history.duckdb", "node": "p5-node-99"}),
        ("diff_db", "diff", {"old": "latest", "new": "latest", "db": "history.duckdb"}),
        ("diff_paths", "diff", {"old": "cluster", "new": "later"}),
        ("redact_outside", "redact", {"paths": ["cluster"], "out": str(root.parent / "case-outside")}),
        ("redact", "redact", {"paths": ["cluster"], "out": "case-1234"}),
        ("redact_again", "redact", {"paths": ["cluster"], "out": "case-1234"}),
    ]
    found = _session(root, calls, root.parent / "server.err")
    found["root"], found["expected"] = root, json.loads(expected.read_text(encoding="utf-8"))
    return found


def test_tools_are_listed_with_schemas(served: dict[str, Any]) -> None:
    tools = {t.name: t for t in served["tools"]}
    assert set(tools) == TOOLS
    assert served["init"].server_info.name == "hptriage"
    assert str(served["root"]) in (served["init"].instructions or "")
    for name, tool in tools.items():
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["properties"], name
        assert all(p.get("description") for p in schema["properties"].values()), name
        assert tool.description and len(tool.description) > 40, name
        assert tool.annotations is not None and tool.annotations.open_world_hint is False, name
        assert tool.annotations.read_only_hint is (name != "redact"), name
    assert tools["analyze"].input_schema["required"] == ["paths"]
    assert tools["analyze"].input_schema["properties"]["paths"]["type"] == "array"


def test_plan_is_the_plan_of_analyze_plan(served: dict[str, Any]) -> None:
    """The plan tool answers what `analyze --plan` writes: the same actions, text to review."""
    import jsonschema

    is_error, plan = served["plan"]
    assert not is_error, plan
    jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "plan.schema.json").read_text())).validate(
        plan
    )
    assert plan["read_only"].startswith("hptriage is read-only")
    actions = {a["node"]: a["action"] for a in plan["actions"]}
    assert actions["p5-node-01"] == "reset-gpu" and actions["h100-node-04"] == "reboot"
    assert plan["settings"]["max_age_hours"] is None  # 0: the age not checked


def test_analyze_gives_the_verdict_of_analyze_json(served: dict[str, Any]) -> None:
    import jsonschema

    is_error, summary = served["analyze"]
    assert not is_error, summary
    jsonschema.Draft202012Validator(SCHEMA).validate(summary)
    expected = served["expected"]["verdict"]
    for key in ("status", "sections", "counts", "ranked_nodes", "worst_nodes", "cluster_wide"):
        assert summary["verdict"][key] == expected[key], key
    assert summary["verdict"]["status"] == "concerns"
    assert summary["findings"]["total"] == len(served["expected"]["findings"])
    assert {f["fingerprint"] for f in summary["findings"]["top"]} <= {
        f["fingerprint"] for f in served["expected"]["findings"]
    }
    short = served["analyze_abs"][1]
    assert short["findings"]["shown"] == 2 and short["verdict"] == summary["verdict"]


@pytest.mark.parametrize("label", ["outside", "dotdot", "symlink", "parse_outside", "redact_outside"])
def test_paths_outside_the_roots_are_refused(served: dict[str, Any], label: str) -> None:
    is_error, text = served[label]
    assert is_error
    assert "refused:" in text and "outside the allowed roots" in text and str(served["root"]) in text
    assert "\n" not in text.strip()
    assert not (served["root"].parent / "case-outside").exists()


def test_symlink_is_resolved_before_the_check(served: dict[str, Any]) -> None:
    _, text = served["symlink"]
    assert f"resolves to {SAMPLES / 'xid-ecc-3node' / 'bundle'}" in text


def test_errors_are_one_clear_line(served: dict[str, Any]) -> None:
    is_error, text = served["missing"]
    assert is_error and "nowhere: no such file or directory" in text
    is_error, text = served["finding_unknown"]
    assert is_error and "call analyze first" in text
    is_error, text = served["rules_unknown"]
    assert is_error and "no rule 'gpu.xyd'" in text and "gpu.xid" in text
    is_error, text = served["history_bad_node"]
    assert is_error and "no node 'p5-node-99'" in text and "p5-node-01" in text


def test_finding_has_every_evidence_line(served: dict[str, Any]) -> None:
    is_error, finding = served["finding"]
    assert not is_error, finding
    original = next(f for f in served["expected"]["findings"] if f["fingerprint"] == finding["fingerprint"])
    assert finding["evidence"] == original["evidence"] and finding["evidence_total"] == len(
        original["evidence"]
    )
    assert finding["route"] == original["route"] and finding["params"] == original["params"]


def test_parse_reads_one_raw_file(served: dict[str, Any]) -> None:
    is_error, parsed = served["parse"]
    assert not is_error, parsed
    assert parsed["kind"] == "nvidia-smi-q" and parsed["detected"] is True
    assert parsed["tables"]["gpu"] == 8
    assert len(parsed["records"]) == 2 and parsed["records_total"] > 2 and "hptriage parse" in parsed["more"]


def test_rules_list_then_one_rule_in_full(served: dict[str, Any]) -> None:
    listing = served["rules_list"][1]
    assert listing["total"] == len(listing["rules"]) > 50
    assert {"rule": "gpu.xid", "severity": "critical", "title": "Xid errors in the kernel log",
            "owner": "node-hardware"} in listing["rules"]  # fmt: skip
    xid = served["rules_xid"][1]["rules"]
    assert [r["rule"] for r in xid] == ["gpu.xid"]
    assert xid[0]["thresholds"]["repeat_escalation"]["value"] == 3
    assert {r["rule"].split(".")[0] for r in served["rules_fs"][1]["rules"]} == {"fs"}


def test_history_and_diff_of_a_store(served: dict[str, Any]) -> None:
    is_error, history = served["history"]
    assert not is_error, history
    assert len(history["snapshots"]) == 1
    assert {n["node"] for n in history["nodes"]} >= {"p5-node-01", "h100-node-04"}
    one = served["history_node"][1]
    assert [n["node"] for n in one["nodes"]] == ["p5-node-01"]
    assert any(f["rule"] == "gpu.ecc.uncorrectable" for f in one["nodes"][0]["findings"])
    same = served["diff_db"][1]
    assert same["new_findings"] == [] and same["resolved_findings"] == []
    assert same["persisting"] == len(served["expected"]["findings"])


def test_diff_of_two_folders(served: dict[str, Any]) -> None:
    is_error, diff = served["diff_paths"]
    assert not is_error, diff
    assert diff["nodes_gone"] == ["p5-node-03"] and diff["nodes_added"] == []


def test_redact_writes_only_under_the_root(served: dict[str, Any]) -> None:
    is_error, done = served["redact"]
    assert not is_error, done
    root = served["root"]
    assert done["out"] == str(root / "case-1234") and done["map"] == str(root / "case-1234.map.json")
    assert done["bundles"] == 4 and done["leaks"] == 0 and done["refused"] == []
    assert (root / "case-1234.map.json").is_file()
    redacted = (root / "case-1234").rglob("meta.env")
    texts = "".join(p.read_text() for p in redacted)
    assert "ip-10-1-0-11" not in texts and "della-k17g3" not in texts
    is_error, text = served["redact_again"]
    assert is_error and "is not an empty directory" in text


def test_help_does_not_import_the_sdk() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom analyzer.cli import cli\n"
        "for args in (['--help'], ['mcp', '--help'], ['skill', '--help'], ['analyze', '--help']):\n"
        "    assert CliRunner().invoke(cli, args).exit_code == 0, args\n"
        "print(','.join(m for m in ('mcp', 'pydantic', 'anyio', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def test_without_the_sdk_mcp_says_what_to_install(tmp_path: Path) -> None:
    code = "import sys\nsys.modules['mcp'] = None\nfrom analyzer.cli import main\nmain()"
    out = subprocess.run(
        [sys.executable, "-c", code, "mcp", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    assert "pip install 'hptriage[mcp]'" in out.stderr and out.stdout == ""


def test_roots_resolve_before_they_compare(tmp_path: Path) -> None:
    """The check the tools make, on its own: several roots, relative paths under the first, links
    followed before the comparison, a NUL byte refused (not crashed on)."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    roots = Roots([first, second])
    assert roots.check("x/y") == first.resolve() / "x" / "y"
    assert roots.check(second / "z") == second.resolve() / "z"
    (first / "up").symlink_to(tmp_path, target_is_directory=True)
    (first / "into-b").symlink_to(second, target_is_directory=True)
    assert roots.check("into-b/bundle") == second.resolve() / "bundle"
    for bad in ("up", "up/c", "../b/../..", "/", "nul\x00byte"):
        with pytest.raises(OutsideRoots, match="^refused: "):
            roots.check(bad)
