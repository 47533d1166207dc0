"""Tests for parsers.mounts on tests/fixtures/mounts/.

No public capture of a HyperPod node's mount table was found, so the fixtures are hand-written:
they follow the exact /proc/mounts and util-linux ``mount`` formats, with the mounts a HyperPod
Slurm node has (root on /dev/root, /opt/sagemaker on the second NVMe, FSx for Lustre on /fsx,
/dev/shm tmpfs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import mounts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mounts"
PROC_MOUNTS = (FIXTURES / "handwritten-hyperpod-slurm-proc-mounts.txt").read_text(encoding="utf-8")
MOUNT_CMD = (FIXTURES / "handwritten-hyperpod-mount-cmd.txt").read_text(encoding="utf-8")
ESCAPED = "/dev/nvme2n1 /mnt/my\\040data xfs ro,relatime,attr2,inode64,noquota 0 0\n"


def by_mount(text: str) -> dict[str, dict]:
    result = mounts.parse(text)
    assert result.issues == []
    return {r["mountpoint"]: r for r in result.rows("mount")}


@pytest.mark.parametrize("text", [PROC_MOUNTS, MOUNT_CMD])
def test_detect_kind(text: str) -> None:
    assert parsers.detect_kind(text) == "mounts"


def test_proc_mounts() -> None:
    rows = by_mount(PROC_MOUNTS + ESCAPED)
    assert len(rows) == 11
    fsx = rows["/fsx"]
    assert (fsx["device"], fsx["fstype"], fsx["is_lustre"], fsx["read_only"], fsx["line"]) == (
        "10.1.71.197@tcp:/oyuutbev",
        "lustre",
        True,
        False,
        10,
    )
    assert fsx["options"] == "rw,flock,lazystatfs,encrypt"
    assert (rows["/opt/sagemaker"]["device"], rows["/opt/sagemaker"]["fstype"]) == ("/dev/nvme1n1", "ext4")
    assert rows["/dev/shm"]["fstype"] == "tmpfs"
    data = rows["/mnt/my data"]  # \040 decoded
    assert data["read_only"] is True and data["fstype"] == "xfs"
    assert sum(r["is_lustre"] for r in rows.values()) == 1
    names = sorted(c.name for c in mounts.SCHEMA["mount"])
    assert all(sorted(r) == names for r in rows.values())


def test_mount_command_output() -> None:
    rows = by_mount(MOUNT_CMD)
    assert list(rows) == ["/", "/dev/shm", "/opt/sagemaker", "/fsx"]
    assert rows["/fsx"]["is_lustre"] and rows["/fsx"]["options"] == "rw,flock,lazystatfs,encrypt"
    assert rows["/"]["options"] == "rw,relatime,discard,errors=remount-ro"


def test_bsd_form_and_prefixes() -> None:
    rows = by_mount("/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)\n")
    assert (rows["/"]["fstype"], rows["/"]["options"]) == ("apfs", "sealed,local,read-only,journaled")
    rows = by_mount("> " + MOUNT_CMD.replace("\n", "\n> ").rstrip("> "))
    assert len(rows) == 4
