"""Regenerate every generated test fixture from the code as it stands, then review the diff.

    .venv/bin/python scripts/regenerate_fixtures.py

- ``tests/fixtures/generated/mixed-16-seed0-findings.json``: the findings (fields the test compares)
  and rule outcomes of ``hptriage analyze`` on the 16-node ``mixed`` cluster of benchmarks/generate.py
  (seed 0), kept by tests/test_generate.py so that a change of speed never changes a result.  A change
  that means to change results regenerates it and says why in its commit.
- ``tests/fixtures/generated/results-samples-and-mixed-64.json``: the findings, rule outcomes and verdict of
  the three sample scenarios and of the generated 64-node ``mixed`` cluster (seed 0), as ``--json``
  writes them; tests/test_results_unchanged.py holds every later change of layout or speed to them.
- ``tests/fixtures/<kind>/<name>.json`` beside every real output ``<name>.txt``/``<name>.out`` of a parser
  kind: what ``hptriage parse FILE --kind KIND --format json`` prints of it (records and the lines it
  did not understand, see tests/fixture_pairs.py), checked by tests/parsers/test_fixture_pairs.py.  A
  pair whose input is gone is removed.  Review the diff: a changed expectation is a changed parser.

Name some of ``findings``, ``results``, ``pairs`` to regenerate only those; ``pairs:KIND[,KIND]`` regenerates
the pairs of those kinds alone (``pairs:dmesg,nccl-tests``), leaving other kinds' pairs as they are.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GOLDEN = ROOT / "tests" / "fixtures" / "generated" / "mixed-16-seed0-findings.json"
RESULTS = ROOT / "tests" / "fixtures" / "generated" / "results-samples-and-mixed-64.json"
SCENARIOS = ("xid-ecc-3node", "nccl-slow-node", "fsx-saturated")
FIELDS = ("fingerprint", "rule", "severity", "node", "gpu", "message", "params", "evidence")


def _generate_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def regenerate_generated_findings() -> None:
    old = json.loads(GOLDEN.read_text())
    generated = old["generated"]
    with tempfile.TemporaryDirectory() as tmp:
        cluster, out = Path(tmp) / "cluster", Path(tmp) / "f.json"
        _generate_module().generate(cluster, **generated)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "analyzer.cli",
                "analyze",
                str(cluster),
                "--json",
                str(out),
                "-q",
                "--jobs",
                "2",
            ],
            cwd=ROOT,
            check=True,
        )
        doc = json.loads(out.read_text())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    golden = {
        "analyzer_commit": commit.stdout.strip(),
        "findings": [
            {k: f[k] for k in FIELDS} for f in sorted(doc["findings"], key=lambda f: f["fingerprint"])
        ],
        "generated": generated,
        "outcomes": {r["rule"]: r["outcome"] for r in doc["rules"]},
    }
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN.relative_to(ROOT)}: {len(golden['findings'])} findings")


def results(tmp: Path) -> dict[str, dict[str, object]]:
    """What ``hptriage analyze --json`` says of each sample scenario and of the generated 64-node cluster."""
    cases = {s: ROOT / "sample_bundles" / s / "bundle" for s in SCENARIOS}
    cases["generated-mixed-64"] = tmp / "gen64"
    _generate_module().generate(cases["generated-mixed-64"], 64, "mixed", 0)
    out: dict[str, dict[str, object]] = {}
    for name, path in cases.items():
        f = tmp / f"{name}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "analyzer.cli",
                "analyze",
                str(path),
                "--json",
                str(f),
                "-q",
                "--jobs",
                "2",
            ],
            cwd=ROOT,
            check=False,  # exit 1/5 are results too
        )
        doc = json.loads(f.read_text())
        out[name] = {"findings": doc["findings"], "rules": doc["rules"], "verdict": doc["verdict"]}
    return out


def regenerate_results() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        RESULTS.write_text(json.dumps(results(Path(tmp)), indent=1, sort_keys=True) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


def regenerate_parse_pairs(only: frozenset[str] = frozenset()) -> None:
    from tests.fixture_pairs import FIXTURES, dumps, expected_path, pair_inputs, parse_as_cli

    inputs = [(kind, path) for kind, path in pair_inputs() if not only or kind in only]
    written = changed = 0
    for kind, path in inputs:
        target = expected_path(path)
        text = dumps(parse_as_cli(kind, path))
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            changed += 1
            target.write_text(text, encoding="utf-8")
        written += 1
    wanted = {expected_path(path) for _, path in inputs}
    kinds = {kind for kind, _ in inputs}
    for stale in sorted(p for kind in kinds for p in (FIXTURES / kind).glob("*.json") if p not in wanted):
        stale.unlink()
        print(f"removed {stale.relative_to(ROOT)} (its input is gone)")
    print(f"wrote {written} parse pairs under tests/fixtures/<kind>/ ({changed} changed)")


STEPS = {
    "findings": regenerate_generated_findings,
    "results": regenerate_results,
    "pairs": regenerate_parse_pairs,
}

if __name__ == "__main__":
    unknown = [name for name in sys.argv[1:] if name.partition(":")[0] not in STEPS]
    if unknown:
        sys.exit(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}, pairs:KIND[,KIND]")
    for name in sys.argv[1:] or list(STEPS):
        step, _, kinds = name.partition(":")
        if kinds:
            regenerate_parse_pairs(frozenset(kinds.split(",")))
        else:
            STEPS[step]()
