"""ingest --parquet checks the digest a producer writes beside its tarball as analyze does: our and
sha256sum's ``.sha256``, and the ``.md5`` of sos 4.0 (Debian), which is no loose file either.

The sos report is laid out as tests/test_foreign_sos_report.py lays it out (its real outputs, sos 4.0's
members); its ``.md5`` holds the hex digest and a newline, as sos writes it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from analyzer.fleet.inputs import list_inputs, read_item
from analyzer.fleet.read_input import read_input
from tests.test_foreign_sos_report import HOST, TOP, _tarball, _tree


def _report_with_md5(folder: Path, digest: str | None = None) -> tuple[Path, str]:
    folder.mkdir(parents=True)
    path = _tarball(folder / f"{TOP}.tar.xz", _tree())
    md5 = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    Path(f"{path}.md5").write_text((digest or md5) + "\n")
    return path, md5


def test_a_sos_md5_travels_with_its_report_and_is_checked(tmp_path: Path) -> None:
    path, md5 = _report_with_md5(tmp_path / "case")
    listing = list_inputs([tmp_path / "case"])
    assert [(i.path, i.checksum) for i in listing.items] == [(str(path), f"{path}.md5")]
    assert listing.skipped == []  # the .md5 is no loose file beside the report
    data, checksum = read_item(listing.items[0])
    assert checksum == f"{md5}\n".encode()
    tables = read_input(str(path), data, checksum=checksum)
    rows = [(r["node"], r["status"]) for r in tables["bundle_checksum"].to_pylist()]
    assert rows == [(HOST, "ok")]


def test_a_sos_md5_that_does_not_match_is_the_checksum_warning(tmp_path: Path) -> None:
    path, md5 = _report_with_md5(tmp_path / "case", "0" * 32)
    (item,) = list_inputs([tmp_path / "case"]).items
    data, checksum = read_item(item)
    tables = read_input(str(path), data, checksum=checksum)
    assert [r["status"] for r in tables["bundle_checksum"].to_pylist()] == ["mismatch"]
    (finding,) = [f for f in tables["findings"].to_pylist() if f["rule"] == "bundle.checksum"]
    assert f"MD5 {md5} does not match" in finding["message"] and finding["node"] == HOST


def test_an_md5_without_its_tarball_is_a_loose_file(tmp_path: Path) -> None:
    path, _ = _report_with_md5(tmp_path / "case")
    path.rename(tmp_path / "elsewhere.tar.xz")
    listing = list_inputs([tmp_path / "case"])
    assert listing.items == [] and [p for p, _ in listing.skipped] == [f"{path}.md5"]
