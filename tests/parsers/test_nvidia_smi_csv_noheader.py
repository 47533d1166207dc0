"""``--format=csv,noheader``: the fields come from the command line (manifest, or ``parse --fields``).

The input is the real H100 capture tests/fixtures/nvidia-smi-csv/hpc-h100-595-11cols.txt with its header
line removed, which is what the same query prints with ``noheader`` (no real noheader capture is in the
samples); the field list is the one its provenance records.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from parsers import ParseError, nvidia_smi_csv
from tests.conftest import SAMPLES, fixture_text

FIELDS = (
    "index,name,driver_version,pstate,pcie.link.gen.current,temperature.gpu,utilization.gpu,"
    "utilization.memory,memory.total,memory.free,memory.used"
)
COMMAND = f"nvidia-smi --query-gpu={FIELDS} --format=csv,noheader"


def _headerless() -> str:
    return "".join(fixture_text("nvidia-smi-csv", "hpc-h100-595-11cols.txt").splitlines(keepends=True)[1:])


def test_headerless_rows_equal_the_rows_with_header() -> None:
    with_header = nvidia_smi_csv.parse(fixture_text("nvidia-smi-csv", "hpc-h100-595-11cols.txt"))
    headerless = nvidia_smi_csv.parse(_headerless(), command=COMMAND)
    strip = [
        {k: v for k, v in r.items() if k not in ("line", "extra")} for r in with_header.rows("gpu_query")
    ]
    assert [
        {k: v for k, v in r.items() if k not in ("line", "extra")} for r in headerless.rows("gpu_query")
    ] == strip
    assert len(strip) == 1 and strip[0]["driver_version"] == "595.71.05" and strip[0]["temp_c"] == 29.0


def test_without_fields_headerless_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="noheader"):
        nvidia_smi_csv.parse(_headerless())


def test_the_manifest_command_gives_the_fields(tmp_path: Path) -> None:
    node = tmp_path / "p5-node-03"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle" / "p5-node-03", node)
    (node / "cmd" / "nvidia-smi-query-gpu.txt").write_text(_headerless())
    manifest = node / "manifest.tsv"
    rows = [r for r in manifest.read_text().splitlines() if not r.startswith("cmd/nvidia-smi-query-gpu.txt")]
    rows.append(f"cmd/nvidia-smi-query-gpu.txt\tnvidia-smi-csv\t0\t0.2\t-\t-\t{COMMAND}\t")
    manifest.write_text("\n".join(rows) + "\n")
    db = tmp_path / "t.duckdb"
    assert CliRunner().invoke(cli, ["analyze", str(node), "--db", str(db), "-q"]).exit_code == 0
    out = CliRunner().invoke(cli, ["sql", str(db), "SELECT count(*) AS n FROM gpu_query", "--format", "csv"])
    assert out.stdout.splitlines()[1] == "1"
    problems = CliRunner().invoke(
        cli,
        [
            "sql",
            str(db),
            "SELECT count(*) FROM parse_problems WHERE file LIKE '%query-gpu%'",
            "--format",
            "csv",
        ],
    )
    assert problems.stdout.splitlines()[1] == "0"


def test_parse_fields_option(tmp_path: Path) -> None:
    raw = tmp_path / "q.txt"
    raw.write_text(_headerless())
    result = CliRunner().invoke(cli, ["parse", str(raw), "--kind", "nvidia-smi-csv", "--fields", FIELDS])
    assert result.exit_code == 0 and '"temp_c": 29.0' in result.stdout
    refused = CliRunner().invoke(cli, ["parse", str(raw), "--kind", "nvidia-smi-csv"])
    assert refused.exit_code == 2
