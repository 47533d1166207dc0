"""df variants: -h vs -H, -T, -P, -i, -k, wrapped and misaligned rows, host prefixes, and agreement with jc.

Fixtures: tests/fixtures/df/*.txt (the team's real samples) and *.out (byte-exact copies of jc's own df
fixtures); see tests/fixtures/df/PROVENANCE.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import parsers
from parsers import NoData, ParseError, df
from tests.skips import cases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "df"
ALL = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".txt", ".out"))
K, M, G, T = 1024, 1024**2, 1024**3, 1024**4


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def rows(text: str, **kw: Any) -> list[dict[str, Any]]:
    result = df.parse(text, **kw)
    assert result.issues == []
    return result.rows("filesystem_usage")


def by_mount(text: str, **kw: Any) -> dict[str, dict[str, Any]]:
    return {r["mountpoint"]: r for r in rows(text, **kw)}


# --- every df fixture jc can read: every value jc reports is in ours ------------------------------

#: jc misreads these (its columns are cut at the header's positions), so its values are not a reference.
JC_MISREADS = {
    # tests/parsers/test_paste_artefacts.py checks it gives the rows of the original, line 1 each
    "derived-pdf-one-line-from-centos-7.7-df.txt": "a table on one line (out of a PDF): jc reads no rows",
    "awsdocs-fsx-df-1k-backtick-mountname.txt": "the long device name breaks jc's column alignment",
    # tests/parsers/test_df_iostat_mounts_noise.py checks these pastes
    "asiaq-139-df-wrapped-mapper-device.txt": "jc fails on a device name wrapped onto its own line",
    "dysk-17-grep-no-header-arrow-prompt.txt": "grep'd rows without a header and '→' prompts: jc reads the prompt as a header",
    "sindresorhus-df-16-busybox-kP-prompt-cifs.txt": "a '/root # df -kP' prompt line first: jc reads it as the header",
    "aliyun-el8-df-h-vda1-docker-overlay-prompt.txt": "a '[root@... ~]# df -h' prompt line first: jc reads it as the header",
}
#: jc keeps a paste prefix as a column ('#'): it is given the text without it (ours reads it with it).
JC_UNPREFIX = {
    "hyperpod-eks-slinky-compute-pod-hash-prefixed.txt": "# ",
    "derived-commented-indented-from-ubuntu-18.04-df-h.txt": "    # ",
}


def _jc_to_ours(their: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """jc's keys mapped to (our column, expected value), in our units."""
    block = next((k for k in their if k.endswith("_blocks")), None)
    unit = None
    if block is not None:
        count = block[: -len("_blocks")]
        unit = int(count[:-1]) * 1024 if count.endswith("k") else int(count)
    out: dict[str, tuple[str, Any]] = {}
    for key, value in their.items():
        if key == "filesystem":
            out[key] = ("device", value)
        elif key == "mounted_on":
            out[key] = ("mountpoint", value)
        elif key == "type":
            out[key] = ("fstype", value)
        elif key == block:
            out[key] = ("size_bytes", value * unit)
        elif key == "size":
            out[key] = ("size_bytes", value)
        elif key in ("used", "available"):
            col = "used_bytes" if key == "used" else "avail_bytes"
            out[key] = (col, value * unit if unit else value)
        elif key in ("use_percent", "capacity_percent"):
            out[key] = ("use_pct", value)
        elif key in ("iused", "ifree"):
            out[key] = ("inodes_used" if key == "iused" else "inodes_free", value)
        elif key == "iused_percent":
            out[key] = ("inode_use_pct", value)
        else:
            raise AssertionError(f"jc key {key!r} has no column of ours")
    return out


