"""Read untrusted bundles without ever writing outside a private work directory.

Tarballs are read as streams (``tarfile`` mode ``r|*``); members are checked one by one and refused when
they have an absolute name or ``..``, are links, devices or FIFOs, exceed the per-file cap, push the
bundle over its total cap, or expand implausibly (compression ratio).  Python's extraction filters
(PEP 706) are not relied on: they are missing from some distribution Pythons still in use, and this
module never calls ``extract`` at all.  A refused member is reported; reading continues.  A truncated
or corrupt archive keeps every member read before the damage.  Zip archives (:func:`iter_zip`) are read
with the same contract and caps.
"""

from __future__ import annotations

import os
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO


@dataclass(frozen=True)
class Limits:
    """Caps applied while reading a bundle."""

    max_file_bytes: int = 256 * 1024**2
    max_bundle_bytes: int = 2 * 1024**3
    max_ratio: float = 200.0  # uncompressed / compressed, checked past ratio_floor_bytes
    ratio_floor_bytes: int = 64 * 1024**2
    max_members: int = 100_000


@dataclass(frozen=True)
class Refusal:
    """A member that was not read, and why."""

    path: str
    reason: str


def safe_member_name(name: str) -> str | None:
    """Return a clean relative POSIX path, or None when the name is unsafe.

    >>> safe_member_name("node1/cmd/x.txt"), safe_member_name("./a//b"), safe_member_name("../etc/passwd")
    ('node1/cmd/x.txt', 'a/b', None)
    >>> safe_member_name("/etc/passwd"), safe_member_name("a/../../b"), safe_member_name("C:\\\\x")
    (None, None, None)
    """
    if not name or "\x00" in name or name.startswith(("/", "\\")) or ":" in name.split("/")[0]:
        return None
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def iter_tar(
    path: Path, limits: Limits, refusals: list[Refusal], errors: list[str]
) -> Iterator[tuple[str, bytes]]:
    """Yield (member path, content) for the safe regular files of a tarball, as a stream."""
    total = 0
    count = 0
    with open(path, "rb") as raw:
        archive_bytes = os.fstat(raw.fileno()).st_size
        try:
            with tarfile.open(fileobj=raw, mode="r|*") as archive:
                for info in archive:
                    count += 1
                    if count > limits.max_members:
                        errors.append(f"more than {limits.max_members} members; the rest was not read")
                        return
                    name = safe_member_name(info.name)
                    if name is None and info.isdir() and info.name.rstrip("/") == ".":
                        continue  # the top of 'tar -C dir .': nothing to read
                    if name is None:
                        refusals.append(Refusal(info.name, "unsafe name (absolute path or '..')"))
                        continue
                    if info.isdir():
                        continue
                    if info.issym() or info.islnk():
                        refusals.append(Refusal(name, f"link to {info.linkname!r} not followed"))
                        continue
                    if not info.isreg():
                        refusals.append(Refusal(name, "not a regular file (device, FIFO or other)"))
                        continue
                    refused = _library_filter(info)
                    if refused:
                        refusals.append(Refusal(name, refused))
                        continue
                    if info.size > limits.max_file_bytes:
                        refusals.append(Refusal(name, f"{info.size} bytes exceeds the per-file cap"))
                        continue
                    if total + info.size > limits.max_bundle_bytes:
                        errors.append("bundle exceeds the total size cap; the rest was not read")
                        return
                    if total + info.size > max(limits.ratio_floor_bytes, limits.max_ratio * archive_bytes):
                        # told by the header, before decompressing: no archive holds more than that
                        errors.append(
                            f"expansion ratio over {limits.max_ratio:g}:1 is implausible: the members "
                            f"declare more than that times the archive's {archive_bytes} bytes (a "
                            f"compression bomb?); reading stopped at {name}"
                        )
                        return
                    member = archive.extractfile(info)
                    if member is None:
                        continue
                    data = member.read(limits.max_file_bytes + 1)
                    total += len(data)
                    consumed = max(raw.tell(), 1)
                    if total > limits.ratio_floor_bytes and total / consumed > limits.max_ratio:
                        errors.append(
                            f"expansion ratio {total / consumed:.0f}:1 is implausible; reading stopped"
                        )
                        return
                    yield name, data
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            errors.append(f"archive damaged after {count} members: {exc or type(exc).__name__}")


def _library_filter(info: tarfile.TarInfo) -> str | None:
    """Python's own 'data' extraction filter (PEP 706) as a second opinion where this Python has it.

    Our checks above and below do not depend on it: Debian 12's Python 3.11.2, for one, lacks it.
    """
    data_filter = getattr(tarfile, "data_filter", None)
    if data_filter is None or info.issym() or info.islnk():
        return None  # links are refused below with a clearer message
    try:
        data_filter(info, "/nonexistent-extraction-root")
    except tarfile.TarError as exc:  # FilterError and its subclasses
        return f"refused by the tar data filter: {exc}"
    return None


