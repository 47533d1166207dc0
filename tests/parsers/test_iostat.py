"""Tests for parsers.iostat on the real fixtures in tests/fixtures/iostat/."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import iostat
from tests.skips import cases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "iostat"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def devices(result: parsers.ParseResult) -> dict[tuple[int, str], dict]:
    return {(r["report_no"], r["device"]): r for r in result.rows("iostat_device")}


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "iostat"


@pytest.mark.parametrize("name", ALL)
def test_rows_have_schema_columns(name: str) -> None:
    result = iostat.parse(load(name))
    for table, rows in result.table_rows().items():
        names = [c.name for c in iostat.SCHEMA[table]]
        for row in rows:
            assert list(row) == names or sorted(row) == sorted(names)


def test_aks_old_layout() -> None:
    r = iostat.parse(load("aks-node-xy-old-format.txt"))
    host = r.rows("iostat_host")[0]
    assert (host["kernel"], host["hostname"], host["date"], host["arch"], host["ncpu"]) == (
        "4.15.0-1064-azure",
        "aks-main-10212767-vmss000001",
        "02/10/20",
        "x86_64",
        8,
    )
    cpu = r.rows("iostat_cpu")[0]
    assert (cpu["user_pct"], cpu["iowait_pct"], cpu["idle_pct"], cpu["since_boot"]) == (
        3.42,
        1.9,
        91.76,
        True,
    )
    d = devices(r)
    assert [k[1] for k in d] == ["loop0", "sdb", "sda", "scd0"]
    sda = d[(1, "sda")]
    assert (sda["wrqm_s"], sda["w_s"], sda["wkb_s"], sda["await_ms"], sda["w_await_ms"]) == (
        56.0,
        65.0,
        504.0,
        3.02,
        3.02,
    )
    assert (sda["aqu_sz"], sda["svctm_ms"], sda["util_pct"], sda["areq_sz_kb"]) == (0.01, 0.12, 0.8, 7.755)
    assert sda["rareq_sz_kb"] is None and sda["d_s"] is None
    assert r.issues == []


def test_netflix_narrow_column_and_paste_artefacts() -> None:
    r = iostat.parse(load("netflix60s-xz1-narrow-device-col.txt"))
    d = devices(r)
    assert len(d) == 6  # "[...]" and "^C" are not devices
    assert d[(1, "dm-1")]["w_await_ms"] == 346.81 and d[(1, "dm-1")]["aqu_sz"] == 0.33
    assert d[(1, "xvdb")]["wkb_s"] == 598.53
    assert r.rows("iostat_cpu")[0]["user_pct"] == 73.96
    assert r.rows("iostat_host")[0]["ncpu"] == 32
    assert r.issues == []


def test_riscv_new_layout_dotted_date_with_f_s() -> None:
    r = iostat.parse(load("riscv64-dkx-dotted-date.txt"))
    host = r.rows("iostat_host")[0]
    assert (host["date"], host["arch"], host["hostname"]) == ("2025.07.04", "riscv64", "k1")
    assert r.rows("iostat_cpu") == []
    nvme = devices(r)[(1, "nvme0n1")]
    assert (nvme["r_s"], nvme["rkb_s"], nvme["rrqm_s"], nvme["rareq_sz_kb"]) == (38.22, 1527.17, 11.46, 39.96)
    assert (nvme["f_s"], nvme["f_await_ms"], nvme["d_s"], nvme["util_pct"]) == (0.15, 0.31, 0.0, 0.79)
    assert nvme["await_ms"] is None and nvme["svctm_ms"] is None
    assert nvme["since_boot"] is True


def test_ssd_blog_comma_decimals_read_only_subset() -> None:
    r = iostat.parse(load("ssd-blog-comma-decimal-64threads.txt"))
    cpu = r.rows("iostat_cpu")[0]
    assert (cpu["user_pct"], cpu["system_pct"], cpu["iowait_pct"]) == (28.46, 66.92, 4.62)
    assert cpu["since_boot"] is None  # no banner: cannot tell
    nvme = devices(r)[(1, "nvme0n1")]
    assert nvme["r_s"] == 223974.0
    assert nvme["rkb_s"] == pytest.approx(874.90 * 1024)  # rMB/s converted
    assert nvme["util_pct"] == 100.0 and nvme["w_s"] is None


def test_vbox_comma_mb_three_reports_last_empty() -> None:
    r = iostat.parse(load("vbox-xdmz-comma-empty-report.txt"))
    d = devices(r)
    assert sorted(d) == [(1, "scd0"), (1, "sda"), (2, "sda")]
    assert d[(1, "sda")]["since_boot"] is True and d[(2, "sda")]["since_boot"] is False
    assert d[(1, "sda")]["rkb_s"] == 1280.0  # 1,25 MB/s
    assert d[(1, "sda")]["util_pct"] == 2.97
    assert d[(2, "sda")]["r_s"] == 8.08
    assert r.rows("iostat_host")[0]["hostname"] == "apoz-VirtualBox"
    assert r.issues == []


def test_vm_tail_headless_cpu_and_overwide_value() -> None:
    r = iostat.parse(load("vm-xz-tail6-headless-cpu.txt"))
    cpu = r.rows("iostat_cpu")[0]
    assert (cpu["line"], cpu["iowait_pct"], cpu["steal_pct"], cpu["idle_pct"]) == (1, 41.44, 1.01, 47.36)
    vda = devices(r)[(1, "vda")]
    assert (vda["w_s"], vda["wkb_s"], vda["wareq_sz_kb"], vda["aqu_sz"], vda["util_pct"]) == (
        2062.5,
        1055746.0,
        511.88,
        3.36,
        99.8,
    )
    assert vda["report_no"] == cpu["report_no"] == 1


COLLECTOR_RUN = """\
Linux 5.15.0-1048-aws (ip-10-1-71-197)  12/02/2026  _x86_64_  (192 CPU)

