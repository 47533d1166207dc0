"""docs/fleet.md's Spark recipe, run as written in Spark's local mode: mapInArrow over digest_input in the
executors, finish in the driver, writes the dataset ingest --parquet writes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_fleet import COMPARED, ROOT, rows, run

SAMPLE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle"


def _recipe() -> str:
    text = (ROOT / "docs" / "fleet.md").read_text(encoding="utf-8")
    section = text.split("## Spark", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)\n```", section, re.S)[0]


def test_spark_recipe_writes_the_dataset_ingest_writes(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is in the test extras (CI installs it)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for PySpark (CI installs default-jre-headless)")
    from analyzer.fleet.dataset import open_dataset

    by_spark, by_ingest = tmp_path / "spark", tmp_path / "ingest"
    script = (
        "from pyspark.sql import SparkSession\n"
        "SparkSession.builder.master('local[2]').config('spark.ui.enabled', 'false')"
        ".config('spark.sql.session.timeZone', 'UTC').getOrCreate().sparkContext.setLogLevel('ERROR')\n"
        f"BUNDLES = {str(SAMPLE)!r}\nDATASET = {str(by_spark)!r}\n" + _recipe()
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert " stored " in done.stdout, done.stdout
    assert run("ingest", str(SAMPLE), "--parquet", str(by_ingest), "-q", "--jobs", "1").exit_code == 0
    a, b = open_dataset(by_spark), open_dataset(by_ingest)
    assert rows(a, COMPARED["findings"]) and {r[3] for r in rows(a, COMPARED["findings"])} >= {"gpu.xid"}
    for name, sql in COMPARED.items():
        if name != "snapshot":
            assert rows(a, sql) == rows(b, sql), name
    # the recipe names its source as given; ingest as the user gave it: the same
    assert rows(a, COMPARED["snapshot"]) == rows(b, COMPARED["snapshot"])
