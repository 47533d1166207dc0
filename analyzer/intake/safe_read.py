"""Read untrusted bundles without ever writing outside a private work directory.

Tarballs are read as one stream, front to back (``tarfile`` mode ``r|`` over :class:`DecodedStream`,
which decodes gzip (:mod:`analyzer.intake.gunzip`), xz and bzip2 itself in bounded steps: never a
backward seek, never more than a step decoded ahead of what was asked for).  The decoded stream stops at the bundle's total cap and at the expansion
ratio (decoded bytes over the compressed bytes read, past a floor), wherever it is: in a member being
read or in one being skipped, so a compression bomb ends in seconds whatever its members declare, and
the member it stopped in is named.  Members are checked one by one and refused when they have an
absolute name or ``..``, are devices or FIFOs, are sparse, exceed the per-file cap, push the bundle
over its total cap, or expand implausibly.

Links are what the producer meant them to be: a symbolic or hard link whose chain of links resolves to
a regular file inside the archive (``proc/mounts -> self/mounts``, ``proc/self -> 4242``,
``etc/mtab -> ../proc/self/mounts``) is read as that file, once the stream has ended; a link that is
absolute, leads out of the archive, ends in a loop or in no member is refused with that reason.  One
pass cannot go back for a target it has passed, so small files (:data:`LINK_HOLD_FILE_BYTES` each,
:data:`LINK_HOLD_BYTES` in all) are held until the end for links that may name them.

Python's extraction filters (PEP 706) are not relied on: they are missing from some distribution
Pythons still in use, and this module never calls ``extract`` at all.  A refused member is reported;
reading continues.  A truncated or corrupt archive keeps every member read before the damage.  Zip
archives (:func:`iter_zip`) are read with the same contract and caps.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, cast

from analyzer.intake.gunzip import Gunzip


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


#: small files held until a tarball's end for the links that may name them (one pass cannot go back)
LINK_HOLD_FILE_BYTES = 4 * 1024**2
LINK_HOLD_BYTES = 32 * 1024**2
#: the buffer between tarfile's 10 KiB reads and the decoded stream, which is then read (and its caps
#: checked) once per this many bytes instead of a Python call per 10 KiB
STREAM_READ = 256 * 1024
#: links followed in one chain before it is taken for a loop (Linux's ELOOP limit)
MAX_LINK_HOPS = 40
#: the magic bytes of the compressions a tarball may come in
_MAGIC = ((b"\x1f\x8b", "gz"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bz2"))


class CapReached(OSError):
    """Reading stopped at a cap (decoded size, expansion ratio): an OSError, so that code treating a
    stream it cannot read further as damaged stops there too."""


def compression_of(head: bytes) -> str:
    """'gz', 'xz', 'bz2' by a file's first bytes; '' for none of them (a plain tar).

    >>> compression_of(b"\\x1f\\x8b\\x08"), compression_of(b"\\xfd7zXZ\\x00"), compression_of(b"ustar")
    ('gz', 'xz', '')
    """
    return next((name for magic, name in _MAGIC if head.startswith(magic)), "")


class DecodedStream(io.RawIOBase):
    """The decoded bytes of a file (gzip, xz, bzip2 or none, by its magic bytes; concatenated gzip
    members and xz streams included), read front to back in bounded steps: a read never decodes more
    than it asks for (gzip: a 256 KiB step at most beyond it, :mod:`analyzer.intake.gunzip`), and the
    stream raises :class:`CapReached` once it has decoded more than the
    bundle's total cap (with room for headers) or, past ``ratio_floor_bytes``, more than ``max_ratio``
    times the compressed bytes read so far."""

    def __init__(self, raw: BinaryIO, limits: Limits) -> None:
        super().__init__()
        start = raw.tell()
        head = raw.read(6)
        raw.seek(start)
        self.compression = compression_of(head)
        self._raw, self._start, self._limits = raw, start, limits
        self._inner: io.BufferedIOBase | io.RawIOBase
        if self.compression == "gz":
            self._inner = Gunzip(raw)
        elif self.compression == "xz":
            self._inner = lzma.LZMAFile(raw)  # noqa: SIM115 (closed by close() below)
        elif self.compression == "bz2":
            self._inner = bz2.BZ2File(raw)
        else:
            self._inner = cast(io.BufferedIOBase, raw)  # a file opened 'rb' is one
        self.decoded = 0
        self._cap = limits.max_bundle_bytes + limits.max_members * 1024

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        """Close the decoder; the raw file stays its opener's to close."""
        inner = getattr(self, "_inner", None)
        if inner is not None and inner is not self._raw:
            inner.close()
        super().close()

    def consumed(self) -> int:
        """The compressed bytes read so far (at least 1)."""
        return max(self._raw.tell() - self._start, 1)

    def readinto(self, buffer: Any) -> int:
        try:
            n = self._inner.readinto(buffer)
        except lzma.LZMAError as exc:
            raise OSError(f"xz data damaged: {exc}") from exc
        except zlib.error as exc:
            raise OSError(f"gzip data damaged: {exc}") from exc
        self.decoded += n
        limits = self._limits
        if self.decoded > self._cap:
            raise CapReached(
                f"more than {self._cap} bytes decoded, over the total size cap (a compression bomb?)"
            )
        if self.decoded > limits.ratio_floor_bytes and self.decoded > limits.max_ratio * self.consumed():
            raise CapReached(
                f"expansion ratio {self.decoded / self.consumed():.0f}:1 is implausible: {self.decoded} bytes "
                f"decoded from {self.consumed()} (over {limits.max_ratio:g}:1; a compression bomb?)"
            )
        return n


