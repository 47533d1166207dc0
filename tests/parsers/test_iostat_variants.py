"""parsers.iostat keeps every printed value under the tool's own column name, across sysstat layouts.

Fixtures are the real captures of tests/fixtures/iostat/ (jc's own ones among them, see PROVENANCE.md);
the short texts below are hand-written in the layouts of sysstat 12 (``d/s f/s``, plain ``kB_dscd``,
``-o JSON``, ``-t -p -N``) for which no real capture was found, and say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parsers import iostat
from tests.skips import cases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "iostat"
ALL = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".txt", ".out"))
#: fixtures jc reads differently (so there is nothing to compare against)
JC_CANNOT = {
    "ssd-blog-comma-decimal-64threads.txt": "decimal commas: jc reads '28,46' as 2846",
    "vbox-xdmz-comma-empty-report.txt": "decimal commas: jc reads '0,39' as 39",
    # tests/parsers/test_df_iostat_mounts_noise.py checks these (travel noise, JSON, -T): jc reads none of them
    "linuxgomes-wiki-el9-plain-dscd-comma-prompt-fence.txt": "decimal commas: jc reads '9,99' as 999",
    "sysstat-163-y-json-leading-comma.txt": "-o JSON: jc's iostat parser reads text only",
    "sysstat-222-ydx-json-quoted-backticks.txt": "-o JSON: jc's iostat parser reads text only",
    "sysstat-pr414-mT-datetime-column-proposed.txt": "-T Datetime column (proposed): jc finds no rows",
    "azure-6.14-xh-pretty-groups-human-3reports.txt": "--human: jc reads no suffixed cell ('67.3k', '21.6%')",
    "wsl2-h-plain-human-device-last.txt": "--human: jc reads no suffixed cell ('70.4M')",
    "ubuntu19-xdh-human-comma-no-hostname.txt": "--human with decimal commas: jc reads neither",
    "percona-blog-x-nvme0n1-5-intel750-high-util-low-await.txt": "blank lines holding one space (as published): jc reads each as an empty cpu or device entry",
    "derived-percona-nvme0n1-root-saturated-90ms-writes.txt": "blank lines holding one space (as published): jc reads each as an empty cpu or device entry",
    "justdoit-notes-x-sda-write-bench-saturated-29reports.txt": "its first header reads 'r\\_await' (a markdown escape, as published): jc keeps the backslash in its key",
}


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def our_key(jc_key: str) -> str:
    """jc's key for a column -> ours (jc writes ``%`` as ``percent_``, we as ``pct_``)."""
    return jc_key.replace("percent_", "pct_")


@pytest.mark.parametrize("name", cases(ALL, JC_CANNOT))
def test_every_value_jc_reports_is_ours(name: str) -> None:
    jc = pytest.importorskip("jc")
    text = load(name)
    theirs = jc.parse("iostat", text, quiet=True)
    result = iostat.parse(text)
    for kind, table in (("cpu", "iostat_cpu"), ("device", "iostat_device")):
        # jc reports paste artefacts ("[...]", "^C") as devices without any number: drop them
        their_rows = [r for r in theirs if r["type"] == kind and set(r) - {"type", "device"}]
        ours = iter(result.rows(table))
        # in order, each jc row is one of ours (ours may hold more: an avg-cpu row cut from its header)
        for their in their_rows:
            assert any(_holds(mine, their) for mine in ours), (name, their)
        if kind == "device":
            assert len(result.rows(table)) == len(their_rows), name


def _holds(mine: dict, their: dict) -> bool:
    """Our row has every value of jc's row, under jc's key (same number, same int/float type)."""
    if "device" in their and mine["device"] != their["device"]:
        return False
    for key, value in their.items():
        if key in ("type", "device"):
            continue
        column = our_key(key)
        assert column in mine, key  # a column jc knows and we do not
        if mine[column] != pytest.approx(value) or type(mine[column]) is not type(value):
            return False
    return True


# --- per layout, real captures ------------------------------------------------------------------


def dev(result, report: int, device: str) -> dict:  # type: ignore[no-untyped-def]
    return next(r for r in result.rows("iostat_device") if (r["report_no"], r["device"]) == (report, device))


def test_plain_device_report_keeps_totals() -> None:
    r = iostat.parse(load("jc-centos77-plain-d.out"))
    sda = dev(r, 1, "sda")
    assert (sda["tps"], sda["kb_read_s"], sda["kb_wrtn_s"], sda["kb_read"], sda["kb_wrtn"]) == (
        0.24,
        5.28,
        1.10,
        203305,
        42368,
    )
    assert (sda["rkb_s"], sda["wkb_s"]) == (5.28, 1.10)  # normalised beside, same unit
    assert sda["r_s"] is None and json.loads(sda["extra"]) == {}
    assert r.issues == []


