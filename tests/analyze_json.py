"""Run ``hptriage analyze`` as a user would (click's runner) and read the JSON report it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from analyzer.cli import cli


def analyze_json(
    tmp_path: Path, *inputs: Path, tag: str = "f", jobs: int = 1
) -> tuple[int, dict[str, Any], str]:
    """(exit code, the JSON report or {} when none was written, what was printed); the report and the
    store are written in ``tmp_path`` under ``tag`` (two runs in one folder take two tags)."""
    out = tmp_path / f"{tag}.json"
    args = ["analyze", *map(str, inputs), "--json", str(out), "--db", str(tmp_path / f"{tag}.duckdb")]
    result = CliRunner().invoke(cli, [*args, "-q", "--jobs", str(jobs)])
    return result.exit_code, (json.loads(out.read_text()) if out.exists() else {}), result.output
