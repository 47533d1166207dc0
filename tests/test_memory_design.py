"""What bounds an analysis's memory (docs/architecture.md, "Memory, by design"), held to it.

pyarrow imports pandas, when installed (the ``ray`` extra installs it), at the first array it builds from
a list: 54 MiB a process.  The console script's process and the pool's workers keep it out; a host that
invokes the CLI in its own process (a test's CliRunner) keeps its pandas.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SAMPLE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle"
HAVE_PANDAS = importlib.util.find_spec("pandas") is not None
needs_pandas = pytest.mark.skipif(not HAVE_PANDAS, reason="pandas not installed: nothing to keep out")

_CONSOLE = """
import sys
from analyzer import cli
sys.argv = ["hptriage", "analyze", sys.argv[1], "--json", sys.argv[2], "-q", "--jobs", "2"]
try:
    cli.main()
except SystemExit as exc:
    code = exc.code
import pyarrow as pa
pa.array([1, 2])
print("pandas" in sys.modules, code)
"""

_WORKER = """
import multiprocessing, sys
from concurrent.futures import ProcessPoolExecutor
from analyzer.store.tables import keep_pandas_out

def probe(_):
    import pyarrow as pa
    pa.array([1])
    try:
        import pandas  # noqa: F401
        return "imported"
    except ModuleNotFoundError:
        return "kept out" if "pandas" not in sys.modules else "half"

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=keep_pandas_out) as pool:
        print(pool.submit(probe, 0).result())
"""


@pytest.mark.optional("pandas comes with the ray test extra; without it there is nothing to keep out",
                      skips="pandas not installed")  # fmt: skip
@needs_pandas
def test_the_console_script_keeps_pandas_out_of_its_process(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CONSOLE, str(SAMPLE), str(tmp_path / "f.json")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    imported, code = out.stdout.split()
    assert imported == "False" and code in ("0", "4", "5"), (out.stdout, out.stderr)
    assert (tmp_path / "f.json").exists()


@pytest.mark.optional("pandas comes with the ray test extra; without it there is nothing to keep out",
                      skips="pandas not installed")  # fmt: skip
@needs_pandas
def test_a_pool_worker_keeps_pandas_out(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.stdout.strip() == "kept out", out.stderr


@pytest.mark.optional("pandas comes with the ray test extra; without it there is nothing to keep out",
                      skips="pandas not installed")  # fmt: skip
@needs_pandas
def test_an_analysis_in_a_host_process_leaves_its_pandas(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from analyzer.cli import cli

    result = CliRunner().invoke(
        cli, ["analyze", str(SAMPLE), "--json", str(tmp_path / "f.json"), "-q", "--jobs", "1"]
    )
    assert result.exit_code in (0, 4, 5), result.output
    import pyarrow as pa

    assert pa.table({"a": [1, 2]}).to_pandas().shape == (2, 1)