def test_plain_mb_report_keeps_mb_and_adds_kb() -> None:
    r = iostat.parse(load("jc-ubuntu1804-m-plain-mb.out"))
    sda = dev(r, 1, "sda")
    assert (sda["mb_read_s"], sda["mb_wrtn_s"], sda["mb_read"], sda["mb_wrtn"]) == (2.19, 3.88, 1481, 2624)
    assert sda["rkb_s"] == pytest.approx(2.19 * 1024) and sda["wkb_s"] == pytest.approx(3.88 * 1024)
    assert sda["kb_read"] is None  # not printed: no made-up raw column
    assert len(r.rows("iostat_device")) == 20 and r.issues == []


def test_old_layout_mb_keeps_avgrq_sz_in_sectors() -> None:
    r = iostat.parse(load("jc-centos77-mx-old-layout.out"))
    sda = dev(r, 1, "sda")
    assert (sda["rmb_s"], sda["avgrq_sz"], sda["avgqu_sz"], sda["await"], sda["svctm"], sda["pct_util"]) == (
        0.01,
        52.51,
        0.0,
        0.88,
        0.52,
        0.01,
    )
    assert sda["areq_sz_kb"] == pytest.approx(52.51 / 2) and sda["rkb_s"] == pytest.approx(10.24)
    assert (sda["await_ms"], sda["svctm_ms"], sda["util_pct"]) == (0.88, 0.52, 0.01)


def test_sysstat_11_6_interim_layout() -> None:
    r = iostat.parse(load("jc-ubuntu1804-x-sysstat11.6.out"))
    sda = dev(r, 1, "sda")
    assert (
        sda["pct_rrqm"],
        sda["pct_wrqm"],
        sda["r_await"],
        sda["aqu_sz"],
        sda["wareq_sz"],
        sda["svctm"],
    ) == (
        10.99,
        68.04,
        2.57,
        0.79,
        185.52,
        0.78,
    )
    assert (sda["rkb_s"], sda["wkb_s"], sda["r_await_ms"], sda["wareq_sz_kb"], sda["util_pct"]) == (
        8595.16,
        12457.33,
        2.57,
        185.52,
        15.14,
    )
    cpu = r.rows("iostat_cpu")[0]
    assert (cpu["pct_iowait"], cpu["iowait_pct"], cpu["pct_nice"]) == (2.28, 2.28, 12.36)


def test_sysstat_12_d_s_f_s_raw_beside_normalised() -> None:
    nvme = dev(iostat.parse(load("riscv64-dkx-dotted-date.txt")), 1, "nvme0n1")
    assert (nvme["d_s"], nvme["f_s"], nvme["f_await"], nvme["f_await_ms"]) == (0.0, 0.15, 0.31, 0.31)
    assert nvme["dareq_sz"] is not None and nvme["pct_drqm"] is not None and nvme["drqm_s"] is not None


def test_decimal_commas_keep_raw_mb() -> None:
    sda = dev(iostat.parse(load("vbox-xdmz-comma-empty-report.txt")), 1, "sda")
    assert sda["rmb_s"] == 1.25 and sda["rkb_s"] == 1280.0


# --- layouts without a real capture (hand-written) -----------------------------------------------

#: hand-written: sysstat 12.x `iostat -d -t -p sda -N` plain report with discards, a column not known
#: to the parser (kept in extra) and partitions; two reports
SYSSTAT12_PLAIN = """\
Linux 6.8.0-1017-aws (ip-10-0-0-1)  12/02/2026  _x86_64_  (96 CPU)

12/02/2026 09:30:01 AM
Device             tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd   new_col/s
sda               1.50        10.00        20,50         0.00       1000       2050          0        7.25
sda1              1.00         5.00         0.00         0.00        500          0          0        0.00
vg0-root          0.50         5.00        20.50         0.00        500       2050          0        1.00

12/02/2026 09:30:03 AM
Device             tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd   new_col/s
sda             100.00      4000.00         0.00         0.00       8000          0          0        0.00
"""