@contextmanager
def open_tar(path: Path, limits: Limits | None = None) -> Iterator[tarfile.TarFile]:
    """A tarball as a stream of members, front to back (headers, and the data of those read), decoded
    in bounded steps and stopped at the caps (:class:`CapReached`, an OSError): for looking at a
    tarball's layout without the cost a bomb would make ``tarfile``'s own decoding pay."""
    with (
        open(path, "rb") as raw,
        tarfile.open(fileobj=DecodedStream(raw, limits or Limits()), mode="r|") as archive,
    ):
        yield archive


def resolve_link(name: str, readlink: Callable[[str], tuple[str, bool] | None]) -> tuple[str | None, str]:
    """Where a link inside an archive (or a folder) leads, following every link on the way as the
    system would (``readlink(path) -> (target, is_hard_link)``, None for no link): the path of what
    it names, relative to the archive's root, or None and why it is not followed (absolute, out of
    the archive, a loop).  A symbolic link's target is relative to its folder, a hard link's to the
    archive's root.

    >>> links = {"top/proc/mounts": ("self/mounts", False), "top/proc/self": ("4242", False),
    ...          "top/etc/mtab": ("../proc/mounts", False), "top/a": ("b", False), "top/b": ("a", False),
    ...          "top/up": ("../../x", False), "top/abs": ("/etc/passwd", False)}
    >>> resolve_link("top/etc/mtab", lambda p: links.get(p))
    ('top/proc/4242/mounts', '')
    >>> resolve_link("top/a", lambda p: links.get(p))[1]
    "link to 'b' not followed: a loop of links"
    >>> resolve_link("top/up", lambda p: links.get(p))[1], resolve_link("top/abs", lambda p: links.get(p))[1]
    ("link to '../../x' not followed: it leads out of the archive", "link to '/etc/passwd' not followed: an absolute link leads out of the archive")
    """
    first = readlink(name)
    shown = first[0] if first else name
    resolved: list[str] = []
    pending = name.split("/")
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return None, f"link to {shown!r} not followed: it leads out of the archive"
            resolved.pop()
            continue
        here = "/".join([*resolved, part])
        link = readlink(here)
        if link is None:
            resolved.append(part)
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            return None, f"link to {shown!r} not followed: a loop of links"
        target, hard = link
        via = f" ({here} -> {target})" if here != name else ""
        if not target or target.startswith(("/", "\\")) or ":" in target.split("/")[0]:
            return None, f"link to {shown!r} not followed: an absolute link{via} leads out of the archive"
        if hard:
            resolved = []
        pending = target.replace("\\", "/").split("/") + pending
    return "/".join(resolved), ""


def too_big(size: int, limits: Limits) -> str | None:
    """Why a member of ``size`` bytes is not read: over the per-file cap (else None)."""
    return f"{size} bytes exceeds the per-file cap" if size > limits.max_file_bytes else None


