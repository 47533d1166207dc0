"""One analysis of the sample cluster, rendered once per test session into every format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import SAMPLES


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("report")
    bundle = out / "bundle"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", bundle)
    args = ["analyze", str(bundle), "--json", str(out / "f.json"), "--html", str(out / "r.html"), "-q"]
    try:
        import weasyprint  # noqa: F401

        args += ["--pdf", str(out / "r.pdf")]
    except (ImportError, OSError):
        pass
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return {"json": out / "f.json", "html": out / "r.html", "pdf": out / "r.pdf", "dir": out}


@pytest.fixture(scope="session")
def findings(rendered: dict[str, Path]) -> list[dict]:
    return json.loads(rendered["json"].read_text())["findings"]