def test_plain_sysstat12_with_discards_partitions_dm_names_and_unknown_column() -> None:
    r = iostat.parse(SYSSTAT12_PLAIN)
    assert r.issues == []
    sda = dev(r, 1, "sda")
    assert (sda["kb_dscd_s"], sda["kb_dscd"], sda["kb_wrtn_s"], sda["dkb_s"], sda["wkb_s"]) == (
        0.0,
        0,
        20.5,
        0.0,
        20.5,
    )
    assert json.loads(sda["extra"]) == {"new_col_s": 7.25}
    assert dev(r, 1, "sda1")["kb_read"] == 500 and dev(r, 1, "vg0-root")["kb_wrtn"] == 2050
    second = dev(r, 2, "sda")
    assert (second["ts_raw"], second["since_boot"], second["kb_read"]) == (
        "12/02/2026 09:30:03 AM",
        False,
        8000,
    )


#: hand-written: a very old avg-cpu header (``%sys``, no %steal) and sectors per second
OLD_SYS = """\
avg-cpu:  %user   %nice    %sys %iowait   %idle
           1.00    0.00    2.00    3.00   94.00

Device:    rrqm/s wrqm/s   r/s   w/s  rsec/s  wsec/s avgrq-sz avgqu-sz   await  svctm  %util
hda          0.10   1.00  2.00  3.00   16.00   32.00     9.60     0.01    1.50   0.40   0.20
"""


def test_old_sys_cpu_header_and_sectors() -> None:
    r = iostat.parse(OLD_SYS)
    cpu = r.rows("iostat_cpu")[0]
    assert (cpu["pct_sys"], cpu["system_pct"], cpu["pct_system"], cpu["steal_pct"]) == (2.0, 2.0, None, None)
    hda = dev(r, 1, "hda")
    assert (hda["rsec_s"], hda["wsec_s"], hda["rkb_s"], hda["wkb_s"]) == (16.0, 32.0, 8.0, 16.0)
    assert r.issues == []


#: hand-written in the shape of sysstat 12 `iostat -x -t -o JSON 1 2`
JSON_OUT = json.dumps(
    {
        "sysstat": {
            "hosts": [
                {
                    "nodename": "gpu-node-7",
                    "sysname": "Linux",
                    "release": "6.8.0-1017-aws",
                    "machine": "x86_64",
                    "number-of-cpus": 96,
                    "date": "12/02/2026",
                    "statistics": [
                        {
                            "timestamp": "12/02/2026 09:30:01 AM",
                            "avg-cpu": {"user": 3.42, "nice": 0.0, "system": 2.92, "iowait": 1.9, "steal": 0.0,
                                        "idle": 91.76},
                            "disk": [
                                {"disk_device": "nvme0n1", "r/s": 1.0, "rkB/s": 14.12, "rrqm/s": 0.0, "rrqm": 0.0,
                                 "r_await": 0.62, "rareq-sz": 14.15, "w/s": 0.01, "wkB/s": 0.0, "wrqm/s": 0.0,
                                 "wrqm": 0.0, "w_await": 0.0, "wareq-sz": 0.0, "d/s": 0.0, "dkB/s": 0.0,
                                 "drqm/s": 0.0, "drqm": 0.0, "d_await": 0.0, "dareq-sz": 0.0, "f/s": 0.0,
                                 "f_await": 0.0, "aqu-sz": 0.0, "util": 0.03},
                            ],
                        },
                        {
                            "timestamp": "12/02/2026 09:30:02 AM",
                            "avg-cpu": {"user": 10.0, "nice": 0.0, "system": 2.0, "iowait": 25.5, "steal": 0.0,
                                        "idle": 62.5},
                            "disk": [{"disk_device": "nvme0n1", "r/s": 900.0, "util": 97.0, "new-thing": 4}],
                        },
                    ],
                }
            ]
        }
    },
    indent=2,
)  # fmt: skip


def test_json_output() -> None:
    import parsers

    assert parsers.detect_kind(JSON_OUT) == "iostat"
    r = iostat.parse(JSON_OUT)
    host = r.rows("iostat_host")[0]
    assert (host["hostname"], host["kernel"], host["ncpu"], host["arch"]) == (
        "gpu-node-7",
        "6.8.0-1017-aws",
        96,
        "x86_64",
    )
    cpus = r.rows("iostat_cpu")
    assert [(c["report_no"], c["since_boot"], c["iowait_pct"], c["pct_iowait"]) for c in cpus] == [
        (1, True, 1.9, 1.9),
        (2, False, 25.5, 25.5),
    ]
    first = dev(r, 1, "nvme0n1")
    assert (first["rkb_s"], first["r_await"], first["r_await_ms"], first["pct_util"], first["util_pct"]) == (
        14.12,
        0.62,
        0.62,
        0.03,
        0.03,
    )
    assert (first["dareq_sz"], first["pct_drqm"], first["f_s"], first["ts_raw"]) == (
        0.0,
        0.0,
        0.0,
        "12/02/2026 09:30:01 AM",
    )
    second = dev(r, 2, "nvme0n1")
    assert (second["r_s"], second["util_pct"], json.loads(second["extra"])) == (
        900.0,
        97.0,
        {"new_thing": 4.0},
    )
    assert r.issues == []


