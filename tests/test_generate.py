"""benchmarks/generate.py: the generated clusters are read cleanly and the planted faults are found on
exactly the planted nodes (and a healthy cluster yields no critical finding)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

NODES = 6


def _analyze(cluster: Path, out: Path) -> dict:
    result = CliRunner().invoke(
        cli, ["analyze", str(cluster), "--json", str(out), "-q", "--jobs", "1", "--color", "never"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def _by_rule(doc: dict) -> dict[str, set[str | None]]:
    found: dict[str, set[str | None]] = {}
    for f in doc["findings"]:
        found.setdefault(f["rule"], set()).add(f["node"])
    return found


@pytest.mark.parametrize("scenario", ["mixed", "healthy"])
def test_planted_faults_found_on_planted_nodes(tmp_path: Path, scenario: str) -> None:
    cluster = tmp_path / "cluster"
    expected = generate.generate(cluster, NODES, scenario, seed=1)
    assert json.loads(generate.answer_key(cluster).read_text()) == expected
    assert len(list(cluster.glob("*.tar.gz"))) == NODES
    assert len(list(cluster.glob("*.tar.gz.sha256"))) == NODES
    doc = _analyze(cluster, tmp_path / "f.json")
    assert not doc["parse_problems"], doc["parse_problems"][:3]
    assert {n["node"] for n in doc["nodes"]} == set(expected["node_names"])
    found = _by_rule(doc)
    planted = {rule: set(nodes) for rule, nodes in expected["faults"].items()}
    for rule, nodes in planted.items():
        assert found.get(rule) == nodes, (rule, found.get(rule), nodes)
    # nothing fires that was not planted
    assert set(found) == set(planted), sorted(set(found) - set(planted))
    if scenario == "healthy":
        assert not planted
        assert not [f for f in doc["findings"] if f["severity"] == "critical"]
    else:
        assert {"gpu.ecc.uncorrectable", "gpu.xid.fallen_off_bus", "nccl.pair.slow"} <= set(planted)
        assert "fs.fsx.utilization_sustained" in planted


def test_deterministic_and_realistic(tmp_path: Path) -> None:
    a = generate.generate(tmp_path / "a", 3, "xid-ecc", seed=7)
    b = generate.generate(tmp_path / "b", 3, "xid-ecc", seed=7)
    assert a == b
    for name in a["node_names"]:
        sums = [
            (d / f"{name}.tar.gz.sha256").read_text().split()[0] for d in (tmp_path / "a", tmp_path / "b")
        ]
        assert sums[0] == sums[1]
    # per-node files are distinct where the hardware is: GPU UUIDs differ between nodes
    import tarfile

    uuids = []
    for name in a["node_names"]:
        with tarfile.open(tmp_path / "a" / f"{name}.tar.gz") as tar:
            q = tar.extractfile(f"{name}/cmd/nvidia-smi-q.txt").read().decode()  # type: ignore[union-attr]
            dmesg = tar.extractfile(f"{name}/cmd/dmesg.txt").read()  # type: ignore[union-attr]
            meta = tar.extractfile(f"{name}/meta.env").read().decode()  # type: ignore[union-attr]
        assert f"node={name}\n" in meta and "instance_type=p5.48xlarge" in meta
        assert len(dmesg) >= 1_000_000
        uuids.append(set(generate._UUID.findall(q)))
        assert len(uuids[-1]) == 8
    assert not (uuids[0] & uuids[1]) and not (uuids[1] & uuids[2])


def test_findings_match_those_before_the_fast_path(tmp_path: Path) -> None:
    """The analysis made fast gives the findings the analyzer gave before (on the same generated cluster:
    tests/fixtures/generated/mixed-16-seed0-findings.json, the commit in its analyzer_commit), field for
    field, with parallel workers (vectorised kernel-log prefilter, per-batch loading).  A change meant to
    change results rewrites it with ``python scripts/regenerate_fixtures.py --write findings`` after
    reading the diff it prints, and says why."""
    golden = json.loads((ROOT / "tests/fixtures/generated/mixed-16-seed0-findings.json").read_text())
    cluster = tmp_path / "cluster"
    generate.generate(cluster, **golden["generated"])
    result = CliRunner().invoke(
        cli, ["analyze", str(cluster), "--json", str(tmp_path / "f.json"), "-q", "--jobs", "2"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "f.json").read_text())
    fields = ("fingerprint", "rule", "severity", "node", "gpu", "message", "params", "evidence")
    now = [{k: f[k] for k in fields} for f in sorted(doc["findings"], key=lambda f: f["fingerprint"])]
    assert now == golden["findings"]
    assert {r["rule"]: r["outcome"] for r in doc["rules"]} == golden["outcomes"]
