"""Check, or rewrite after review, the test fixtures written from the code's own output.

    .venv/bin/python scripts/regenerate_fixtures.py               # check all: print each diff, write nothing
    .venv/bin/python scripts/regenerate_fixtures.py pairs:dmesg   # check the dmesg pairs only
    .venv/bin/python scripts/regenerate_fixtures.py --write pairs:dmesg results:fsx-saturated

Without ``--write`` nothing is written: the script prints the unified diff of every file it would change
and exits 1 when there is one (0 when every file is what the code writes).  With ``--write`` it writes
the steps named, and only those, printing the same diff: read it, and say in the commit why the results
changed.  It never deletes a file it did not write.

Steps:

- ``findings``: ``tests/fixtures/generated/mixed-16-seed0-findings.json``, the findings (fields the test
  compares) and rule outcomes of ``hptriage analyze`` on the 16-node ``mixed`` cluster of
  benchmarks/generate.py (seed 0), kept by tests/test_generate.py so that a change of speed never
  changes a result.
- ``results[:SCENARIO[,SCENARIO]]``: ``tests/fixtures/generated/results/<scenario>.json``, the findings,
  rule outcomes and verdict, as ``--json`` writes them, of each sample scenario and of the generated
  64-node ``mixed`` cluster (seed 0): one file per scenario, each finding and each rule outcome on a
  line of its own.  tests/test_results_unchanged.py holds later changes of layout or speed to them, and
  holds them to the hand-written ``tests/expectations/<scenario>.toml`` (what matters: the verdict's
  worst nodes, per node the rules at warning and critical), which no script writes.
- ``pairs:KIND[,KIND]``: ``tests/fixtures/<kind>/<name>.json`` beside each real output
  ``<name>.txt``/``<name>.out`` of those parser kinds: what ``hptriage parse FILE --kind KIND --format
  json`` prints of it (tests/fixture_pairs.py), checked by tests/parsers/test_fixture_pairs.py.  A bare
  ``pairs`` checks every kind; ``--write`` takes named kinds only.  A pair whose input is gone is
  removed on ``--write`` when it is one this script wrote (its ``command`` names that input); any other
  file is named and left.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GOLDEN = ROOT / "tests" / "fixtures" / "generated" / "mixed-16-seed0-findings.json"
RESULTS = ROOT / "tests" / "fixtures" / "generated" / "results"
EXPECTATIONS = ROOT / "tests" / "expectations"
SAMPLE_SCENARIOS = ("xid-ecc-3node", "nccl-slow-node", "fsx-saturated")
GENERATED = "generated-mixed-64"
SCENARIOS = (*SAMPLE_SCENARIOS, GENERATED)
FIELDS = ("fingerprint", "rule", "severity", "node", "gpu", "message", "params", "evidence")
#: keys a finding's or a rule outcome's line starts with, so that it reads from what it is about
FIRST_KEYS = ("rule", "outcome", "severity", "node", "gpu", "findings", "message", "reason")

#: a file to write and its text
Planned = tuple[Path, str]


def _generate_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _analyze(path: Path, out: Path) -> dict[str, Any]:
    """What ``hptriage analyze PATH --json OUT`` writes (exit 1 and 5 are results too)."""
    cmd = [
        sys.executable,
        "-m",
        "analyzer.cli",
        "analyze",
        str(path),
        "--json",
        str(out),
        "-q",
        "--jobs",
        "2",
    ]
    subprocess.run(cmd, cwd=ROOT, check=False)
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


# -- findings ---------------------------------------------------------------------------------------


def plan_findings() -> list[Planned]:
    old = json.loads(GOLDEN.read_text())
    generated = old["generated"]
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "cluster"
        _generate_module().generate(cluster, **generated)
        doc = _analyze(cluster, Path(tmp) / "f.json")
    golden = {
        "analyzer_commit": old.get("analyzer_commit"),
        "findings": [
            {k: f[k] for k in FIELDS} for f in sorted(doc["findings"], key=lambda f: f["fingerprint"])
        ],
        "generated": generated,
        "outcomes": {r["rule"]: r["outcome"] for r in doc["rules"]},
    }
    if golden != old:  # the commit that wrote it changes only with what it holds
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        golden["analyzer_commit"] = commit.stdout.strip()
    return [(GOLDEN, json.dumps(golden, indent=1, sort_keys=True) + "\n")]


# -- results ----------------------------------------------------------------------------------------


def results(tmp: Path, scenarios: tuple[str, ...] = SCENARIOS) -> dict[str, dict[str, Any]]:
    """What ``hptriage analyze --json`` says of each scenario named (findings, rule outcomes, verdict)."""
    out: dict[str, dict[str, Any]] = {}
    for name in scenarios:
        if name == GENERATED:
            path = tmp / "gen64"
            _generate_module().generate(path, 64, "mixed", 0)
        else:
            path = ROOT / "sample_bundles" / name / "bundle"
        doc = _analyze(path, tmp / f"{name}.json")
        out[name] = {"findings": doc["findings"], "rules": doc["rules"], "verdict": doc["verdict"]}
    return out


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return [_sorted(v) for v in value] if isinstance(value, list) else value


def _ordered(item: dict[str, Any]) -> dict[str, Any]:
    """The item's keys sorted (at every depth), but for FIRST_KEYS at its start."""
    first = [k for k in FIRST_KEYS if k in item]
    return {k: _sorted(item[k]) for k in first + sorted(set(item) - set(first))}


