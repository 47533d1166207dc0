"""Untrusted bundles: hostile or damaged members are refused and reported; the rest is analyzed."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.intake.bundle import NodeSource
from analyzer.intake.read_node import read_node
from analyzer.intake.safe_read import Limits
from tests.conftest import make_tar


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, **attrs: object) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in attrs.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data))


def _hostile_node_tar(sample_cluster: Path, dest: Path) -> Path:
    """p5-node-01 as a tarball, plus hostile members and one corrupt file."""
    node = sample_cluster / "p5-node-01"
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(node / "meta.env", arcname="p5-node-01/meta.env")
        tar.add(node / "manifest.tsv", arcname="p5-node-01/manifest.tsv")
        _add_bytes(tar, "p5-node-01/../../escaped.txt", b"owned\n")
        _add_bytes(tar, "/tmp/absolute-escape.txt", b"owned\n")
        link = tarfile.TarInfo("p5-node-01/cmd/passwd-link.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        dev = tarfile.TarInfo("p5-node-01/cmd/dev-null.txt")
        dev.type, dev.devmajor, dev.devminor = tarfile.CHRTYPE, 1, 3
        tar.addfile(dev)
        # a corrupt member: binary junk where nvidia-smi -q output should be
        _add_bytes(tar, "p5-node-01/cmd/nvidia-smi-q.txt", os.urandom(4096))
        tar.add(node / "cmd" / "dmesg.txt", arcname="p5-node-01/cmd/dmesg.txt")
    return dest


def test_hostile_members_refused_rest_analyzed(sample_cluster: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tarball = _hostile_node_tar(sample_cluster, work / "node.tar.gz")
    before = set(tmp_path.rglob("*"))
    result = CliRunner().invoke(cli, ["analyze", str(tarball), "--json", str(work / "f.json"), "-q"])
    assert result.exit_code == 5, result.output  # analysed, and the refused members named (exit 5)
    doc = json.loads((work / "f.json").read_text())
    errors = " | ".join(p["error"] for p in doc["parse_problems"])
    assert "unsafe name" in errors and "link to '/etc/passwd' not followed" in errors
    assert "not a regular file" in errors
    corrupt = [p for p in doc["parse_problems"] if p["file"] == "p5-node-01/cmd/nvidia-smi-q.txt"]
    assert corrupt and "not parsed" in corrupt[0]["error"]
    # the dmesg file in the same bundle is still analyzed
    assert any(f["rule"] == "gpu.xid" and f["params"]["xid"] == 48 for f in doc["findings"])
    # nothing was written outside the work directory
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/absolute-escape.txt").exists()
    assert set(tmp_path.rglob("*")) - before == {work / "f.json"}


def test_truncated_gzip_keeps_what_was_read(sample_cluster: Path, tmp_path: Path) -> None:
    tarball = make_tar(sample_cluster / "p5-node-01", tmp_path / "node.tar.gz")
    data = tarball.read_bytes()
    # meta.env and manifest.tsv come first in the archive; cut the stream inside the large -q dump
    tarball.write_bytes(data[: int(len(data) * 0.6)])
    result = CliRunner().invoke(cli, ["analyze", str(tarball), "--json", str(tmp_path / "f.json"), "-q"])
    assert result.exit_code == 5, result.output  # analysed, and the damage named (exit 5)
    doc = json.loads((tmp_path / "f.json").read_text())
    assert [n["node"] for n in doc["nodes"]] == ["p5-node-01"]
    assert any("archive damaged" in p["error"] for p in doc["parse_problems"])


def test_directory_link_leading_outside_is_not_followed(sample_cluster: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n")
    (sample_cluster / "p5-node-03" / "extra").mkdir()
    (sample_cluster / "p5-node-03" / "extra" / "leak.txt").symlink_to(secret)
    data = read_node(NodeSource(sample_cluster / "p5-node-03", False, "p5-node-03"), Limits())
    assert any("leads outside the bundle" in p["error"] for p in data.problems)
    events = data.arrow["kernel_event"].to_pylist() if "kernel_event" in data.arrow else []
    assert not any(r.get("xid") == 79 for r in events)


def test_compression_bomb_is_stopped(tmp_path: Path) -> None:
    tarball = tmp_path / "bomb.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        _add_bytes(tar, "n/meta.env", b"bundle_format=1\nnode=n\ncollected_at=2026-01-01T00:00:00Z\n")
        for i in range(4):
            _add_bytes(tar, f"n/extra/zeros{i}.txt", b"\0" * (4 * 1024 * 1024))
    limits = Limits(ratio_floor_bytes=1024 * 1024, max_ratio=50)
    data = read_node(NodeSource(tarball, True, "bomb"), limits)
    assert any("expansion ratio" in p["error"] for p in data.problems)


def test_oversized_member_refused(tmp_path: Path, sample_cluster: Path) -> None:
    limits = Limits(max_file_bytes=10_000)
    data = read_node(NodeSource(sample_cluster / "p5-node-01", False, "p5-node-01"), limits)
    refused = [p for p in data.problems if "per-file cap" in p["error"]]
    assert refused and refused[0]["file"] == "p5-node-01/cmd/nvidia-smi-q.txt"
    assert data.arrow["kernel_event"].num_rows  # dmesg was small enough


def test_cluster_tarball_of_node_tarballs(sample_cluster: Path, tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    for node in sorted(sample_cluster.iterdir()):
        make_tar(node, inner / f"{node.name}.tar.gz")
    cluster = make_tar(inner, tmp_path / "cluster.tar.gz", arcname="cluster-2026-12-01")
    result = CliRunner().invoke(cli, ["analyze", str(cluster), "--json", str(tmp_path / "f.json"), "-q"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "f.json").read_text())
    assert sorted(n["node"] for n in doc["nodes"]) == [
        "h100-node-04",
        "p5-node-01",
        "p5-node-02",
        "p5-node-03",
    ]