def test_json_that_is_not_iostat_is_a_parse_error() -> None:
    with pytest.raises(iostat.ParseError):
        iostat.parse('{"sysstat": {"nohosts": []}}')


# --- skipped lines --------------------------------------------------------------------------------


def test_a_skipped_data_line_is_an_issue_with_its_line_number() -> None:
    text = load("jc-ubuntu1804-x-sysstat11.6.out").splitlines()
    text[9] = text[9].replace("0.34", "x.yz", 1)  # line 10: loop3
    r = iostat.parse("\n".join(text) + "\n")
    assert [i.line_no for i in r.issues] == [10]
    assert "loop3" not in {d["device"] for d in r.rows("iostat_device")}
    assert len(r.rows("iostat_device")) == 19


def test_a_count_that_is_not_an_integer_is_an_issue() -> None:
    text = SYSSTAT12_PLAIN.replace("       1000       2050", "     1000.5       2050", 1)
    r = iostat.parse(text)
    assert [i.line_no for i in r.issues] == [5]


def test_zero_rows_from_data_is_a_problem() -> None:
    # every data row mangled: no row comes out, a ParseError says what was expected and what was seen
    text = "Device:  r/s  w/s\nsda  1.0\nsdb  2.0 3.0 4.0\n"
    with pytest.raises(iostat.ParseError, match=r"2 line\(s\) not understood, first at line 2: 'sda  1.0'"):
        iostat.parse(text)


def test_json_rows_carry_their_line_and_a_bad_entry_is_an_issue() -> None:
    r = iostat.parse(JSON_OUT)
    lines = JSON_OUT.splitlines()
    for table, key in (
        ("iostat_host", '"nodename"'),
        ("iostat_cpu", '"avg-cpu"'),
        ("iostat_device", '"disk_device"'),
    ):
        for row in r.rows(table):
            assert key in lines[row["line"] - 1], (table, row["line"])
    spoiled = JSON_OUT.replace('"r/s": 900.0', '"kB_read": 1.5', 1)
    bad = iostat.parse(spoiled)
    assert len(bad.rows("iostat_device")) == 1
    assert [i.line_no for i in bad.issues] == [r.rows("iostat_device")[1]["line"]]


@pytest.mark.parametrize("name", [*ALL, "JSON_OUT", "SYSSTAT12_PLAIN", "OLD_SYS"])
def test_rows_hold_exactly_the_schema_columns_with_their_types(name: str) -> None:
    text = globals()[name] if name.isupper() else load(name)
    kinds = {"int": int, "float": float, "str": str, "bool": bool}
    for table, rows in iostat.parse(text).table_rows().items():
        columns = {c.name: c.type for c in iostat.SCHEMA[table]}
        for row in rows:
            assert set(row) == set(columns), table
            for key, value in row.items():
                assert value is None or type(value) is kinds[columns[key]], (table, key, value)
            if "extra" in row:
                assert isinstance(json.loads(row["extra"]), dict)


#: hand-written in the shape of sysstat 12 `iostat -h` (human units, device name last): not read,
#: but no line of it is dropped silently
HUMAN = """\
Linux 6.8.0-1017-aws (ip-10-0-0-1)  12/02/2026  _x86_64_  (96 CPU)

avg-cpu:  %user   %nice %system %iowait  %steal   %idle
           1.6%    0.0%    0.6%    0.1%    0.0%   97.7%

      tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd Device
     4.43        38.5k        54.6k         0.0k       2.0G       2.9G       0.0k nvme0n1
"""


def test_human_units_are_converted_to_each_columns_unit() -> None:
    r = iostat.parse(HUMAN)
    assert not r.issues
    (cpu,) = r.rows("iostat_cpu")
    assert (cpu["user_pct"], cpu["iowait_pct"], cpu["idle_pct"]) == (1.6, 0.1, 97.7)
    (dev,) = r.rows("iostat_device")
    assert (dev["device"], dev["tps"], dev["rkb_s"], dev["wkb_s"]) == ("nvme0n1", 4.43, 38.5, 54.6)
    assert (dev["kb_read"], dev["kb_wrtn"], dev["kb_dscd"]) == (2097152, 3040870, 0)
