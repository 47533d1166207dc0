"""Clusters put together at random from the real fixtures end in a report, never an internal error.

Each seed builds 1-6 node tarballs whose outputs are random real fixtures of each kind (some left out,
some cut short, some labelled with the wrong kind in the manifest, some replaced by a fuzz regression
input), with other instance types, and an extra/ folder holding random kinds and one node's nvidia-smi -q.  The
analysis must write its JSON and HTML, with a verdict, and exit 0 or 5.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

import parsers
from analyzer.cli import cli
from tests.conftest import FIXTURES, ROOT

_spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

REGRESSIONS = sorted((ROOT / "tests" / "fuzz" / "regressions").glob("*"))


def _real(kind: str) -> list[Path]:
    return [
        p for p in sorted((FIXTURES / kind).glob("*")) if p.is_file() and p.suffix not in (".md", ".json")
    ]


def _cluster(root: Path, rng: random.Random) -> Path:
    cluster = root / "cluster"
    cluster.mkdir()
    for i in range(rng.randint(1, 6)):
        files = []
        for kind in parsers.KINDS:
            if rng.random() < 0.3 or not _real(kind):
                continue
            text = rng.choice(_real(kind)).read_text(errors="replace")
            if rng.random() < 0.1:
                text = text[: rng.randint(0, len(text))]
            if rng.random() < 0.05:
                text = rng.choice(REGRESSIONS).read_bytes().decode("latin-1")
            label = kind if rng.random() > 0.05 else rng.choice(parsers.KINDS)
            files.append((f"cmd/{kind}.txt", label, text))
        generate.write_node(cluster, i, files)
    (cluster / "extra").mkdir()
    for kind in rng.sample(list(parsers.KINDS), 3):
        if _real(kind):
            (cluster / "extra" / f"{kind}.txt").write_bytes(rng.choice(_real(kind)).read_bytes())
    q = FIXTURES / "nvidia-smi-q" / "jp-simulator-8xh100-565-complete.txt"  # one node's 8 GPUs, no node
    (cluster / "extra" / "gpu-q.txt").write_bytes(q.read_bytes())
    return cluster


@pytest.mark.parametrize("seed", [10, 11, 12, 13])
def test_random_cluster_of_real_outputs_ends_in_a_report(tmp_path: Path, seed: int) -> None:
    cluster = _cluster(tmp_path, random.Random(seed))
    json_out, html_out = tmp_path / "f.json", tmp_path / "r.html"
    result = CliRunner().invoke(
        cli, ["analyze", str(cluster), "--json", str(json_out), "--html", str(html_out), "-q", "--jobs", "1"]
    )
    assert result.exit_code in (0, 5), result.output
    doc = json.loads(json_out.read_text())
    assert isinstance(doc["verdict"], dict) and doc["verdict"]["status"]
    assert html_out.stat().st_size > 10_000