@pytest.mark.parametrize("name", cases(ALL, JC_MISREADS))
def test_every_jc_value_is_in_ours(name: str) -> None:
    jc = pytest.importorskip("jc")
    text = load(name)
    prefix = JC_UNPREFIX.get(name)
    jc_text = "".join(line.removeprefix(prefix) for line in text.splitlines(True)) if prefix else text
    try:
        theirs = jc.parse("df", jc_text, quiet=True)
    except Exception as exc:  # noqa: BLE001 - whatever jc raises, the fixture belongs in JC_MISREADS
        pytest.fail(f"jc cannot read {name} ({type(exc).__name__}: {exc}): list it in JC_MISREADS with why")
    ours = {(r["device"], r["mountpoint"]): r for r in df.parse(text).rows("filesystem_usage")}
    assert theirs and len(ours) >= len(theirs)
    for their in theirs:
        mine = ours[(their["filesystem"], their["mounted_on"])]
        for key, (col, want) in _jc_to_ours(their).items():
            if want is None:  # jc's null for '-': ours is null too
                assert mine[col] is None, (their["mounted_on"], key)
            elif isinstance(want, (int, float)) and not isinstance(want, bool):
                # human sizes are rounded by df; jc and we scale them the same way (powers of 1024)
                assert mine[col] == pytest.approx(want, abs=1), (their["mounted_on"], key)
            else:
                assert mine[col] == want, (their["mounted_on"], key)


#: pastes with lines that are not rows (a pasted command, a wrapped device name's first line)
NOT_ROW_LINES = {
    "asiaq-139-df-wrapped-mapper-device.txt": {3},
    "dysk-17-grep-no-header-arrow-prompt.txt": {1, 4},
    "sindresorhus-df-16-busybox-kP-prompt-cifs.txt": {1},
    "aliyun-el8-df-h-vda1-docker-overlay-prompt.txt": {1},
}


@pytest.mark.parametrize("name", ALL)
def test_fixture_detected_and_every_data_line_is_a_row(name: str) -> None:
    text = load(name)
    assert parsers.detect_kind(text) == "df"
    result = df.parse(text)
    assert result.issues == []
    if len(text.splitlines()) == 1:  # a table that lost its newlines: every row cites that line
        assert {r["line"] for r in result.rows("filesystem_usage")} == {1}
        return
    data_lines = [
        no
        for no, line in enumerate(text.splitlines(), 1)
        if line.strip() and "Filesystem" not in line and no not in NOT_ROW_LINES.get(name, ())
    ]
    assert sorted(r["line"] for r in result.rows("filesystem_usage")) == data_lines
    for row in result.rows("filesystem_usage"):
        assert sorted(row) == sorted(c.name for c in df.SCHEMA["filesystem_usage"])


# --- printed values kept beside the bytes ------------------------------------------------------


def test_jc_df_h_keeps_printed_cells_and_powers_of_1024() -> None:
    boot = by_mount(load("jc-centos-7.7-df-h.out"))["/boot"]
    assert (boot["size_printed"], boot["used_printed"], boot["avail_printed"], boot["use_printed"]) == (
        "1014M",
        "233M",
        "782M",
        "23%",
    )
    assert (boot["size_header"], boot["human_base"], boot["unit_bytes"]) == ("Size", 1024, None)
    assert boot["size_bytes"] == 1014 * M  # ">= 1000 of a unit": only -h prints that


def test_jc_1k_blocks_keep_counts_and_unit() -> None:
    root = by_mount(load("jc-ubuntu-18.04-df.out"))["/"]
    assert (root["size_header"], root["unit_bytes"], root["size_printed"], root["used_printed"]) == (
        "1K-blocks",
        1024,
        "20508240",
        "5748028",
    )
    assert (root["size_bytes"], root["avail_bytes"], root["use_pct"]) == (20508240 * K, 13695408 * K, 30.0)


def test_jc_posix_t_long_device_and_dash_capacity() -> None:
    got = by_mount(load("jc-generic-df-long-filesystem.out"))
    root = got["/"]
    assert (root["device"], root["fstype"], root["size_header"], root["used_bytes"]) == (
        "/dev/mapper/VolGroup00-LogVol00",
        "ext3",
        "1024-blocks",
        1147932 * K,
    )
    assert root["use_pct"] == 21.0 and root["use_printed"] == "21%"
    proc = got["/proc"]
    assert (proc["fstype"], proc["size_bytes"], proc["use_pct"], proc["use_printed"]) == (
        "proc",
        0,
        None,
        "-",
    )


# --- -h versus -H --------------------------------------------------------------------------------

