"""bundle.checksum on node tarballs: a .sha256 that does not match fails the node, a matching one passes,
one without a digest is info.  The node is the shipped sample node p5-node-01 (sample_bundles/xid-ecc-3node)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from tests.conftest import SAMPLES, make_tar
from tests.rules.helpers import analyze


def _tarball(tmp_path: Path) -> Path:
    node = tmp_path / "src" / "p5-node-01"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle" / "p5-node-01", node)
    (tmp_path / "in").mkdir()
    return make_tar(node, tmp_path / "in" / "p5-node-01.tar.gz")


def test_a_matching_checksum_passes(tmp_path: Path) -> None:
    tar = _tarball(tmp_path)
    Path(f"{tar}.sha256").write_text(f"{hashlib.sha256(tar.read_bytes()).hexdigest()}  {tar.name}\n")
    res = analyze(tmp_path / "in")
    assert res.outcome("bundle.checksum") == "pass"
    assert res.of("bundle.checksum") == []


def test_a_mismatch_is_a_warning_naming_both_digests(tmp_path: Path) -> None:
    tar = _tarball(tmp_path)
    Path(f"{tar}.sha256").write_text(f"{'0' * 64}  {tar.name}\n")
    res = analyze(tmp_path / "in")
    assert res.outcome("bundle.checksum") == "fail"
    (f,) = res.of("bundle.checksum")
    assert f.node == "p5-node-01" and f.severity.value == "warning"
    assert f.params["status"] == "mismatch" and f.params["expected"] == "0" * 64
    assert f.params["actual"] == hashlib.sha256(tar.read_bytes()).hexdigest()


def test_a_digest_file_without_a_digest_is_info(tmp_path: Path) -> None:
    tar = _tarball(tmp_path)
    Path(f"{tar}.sha256").write_text("not a digest\n")
    (f,) = analyze(tmp_path / "in").of("bundle.checksum")
    assert f.severity.value == "info" and f.params["status"] != "mismatch"
