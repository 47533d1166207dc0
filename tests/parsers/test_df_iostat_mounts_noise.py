"""df, iostat and mounts: how outputs travel (launcher tags, prompts, pastes) and the loud contract.

Every noise test is DERIVED from a real fixture (tests/fixtures/{df,iostat,mounts}/PROVENANCE.md): the
noise is added to the real capture and the parse must give the same rows as the clean capture, with
line numbers that are still the noisy file's and the launcher's tag in ``host``.  The real pastes
(fences, prompts, quoted JSON, grep'd rows) are asserted on as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import parsers
from parsers import ParseError, df, iostat, mounts
from tests.conftest import fixture_text

M, G = 1024**2, 1024**3

#: kind -> (real fixture, parser, the field a row's line must show)
BASE: dict[str, tuple[str, Any, str]] = {
    "df": ("hyperpod-workshop-controller-opt-sagemaker-fsx.txt", df, "mountpoint"),
    "iostat": ("aks-node-xy-old-format.txt", iostat, "device"),
    "mounts": ("jc-centos-7.7-findmnt-tree.out", mounts, "mountpoint"),
}


def _rows(result: parsers.ParseResult, drop: tuple[str, ...] = ("line", "host")) -> dict[str, list[dict]]:
    return {
        t: [{k: v for k, v in r.items() if k not in drop} for r in rows]
        for t, rows in result.table_rows().items()
    }


def _prefix(tag: str) -> Callable[[str], str]:
    return lambda text: "".join(tag + line for line in text.splitlines(True))


def _around(before: str, after: str) -> Callable[[str], str]:
    return lambda text: before + text + after


def _elide(text: str) -> str:
    """'...' between two rows, in the middle of the data."""
    lines = text.splitlines(True)
    at = len(lines) - 2
    return "".join([*lines[:at], "...\n", *lines[at:]])


def _annotate(text: str) -> str:
    """An author's arrow after the last row."""
    lines = text.rstrip("\n").splitlines()
    lines[-1] += "   <----- this one"
    return "\n".join(lines) + "\n"


def _backticks(text: str) -> str:
    """Inline-code pasting: a backtick glued to the first and to the last line."""
    lines = text.rstrip("\n").splitlines()
    lines[0], lines[-1] = "`" + lines[0], lines[-1] + "`"
    return "\n".join(lines) + "\n"


def _tabs(text: str) -> str:
    """A terminal copy that turned runs of blanks into tabs."""
    import re

    return re.sub(r" {2,}", "\t", text)


def _double_blanks(text: str) -> str:
    """Every blank line doubled, and two blank lines after the first line."""
    first, rest = text.split("\n", 1)
    return first + "\n\n\n" + rest.replace("\n\n", "\n\n\n")


#: noise -> (transform, launcher tag it leaves in host, or None)
NOISES: dict[str, tuple[Callable[[str], str], str | None]] = {
    "srun -l": (_prefix("0: "), "0"),
    "pdsh": (_prefix("ip-10-1-2-3: "), "ip-10-1-2-3"),
    "kubectl --prefix": (_prefix("[pod/trainer-0/main] "), "pod/trainer-0/main"),
    "mpirun": (_prefix("[1,0]<stdout>:"), "1,0"),
    "prompt": (_around("[root@node-1 ~]# run-the-tool\n", "[root@node-1 ~]# exit\n"), None),
    "^Z and job control": (_around("", "^Z\n[1]+  Stopped                 the-tool\n"), None),
    "fences": (_around("```text\n", "```\n"), None),
    "glued backticks": (_backticks, None),
    "elision": (_elide, None),
    "annotation": (_annotate, None),
    "CRLF": (lambda t: t.replace("\n", "\r\n"), None),
    "tabs for spaces": (_tabs, None),
    "doubled blank lines": (lambda t: _double_blanks(t), None),
    "double-spaced paste": (lambda t: t.replace("\n", "\n\n"), None),
    "trailing blanks": (lambda t: t.replace("\n", "   \n"), None),
    "markdown quote": (_prefix("> "), None),
}


@pytest.mark.parametrize("noise", list(NOISES))
@pytest.mark.parametrize("kind", list(BASE))
def test_travel_noise_gives_the_rows_of_the_clean_capture(kind: str, noise: str) -> None:
    """derived: the real fixture with the noise added."""
    name, module, field = BASE[kind]
    clean = fixture_text(kind, name)
    transform, tag = NOISES[noise]
    noisy = transform(clean)
    assert noisy != clean
    assert parsers.detect_kind(noisy) == kind
    want, got = module.parse(clean), module.parse(noisy)
    assert got.issues == [] and want.issues == []
    assert _rows(got) == _rows(want)
    noisy_lines = noisy.splitlines()
    for table, rows in got.table_rows().items():
        for row in rows:
            assert row.get("host") == tag, (table, row)
            if field in row and row["line"]:
                assert row[field] in noisy_lines[row["line"] - 1], (table, row["line"])