H_TEXT = "Filesystem      Size  Used Avail Use% Mounted on\n/dev/root       146G   59G   87G  41% /\n"


def test_h_and_H_by_command() -> None:
    h = rows(H_TEXT, command="df -h")[0]
    si = rows(H_TEXT, command="df -H")[0]
    assert (h["size_bytes"], h["human_base"]) == (146 * G, 1024)
    assert (si["size_bytes"], si["used_bytes"], si["avail_bytes"], si["human_base"]) == (
        146 * 10**9,
        59 * 10**9,
        87 * 10**9,
        1000,
    )
    assert si["size_printed"] == h["size_printed"] == "146G"
    assert rows(H_TEXT, command="df --si -T")[0]["human_base"] == 1000
    assert rows(H_TEXT)[0]["size_bytes"] == 146 * G  # nothing tells: powers of 1024, as collector's df -h


def test_H_by_file_name_and_pasted_command_line() -> None:
    assert df.parse(H_TEXT, filename="cmd/df-H.txt").rows("filesystem_usage")[0]["size_bytes"] == 146 * 10**9
    assert df.parse(H_TEXT, filename="cmd/df-h.txt").rows("filesystem_usage")[0]["size_bytes"] == 146 * G
    assert df.parse(H_TEXT, filename="cmd/df.txt").rows("filesystem_usage")[0]["size_bytes"] == 146 * G
    pasted = "[root@node-1 ~]# df -H\n" + H_TEXT
    assert rows(pasted)[0]["size_bytes"] == 146 * 10**9
    assert rows("ubuntu@ip-10-0-0-1:~$ df -hT\n" + H_TEXT)[0]["size_bytes"] == 146 * G


def test_H_by_lowercase_kilo() -> None:
    text = H_TEXT + "tmpfs           4.1k     0  4.1k   0% /run/lock\n"
    got = by_mount(text)
    assert got["/run/lock"]["size_bytes"] == 4100 and got["/"]["size_bytes"] == 146 * 10**9


# --- -T, -P, -k, -i ------------------------------------------------------------------------------


def test_t_type_column() -> None:
    got = by_mount(load("dlami-df-Th-ephemeral-ext4.txt"))
    assert got["/opt/dlami/nvme"]["fstype"] == "ext4" and got["/boot/efi"]["fstype"] == "vfat"
    assert all(r["size_header"] == "Size" for r in got.values())


def test_p_k_and_block_units() -> None:
    posix = "Filesystem     1024-blocks    Used Available Capacity Mounted on\n/dev/root 1000 10 990 1% /\n"
    row = rows(posix)[0]
    assert (row["size_bytes"], row["use_pct"], row["unit_bytes"], row["use_printed"]) == (
        1024000,
        1.0,
        1024,
        "1%",
    )
    k = rows("Filesystem     1K-blocks    Used Available Use% Mounted on\n/dev/root 1000 10 990 1% /\n")[0]
    assert k["used_bytes"] == 10 * K
    for header, unit in (("1B-blocks", 1), ("1M-blocks", M), ("1kB-blocks", 1000), ("512-blocks", 512)):
        r = rows(f"Filesystem {header} Used Available Use% Mounted on\n/dev/root 8 2 6 25% /\n")[0]
        assert (r["size_bytes"], r["unit_bytes"], r["size_header"]) == (8 * unit, unit, header)


def test_i_inode_columns() -> None:
    text = "Filesystem      Inodes   IUsed    IFree IUse% Mounted on\n/dev/root      19353600 1503214 17850386    8% /\n"
    row = rows(text)[0]
    assert (row["inodes_total"], row["inodes_used"], row["inodes_free"], row["inode_use_pct"]) == (
        19353600,
        1503214,
        17850386,
        8.0,
    )
    assert (row["inodes_printed"], row["iuse_printed"], row["size_bytes"], row["use_pct"]) == (
        "19353600",
        "8%",
        None,
        None,
    )


def test_ih_human_inode_counts() -> None:
    text = "Filesystem Inodes IUsed IFree IUse% Mounted on\n/dev/root 19M 1.5M 18M 8% /\n"
    assert rows(text, command="df -ih")[0]["inodes_total"] == 19 * M
    assert rows(text, command="df -iH")[0]["inodes_used"] == 1_500_000


