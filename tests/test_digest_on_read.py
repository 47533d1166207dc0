"""A node bundle's content digest taken in the one read of its files (``NodeSource.digest``, what
``ingest --parquet`` workers use) is the digest ``content_digest`` gives by reading it again: for a
tarball, the same bundle as a directory, and a tarball cut short (its reading error counts in both)."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from analyzer.intake.bundle import NodeSource, content_digest
from analyzer.intake.read_node import read_node
from analyzer.intake.safe_read import Limits

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle"


def _node_dir() -> Path:
    return next(p for p in sorted(SAMPLE.iterdir()) if p.is_dir() and (p / "meta.env").is_file())


@pytest.fixture()
def tarball(tmp_path: Path) -> Path:
    node = _node_dir()
    out = tmp_path / f"{node.name}.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        tar.add(node, arcname=node.name)
    return out


def _on_read(location: Path, is_tar: bool) -> str | None:
    return read_node(NodeSource(location, is_tar, str(location), digest=True), Limits()).content_digest


def test_a_tarball_and_its_directory(tarball: Path, tmp_path: Path) -> None:
    digest = content_digest(tarball, True, Limits())
    assert _on_read(tarball, True) == digest
    unpacked = tmp_path / "unpacked"
    shutil.copytree(_node_dir(), unpacked)
    assert _on_read(unpacked, False) == content_digest(unpacked, False, Limits()) == digest


def test_a_tarball_cut_short(tarball: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(tarball.read_bytes()[: tarball.stat().st_size * 2 // 3])
    digest = content_digest(cut, True, Limits())
    assert digest != content_digest(tarball, True, Limits())
    assert _on_read(cut, True) == digest


def test_not_asked_not_taken(tarball: Path) -> None:
    assert read_node(NodeSource(tarball, True, str(tarball)), Limits()).content_digest is None