def over_total(total: int, size: int, limits: Limits, what: str = "bundle") -> str | None:
    """Why reading stops before ``size`` more bytes: the total cap of the bundle (``what``) (else None)."""
    if total + size > limits.max_bundle_bytes:
        return f"{what} exceeds the total size cap; the rest was not read"
    return None


def _refused(info: tarfile.TarInfo, limits: Limits) -> str | None:
    """Why a member that is no folder or link is not read (not a regular file, sparse, refused by the
    library's data filter, over the per-file cap), else None."""
    if not info.isreg():
        return "not a regular file (device, FIFO or other)"
    if info.issparse():
        return "sparse member (holes the archive does not hold): not read"
    if refused := _library_filter(info):
        return refused
    return too_big(info.size, limits)


def _over_caps(total: int, size: int, name: str, limits: Limits, archive_bytes: int) -> str | None:
    """Why reading stops before a member of ``size`` bytes (the total cap, an implausible expansion the
    headers already tell), else None."""
    if stop := over_total(total, size, limits):
        return stop
    if total + size > max(limits.ratio_floor_bytes, limits.max_ratio * archive_bytes):
        # told by the header, before decompressing: no archive holds more than that
        return (
            f"expansion ratio over {limits.max_ratio:g}:1 is implausible: the members "
            f"declare more than that times the archive's {archive_bytes} bytes (a "
            f"compression bomb?); reading stopped at {name}"
        )
    return None