# --- layout: wrapped, misaligned, prefixed ----------------------------------------------------------


def test_wrapped_device_name() -> None:
    text = (
        "Filesystem           1K-blocks      Used Available Use% Mounted on\n"
        "/dev/mapper/VolGroup00-LogVol00\n"
        "                       6030784   1147932   4571556  21% /\n"
        "tmpfs                   1024         0      1024   0% /dev/shm\n"
    )
    got = by_mount(text)
    assert (got["/"]["device"], got["/"]["line"], got["/"]["size_bytes"]) == (
        "/dev/mapper/VolGroup00-LogVol00",
        2,
        6030784 * K,
    )
    assert got["/dev/shm"]["line"] == 4


def test_misaligned_rows_and_spaces_in_mount() -> None:
    text = (
        "Filesystem Size Used Avail Use% Mounted on\n"
        "10.1.71.197@tcp:/oyuutbev 1.2T 5.5G 1.2T 1% /fsx\n"
        "//server/share with space    10G  1G 9G    10% /mnt/my share\n"
    )
    got = by_mount(text)
    assert got["/fsx"]["is_lustre"] and got["/fsx"]["used_bytes"] == int(5.5 * G)
    assert got["/mnt/my share"]["device"] == "//server/share with space"


def test_pdsh_host_prefixes_interleaved() -> None:
    text = (
        "node-1: Filesystem      Size  Used Avail Use% Mounted on\n"
        "node-2: Filesystem      Size  Used Avail Use% Mounted on\n"
        "node-1: /dev/root       146G   59G   87G  41% /\n"
        "node-1: /dev/mapper/a-very-long-volume-group-name-lv_data\n"
        "node-2: /dev/root       146G   60G   86G  42% /\n"
        "node-1:                 1.0T  1.0G  1.0T   1% /data\n"
        "node-2: df: /fsx: Cannot send after transport endpoint shutdown\n"
    )
    got = {(r["host"], r["mountpoint"]): r for r in rows(text)}
    assert set(got) == {("node-1", "/"), ("node-2", "/"), ("node-1", "/data"), ("node-2", "/fsx")}
    assert got[("node-2", "/")]["use_pct"] == 42.0
    data = got[("node-1", "/data")]
    assert (data["device"], data["line"], data["size_bytes"]) == (
        "/dev/mapper/a-very-long-volume-group-name-lv_data",
        4,
        T,
    )
    assert got[("node-2", "/fsx")]["error"].endswith("transport endpoint shutdown")


def test_kubectl_prefix() -> None:
    text = (
        "[pod/slurm-compute-0/slurmd] Filesystem Size Used Avail Use% Mounted on\n"
        "[pod/slurm-compute-0/slurmd] shm 64M 0 64M 0% /dev/shm\n"
    )
    row = rows(text)[0]
    assert (row["host"], row["device"], row["size_bytes"]) == ("pod/slurm-compute-0/slurmd", "shm", 64 * M)


# --- issues and failures ---------------------------------------------------------------------------


def test_a_data_looking_line_that_fails_is_an_issue_at_its_line() -> None:
    text = H_TEXT + "tmpfs   3.8G  lots   3.8G   0% /dev/shm\n/dev/sdb 1G 1G 0 100% /x\n"
    result = df.parse(text)
    assert [r["mountpoint"] for r in result.rows("filesystem_usage")] == ["/", "/x"]
    assert [i.line_no for i in result.issues] == [3]


def test_no_rows_from_data_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        df.parse("Filesystem Size Used Avail Use% Mounted on\ntmpfs 3.8G lots 3.8G 0% /dev/shm\n")


def test_a_header_without_rows_is_no_data() -> None:
    with pytest.raises(NoData):
        df.parse("Filesystem Size Used Avail Use% Mounted on\n")


def test_lowercase_k_in_a_mount_name_is_no_si_hint() -> None:
    assert rows(H_TEXT + "tmpfs 1.0M 0 1.0M 0% /mnt/cache 4k\n")[0]["size_bytes"] == 146 * G
