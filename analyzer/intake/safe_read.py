"""Read untrusted bundles without ever writing outside a private work directory.

Tarballs are read as streams (``tarfile`` mode ``r|*``); members are checked one by one and refused when
they have an absolute name or ``..``, are links, devices or FIFOs, exceed the per-file cap, push the
bundle over its total cap, or expand implausibly (compression ratio).  Python's extraction filters
(PEP 706) are not relied on: they are missing from some distribution Pythons still in use, and this
module never calls ``extract`` at all.  A refused member is reported; reading continues.  A truncated
or corrupt archive keeps every member read before the damage.
"""

from __future__ import annotations

import os
import stat
import tarfile
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
