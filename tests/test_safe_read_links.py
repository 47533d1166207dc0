"""Links inside an archive (or a folder) are followed inside it, and only there
(analyzer.intake.safe_read: iter_tar, iter_dir, resolve_link).

The layouts are the ones Debian's sos 4.0 writes (a report it made here held ``etc/mtab ->
../proc/self/mounts``, ``proc/mounts -> self/mounts``, ``proc/self -> <its pid>`` and ``lib ->
usr/lib``, in that order, sorted), plus the hostile ones a crafted archive can hold.  Contents are
placeholders: what is checked is which file a link reads.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer.intake import safe_read
from analyzer.intake.safe_read import Limits, Refusal, iter_dir, iter_tar


def _tar(path: Path, members: list[tuple[str, str, bytes | str]]) -> Path:
    """(name, 'file' | 'sym' | 'hard' | 'dir', content or link target), in that order."""
    with tarfile.open(path, "w:xz") as tar:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                assert isinstance(value, bytes)
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
                continue
            assert isinstance(value, str)
            info.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "dir": tarfile.DIRTYPE}[kind]
            info.linkname = value
            tar.addfile(info)
    return path


def _read(
    path: Path, select: Callable[[str], bool] | None = None
) -> tuple[dict[str, bytes], dict[str, str], list[str]]:
    refusals: list[Refusal] = []
    errors: list[str] = []
    reader = iter_dir if path.is_dir() else iter_tar
    got = dict(reader(path, Limits(), refusals, errors, select=select))
    return got, {r.path: r.reason for r in refusals}, errors


SOS = [
    ("t/etc/mtab", "sym", "../proc/self/mounts"),
    ("t/lib", "sym", "usr/lib"),
    ("t/proc/4242/mounts", "file", b"proc /proc proc rw 0 0\n"),
    ("t/proc/mounts", "sym", "self/mounts"),
    ("t/proc/self", "sym", "4242"),
    ("t/sos_commands/kernel/dmesg_-T", "sym", "../../sos_strings/kernel/dmesg_-T.tailed"),
    ("t/sos_strings/kernel/dmesg_-T.tailed", "file", b"[ 1.0] tail\n"),
    ("t/usr/lib/os-release", "file", b"ID=debian\n"),
    ("t/copy", "hard", "t/proc/4242/mounts"),
]


def test_chains_of_links_read_the_file_they_lead_to(tmp_path: Path) -> None:
    got, refused, errors = _read(_tar(tmp_path / "r.tar.xz", SOS))
    table = b"proc /proc proc rw 0 0\n"
    assert got["t/proc/mounts"] == got["t/etc/mtab"] == got["t/copy"] == got["t/proc/4242/mounts"] == table
    assert got["t/sos_commands/kernel/dmesg_-T"] == b"[ 1.0] tail\n"
    assert "t/lib" not in got and "t/proc/self" not in got  # links to folders: their files are read there
    assert not refused and not errors


def test_hostile_links_are_refused_with_why(tmp_path: Path) -> None:
    path = _tar(
        tmp_path / "r.tar.xz",
        [
            ("t/a", "sym", "b"),
            ("t/b", "sym", "a"),
            ("t/abs", "sym", "/etc/passwd"),
            ("t/out", "sym", "../../x"),
            ("t/via", "sym", "dir/passwd"),
            ("t/dir", "sym", "/etc"),
            ("t/none", "sym", "nothing-here"),
            ("t/hard-out", "hard", "../etc/shadow"),
            ("t/self", "sym", "self"),
        ],
    )
    got, refused, _errors = _read(path)
    assert not got
    assert "a loop of links" in refused["t/a"] and "a loop of links" in refused["t/self"]
    assert refused["t/abs"] == "link to '/etc/passwd' not followed: an absolute link leads out of the archive"
    assert "leads out of the archive" in refused["t/out"] and "leads out" in refused["t/hard-out"]
    assert "absolute" in refused["t/via"] and "t/dir -> /etc" in refused["t/via"]
    assert refused["t/none"] == "link to 'nothing-here': no member t/nothing-here in the archive"


def test_only_selected_links_are_read(tmp_path: Path) -> None:
    got, refused, _ = _read(_tar(tmp_path / "r.tar.xz", SOS), select=lambda name: name == "t/proc/mounts")
    assert got == {"t/proc/mounts": b"proc /proc proc rw 0 0\n"} and not refused


def test_a_target_too_large_to_hold_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_read, "LINK_HOLD_FILE_BYTES", 8)
    got, refused, _ = _read(_tar(tmp_path / "r.tar.xz", SOS))
    assert "t/proc/mounts" not in got and "larger than the files held for links" in refused["t/proc/mounts"]
    assert got["t/proc/4242/mounts"]  # the file itself is still read where it lies


def test_a_folder_follows_its_links_inside_and_survives_a_loop(tmp_path: Path) -> None:
    root = tmp_path / "report"
    (root / "proc" / "4242").mkdir(parents=True)
    (root / "proc" / "4242" / "mounts").write_bytes(b"proc /proc proc rw 0 0\n")
    (root / "etc").mkdir()
    os.symlink("4242", root / "proc" / "self")
    os.symlink("self/mounts", root / "proc" / "mounts")
    os.symlink("../proc/self/mounts", root / "etc" / "mtab")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    os.symlink("/etc", root / "outside-dir")
    os.symlink("/etc/hostname", root / "outside-file")
    got, refused, errors = _read(root)
    assert got["proc/mounts"] == got["etc/mtab"] == b"proc /proc proc rw 0 0\n"
    assert "a loop of links" in refused["loop-a"] and "a loop of links" in refused["loop-b"]
    assert "leads outside the bundle" in refused["outside-file"]
    assert refused["outside-dir"].startswith("directory link to '/etc' not followed")
    assert "proc/self" not in refused and not errors  # a folder's link inside: its files read where they lie