def iter_tar(
    path: Path,
    limits: Limits,
    refusals: list[Refusal],
    errors: list[str],
    select: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Yield (member path, content) for the safe regular files of a tarball, in one pass, then for
    each link that resolves to one of them (:func:`resolve_link`) the link's path with that file's
    content.  ``select`` (a member path -> read it?) as in :func:`iter_dir`: every member is still
    checked and counted against the caps, only the selected ones (and the links selected) are
    yielded."""
    total = 0
    count = 0
    seen: set[str] = set()  # every member name met
    files: set[str] = set()  # regular files read or counted
    dirs: set[str] = set()
    links: dict[str, tuple[str, bool]] = {}
    held: dict[str, bytes] = {}  # small files kept for the links that may name them
    held_bytes = 0
    inside = ""  # the member whose data the stream is in (being read or skipped)
    with open(path, "rb") as raw:
        archive_bytes = os.fstat(raw.fileno()).st_size
        try:
            stream = DecodedStream(raw, limits)
            with tarfile.open(fileobj=io.BufferedReader(stream, STREAM_READ), mode="r|") as archive:
                for info in archive:
                    inside = ""
                    count += 1
                    if count > limits.max_members:
                        errors.append(f"more than {limits.max_members} members; the rest was not read")
                        break
                    name = safe_member_name(info.name)
                    if name is None:
                        if not (
                            info.isdir() and info.name.rstrip("/") == "."
                        ):  # not the top of 'tar -C dir .'
                            refusals.append(Refusal(info.name, "unsafe name (absolute path or '..')"))
                            inside = info.name
                        continue
                    seen.add(name)
                    if info.isdir():
                        dirs.add(name)
                        continue
                    if info.issym() or info.islnk():
                        links[name] = (info.linkname, info.islnk())
                        continue
                    inside = name
                    if (why := _refused(info, limits)) is not None:
                        refusals.append(Refusal(name, why))
                        continue
                    if (stop := _over_caps(total, info.size, name, limits, archive_bytes)) is not None:
                        errors.append(stop)
                        break
                    files.add(name)
                    wanted = select is None or select(name)
                    hold = info.size <= LINK_HOLD_FILE_BYTES and held_bytes + info.size <= LINK_HOLD_BYTES
                    if not (wanted or hold):
                        total += info.size  # counted; the stream skips its data
                        continue
                    member = archive.extractfile(info)
                    if member is None:
                        continue
                    data = member.read(limits.max_file_bytes + 1)
                    inside = ""
                    total += len(data)
                    consumed = stream.consumed()
                    if total > limits.ratio_floor_bytes and total / consumed > limits.max_ratio:
                        errors.append(
                            f"expansion ratio {total / consumed:.0f}:1 is implausible; reading stopped"
                        )
                        break
                    if hold:
                        held[name] = data
                        held_bytes += len(data)
                    if wanted:
                        yield name, data
        except CapReached as exc:
            if inside and not any(r.path == inside for r in refusals):
                refusals.append(Refusal(inside, f"reading stopped in this member: {exc}"))
            where = f"reading stopped in {inside}" if inside else "reading stopped"
            errors.append(f"{exc}; {where}, the rest was not read")
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            errors.append(f"archive damaged after {count} members: {exc or type(exc).__name__}")
    yield from _linked(links, seen, files, dirs, held, select, refusals)


def _linked(
    links: dict[str, tuple[str, bool]],
    seen: set[str],
    files: set[str],
    dirs: set[str],
    held: dict[str, bytes],
    select: Callable[[str], bool] | None,
    refusals: list[Refusal],
) -> Iterator[tuple[str, bytes]]:
    """The links of a tarball, once its stream has ended: each that resolves to a file held is
    yielded with that file's content; one that leads nowhere it may is refused; links to folders
    give nothing (their files are read where they lie)."""
    if not links:
        return
    parents = {name.rpartition("/")[0] for name in files | dirs}
    for name, (target, _hard) in links.items():
        final, why = resolve_link(name, links.get)
        if final is None:
            refusals.append(Refusal(name, why))
            continue
        if final in dirs or final in parents or any(p.startswith(final + "/") for p in parents):
            continue  # a folder's link
        if select is not None and not select(name):
            continue
        data = held.get(final)
        if data is not None:
            yield name, data
        elif final in files:
            refusals.append(
                Refusal(
                    name,
                    f"link to {target!r} ({final}): its target is larger than the files held for links "
                    f"({LINK_HOLD_FILE_BYTES} bytes each, {LINK_HOLD_BYTES} in all); not read",
                )
            )
        elif final in seen:
            refusals.append(Refusal(name, f"link to {target!r} ({final}): its target was not read"))
        else:
            refusals.append(Refusal(name, f"link to {target!r}: no member {final} in the archive"))


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
    so a bomb never expands past the cap; a member whose data is damaged (CRC) is refused.  What is
    inflated counts whether the member is kept or refused: a member expanding over the ratio stops the
    archive there (a compression bomb), and the whole archive inflates no more than the total cap and
    the ratio times its size allow, however many members it holds.  ``select``
    (a member path -> read it?) as in :func:`iter_dir`: every member is still checked and its declared
    size counted, only the selected ones are read."""
    total = 0
    consumed = 0  # compressed bytes of the members read
    inflated = 0  # bytes inflated, of members kept or refused
    try:
        with open(path, "rb") as raw:
            size = os.fstat(raw.fileno()).st_size
            allowance = min(limits.max_bundle_bytes, max(limits.ratio_floor_bytes, limits.max_ratio * size))
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
                    if why := too_big(info.file_size, limits):
                        refusals.append(Refusal(name, why))
                        continue
                    if stop := over_total(total, info.file_size, limits, "archive"):
                        errors.append(stop)
                        return
                    if select is not None and not select(name):
                        total += info.file_size
                        continue
                    data, refused, spent = _read_zip_member(archive, info, limits, int(allowance - inflated))
                    inflated += spent
                    if refused:
                        refusals.append(Refusal(name, refused))
                        if refused.startswith(_STOPS):
                            errors.append(
                                f"{refused} in {name}; reading stopped there, the rest was not read"
                            )
                            return
                        continue
                    total += len(data)
                    consumed += info.compress_size
                    if stop := over_total(total, 0, limits, "archive"):
                        errors.append(stop)
                        return
                    if total > limits.ratio_floor_bytes and total / max(consumed, 1) > limits.max_ratio:
                        errors.append(
                            f"expansion ratio {total / max(consumed, 1):.0f}:1 is implausible; reading stopped"
                        )
                        return
                    yield name, data
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, OSError, struct.error) as exc:
        errors.append(f"zip archive damaged: {exc or type(exc).__name__}")


#: the refusals of a zip member that stop the whole archive (a compression bomb)
_STOPS = ("expands more than", "the archive inflates more than")