_ZIP_CHUNK = 1024 * 1024
#: compression methods read: zipfile inflates these in bounded steps (bzip2 and LZMA it expands one
#: read of compressed bytes whole, so a bomb could go past the cap in one call: they are refused)
_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"


def zip_entry_count(fh: BinaryIO) -> int | None:
    """The member count a zip's end of central directory declares (zip64 too), read before
    ``zipfile`` loads the whole directory into memory; None when there is no such record."""
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    start = max(0, size - (22 + 65535))
    fh.seek(start)
    tail = fh.read()
    at = tail.rfind(_EOCD)
    if at < 0 or at + 22 > len(tail):
        return None
    count: int = struct.unpack_from("<H", tail, at + 10)[0]
    if count != 0xFFFF or at < 20 or tail[at - 20 : at - 16] != _EOCD64_LOCATOR:
        return count
    offset: int = struct.unpack_from("<Q", tail, at - 20 + 8)[0]
    fh.seek(offset)
    record = fh.read(56)
    if len(record) < 40 or record[:4] != _EOCD64:
        return count
    count64: int = struct.unpack_from("<Q", record, 32)[0]
    return count64


def iter_zip(
    path: Path,
    limits: Limits,
    refusals: list[Refusal],
    errors: list[str],
    select: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Yield (member path, content) for the safe regular files of a zip, with :func:`iter_tar`'s
    contract and caps: a member with an unsafe name, a link (a Unix mode of S_IFLNK in its external
    attributes), a device or FIFO, an encrypted member, one compressed with another method than stored
    or deflate, or one over the per-file cap by its declared or its actual size is refused; the member
    count, the total size and the expansion ratio stop reading.  Members are inflated in bounded steps,
    so a bomb never expands past the cap; a member whose data is damaged (CRC) is refused.  ``select``
    (a member path -> read it?) as in :func:`iter_dir`: every member is still checked and its declared
    size counted, only the selected ones are read."""
    total = 0
    consumed = 0  # compressed bytes of the members read
    try:
        with open(path, "rb") as raw:
            declared = zip_entry_count(raw)
            if declared is not None and declared > limits.max_members:
                errors.append(f"{declared} members, more than {limits.max_members}; not read")
                return
            raw.seek(0)
            with zipfile.ZipFile(raw) as archive:
                for count, info in enumerate(archive.infolist(), start=1):
                    if count > limits.max_members:
                        errors.append(f"more than {limits.max_members} members; the rest was not read")
                        return
                    name = safe_member_name(info.filename)
                    if name is None:
                        refusals.append(Refusal(info.filename, "unsafe name (absolute path or '..')"))
                        continue
                    if info.is_dir():
                        continue
                    mode = info.external_attr >> 16
                    if stat.S_ISLNK(mode):
                        refusals.append(Refusal(name, "link not followed"))
                        continue
                    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                        refusals.append(Refusal(name, "not a regular file (device, FIFO or other)"))
                        continue
                    if info.flag_bits & 0x1:
                        refusals.append(Refusal(name, "encrypted member not read"))
                        continue
                    if info.compress_type not in _ZIP_METHODS:
                        refusals.append(
                            Refusal(
                                name, f"compression method {info.compress_type} not read (stored, deflate)"
                            )
                        )
                        continue
                    if info.file_size > limits.max_file_bytes:
                        refusals.append(Refusal(name, f"{info.file_size} bytes exceeds the per-file cap"))
                        continue
                    if total + info.file_size > limits.max_bundle_bytes:
                        errors.append("archive exceeds the total size cap; the rest was not read")
                        return
                    if select is not None and not select(name):
                        total += info.file_size
                        continue
                    data, refused = _read_zip_member(archive, info, limits)
                    if refused:
                        refusals.append(Refusal(name, refused))
                        continue
                    total += len(data)
                    consumed += info.compress_size
                    if total > limits.max_bundle_bytes:
                        errors.append("archive exceeds the total size cap; the rest was not read")
                        return
                    if total > limits.ratio_floor_bytes and total / max(consumed, 1) > limits.max_ratio:
                        errors.append(
                            f"expansion ratio {total / max(consumed, 1):.0f}:1 is implausible; reading stopped"
                        )
                        return
                    yield name, data
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, OSError, struct.error) as exc:
        errors.append(f"zip archive damaged: {exc or type(exc).__name__}")


def _read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits) -> tuple[bytes, str]:
    """A member's bytes read in bounded steps, or the reason it was not read: over the per-file cap by
    its actual size (a header may lie), an implausible expansion, damaged data."""
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as member:
            while True:
                chunk = member.read(_ZIP_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > limits.max_file_bytes:
                    return b"", f"more than {limits.max_file_bytes} bytes (the per-file cap) when read"
                if size > limits.ratio_floor_bytes and size / max(info.compress_size, 1) > limits.max_ratio:
                    return b"", f"expands more than {limits.max_ratio:g} times; not read"
                chunks.append(chunk)
    except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError, OSError) as exc:
        return b"", f"damaged or unreadable member: {exc or type(exc).__name__}"
    return b"".join(chunks), ""


def iter_dir(
    root: Path,
    limits: Limits,
    refusals: list[Refusal],
    errors: list[str],
    select: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Yield (relative path, content) for regular files under root; links leading outside are refused.

    ``select`` (a relative path -> read it?) lets several readers share one directory: every file is
    still checked and counted against the caps, only the selected ones are read."""
    root_real = root.resolve()
    total = 0
    count = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for dirname in list(dirnames):
            full = Path(dirpath, dirname)
            if full.is_symlink():
                dirnames.remove(dirname)
                refusals.append(Refusal(_rel(full, root), "directory link not followed"))
        for filename in sorted(filenames):
            full = Path(dirpath, filename)
            rel = _rel(full, root)
            count += 1
            if count > limits.max_members:
                errors.append(f"more than {limits.max_members} files; the rest was not read")
                return
            try:
                if full.is_symlink():
                    target = full.resolve()
                    if not target.is_relative_to(root_real):
                        refusals.append(Refusal(rel, "link leads outside the bundle; not followed"))
                        continue
                st = full.stat()
            except OSError as exc:
                refusals.append(Refusal(rel, f"unreadable: {exc.strerror or exc}"))
                continue
            if not stat.S_ISREG(st.st_mode):
                refusals.append(Refusal(rel, "not a regular file (device, FIFO or other)"))
                continue
            if st.st_size > limits.max_file_bytes:
                refusals.append(Refusal(rel, f"{st.st_size} bytes exceeds the per-file cap"))
                continue
            if total + st.st_size > limits.max_bundle_bytes:
                errors.append("bundle exceeds the total size cap; the rest was not read")
                return
            if select is not None and not select(rel):
                total += st.st_size
                continue
            try:
                with open(full, "rb") as fh:
                    data = fh.read(limits.max_file_bytes + 1)
            except OSError as exc:
                refusals.append(Refusal(rel, f"unreadable: {exc.strerror or exc}"))
                continue
            total += len(data)
            yield rel, data


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def extract_tree(path: Path, dest: Path, limits: Limits, refusals: list[Refusal], errors: list[str]) -> None:
    """Write the safe regular files of a tarball under dest (a private work directory)."""
    dest_real = dest.resolve()
    for name, data in iter_tar(path, limits, refusals, errors):
        target = (dest / name).resolve()
        if not target.is_relative_to(dest_real):  # belt and braces: safe_member_name already checked
            refusals.append(Refusal(name, "would be written outside the work directory"))
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as fh:
                fh.write(data)
        except FileExistsError:
            refusals.append(Refusal(name, "duplicate member name; the first copy was kept"))
        except OSError as exc:
            refusals.append(Refusal(name, f"could not be written to the work directory: {exc.strerror}"))


_GZIP_MAGIC = b"\x1f\x8b"
_GZ_CHUNK = 1024 * 1024


def gunzip_members(fh: BinaryIO, size: int, limits: Limits) -> tuple[bytes, list[str]]:
    """The decoded bytes of every whole gzip member of a stream of ``size`` compressed bytes (``gzip -c
    >>`` appends one member per write), and the problems met: a cut last member (a killed run) or a
    damaged one is left out, decoding stops at the per-file cap and the expansion ratio, in bounded
    steps so a bomb never expands in one call.  Raises ValueError when no member decodes whole."""
    problems: list[str] = []
    kept: list[bytes] = []  # members decoded whole
    current: list[bytes] = []  # the member being decoded
    started = False  # the current member has been given input
    total = members = 0
    d = zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        data = pending or fh.read(_GZ_CHUNK)
        pending = b""
        if not data:
            if started and not d.eof:
                current.append(d.flush())  # output zlib still held when the output cap stopped it
            if started and d.eof:
                kept.extend(current)
            elif started:
                problems.append(f"the last gzip member ({members + 1}) is cut (a killed run?): not read")
            break
        started = True
        try:
            out = d.decompress(data, _GZ_CHUNK)  # bounded: a bomb never expands in one call
        except zlib.error as exc:
            problems.append(f"gzip member {members + 1} is damaged ({exc}); the rest was not read")
            break
        total += len(out)
        if total > limits.max_file_bytes:
            problems.append(f"decoded text over the {limits.max_file_bytes}-byte cap; the rest was not read")
            break
        if total > limits.ratio_floor_bytes and total > limits.max_ratio * size:
            problems.append(f"expands more than {limits.max_ratio:g} times; the rest was not read")
            break
        current.append(out)
        if not d.eof:
            pending = d.unconsumed_tail
        else:
            members += 1
            kept.extend(current)
            current, started = [], False
            rest = d.unused_data
            d = zlib.decompressobj(wbits=31)
            if rest and not rest.startswith(_GZIP_MAGIC[:1]):
                problems.append(f"bytes after gzip member {members} are not gzip: not read")
                break
            pending = rest
    if not kept:
        raise ValueError("no gzip member of it decodes whole" + (f" ({problems[0]})" if problems else ""))
    return b"".join(kept), problems
