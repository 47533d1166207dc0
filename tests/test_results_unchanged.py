"""The results of the sample scenarios and of a generated 64-node cluster, two ways:

- what matters, written by hand in ``tests/expectations/<scenario>.toml`` (status, the verdict's worst
  nodes in order, its cluster-wide rules, and per node the rules at warning and at critical, exactly),
  holds for the analysis as it runs now and for the recorded results;
- everything else stays what it was when ``tests/fixtures/generated/results/<scenario>.json`` was
  written (findings, rule outcomes and verdict, as ``--json`` writes them): a change of layout or speed
  changes no result.  A change meant to change results rewrites them after reading the diff
  (``python scripts/regenerate_fixtures.py results`` prints it, ``--write results`` writes it) and
  says why in its commit; one that changes what matters edits the expectation by hand too.
"""

from __future__ import annotations

import copy
import difflib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "regenerate_fixtures", ROOT / "scripts" / "regenerate_fixtures.py"
)
regenerate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(regenerate)  # type: ignore[union-attr]

SCENARIOS = regenerate.SCENARIOS
SEVERITIES = ("critical", "warning")
KEYS = {"status", "worst_nodes", "cluster_wide", "node_count", "nodes", "cluster"}


def expectation(scenario: str) -> dict[str, Any]:
    doc = tomllib.loads((regenerate.EXPECTATIONS / f"{scenario}.toml").read_text(encoding="utf-8"))
    assert set(doc) == KEYS, f"{scenario}.toml: keys {sorted(doc)}, want {sorted(KEYS)}"
    for name, concerns in [*doc["nodes"].items(), ("[cluster]", doc["cluster"])]:
        assert set(concerns) == set(SEVERITIES), f"{scenario}.toml {name}: keys {sorted(concerns)}"
    return doc


def recorded(scenario: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(regenerate.result_path(scenario).read_text(encoding="utf-8"))
    return doc


def unmet(expect: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """What of the expectation the results do not hold, one line each (empty: all of it)."""
    verdict, findings = result["verdict"], result["findings"]
    problems = []
    if verdict["status"] != expect["status"]:
        problems.append(f"status {verdict['status']!r}, expected {expect['status']!r}")
    worst = [w["node"] for w in verdict["worst_nodes"]]
    if worst != expect["worst_nodes"]:
        problems.append(f"worst nodes {worst}, expected {expect['worst_nodes']}")
    wide = sorted(c["rule"] for c in verdict["cluster_wide"])
    if wide != sorted(expect["cluster_wide"]):
        problems.append(f"cluster-wide rules {wide}, expected {sorted(expect['cluster_wide'])}")
    nodes = {f["node"] for f in findings} | {
        n for r in result["rules"] for n in r["nodes_checked"] + r["nodes_without_data"]
    }
    nodes.discard(None)
    if len(nodes) != expect["node_count"]:
        problems.append(f"{len(nodes)} nodes in the results, expected {expect['node_count']}")
    concerns: dict[str | None, dict[str, set[str]]] = {}
    for f in findings:
        if f["severity"] in SEVERITIES:
            concerns.setdefault(f["node"], {s: set() for s in SEVERITIES})[f["severity"]].add(f["rule"])
    wanted = {**expect["nodes"], None: expect["cluster"]}
    for node in sorted(set(wanted) | set(concerns), key=str):
        if node is not None and node not in nodes:
            problems.append(f"{node}: not in the results")
            continue
        got = concerns.get(node, {s: set() for s in SEVERITIES})
        want = wanted.get(node, {s: [] for s in SEVERITIES})
        for severity in SEVERITIES:
            if got[severity] != set(want[severity]):
                found, expected = sorted(got[severity]), sorted(want[severity])
                problems.append(f"{node or 'no node'}: {severity} {found}, expected {expected}")
    return problems


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = regenerate.results(tmp_path_factory.mktemp("results"))
    return found


def test_every_scenario_has_its_results_and_its_expectation() -> None:
    assert sorted(p.stem for p in regenerate.RESULTS.glob("*")) == sorted(SCENARIOS)
    assert sorted(p.name for p in regenerate.EXPECTATIONS.glob("*")) == sorted(f"{s}.toml" for s in SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_what_matters_holds_now(live: dict[str, dict[str, Any]], scenario: str) -> None:
    assert unmet(expectation(scenario), live[scenario]) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_what_matters_holds_in_the_recorded_results(scenario: str) -> None:
    assert unmet(expectation(scenario), recorded(scenario)) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_results_are_unchanged(live: dict[str, dict[str, Any]], scenario: str) -> None:
    kept = regenerate.result_path(scenario).read_text(encoding="utf-8")
    now = regenerate.dumps_result(live[scenario])
    if now != kept:
        patch = list(
            difflib.unified_diff(kept.splitlines(), now.splitlines(), "recorded", "now", lineterm="")
        )
        shown = "\n".join(line[:300] for line in patch[:60])
        pytest.fail(
            f"the results of {scenario} changed: if meant, read "
            f"'python scripts/regenerate_fixtures.py results:{scenario}' and write it with --write\n{shown}"
        )


def test_the_expectation_catches_what_matters() -> None:
    """A lost fault, a new concern on a healthy node, a reordered verdict each fail it; a rule that
    now runs and passes does not."""
    expect, base = expectation("xid-ecc-3node"), recorded("xid-ecc-3node")
    assert unmet(expect, base) == []

    lost = copy.deepcopy(base)
    lost["findings"] = [f for f in lost["findings"] if f["rule"] != "gpu.ecc.uncorrectable"]
    assert unmet(expect, lost) == [
        "p5-node-01: critical ['gpu.xid'], expected ['gpu.ecc.uncorrectable', 'gpu.xid']"
    ]
    new_concern = copy.deepcopy(base)
    new_concern["findings"].append({**base["findings"][0], "node": "p5-node-03", "severity": "warning"})
    assert unmet(expect, new_concern) == [
        f"p5-node-03: warning ['{base['findings'][0]['rule']}'], expected []"
    ]
    reordered = copy.deepcopy(base)
    reordered["verdict"]["worst_nodes"].reverse()
    assert unmet(expect, reordered)[0].startswith("worst nodes ['p5-node-02', 'p5-node-01', 'h100-node-04']")
    unread = copy.deepcopy(base)
    for r in unread["rules"]:
        r["nodes_checked"] = [n for n in r["nodes_checked"] if n != "p5-node-03"]
        r["nodes_without_data"] = [n for n in r["nodes_without_data"] if n != "p5-node-03"]
    assert unmet(expect, unread) == ["3 nodes in the results, expected 4", "p5-node-03: not in the results"]

    passing = copy.deepcopy(base)
    passing["rules"].append(
        {**base["rules"][0], "rule": "gpu.some.new_rule", "outcome": "pass", "findings": 0}
    )
    assert unmet(expect, passing) == []
