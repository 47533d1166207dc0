"""Tests for parsers.df on the real fixtures in tests/fixtures/df/."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import df
from tests.skips import cases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "df"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))
G = 1024**3
T = 1024**4


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def by_mount(name: str) -> dict[str, dict]:
    result = df.parse(load(name))
    assert result.issues == []
    return {r["mountpoint"]: r for r in result.rows("filesystem_usage")}


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "df"


@pytest.mark.parametrize("name", ALL)
def test_rows_have_schema_columns(name: str) -> None:
    names = sorted(c.name for c in df.SCHEMA["filesystem_usage"])
    for row in df.parse(load(name)).rows("filesystem_usage"):
        assert sorted(row) == names


def test_hyperpod_controller_df_h() -> None:
    rows = by_mount("hyperpod-workshop-controller-opt-sagemaker-fsx.txt")
    assert len(rows) == 16
    fsx = rows["/fsx"]
    assert (fsx["device"], fsx["size_bytes"], fsx["use_pct"], fsx["is_lustre"], fsx["is_network"]) == (
        "10.1.71.197@tcp:/oyuutbev",
        int(1.2 * T),
        1.0,
        True,
        True,
    )
    assert fsx["used_bytes"] == int(5.5 * G) and fsx["fstype"] is None
    opt = rows["/opt/sagemaker"]
    assert (opt["device"], opt["size_bytes"], opt["used_bytes"]) == ("/dev/nvme1n1", 500 * G, 711 * 1024**2)
    assert rows["/"]["use_pct"] == 41.0
    assert rows["/snap/core18/2066"]["use_pct"] == 100.0 and rows["/snap/core18/2066"]["avail_bytes"] == 0
    assert sum(r["is_lustre"] for r in rows.values()) == 1


def test_slinky_pod_hash_prefixed() -> None:
    rows = by_mount("hyperpod-eks-slinky-compute-pod-hash-prefixed.txt")
    assert len(rows) == 10
    assert rows["/dev/shm"]["device"] == "shm" and rows["/dev/shm"]["size_bytes"] == 64 * 1024**2
    assert rows["/fsx"]["device"] == "10.1.12.93@tcp:/7c5dpb4v" and rows["/fsx"]["is_lustre"]
    home = rows["/home"]
    assert home["device"] == "fs-03221b7c7d3767607.fsx.us-west-2.amazonaws.com:/fsx"
    assert (home["is_lustre"], home["is_network"]) == (False, True)
    assert rows["/etc/slurm"]["used_bytes"] == 4096


def test_awsdocs_1k_blocks_backtick_device() -> None:
    rows = by_mount("awsdocs-fsx-df-1k-backtick-mountname.txt")
    assert len(rows) == 7
    fsx = rows["/fsx"]
    assert fsx["device"] == "123.456.789.0@tcp:/`mountname`"
    assert (fsx["size_bytes"], fsx["used_bytes"], fsx["avail_bytes"]) == (
        3547698816 * 1024,
        13824 * 1024,
        3547678848 * 1024,
    )
    assert fsx["is_lustre"] and rows["/"]["use_pct"] == 16.0 and rows["/"]["device"] == "/dev/xvda1"


def test_dlami_th_type_column() -> None:
    rows = by_mount("dlami-df-Th-ephemeral-ext4.txt")
    assert len(rows) == 9
    eph = rows["/opt/dlami/nvme"]
    assert (eph["device"], eph["fstype"], eph["size_bytes"], eph["use_pct"]) == (
        "/dev/mapper/vg.01-lv_ephemeral",
        "ext4",
        206 * G,
        39.0,
    )
    assert rows["/boot/efi"]["fstype"] == "vfat" and rows["/run"]["used_bytes"] == int(1.4 * 1024**2)
    assert not any(r["is_lustre"] for r in rows.values())


def test_lab105_df_t_lustre_servers_and_client() -> None:
    rows = by_mount("lab105-df-T-lustre-type.txt")
    assert len(rows) == 7
    client = rows["/mnt"]
    assert (client["device"], client["fstype"], client["is_lustre"], client["is_network"]) == (
        "192.168.50.105@tcp:/lustrefs",
        "lustre",
        True,
        True,
    )
    assert client["size_bytes"] == 100298752 * 1024
    mgs = rows["/lustre/mgs"]
    assert (mgs["device"], mgs["is_lustre"], mgs["is_network"], mgs["used_bytes"]) == (
        "mgspool/mgt",
        True,
        False,
        2688 * 1024,
    )
    assert rows["/"]["fstype"] == "xfs"


def test_posix_t_b1_wrapped_device_and_error_line() -> None:
    text = (
        "Filesystem     Type     1024-blocks    Used Available Capacity Mounted on\n"
        "/dev/root      ext4       101430960 9640004  91774572      10% /\n"
        "/dev/mapper/a-very-long-volume-group-name-lv_data\n"
        "               xfs       1048576000  524288 1048051712       1% /data\n"
        "df: /fsx: Cannot send after transport endpoint shutdown\n"
    )
    result = df.parse(text)
    rows = {r["mountpoint"]: r for r in result.rows("filesystem_usage")}
    assert rows["/data"]["device"] == "/dev/mapper/a-very-long-volume-group-name-lv_data"
    assert (rows["/data"]["line"], rows["/data"]["fstype"], rows["/data"]["used_bytes"]) == (
        3,
        "xfs",
        524288 * 1024,
    )
    assert rows["/fsx"]["error"] == "df: /fsx: Cannot send after transport endpoint shutdown"
    assert rows["/fsx"]["size_bytes"] is None and result.issues == []
    b1 = df.parse(
        "Filesystem 1B-blocks Used Available Use% Mounted on\ntmpfs 67108864 0 67108864 0% /dev/shm\n"
    )
    assert b1.rows("filesystem_usage")[0]["size_bytes"] == 67108864


def test_inodes() -> None:
    text = "Filesystem  Inodes  IUsed   IFree IUse% Mounted on\n/dev/root  12902400 12800000 102400 100% /\n"
    row = df.parse(text).rows("filesystem_usage")[0]
    assert (row["inodes_total"], row["inodes_used"], row["inode_use_pct"], row["size_bytes"]) == (
        12902400,
        12800000,
        100.0,
        None,
    )


# --- agreement with jc --------------------------------------------------------------------------

JC_CANNOT = {
    "awsdocs-fsx-df-1k-backtick-mountname.txt": "jc fails: the long device name breaks its column alignment",
    # tests/parsers/test_df_iostat_mounts_noise.py checks these pastes
    "asiaq-139-df-wrapped-mapper-device.txt": "jc fails on a device name wrapped onto its own line",
    "dysk-17-grep-no-header-arrow-prompt.txt": "grep'd rows without a header and '→' prompts: jc reads the prompt as a header",
    "sindresorhus-df-16-busybox-kP-prompt-cifs.txt": "a '/root # df -kP' prompt line first: jc reads it as the header",
    "aliyun-el8-df-h-vda1-docker-overlay-prompt.txt": "a '[root@... ~]# df -h' prompt line first: jc reads it as the header",
    # tests/parsers/test_paste_artefacts.py checks these against the originals
    "derived-pdf-one-line-from-centos-7.7-df.txt": "a table on one line (out of a PDF): jc reads no rows",
    "derived-commented-indented-from-ubuntu-18.04-df-h.txt": "'    # ' before every line: jc reads no header",
}


@pytest.mark.parametrize("name", cases(ALL, JC_CANNOT))
def test_agrees_with_jc(name: str) -> None:
    jc = pytest.importorskip("jc")
    text = load(name)
    theirs = jc.parse("df", text, quiet=True)
    ours = df.parse(text).rows("filesystem_usage")
    assert [r["mountpoint"] for r in ours] == [t["mounted_on"] for t in theirs]
    for mine, their in zip(ours, theirs, strict=True):
        assert mine["device"] == their["filesystem"]
        assert mine["use_pct"] == their["use_percent"]
        if "1k_blocks" in their:
            assert mine["size_bytes"] == their["1k_blocks"] * 1024
            assert mine["used_bytes"] == their["used"] * 1024
            assert mine["avail_bytes"] == their["available"] * 1024
        else:
            for col, key in (("size_bytes", "size"), ("used_bytes", "used"), ("avail_bytes", "available")):
                assert mine[col] == pytest.approx(their[key], abs=1), (mine["mountpoint"], col)
        if "type" in their:
            assert mine["fstype"] == their["type"]
