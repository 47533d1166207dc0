"""Shared test helpers: fixtures of real outputs and bundle builders."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "sample_bundles"


def fixture_text(kind: str, name: str) -> str:
    return (FIXTURES / kind / name).read_text(encoding="utf-8")


def fixture_files(kind: str) -> list[Path]:
    """The raw outputs of a kind's folder: not its PROVENANCE.md/README.md, nor the expected parses
    (``<name>.json`` beside each, see tests/fixture_pairs.py)."""
    return sorted(
        p
        for p in (FIXTURES / kind).iterdir()
        if p.is_file() and p.name not in ("PROVENANCE.md", "README.md") and p.suffix != ".json"
    )


@pytest.fixture
def sample_cluster(tmp_path: Path) -> Path:
    """A private copy of the 4-node sample cluster bundle (directories)."""
    dest = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", dest)
    return dest


def make_tar(src_dir: Path, dest: Path, arcname: str | None = None) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(src_dir, arcname=arcname or src_dir.name)
    return dest
