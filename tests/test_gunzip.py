"""analyzer.intake.gunzip.Gunzip against Python's own gzip module: the same bytes for whole files
(one member, several, zero padding after one), and for a damaged file every byte ``GzipFile`` gives
before its error (often more: it loses the bytes of the read that fails), then an error."""

from __future__ import annotations

import gzip
import io
import os
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.intake.gunzip import STEP, Gunzip

TEXT = b"".join(b"line %d of a kernel log: NVRM: Xid (PCI:0000:53:00): 79\n" % i for i in range(40000))
DATA = TEXT + os.urandom(300_000)  # text and bytes that do not compress


def read_all(raw: bytes, step: int = 10240) -> tuple[bytes, BaseException | None]:
    """What a reader in ``step`` reads gets before the stream ends or fails."""
    stream = Gunzip(io.BytesIO(raw))
    out = bytearray()
    try:
        while chunk := stream.read(step):
            out += chunk
    except (EOFError, zlib.error, OSError) as exc:
        return bytes(out), exc
    return bytes(out), None


def python_reads(raw: bytes, step: int = 10240) -> tuple[bytes, BaseException | None]:
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
            while chunk := f.read(step):
                out += chunk
    except (EOFError, zlib.error, OSError) as exc:
        return bytes(out), exc
    return bytes(out), None


@pytest.mark.parametrize(
    ("raw", "data"),
    [
        (gzip.compress(DATA), DATA),
        (gzip.compress(DATA[:1000]) + gzip.compress(DATA[1000:]), DATA),  # concatenated members
        (gzip.compress(DATA) + b"\0" * 1000, DATA),  # zero padding, as some tape writers leave
        (gzip.compress(b""), b""),
    ],
    ids=["one member", "two members", "zero padding", "empty"],
)
def test_whole_files_read_as_python_reads_them(raw: bytes, data: bytes) -> None:
    assert read_all(raw) == python_reads(raw) == (data, None)


def test_a_file_cut_short_gives_every_byte_before_the_end() -> None:
    raw = gzip.compress(DATA)
    cut = raw[: len(raw) // 2]
    mine, failure = read_all(cut)
    theirs, their_failure = python_reads(cut)
    assert isinstance(failure, EOFError) and isinstance(their_failure, EOFError)
    assert mine.startswith(theirs) and DATA.startswith(mine) and len(mine) > len(DATA) // 4


def test_corrupt_data_gives_the_bytes_before_the_damage() -> None:
    raw = bytearray(gzip.compress(DATA))
    raw[len(raw) // 2 : len(raw) // 2 + 64] = b"\xff" * 64
    mine, failure = read_all(bytes(raw))
    theirs, their_failure = python_reads(bytes(raw))
    assert isinstance(failure, zlib.error) and isinstance(their_failure, (zlib.error, OSError))
    # (corrupt deflate data may decode to wrong bytes before zlib notices: both readers give them)
    assert mine.startswith(theirs) and DATA[: len(DATA) // 4] == mine[: len(DATA) // 4]


def test_something_else_after_a_member_is_not_gzip() -> None:
    raw = gzip.compress(DATA[:5000]) + b"PK\x03\x04 not gzip"
    mine, failure = read_all(raw)
    theirs, their_failure = python_reads(raw)
    assert mine == DATA[:5000] and mine.startswith(theirs)  # Python's reader loses the member's bytes
    assert isinstance(failure, gzip.BadGzipFile) and str(failure) == str(their_failure)


def test_a_read_decodes_at_most_a_step_ahead() -> None:
    """A bomb's bytes come out a step at a time: the caller's caps see them before more is decoded."""
    stream = Gunzip(io.BytesIO(gzip.compress(b"\0" * (64 * STEP))))
    buffer = bytearray(16)
    assert stream.readinto(buffer) == 16
    assert len(stream._out) <= STEP  # what waits decoded is one step at most


@settings(max_examples=60, deadline=None)
@given(
    st.binary(min_size=0, max_size=20000),
    st.integers(min_value=0, max_value=3),
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=1, max_value=70000),
)
def test_damaged_anywhere(payload: bytes, members: int, cut_at: float, step: int) -> None:
    """Any payload in 1-4 members, cut anywhere, read in any step: the bytes Python's reader gives are
    a prefix of ours, ours a prefix of the payload; an intact file gives all of it and no error."""
    body = payload * 8
    pieces = [body[i :: members + 1] for i in range(members + 1)]
    raw = b"".join(gzip.compress(p) for p in pieces)
    expected = b"".join(pieces)
    cut = raw[: int(len(raw) * cut_at)]
    mine, failure = read_all(cut, step)
    theirs, _ = python_reads(cut, step)
    assert expected.startswith(mine) and mine.startswith(theirs)
    if cut == raw:
        assert (mine, failure) == (expected, None)
