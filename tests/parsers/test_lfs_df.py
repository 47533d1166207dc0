"""Tests for parsers.lfs_df on the real fixtures in tests/fixtures/lfs-df/."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import lfs_df

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lfs-df"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))
M = 1024**2
G = 1024**3
T = 1024**4


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "lfs-df"


@pytest.mark.parametrize("name", ALL)
def test_rows_have_schema_columns(name: str) -> None:
    names = sorted(c.name for c in lfs_df.SCHEMA["lustre_target"])
    for row in lfs_df.parse(load(name)).rows("lustre_target"):
        assert sorted(row) == names


def test_fsx_workshop_three_osts() -> None:
    result = lfs_df.parse(load("fsx-workshop-mnt-fsx-3ost.txt"))
    assert result.issues == []
    rows = result.rows("lustre_target")
    assert [(r["target_type"], r["target_index"]) for r in rows] == [
        ("MDT", 0),
        ("OST", 0),
        ("OST", 1),
        ("OST", 2),
        ("summary", None),
    ]
    assert {r["fsname"] for r in rows} == {"fsx"} and {r["mountpoint"] for r in rows} == {"/mnt/fsx"}
    mdt = rows[0]
    assert (mdt["uuid"], mdt["size_bytes"], mdt["use_pct"], mdt["line"]) == (
        "fsx-MDT0000_UUID",
        int(102.8 * G),
        4.0,
        2,
    )
    ost2 = rows[3]
    assert (ost2["uuid"], ost2["used_bytes"], ost2["size_bytes"], ost2["use_pct"]) == (
        "fsx-OST0002_UUID",
        int(187.0 * M),
        int(1.1 * T),
        0.0,
    )
    summary = rows[4]
    assert (summary["uuid"], summary["size_bytes"], summary["line"]) == (None, int(3.3 * T), 7)


def test_iml_zfs_dashed_separator() -> None:
    result = lfs_df.parse(load("iml-zfsmo-dashed-separator.txt"))
    assert result.issues == []
    rows = {r["uuid"]: r for r in result.rows("lustre_target")}
    ost0 = rows["zfsmo-OST0000_UUID"]
    assert (ost0["fsname"], ost0["use_pct"], ost0["used_bytes"], ost0["avail_bytes"]) == (
        "zfsmo",
        10.0,
        int(970.8 * M),
        int(8.6 * G),
    )
    assert rows["zfsmo-OST0001_UUID"]["use_pct"] == 9.0
    summary = rows[None]
    assert (summary["target_type"], summary["fsname"], summary["size_bytes"]) == ("summary", "zfsmo", 19 * G)
    assert summary["mountpoint"] == "/mnt/zfsmo"


# From the Lustre manual page lfs-df(1) (lustre-release, lustre/doc/lfs-df.1, EXAMPLES).
MAN_PAGE = """\
UUID                 bytes  Used   Avail Use% Mounted on
testfs-MDT0000_UUID  13.0G  1.2G   11.0G  10% /testfs[MDT:0]
testfs-OST0000_UUID   3.6T  2.9T  585.7G  84% /testfs[OST:0]
testfs-OST0001_UUID   3.6T  3.1T  472.5G  87% /testfs[OST:1] D
testfs-OST0002_UUID   3.6T  3.0T  570.3G  84% /testfs[OST:2] DR
OST0003           : inactive device
testfs-OST000a_UUID   5.4T  4.9T  417.8G  92% /testfs[OST:10]

filesystem_summary:  16.2T 13.8T    2.0T  88% /testfs
"""


def test_flags_inactive_and_hex_index() -> None:
    rows = lfs_df.parse(MAN_PAGE).rows("lustre_target")
    assert [r["flags"] for r in rows] == [None, None, "D", "DR", None, None, None]
    inactive = rows[4]
    assert (inactive["uuid"], inactive["fsname"], inactive["target_index"], inactive["status"]) == (
        "OST0003",
        "testfs",
        3,
        "inactive device",
    )
    assert inactive["size_bytes"] is None
    assert rows[5]["target_index"] == 10 and rows[5]["use_pct"] == 92.0
    assert rows[6]["use_pct"] == 88.0


def test_plain_1k_blocks_inodes_and_two_filesystems() -> None:
    text = """\
UUID                   1K-blocks        Used   Available Use% Mounted on
oyuutbev-MDT0000_UUID   35312368       47028    35263292   1% /fsx[MDT:0]
oyuutbev-OST0000_UUID 1168797968     5702656  1163093264   1% /fsx[OST:0]

filesystem_summary:   1168797968     5702656  1163093264   1% /fsx

UUID                   1K-blocks        Used   Available Use% Mounted on
scratch-OST0001_UUID  1168797968  1100000000    68797968  95% /scratch[OST:1]

filesystem_summary:   1168797968  1100000000    68797968  95% /scratch

UUID                      Inodes       IUsed       IFree IUse% Mounted on
oyuutbev-MDT0000_UUID    1000000      990000       10000  99% /fsx[MDT:0]
"""
    rows = lfs_df.parse(text).rows("lustre_target")
    assert [(r["fsname"], r["target_type"]) for r in rows] == [
        ("oyuutbev", "MDT"),
        ("oyuutbev", "OST"),
        ("oyuutbev", "summary"),
        ("scratch", "OST"),
        ("scratch", "summary"),
        ("oyuutbev", "MDT"),
    ]
    assert rows[1]["size_bytes"] == 1168797968 * 1024
    assert rows[3]["use_pct"] == 95.0 and rows[4]["mountpoint"] == "/scratch"
    assert (rows[5]["inodes_used"], rows[5]["inode_use_pct"], rows[5]["size_bytes"]) == (990000, 99.0, None)
