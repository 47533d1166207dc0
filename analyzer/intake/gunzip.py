"""A gzip file decoded in large bounded steps: what ``gzip.GzipFile`` gives, at a quarter of its calls.

``GzipFile`` decodes through a Python reader in 8 KiB steps (about 140 calls and four Python layers for
a 1 MB bundle, as much time as zlib itself).  :class:`Gunzip` hands zlib 128 KiB of the file at a time
and takes at most :data:`STEP` bytes out per call, so a read still never decodes more than a step ahead
of what was asked.  Like ``GzipFile`` it reads concatenated members and skips zero padding after one; it
gives every byte that can be decoded before it raises: ``EOFError`` for a file cut short,
``zlib.error`` for corrupt data (the bytes before the damage are found by decoding the failing piece
again in small steps), ``gzip.BadGzipFile`` for something other than a gzip member after the first.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import Any, BinaryIO

#: compressed bytes read from the file at a time (GzipFile's READ_BUFFER_SIZE)
READ = 128 * 1024
#: decoded bytes taken out of zlib at most per call
STEP = 256 * 1024
#: the steps, in compressed bytes, in which a failing piece is decoded again
SMALL = 512


class Gunzip(io.RawIOBase):
    """The decoded bytes of the gzip file ``raw`` (positioned at its first member)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self._zlib = zlib.decompressobj(31)
        self._pending = b""  # compressed bytes given to no decoder yet
        self._out = memoryview(b"")
        self._failure: BaseException | None = None
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._out and not self._done:
            self._decode()
        if not self._out:
            if self._failure is not None:
                raise self._failure
            return 0
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _decode(self) -> None:
        """Decode the next step into ``_out``, or settle the end (EOF, a next member, a failure)."""
        d = self._zlib
        if d.eof:
            self._next_member(d.unused_data)
            return
        data = d.unconsumed_tail or self._pending or self._raw.read(READ)
        self._pending = b""
        if not data:
            self._end(EOFError("Compressed file ended before the end-of-stream marker was reached"))
            return
        before = d.copy()
        try:
            self._out = memoryview(d.decompress(data, STEP))
        except zlib.error as exc:
            self._out = memoryview(_decodable(before, data))
            self._end(exc)

    def _next_member(self, rest: bytes) -> None:
        """After a member's end: zero padding skipped, then another member, the end, or not gzip."""
        rest = (rest or self._raw.read(READ)).lstrip(b"\x00")
        while not rest:
            more = self._raw.read(READ)
            if not more:
                self._end(None)
                return
            rest = more.lstrip(b"\x00")
        if len(rest) < 2:
            rest += self._raw.read(1)
        if rest[:2] != b"\x1f\x8b":
            self._end(gzip.BadGzipFile(f"Not a gzipped file ({rest[:2]!r})"))
            return
        self._zlib = zlib.decompressobj(31)
        self._pending = rest

    def _end(self, failure: BaseException | None) -> None:
        self._done, self._failure = True, failure


def _decodable(decoder: Any, data: bytes) -> bytes:
    """The bytes a decoder gives from ``data`` before it meets the damage, fed in small pieces."""
    out: list[bytes] = []
    taken = 0
    for at in range(0, len(data), SMALL):  # less than STEP bytes come before the damage (the call
        try:  # that failed would have stopped at STEP), so STEP bounds what is decoded here too
            out.append(decoder.decompress(data[at : at + SMALL], STEP - taken))
        except zlib.error:
            break
        taken += len(out[-1])
        if taken >= STEP:
            break
    return b"".join(out)