def dumps_result(doc: dict[str, Any]) -> str:
    """One scenario's results as JSON a person reads and a diff shows line by line: each finding and
    each rule outcome on one line (its rule first), the verdict indented; lists keep the analyzer's order."""
    parts = []
    for key in sorted(doc):
        value = doc[key]
        if isinstance(value, list):
            lines = [json.dumps(_ordered(v), ensure_ascii=False) for v in value]
            body = "[\n" + ",\n".join(f"  {line}" for line in lines) + "\n ]" if lines else "[]"
        else:
            body = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False).replace("\n", "\n ")
        parts.append(f" {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def result_path(scenario: str) -> Path:
    return RESULTS / f"{scenario}.json"


def plan_results(only: tuple[str, ...] = SCENARIOS) -> list[Planned]:
    with tempfile.TemporaryDirectory() as tmp:
        found = results(Path(tmp), only)
    return [(result_path(name), dumps_result(doc)) for name, doc in found.items()]


def stray_results() -> list[Path]:
    """Files in the results folder no scenario writes (named, never removed)."""
    wanted = {result_path(s) for s in SCENARIOS}
    return sorted(p for p in RESULTS.glob("*") if p not in wanted) if RESULTS.is_dir() else []


# -- pairs ------------------------------------------------------------------------------------------


def plan_pairs(kinds: frozenset[str] = frozenset()) -> tuple[list[Planned], list[Path]]:
    """The expected parse of every input of those kinds (all when none named), and the ``.json`` files
    of those kinds' folders whose input is gone."""
    from tests.fixture_pairs import FIXTURES, dumps, expected_path, pair_inputs, parse_as_cli

    inputs = [(kind, path) for kind, path in pair_inputs() if not kinds or kind in kinds]
    planned = [(expected_path(path), dumps(parse_as_cli(kind, path))) for kind, path in inputs]
    wanted = {path for path, _ in planned}
    named = sorted(kinds or {kind for kind, _ in inputs})
    stale = sorted(p for kind in named for p in (FIXTURES / kind).glob("*.json") if p not in wanted)
    return planned, stale


def written_by_us(stale: Path) -> bool:
    """Whether a ``.json`` is an expected parse this script wrote: its command parses an input of its
    own name in its own folder (``<name>.txt`` or ``<name>.out``)."""
    try:
        doc = json.loads(stale.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or set(doc) != {"command", "records", "issues"}:
        return False
    kind, rel = stale.parent.name, stale.relative_to(ROOT).with_suffix("").as_posix()
    return doc["command"] in {
        f"hptriage parse {rel}{s} --kind {kind} --format json" for s in (".txt", ".out")
    }


# -- the run ----------------------------------------------------------------------------------------


def diff(path: Path, new: str) -> str:
    rel = path.relative_to(ROOT).as_posix()
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    before = f"a/{rel}" if path.is_file() else "/dev/null"
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), fromfile=before, tofile=f"b/{rel}")
    )


def parse_steps(steps: list[str], write: bool) -> list[tuple[str, tuple[str, ...]]]:
    """``[(step, names)]`` from the command line; SystemExit with why for a step that cannot be run."""
    if not steps:
        if write:
            raise SystemExit("--write needs the steps to write: findings, results[:S,...], pairs:KIND[,KIND]")
        return [("findings", ()), ("results", ()), ("pairs", ())]
    parsed = []
    for arg in steps:
        step, _, rest = arg.partition(":")
        names = tuple(n for n in rest.split(",") if n)
        if step not in ("findings", "results", "pairs") or (step == "findings" and names):
            raise SystemExit(f"unknown step {arg!r}: choose from findings, results[:S,...], pairs[:KIND,...]")
        if step == "results" and (unknown := sorted(set(names) - set(SCENARIOS))):
            raise SystemExit(f"unknown scenario(s) {', '.join(unknown)}: choose from {', '.join(SCENARIOS)}")
        if step == "pairs":
            import parsers

            if unknown := sorted(set(names) - set(parsers.KINDS)):
                raise SystemExit(f"unknown kind(s) {', '.join(unknown)}: see hptriage parse --list")
            if write and not names:
                raise SystemExit("--write rewrites the pairs of named kinds only: pairs:KIND[,KIND]")
        parsed.append((step, names))
    return parsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("steps", nargs="*", help="findings, results[:SCENARIO,...], pairs[:KIND,...]")
    ap.add_argument("--write", action="store_true", help="write the files (default: print the diff only)")
    args = ap.parse_args(argv)
    planned: list[Planned] = []
    stale: list[Path] = []
    for step, names in parse_steps(args.steps, args.write):
        if step == "findings":
            planned += plan_findings()
        elif step == "results":
            planned += plan_results(names or SCENARIOS)
            stale += stray_results()
        else:
            pairs, gone = plan_pairs(frozenset(names))
            planned += pairs
            stale += gone
    changed = 0
    for path, text in planned:
        if (patch := diff(path, text)) == "":
            continue
        changed += 1
        sys.stdout.write(patch)
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        rel = path.relative_to(ROOT).as_posix()
        if args.write and written_by_us(path):
            path.unlink()
            print(f"removed {rel}: its input is gone")
        elif written_by_us(path):
            print(f"stale: {rel}: its input is gone (--write removes it)")
        else:
            print(f"left: {rel}: not written by this script (remove it by hand if it is not wanted)")
    verb = "written" if args.write else "to write"
    print(f"{len(planned)} files checked, {changed} {verb}, {len(stale)} stale", file=sys.stderr)
    return 0 if args.write or (changed == 0 and not stale) else 1


if __name__ == "__main__":
    sys.exit(main())