12/02/2026 09:30:01 AM
avg-cpu:  %user   %nice %system %iowait  %steal   %idle
           3.42    0.00    2.92    1.90    0.00   91.76

Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz  aqu-sz  %util
nvme0n1          1.00     14.12     0.00   0.00    0.62    14.15    0.01      0.00     0.00   0.00    0.00     0.00    0.00   0.03

12/02/2026 09:30:03 AM
avg-cpu:  %user   %nice %system %iowait  %steal   %idle
          10.00    0.00    2.00   25.50    0.00   62.50

Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz  aqu-sz  %util
nvme0n1        900.00  36000.00     0.00   0.00   12.50    40.00    2.00      8.00     0.00   0.00    1.00     4.00    9.10  97.00
nvme1n1          not-a-number
"""  # noqa: E501


def test_t_timestamps_reports_and_a_mangled_row() -> None:
    r = iostat.parse(COLLECTOR_RUN)
    cpus = r.rows("iostat_cpu")
    assert [(c["report_no"], c["since_boot"], c["ts_raw"]) for c in cpus] == [
        (1, True, "12/02/2026 09:30:01 AM"),
        (2, False, "12/02/2026 09:30:03 AM"),
    ]
    second = devices(r)[(2, "nvme0n1")]
    assert (second["r_await_ms"], second["util_pct"], second["ts_raw"]) == (
        12.5,
        97.0,
        "12/02/2026 09:30:03 AM",
    )
    assert [i.line_no for i in r.issues] == [16]


# --- agreement with jc --------------------------------------------------------------------------

JC_CANNOT = {
    "ssd-blog-comma-decimal-64threads.txt": "decimal commas: jc reads '28,46' as 2846",
    "vbox-xdmz-comma-empty-report.txt": "decimal commas: jc reads '0,39' as 39",
    # tests/parsers/test_df_iostat_mounts_noise.py checks these (travel noise, JSON, -T): jc reads none of them
    "linuxgomes-wiki-el9-plain-dscd-comma-prompt-fence.txt": "decimal commas: jc reads '9,99' as 999",
    "sysstat-163-y-json-leading-comma.txt": "-o JSON: jc's iostat parser reads text only",
    "sysstat-222-ydx-json-quoted-backticks.txt": "-o JSON: jc's iostat parser reads text only",
    "sysstat-pr414-mT-datetime-column-proposed.txt": "-T Datetime column (proposed): jc finds no rows",
    "sysstat-pr414-mt-timestamp-mb-dscd.txt": "plain (not -x) report: this test compares -x columns",
    "azure-6.14-xh-pretty-groups-human-3reports.txt": "--human: jc reads no suffixed cell ('67.3k', '21.6%')",
    "wsl2-h-plain-human-device-last.txt": "--human: jc reads no suffixed cell ('70.4M')",
    "ubuntu19-xdh-human-comma-no-hostname.txt": "--human with decimal commas: jc reads neither",
    "percona-blog-x-nvme0n1-5-intel750-high-util-low-await.txt": "blank lines holding one space (as published): jc reads each as an empty cpu or device entry",
    "derived-percona-nvme0n1-root-saturated-90ms-writes.txt": "blank lines holding one space (as published): jc reads each as an empty cpu or device entry",
}
#: our column -> jc's key(s)
JC_KEYS = {
    "r_s": ("r_s",),
    "w_s": ("w_s",),
    "rkb_s": ("rkb_s",),
    "wkb_s": ("wkb_s",),
    "rrqm_s": ("rrqm_s",),
    "wrqm_s": ("wrqm_s",),
    "r_await_ms": ("r_await",),
    "w_await_ms": ("w_await",),
    "await_ms": ("await",),
    "aqu_sz": ("aqu_sz", "avgqu_sz"),
    "rareq_sz_kb": ("rareq_sz",),
    "wareq_sz_kb": ("wareq_sz",),
    "svctm_ms": ("svctm",),
    "util_pct": ("percent_util",),
    "f_s": ("f_s",),
    "d_s": ("d_s",),
}


@pytest.mark.parametrize("name", cases(ALL, JC_CANNOT))
def test_agrees_with_jc(name: str) -> None:
    jc = pytest.importorskip("jc")
    text = load(name)
    theirs = jc.parse("iostat", text, quiet=True)
    # jc reports paste artefacts ("[...]", "^C") as devices without numbers: drop them
    their_devs = [d for d in theirs if d["type"] == "device" and "r_s" in d]
    ours = iostat.parse(text).rows("iostat_device")
    assert [d["device"] for d in ours] == [d["device"] for d in their_devs]
    compared = 0
    for mine, their in zip(ours, their_devs, strict=True):
        for column, keys in JC_KEYS.items():
            key = next((k for k in keys if k in their), None)
            if key is None:
                continue
            assert mine[column] == pytest.approx(their[key]), (mine["device"], column)
            compared += 1
    assert compared >= len(ours) * 5
    their_cpus = [c for c in theirs if c["type"] == "cpu"]
    our_cpus = iostat.parse(text).rows("iostat_cpu")
    cpu_rows = 0
    for mine, their in zip(our_cpus, their_cpus, strict=False):
        for col in ("user", "nice", "system", "iowait", "steal", "idle"):
            assert mine[f"{col}_pct"] == pytest.approx(their[f"percent_{col}"])
        cpu_rows += 1
    # every avg-cpu row jc reads is compared (a zip over no row would pass on nothing)
    assert cpu_rows == len(their_cpus) and (cpu_rows > 0) == ("avg-cpu" in text), (cpu_rows, len(our_cpus))
