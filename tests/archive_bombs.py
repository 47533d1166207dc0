"""Compression bombs, built at test time (none is ever kept in the repository).

A bomb is a small file that decodes to a great deal of zeros.  Compressing a GiB of zeros takes a
compressor many seconds, so the builders here write the compressed stream by hand from one compressed
piece repeated: an xz stream of many identical blocks (the .xz container format, tukaani.org
xz-file-format-1.2.0: stream header, blocks of LZMA2 data with a header each, the index, the stream
footer), and a gzip or zip member whose deflate data is one block of zeros repeated after full
flushes (RFC 1951: a full flush ends byte-aligned with no back reference into what came before, so
each repeat decodes alone).  What they build is what ``xz``, ``gzip`` and ``unzip`` read.
"""

from __future__ import annotations

import functools
import io
import lzma
import struct
import tarfile
import zlib

MIB = 1024**2
GIB = 1024**3
_ZEROS = bytes(MIB)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def xz_of(prefix: bytes, zeros_mib: int, suffix: bytes) -> bytes:
    """An .xz stream (no integrity check) decoding to ``prefix``, ``zeros_mib`` MiB of zeros, ``suffix``."""
    lzma2 = {"id": lzma.FILTER_LZMA2, "preset": 0}
    props = lzma._encode_filter_properties(lzma2)  # type: ignore[attr-defined]

    def block(data: bytes) -> tuple[bytes, int, int]:
        packed = lzma.compress(data, format=lzma.FORMAT_RAW, filters=[lzma2])
        flags = b"\x00" + _varint(0x21) + _varint(len(props)) + props  # one filter: LZMA2
        pad = (-(1 + len(flags) + 4)) % 4
        head = bytes([(1 + len(flags) + pad + 4) // 4 - 1]) + flags + b"\0" * pad
        head += struct.pack("<I", zlib.crc32(head))
        return head + packed + b"\0" * (-len(packed) % 4), len(head) + len(packed), len(data)

    zero_block = block(_ZEROS)
    blocks = [block(prefix)] + [zero_block] * zeros_mib + ([block(suffix)] if suffix else [])
    flags = b"\x00\x00"  # no check
    out = bytearray(b"\xfd7zXZ\x00" + flags + struct.pack("<I", zlib.crc32(flags)))
    index = bytearray(b"\x00" + _varint(len(blocks)))
    for data, unpadded, size in blocks:
        out += data
        index += _varint(unpadded) + _varint(size)
    index += b"\0" * (-len(index) % 4)
    index += struct.pack("<I", zlib.crc32(index))
    out += index
    backward = struct.pack("<I", len(index) // 4 - 1) + flags
    out += struct.pack("<I", zlib.crc32(backward)) + backward + b"YZ"
    return bytes(out)


@functools.lru_cache(maxsize=8)
def deflate_of(prefix: bytes, zeros_mib: int, suffix: bytes) -> tuple[bytes, int, int]:
    """Raw deflate data decoding to ``prefix``, ``zeros_mib`` MiB of zeros, ``suffix``; with the
    CRC-32 and the size of what it decodes to."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = packer.compress(prefix) + packer.flush(zlib.Z_FULL_FLUSH)
    zero = packer.compress(_ZEROS) + packer.flush(zlib.Z_FULL_FLUSH)
    assert packer.compress(_ZEROS) + packer.flush(zlib.Z_FULL_FLUSH) == zero  # each repeat alike
    tail = packer.compress(suffix) + packer.flush(zlib.Z_FINISH)
    crc = zlib.crc32(prefix)
    for _ in range(zeros_mib):
        crc = zlib.crc32(_ZEROS, crc)
    crc = zlib.crc32(suffix, crc)
    return head + zero * zeros_mib + tail, crc, len(prefix) + zeros_mib * MIB + len(suffix)


def gzip_of(prefix: bytes, zeros_mib: int, suffix: bytes) -> bytes:
    """One gzip member (RFC 1952) decoding to ``prefix``, ``zeros_mib`` MiB of zeros, ``suffix``."""
    data, crc, size = deflate_of(prefix, zeros_mib, suffix)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + data + struct.pack("<II", crc, size & 0xFFFFFFFF)


def gzip_members(first: bytes, members: int) -> bytes:
    """``gzip -c >>`` appended: ``first`` as one member, then ``members`` members of 1 MiB of zeros."""
    zero = gzip_of(b"", 1, b"")
    return gzip_of(first, 0, b"") + zero * members


def tar_around(
    members: list[tuple[str, bytes]], bomb: str, bomb_size: int, after: list[tuple[str, bytes]]
) -> tuple[bytes, bytes]:
    """A tar stream split around the data of one member of ``bomb_size`` zeros: (the members before
    it and its header, the members after it and the archive's end), so that a builder puts the zeros
    between the two."""
    assert bomb_size % 512 == 0

    def tar(files: list[tuple[str, bytes]], end: bool) -> bytes:
        buf = io.BytesIO()
        archive = tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT)  # noqa: SIM115 (left open: its end is written after the zeros)
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if end:
            archive.close()
        return buf.getvalue()

    header = tarfile.TarInfo(bomb)
    header.size = bomb_size
    return tar(members, False) + header.tobuf(tarfile.GNU_FORMAT), tar(after, True)


def zip_of(members: list[tuple[str, bytes, int]]) -> bytes:
    """A zip (PKWARE APPNOTE 6.3: local headers, data, central directory, end record) of deflated
    members, each (name, its text, MiB of zeros after the text)."""
    out = bytearray()
    central = bytearray()
    for name, text, zeros_mib in members:
        data, crc, size = deflate_of(text, zeros_mib, b"")
        raw = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw), 0)
        out += raw + data
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0314, 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw),
            0, 0, 0, 0, 0o100644 << 16, offset,
        )  # fmt: skip
        central += raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)
