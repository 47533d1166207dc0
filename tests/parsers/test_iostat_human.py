"""iostat --human (sysstat >= 12 ``-h``): suffixed cells in each column's unit, the device name last,
``-x --pretty`` column groups joined per device, and the old ``-h`` (device name on its own line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers import iostat
from tests.conftest import FIXTURES

DIR: Path = FIXTURES / "iostat"


def parse(name: str) -> iostat.ParseResult:
    return iostat.parse((DIR / name).read_text())


def test_pretty_groups_join_into_one_row_per_device_and_report() -> None:
    r = parse("azure-6.14-xh-pretty-groups-human-3reports.txt")
    assert not r.issues
    devices = r.rows("iostat_device")
    assert [(d["report_no"], d["device"]) for d in devices[:3]] == [(1, "loop0"), (1, "sda"), (1, "sdb")]
    assert len(devices) == 9 and {d["report_no"] for d in devices} == {1, 2, 3}
    sdb = devices[2]
    # the four groups of one report: r (line 10), w, d, f cells on the same row
    assert (sdb["line"], sdb["r_s"], sdb["rkb_s"], sdb["wareq_sz_kb"]) == (10, 0.04, 1.2, 922.6)
    assert (sdb["dkb_s"], sdb["dareq_sz"], sdb["pct_drqm"], sdb["util_pct"]) == (2150.4, 1887436.8, 47.1, 0.0)
    sda = devices[1]
    assert (sda["pct_rrqm"], sda["pct_wrqm"], sda["f_await_ms"], sda["util_pct"]) == (21.6, 42.2, 3.16, 0.2)
    cpu = r.rows("iostat_cpu")
    assert [(c["report_no"], c["user_pct"], c["idle_pct"]) for c in cpu] == [
        (1, 2.0, 97.6),
        (2, 0.5, 99.0),
        (3, 1.0, 97.5),
    ]
    assert [c["since_boot"] for c in cpu] == [True, False, False]


def test_plain_human_totals_in_kb() -> None:
    r = parse("wsl2-h-plain-human-device-last.txt")
    assert not r.issues
    sda, sdb, sdc = r.rows("iostat_device")
    # the same page's plain iostat of the host: sda kB_read 72041, sdc kB_wrtn 19697440, kB_dscd 1073947964
    assert (sda["device"], sda["tps"], sda["kb_read_s"], sda["rkb_s"], sda["kb_read"]) == (
        "sda",
        0.18,
        11.1,
        11.1,
        72090,
    )
    assert (sdb["kb_read"], sdb["kb_wrtn"]) == (2355, 4)
    assert (sdc["wkb_s"], sdc["dkb_s"], sdc["kb_wrtn"], sdc["kb_dscd"]) == (
        3072.0,
        165888.0,
        19713229,
        1073741824,
    )
    assert abs(sdc["kb_wrtn"] - 19697440) / 19697440 < 0.001
    assert r.rows("iostat_cpu")[0]["idle_pct"] == 99.9


def test_human_with_decimal_commas_and_banner_without_host() -> None:
    r = parse("ubuntu19-xdh-human-comma-no-hostname.txt")
    assert not r.issues
    (host,) = r.rows("iostat_host")
    assert (host["kernel"], host["hostname"], host["date"], host["ncpu"]) == (
        "5.0.0-13-generic",
        None,
        "06/05/19",
        4,
    )
    (sda,) = r.rows("iostat_device")
    assert (sda["r_s"], sda["rkb_s"], sda["wkb_s"], sda["pct_wrqm"], sda["rareq_sz_kb"]) == (
        139.31,
        3072.0,
        358.4,
        63.5,
        22.0,
    )
    assert (sda["svctm_ms"], sda["util_pct"]) == (2.06, 31.3)


#: DERIVED from aks-node-xy-old-format.txt: the sysstat < 12 ``-h`` prints the device name on its own line
OLD_H = """Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util
sda
                  0.00    56.00    0.00   65.00     0.00   504.00    15.51     0.01    3.02    0.00    3.02   0.12   0.80
sdb
"""


def test_old_h_device_name_on_its_own_line() -> None:
    r = iostat.parse(OLD_H)
    (sda,) = r.rows("iostat_device")
    assert (sda["device"], sda["line"], sda["wkb_s"], sda["util_pct"]) == ("sda", 3, 504.0, 0.8)
    assert [(i.line_no, i.line) for i in r.issues] == [(4, "sdb")]  # a name without numbers is loud


@pytest.mark.parametrize(
    ("cell", "why"),
    [("67.3q", "unknown suffix"), ("1.2k%", "two suffixes"), ("21.6k", "a size in a percent column")],
)
def test_garbled_human_cell_is_an_issue_and_keeps_the_line(cell: str, why: str) -> None:
    text = (DIR / "ubuntu19-xdh-human-comma-no-hostname.txt").read_text().replace("27,7%", cell)
    r = iostat.parse(text)
    assert [i.line_no for i in r.issues] == [4], why
    assert "Device" not in r.issues[0].reason or "--human" in r.issues[0].reason