@pytest.mark.parametrize("kind", list(BASE))
def test_cut_last_line_is_an_issue_and_the_rest_parses(kind: str) -> None:
    """derived: the real fixture with its last row cut in the middle."""
    name, module, _ = BASE[kind]
    clean = fixture_text(kind, name).rstrip("\n")
    last = clean.splitlines()[-1]
    cut = clean[: len(clean) - len(last) // 2]
    want = module.parse(clean)
    got = module.parse(cut)
    table = {"df": "filesystem_usage", "iostat": "iostat_device", "mounts": "mount"}[kind]
    assert got.rows(table) == want.rows(table)[:-1]
    assert [i.line_no for i in got.issues] == [len(clean.splitlines())]


# --- prompts: the command they show is read -----------------------------------------------------


def test_df_prompt_command_decides_powers_of_1000() -> None:
    """derived: `$ df -H` pasted above the real df -h capture (its sizes then read as -H's)."""
    text = fixture_text("df", BASE["df"][0])
    fsx = {
        r["mountpoint"]: r for r in df.parse("ubuntu@ip-10-0-0-1:~$ df -H\n" + text).rows("filesystem_usage")
    }
    assert (fsx["/fsx"]["size_bytes"], fsx["/fsx"]["human_base"], fsx["/fsx"]["line"]) == (1.2e12, 1000, 17)
    plain = {r["mountpoint"]: r for r in df.parse("$ df -h\n" + text).rows("filesystem_usage")}
    assert plain["/fsx"]["size_bytes"] == int(1.2 * 1024**4)


def test_df_prompt_before_each_of_two_tables() -> None:
    """derived: two real captures pasted one after the other, each under its own prompt."""
    text = fixture_text("df", BASE["df"][0])
    both = "$ df -H\n" + text + "\n$ df -h\n" + text
    rows = df.parse(both).rows("filesystem_usage")
    assert [r["human_base"] for r in rows if r["mountpoint"] == "/fsx"] == [1000, 1024]


def test_iostat_prompt_with_y_means_no_report_since_boot() -> None:
    """derived: the AKS capture ran as `iostat -xy 1 1` (its provenance): with the prompt, since_boot is False."""
    text = fixture_text("iostat", BASE["iostat"][0])
    assert iostat.parse(text).rows("iostat_cpu")[0]["since_boot"] is True  # banner, no command: since boot
    r = iostat.parse("azureuser@aks-main:~$ iostat -xy 1 1\n" + text)
    assert {row["since_boot"] for t in ("iostat_cpu", "iostat_device") for row in r.rows(t)} == {False}


def test_iostat_two_runs_each_first_report_since_boot() -> None:
    """derived: two real runs pasted one after the other: report numbers go on, each banner starts a run."""
    text = fixture_text("iostat", "jc-centos77-plain-d.out")
    r = iostat.parse(text + "\n# iostat\n" + text)
    cpus = r.rows("iostat_cpu")
    assert [(c["report_no"], c["since_boot"]) for c in cpus] == [(1, True), (2, True)]


def test_iostat_interleaved_pdsh_hosts_are_read_apart() -> None:
    """derived: two hosts' copies of a real capture, lines interleaved as pdsh prints them."""
    text = fixture_text("iostat", BASE["iostat"][0]).splitlines()
    mixed = "\n".join(f"{h}: {line}" for line in text for h in ("node-1", "node-2")) + "\n"
    r = iostat.parse(mixed)
    assert r.issues == []
    for host in ("node-1", "node-2"):
        sda = [d for d in r.rows("iostat_device") if d["host"] == host and d["device"] == "sda"]
        assert [(d["w_s"], d["report_no"], d["since_boot"]) for d in sda] == [(65.0, 1, True)]


def test_iostat_cpu_only_excerpt_is_not_read_as_host_tags() -> None:
    """derived: `iostat -c` reports without the banner (avg-cpu: is no pdsh host)."""
    lines = fixture_text("iostat", BASE["iostat"][0]).splitlines()[2:4]
    r = iostat.parse("\n".join(lines * 3) + "\n")
    assert [c["iowait_pct"] for c in r.rows("iostat_cpu")] == [1.9, 1.9, 1.9]
    assert {c["host"] for c in r.rows("iostat_cpu")} == {None}


def test_mounts_prompt_and_command_lines_are_skipped() -> None:
    """derived: the real mount capture under `$ mount` and the findmnt one under a bare `findmnt`."""
    text = fixture_text("mounts", "jc-ubuntu-18.04-mount.out")
    r = mounts.parse("$ mount\n" + text + "user@node:~$\n")
    assert r.issues == [] and len(r.rows("mount")) == 43 and r.rows("mount")[0]["line"] == 2
    tree = fixture_text("mounts", "jc-centos-7.7-findmnt-tree.out")
    assert len(mounts.parse("findmnt\n" + tree).rows("mount")) == 32


# --- real pastes ----------------------------------------------------------------------------------


def test_df_real_wrapped_mapper_device() -> None:
    rows = df.parse(fixture_text("df", "asiaq-139-df-wrapped-mapper-device.txt")).rows("filesystem_usage")
    root = rows[0]
    assert (root["device"], root["line"], root["size_printed"], root["used_bytes"], root["use_pct"]) == (
        "/dev/mapper/VolGroup00-LogVol00",
        2,
        "36533824",
        4690160 * 1024,
        14.0,
    )
    assert [r["mountpoint"] for r in rows] == ["/", "/boot", "/dev/shm", "/mnt/san-nfs"]


def test_df_real_busybox_prompt_and_cifs_share() -> None:
    r = df.parse(fixture_text("df", "sindresorhus-df-16-busybox-kP-prompt-cifs.txt"))
    (row,) = r.rows("filesystem_usage")
    assert r.issues == []
    assert (row["device"], row["mountpoint"], row["size_header"], row["size_printed"], row["use_pct"]) == (
        "//10.0.1.100/data0",
        "/data0",
        "1024-blocks",
        "59979045276",
        84.0,
    )
    assert row["is_network"] is True and row["avail_bytes"] == 9831279476 * 1024


def test_df_real_grep_rows_without_header() -> None:
    text = fixture_text("df", "dysk-17-grep-no-header-arrow-prompt.txt")
    assert parsers.detect_kind(text) == "df"
    r = df.parse(text)
    blocks, human = r.rows("filesystem_usage")
    assert r.issues == []
    assert (blocks["line"], blocks["size_header"], blocks["unit_bytes"], blocks["used_bytes"]) == (
        2,
        None,
        1024,
        8865848 * 1024,
    )
    assert (human["line"], human["size_printed"], human["used_bytes"], human["human_base"]) == (
        5,
        "12G",
        int(8.5 * G),
        1024,
    )


def test_iostat_real_fenced_prompt_plain_report_with_discards() -> None:
    text = fixture_text("iostat", "linuxgomes-wiki-el9-plain-dscd-comma-prompt-fence.txt")
    assert parsers.detect_kind(text) == "iostat"
    r = iostat.parse(text)
    assert r.issues == []
    host = r.rows("iostat_host")[0]
    assert (host["line"], host["kernel"], host["date"], host["ncpu"]) == (
        3,
        "5.14.0-202.el9.x86_64",
        "30/11/2022",
        3,
    )
    nvme = next(d for d in r.rows("iostat_device") if d["device"] == "nvme0n1")
    assert (
        nvme["line"],
        nvme["tps"],
        nvme["kb_read_s"],
        nvme["kb_dscd_s"],
        nvme["kb_read"],
        nvme["kb_dscd"],
    ) == (
        11,
        54.06,
        1603.43,
        0.0,
        828382,
        0,
    )
    assert (nvme["rkb_s"], nvme["dkb_s"], nvme["since_boot"]) == (1603.43, 0.0, True)
    assert r.rows("iostat_cpu")[0]["user_pct"] == 9.99


def test_iostat_real_t_timestamp_and_mb_discards() -> None:
    r = iostat.parse(fixture_text("iostat", "sysstat-pr414-mt-timestamp-mb-dscd.txt"))
    assert r.issues == []
    sda = r.rows("iostat_device")[0]
    assert (sda["ts_raw"], sda["mb_wrtn_s"], sda["mb_wrtn"], sda["mb_dscd_s"], sda["mb_dscd"]) == (
        "09/29/25 15:22:03",
        0.38,
        2631239,
        0.0,
        0,
    )
    assert sda["wkb_s"] == pytest.approx(0.38 * 1024) and sda["since_boot"] is True
    assert r.rows("iostat_cpu")[0]["ts_raw"] == "09/29/25 15:22:03"


def test_iostat_real_proposed_datetime_column() -> None:
    text = fixture_text("iostat", "sysstat-pr414-mT-datetime-column-proposed.txt")
    assert parsers.detect_kind(text) == "iostat"
    r = iostat.parse(text)
    assert r.issues == []
    assert [(d["device"], d["ts_raw"], d["mb_wrtn"]) for d in r.rows("iostat_device")] == [
        ("sda", "09/29/25 15:22:19", 2631254),
        ("sdb", "09/29/25 15:22:19", 0),
    ]
    assert r.rows("iostat_cpu")[0]["idle_pct"] == 97.14


def test_iostat_real_N_mapper_names_with_t_and_no_banner() -> None:
    r = iostat.parse(fixture_text("iostat", "pbench-719-t-N-mapper-names-old-mb.txt"))
    assert r.issues == []
    root = next(d for d in r.rows("iostat_device") if d["device"] == "rhel75_perf146-root")
    assert (root["line"], root["w_s"], root["avgrq_sz"], root["areq_sz_kb"], root["ts_raw"]) == (
        9,
        0.3,
        8.0,
        4.0,
        "11/14/17 20:25:47",
    )
    assert root["since_boot"] is None  # no banner: not known


def test_iostat_real_y_json_with_sysstats_stray_comma() -> None:
    r = iostat.parse(fixture_text("iostat", "sysstat-163-y-json-leading-comma.txt"))
    assert r.issues == []
    assert r.rows("iostat_host")[0]["hostname"] == "test-node.local"
    sdb = r.rows("iostat_device")[0]
    assert (sdb["device"], sdb["line"], sdb["tps"], sdb["kb_wrtn_s"], sdb["kb_wrtn"], sdb["since_boot"]) == (
        "sdb",
        15,
        5.0,
        12.75,
        25,
        False,  # the stray comma is -y's: the since-boot report was skipped
    )
    assert r.rows("iostat_cpu")[0]["user_pct"] == 6.75


def test_iostat_real_json_quoted_with_glued_backticks() -> None:
    text = fixture_text("iostat", "sysstat-222-ydx-json-quoted-backticks.txt")
    assert parsers.detect_kind(text) == "iostat"
    r = iostat.parse(text)
    assert r.issues == []
    sdc = r.rows("iostat_device")[0]
    assert (
        sdc["line"],
        sdc["r_s"],
        sdc["pct_rrqm"],
        sdc["util_pct"],
        sdc["dareq_sz"],
        sdc["since_boot"],
    ) == (
        14,
        282.5,
        9.6,
        100.0,
        0.0,
        False,
    )


def test_iostat_json_cut_short_is_read_line_by_line() -> None:
    """derived: the real quoted JSON capture cut after its disk entry (iostat interrupted)."""
    lines = fixture_text("iostat", "sysstat-222-ydx-json-quoted-backticks.txt").splitlines()
    r = iostat.parse("\n".join(lines[:14]) + "\n")
    assert [d["device"] for d in r.rows("iostat_device")] == ["sdc"]
    assert r.rows("iostat_device")[0]["util_pct"] == 100.0
    assert r.rows("iostat_host")[0]["ncpu"] == 12
    assert [i.line_no for i in r.issues] == [14] and "cut short" in r.issues[0].reason


def test_mounts_real_findmnt_tree_and_list_agree() -> None:
    tree = {
        r["mountpoint"]: r
        for r in mounts.parse(fixture_text("mounts", "jc-centos-7.7-findmnt-tree.out")).rows("mount")
    }
    flat = {
        r["mountpoint"]: r
        for r in mounts.parse(fixture_text("mounts", "jc-centos-7.7-findmnt-l.out")).rows("mount")
    }
    assert len(tree) == 32 and len(flat) == 31 and set(flat) <= set(tree)
    docker = tree["/var/lib/docker/containers"]
    assert (docker["device"], docker["fstype"], docker["format"], docker["line"]) == (
        "/dev/mapper/centos-root[/var/lib/docker/containers]",
        "xfs",
        "findmnt",
        32,
    )
    assert (
        tree["/sys/fs/cgroup"]["read_only"] is True
        and tree["/sys/fs/cgroup/net_cls,net_prio"]["fstype"] == "cgroup"
    )
    assert tree["/"]["options"] == flat["/"]["options"] == "rw,relatime,seclabel,attr2,inode64,noquota"


def test_mounts_real_mount_output() -> None:
    rows = mounts.parse(fixture_text("mounts", "jc-ubuntu-18.04-mount.out")).rows("mount")
    lxcfs = next(r for r in rows if r["mountpoint"] == "/var/lib/lxcfs")
    assert (lxcfs["device"], lxcfs["fstype"], lxcfs["line"], lxcfs["format"]) == (
        "lxcfs",
        "fuse.lxcfs",
        39,
        "mount",
    )
    assert sum(r["read_only"] for r in rows) == 12  # 11 snaps and the cgroup tmpfs


# --- formats users paste (synthetic: written in each tool's documented form) ----------------------


def test_mounts_proc_fields_mountinfo_mount_l_and_findmnt_columns() -> None:
    """synthetic: /proc/mounts keeps its dump/pass fields; mountinfo, mount -l and findmnt -o read too."""
    proc = mounts.parse("10.1.71.197@tcp:/oyuutbev /fsx lustre rw,flock,lazystatfs 0 0\n").rows("mount")[0]
    assert (proc["freq"], proc["passno"], proc["format"], proc["is_lustre"]) == (0, 0, "proc_mounts", True)
    info = mounts.parse(
        "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
    ).rows("mount")[0]
    assert (info["device"], info["mountpoint"], info["fstype"], info["options"]) == (
        "/dev/root",
        "/mnt/parent",
        "ext3",
        "rw,noatime",
    )
    assert json.loads(info["extra"]) == {
        "id": "36",
        "parent": "35",
        "majmin": "98:0",
        "root": "/mnt1",
        "sopts": "rw,errors=continue",
        "optional": "master:1",
    }
    labelled = mounts.parse("/dev/nvme0n1p1 on / type ext4 (rw,relatime,discard) [cloudimg-rootfs]\n")
    assert labelled.rows("mount")[0]["label"] == "cloudimg-rootfs"
    custom = mounts.parse(
        "TARGET SOURCE FSTYPE SIZE USE%\n/fsx 10.1.71.197@tcp:/oyuutbev lustre 1.2T 1%\n"
    ).rows("mount")[0]
    assert (custom["device"], custom["is_lustre"], json.loads(custom["extra"])) == (
        "10.1.71.197@tcp:/oyuutbev",
        True,
        {"SIZE": "1.2T", "USE%": "1%"},
    )


# --- loud: data-looking lines skipped are issues, no rows is a ParseError that says what it saw -------


def test_df_every_row_broken_is_a_parse_error_naming_the_line() -> None:
    """derived: the real df -h capture with every size cell spoiled."""
    text = fixture_text("df", BASE["df"][0]).replace("G ", "Q ").replace("M ", "Q ").replace("K ", "Q ")
    text = "\n".join(
        line if "Filesystem" in line else line.replace(" 0 ", " Q ") for line in text.splitlines()
    )
    with pytest.raises(ParseError, match=r"expected df rows .* first at line 2: '/dev/root"):
        df.parse(text)


def test_df_no_header_no_rows_says_what_it_saw() -> None:
    with pytest.raises(ParseError, match=r"expected a df header line .* saw 'Sys. de fichiers"):
        df.parse("Sys. de fichiers Taille Utilisé Dispo Uti% Monté sur\nudev 7,6G 0 7,6 G 0 % /dev\n")


def test_iostat_data_line_outside_a_block_is_an_issue() -> None:
    """derived: a device row pasted above the real capture's banner."""
    text = "sda 0.00 56.00\n" + fixture_text("iostat", BASE["iostat"][0])
    r = iostat.parse(text)
    assert [(i.line_no, i.line) for i in r.issues] == [(1, "sda 0.00 56.00")]
    assert len(r.rows("iostat_device")) == 4


def test_iostat_nothing_readable_is_a_parse_error_saying_what_it_saw() -> None:
    with pytest.raises(
        ParseError, match=r"expected an iostat banner, avg-cpu block or Device header; saw 'sda"
    ):
        iostat.parse("sda 1.0 2.0 3.0\nsdb 4.0 5.0 6.0\n")


def test_mounts_bad_line_is_an_issue_and_no_mount_is_a_parse_error() -> None:
    """derived: a real mount line cut, among real ones."""
    lines = fixture_text("mounts", "jc-ubuntu-18.04-mount.out").splitlines()
    lines[5] = lines[5][:20]
    r = mounts.parse("\n".join(lines) + "\n")
    assert [(i.line_no, i.line) for i in r.issues] == [(6, "/dev/sda2 on / type ")] and len(
        r.rows("mount")
    ) == 42
    with pytest.raises(ParseError, match=r"expected /proc/mounts .* saw '/dev/sda2 on / type'"):
        mounts.parse("/dev/sda2 on / type\n")
