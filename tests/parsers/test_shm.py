"""Tests for parsers.shm.

No public capture of the collector's shm probe exists (it is our own composite of
``df -P -B1 /dev/shm`` and ``ls -la /dev/shm``), so tests/fixtures/shm/ holds a hand-written one in
those exact formats.  The df -h pod line is taken from the real df fixture
``tests/fixtures/df/hyperpod-eks-slinky-compute-pod-hash-prefixed.txt``.
"""

from __future__ import annotations

from pathlib import Path

import parsers
from parsers import shm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SLINKY = FIXTURES / "df" / "hyperpod-eks-slinky-compute-pod-hash-prefixed.txt"

STALE_NCCL = (FIXTURES / "shm" / "handwritten-collector-p5-stale-nccl.txt").read_text(encoding="utf-8")

NO_LISTING = """\
Filesystem     1-blocks  Used Available Capacity Mounted on
shm            67108864     0  67108864       0% /dev/shm
--- ls -la /dev/shm
ls: cannot open directory '/dev/shm': Permission denied
"""


def test_detect_kind() -> None:
    assert parsers.detect_kind(STALE_NCCL) == "shm"
    assert parsers.detect_kind(NO_LISTING) == "shm"
    assert (
        parsers.detect_kind("Filesystem Size Used Avail Use% Mounted on\nshm 64M 0 64M 0% /dev/shm\n")
        == "shm"
    )


def test_collector_output_with_stale_nccl_segments() -> None:
    result = shm.parse(STALE_NCCL)
    assert result.issues == []
    (row,) = result.rows("shm")
    assert (row["line"], row["device"], row["fstype"]) == (2, "tmpfs", "tmpfs")
    assert (row["size_bytes"], row["used_bytes"], row["avail_bytes"], row["use_pct"]) == (
        1040297627648,
        19275776,
        1040278351872,
        1.0,
    )
    assert (row["entries"], row["nccl_files"], row["nccl_bytes"]) == (3, 2, 2 * 9637888)
    assert sorted(row) == sorted(c.name for c in shm.SCHEMA["shm"])


def test_listing_not_readable() -> None:
    (row,) = shm.parse(NO_LISTING).rows("shm")
    assert (row["device"], row["fstype"], row["size_bytes"]) == ("shm", "tmpfs", 64 * 1024**2)
    assert row["nccl_files"] is None and row["entries"] is None


def test_df_h_pod_line_from_real_fixture() -> None:
    line = next(x for x in SLINKY.read_text(encoding="utf-8").splitlines() if x.endswith("/dev/shm"))
    line = line.removeprefix("# ")
    assert line.split()[:2] == ["shm", "64M"]
    (row,) = shm.parse(line).rows("shm")
    assert (row["line"], row["size_bytes"], row["used_bytes"], row["use_pct"], row["fstype"]) == (
        1,
        67108864,
        0,
        0.0,
        "tmpfs",
    )
    assert row["nccl_files"] is None


def test_df_t_gives_the_type() -> None:
    text = "Filesystem Type 1B-blocks Used Available Use% Mounted on\nnone ramfs 0 0 0 - /dev/shm\n"
    (row,) = shm.parse(text).rows("shm")
    assert (row["fstype"], row["size_bytes"], row["use_pct"]) == ("ramfs", 0, None)
