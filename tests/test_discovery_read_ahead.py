"""Discovery reads the tarballs of a large folder ahead, in threads (bundle._read_ahead): what it finds
is what the one-by-one walk finds, a bad checksum, a damaged tarball, a tarball of no bundle and a
missing digest file included."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

from analyzer.intake import bundle
from analyzer.intake.safe_read import Limits

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ahead") / "c1"
    generate.generate(out, 10, "mixed", 5)
    tarballs = sorted(out.glob("*.tar.gz"))
    (tarballs[1].with_name(tarballs[1].name + ".sha256")).write_text(
        "0" * 64 + "  " + tarballs[1].name + "\n"
    )
    raw = tarballs[2].read_bytes()
    tarballs[2].write_bytes(raw[: len(raw) // 3])  # damaged (its .sha256 no longer matches either)
    tarballs[3].with_name(tarballs[3].name + ".sha256").unlink()
    other = io.BytesIO()
    with tarfile.open(fileobj=other, mode="w:gz") as tar:
        info = tarfile.TarInfo("notes/readme.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    (out / "notes.tar.gz").write_bytes(other.getvalue())
    return out


def _found(folder: Path, work: Path) -> dict[str, object]:
    found = bundle.discover([folder], work, Limits())
    return {f.name: getattr(found, f.name) for f in dataclasses.fields(found) if not f.name.startswith("_")}


def test_read_ahead_finds_what_the_walk_finds(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ahead = _found(folder, tmp_path / "a")
    monkeypatch.setattr(bundle, "READ_AHEAD_FROM", 10**6)
    walked = _found(folder, tmp_path / "b")
    assert ahead == walked
    statuses = sorted(e["status"] for _, e in ahead["checksums"])  # type: ignore[union-attr]
    assert statuses.count("mismatch") == 2 and statuses.count("ok") == 7
    assert any("notes.tar.gz" in u.path for u in ahead["unread"])  # type: ignore[union-attr]
    assert len(ahead["nodes"]) == 10  # type: ignore[arg-type]