def _read_zip_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits, room: int
) -> tuple[bytes, str, int]:
    """A member's bytes read in bounded steps, or the reason it was not read: over the per-file cap by
    its actual size (a header may lie), an implausible expansion, more than the ``room`` the archive
    has left, damaged data; and the bytes inflated either way."""
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
                    return b"", f"more than {limits.max_file_bytes} bytes (the per-file cap) when read", size
                if size > limits.ratio_floor_bytes and size / max(info.compress_size, 1) > limits.max_ratio:
                    return (
                        b"",
                        f"expands more than {limits.max_ratio:g} times (a compression bomb?); not read",
                        size,
                    )
                if size > room:
                    return (
                        b"",
                        (
                            "the archive inflates more than the total cap or the expansion ratio allows "
                            "(a compression bomb?); not read"
                        ),
                        size,
                    )
                chunks.append(chunk)
    except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError, OSError) as exc:
        return b"", f"damaged or unreadable member: {exc or type(exc).__name__}", size
    return b"".join(chunks), "", size


def iter_dir(
    root: Path,
    limits: Limits,
    refusals: list[Refusal],
    errors: list[str],
    select: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Yield (relative path, content) for regular files under root.

    A link is read as what it names when its chain of links resolves inside root (:func:`resolve_link`,
    as in a tarball); one that is absolute, leads outside, or ends in a loop is refused.  A folder's
    link is not walked into (its files are read where they lie), and refused only when it leads
    outside.  ``select`` (a relative path -> read it?) lets several readers share one directory: every
    file is still checked and counted against the caps, only the selected ones are read."""
    total = 0
    count = 0

    def readlink(rel: str) -> tuple[str, bool] | None:
        full = root / rel
        return (os.readlink(full), False) if full.is_symlink() else None

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for dirname in list(dirnames):
            full = Path(dirpath, dirname)
            if full.is_symlink():
                dirnames.remove(dirname)
                rel = _rel(full, root)
                where, why = _resolve_in(rel, readlink)
                if where is None:
                    refusals.append(Refusal(rel, f"directory {why}"))
        for filename in sorted(filenames):
            full = Path(dirpath, filename)
            rel = _rel(full, root)
            count += 1
            if count > limits.max_members:
                errors.append(f"more than {limits.max_members} files; the rest was not read")
                return
            try:
                if full.is_symlink():
                    where, why = _resolve_in(rel, readlink)
                    if where is None:
                        refusals.append(Refusal(rel, why))
                        continue
                    full = root / where
                    if full.is_symlink() or not full.exists():
                        refusals.append(Refusal(rel, f"link to {os.readlink(root / rel)!r}: no file {where}"))
                        continue
                    if full.is_dir():
                        continue  # a folder's link: its files are read where they lie
                st = full.stat()
            except OSError as exc:
                refusals.append(Refusal(rel, f"unreadable: {exc.strerror or exc}"))
                continue
            if not stat.S_ISREG(st.st_mode):
                refusals.append(Refusal(rel, "not a regular file (device, FIFO or other)"))
                continue
            if big := too_big(st.st_size, limits):
                refusals.append(Refusal(rel, big))
                continue
            if stop := over_total(total, st.st_size, limits):
                errors.append(stop)
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


def _resolve_in(rel: str, readlink: Callable[[str], tuple[str, bool] | None]) -> tuple[str | None, str]:
    """:func:`resolve_link` in a folder (its links read from the disk), the folder said for the archive."""
    try:
        where, why = resolve_link(rel, readlink)
    except OSError as exc:
        return None, f"link not readable: {exc.strerror or exc}"
    return where, why.replace("out of the archive", "outside the bundle")


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


def gunzip_members(
    fh: BinaryIO, size: int, limits: Limits, unread: list[Refusal] | None = None
) -> tuple[bytes, list[str]]:
    """The decoded bytes of every whole gzip member of a stream of ``size`` compressed bytes (``gzip -c
    >>`` appends one member per write), and the problems met: a cut last member (a killed run) or a
    damaged one is left out, decoding stops at the per-file cap and the expansion ratio, in bounded
    steps so a bomb never expands in one call.  Raises ValueError when no member decodes whole.
    A cap stops decoding inside a member: with ``unread``, that member is added to it
    (``gzip member N``, with the cap), so a caller names it as an unread member of its input."""
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
        cap = ""
        if total > limits.max_file_bytes:
            cap = f"decoded text over the {limits.max_file_bytes}-byte cap"
        elif total > limits.ratio_floor_bytes and total > limits.max_ratio * size:
            cap = f"expands more than {limits.max_ratio:g} times"
        if cap:
            problems.append(f"{cap} in gzip member {members + 1}; the rest was not read")
            if unread is not None:
                unread.append(Refusal(f"gzip member {members + 1}", f"{cap}; decoding stopped there"))
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
