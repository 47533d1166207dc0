"""fabricmanager: status without glyph, NVLSM node with FM log lines, journalctl in any -o format and locale,
the fabricmanager.log file itself, SXid lines, travel noise.  Real fixtures unless said "derived"/"synthetic"."""

from __future__ import annotations

import json

import pytest

import parsers
from parsers import ParseError, fabricmanager
from tests.conftest import fixture_text


def parse(name: str) -> parsers.ParseResult:
    return fabricmanager.parse(fixture_text("fabricmanager", name))


def test_nvlsm_node_status_with_drop_in_fm_stamps_and_ellipsis() -> None:
    r = parse("bottlerocket-kk-142-nvl5-guid-fmlog-ellipsis-cut.txt")
    assert r.issues == []  # the "bash-5.1#" prompt line is noise, not an issue
    [row] = r.rows("service_state")
    assert (row["line"], row["active_state"], row["sub_state"], row["main_pid"]) == (
        2,
        "active",
        "running",
        29850,
    )
    assert row["main_process"] == "nv-fabricmanage" and row["preset"] == "enabled"
    assert row["unit_file"].endswith("/usr/lib/systemd/system/nvidia-fabricmanager.service")
    extra = json.loads(row["extra"])
    assert extra["Drop-In"] == ["/x86_64-bottlerocket-linux-gnu/sys-root/usr/lib/systemd/system/service.d",
                                "00-aws-config.conf"]  # fmt: skip
    assert extra["CGroup"][1].endswith("-g 0xe09d7303003f3bf8") and extra["Tasks"] == "32 (limit: 629145)"
    first, second, cut = r.rows("fabric_event")
    assert (first["line"], first["level"], first["tid"], first["fm_ts"]) == (
        14,
        "INFO",
        30042,
        "2025-05-16T15:10:21",
    )
    assert first["ts"] == "2025-05-16T15:10:22" and first["hostname"].startswith("ip-192-168-38-187")
    assert first["message"].startswith("GPU probe request received from node Id 0 and module Id 7")
    assert second["truncated"] is True and second["message"].endswith("requestId 0x18400a7eca…")
    assert (cut["line"], cut["message"], cut["ident"], cut["pid"]) == (16, "", "nv-fabricmanager", 29850)


def test_status_without_glyph() -> None:
    [row] = parse("bottlerocket-3873-p4d-no-glyph-running.txt").rows("service_state")
    assert (row["unit"], row["description"], row["active_state"]) == (
        "nvidia-fabricmanager.service",
        "NVIDIA fabric manager service",
        "active",
    )
    assert row["main_pid"] == 128549 and row["since"] == "2024-05-16T23:22:02"
    assert "/usr/libexec/nvidia/tesla/bin/nv-fabricmanager" in json.loads(row["extra"])["CGroup"][1]


def test_journalctl_xeu_after_failed_restart() -> None:
    r = parse("nvtrust-128-journalctl-xeu-prompts-cut.txt")
    assert r.issues == []
    [row] = r.rows("service_state")
    assert (row["unit"], row["source"], row["active_state"]) == (
        "nvidia-fabricmanager.service",
        "journal",
        None,
    )
    assert (row["platform"], row["fabric_configured"], row["journal_state"]) == ("Pre-NVL5", True, "stopping")
    assert row["last_error"].startswith("Job for nvidia-fabricmanager.service failed")
    events = r.rows("fabric_event")
    assert len(events) == 10
    job = events[0]
    assert (job["line"], job["event"], job["severity"], job["ident"]) == (
        2,
        "job_failed",
        "error",
        "systemctl",
    )
    assert job["detail"].startswith('See "systemctl status nvidia-fabricmanager.service"')
    by_line = {e["line"]: e for e in events}
    assert by_line[6]["event"] == "platform" and by_line[8]["event"] == "configured"
    assert (
        by_line[7]["ts_text"] == "Jan 05 14:45:26" and by_line[7]["ts"] is None
    )  # short stamp: no year known
    assert by_line[13]["message"] == "nvidia-fabricmana"


def test_journal_with_chinese_month_names() -> None:
    r = parse("gpu-operator-610-journal-zh-month-failed-cut.txt")
    events = r.rows("fabric_event")
    assert [e["ts_text"] for e in events] == ["11月 15 14:15:47"] * 4
    assert (events[1]["ident"], events[1]["pid"], events[1]["severity"]) == (
        "nv-fabricmanager",
        4177,
        "error",
    )
    assert "NV_WARN_NOTHING_TO_DO" in events[1]["message"]
    assert events[2]["event"] == "exit" and events[0]["event"] == "starting"
    [row] = r.rows("service_state")
    assert (
        row["last_error"]
        == "nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE"
    )


def test_journal_between_author_banners() -> None:
    r = parse("cube-studio-29-journal-start-sh-failed-banners.txt")
    assert r.issues == []
    events = r.rows("fabric_event")
    assert [e["line"] for e in events] == [2, 3, 4, 5]
    assert events[2]["event"] == "exit" and events[2]["message"].endswith("failed! Exit code: 1")
    assert r.rows("service_state")[0]["platform"] == "Pre-NVL5"


def test_fabricmanager_log_file_multiline_and_nvswitch_error() -> None:
    r = parse("gpud-testdata-fmlog-multiline-nvswitch-error.txt")
    assert r.issues == [] and r.rows("service_state") == []
    events = r.rows("fabric_event")
    assert len(events) == 54
    first = events[0]
    assert (first["ts"], first["level"], first["tid"]) == ("2025-02-25T13:59:45", "INFO", 1803)
    assert (
        first["detail"]
        == "Message payload details:Team release request: Team Handle:99c9f23d49236386 Flags:0"
    )
    err = events[-1]
    assert (err["line"], err["severity"], err["event"], err["sxid"], err["sxid_fatal"]) == (
        100,
        "error",
        "sxid",
        12028,
        False,
    )
    assert (err["pci"], err["pci_printed"], err["physical_id"], err["port"]) == (
        "0000:86:00.0",
        "00000000:86:00.0",
        3,
        61,
    )
    assert parsers.detect_kind(
        fixture_text("fabricmanager", "gpud-testdata-fmlog-multiline-nvswitch-error.txt")
    ) == ("fabricmanager")


SBER_JOURNAL = fixture_text("fabricmanager", "sber-590-running-clean-pager-cut.txt").splitlines()[12:]


@pytest.mark.parametrize(
    ("stamp", "ts"),
    [
        ("2026-03-03T18:39:35+0300", "2026-03-03T18:39:35"),  # -o short-iso
        ("2026-03-03T18:39:35+03:00", "2026-03-03T18:39:35"),  # -o short-iso, systemd 255
        ("2026-03-03T18:39:35.123456+0300", "2026-03-03T18:39:35.123456"),  # short-iso-precise
        ("Tue 2026-03-03 18:39:35 MSK", "2026-03-03T18:39:35"),  # -o short-full
        ("1772552375.123456", "2026-03-03T15:39:35.123456"),  # -o short-unix (UTC)
    ],
)
def test_derived_journal_output_formats(stamp: str, ts: str) -> None:
    lines = [stamp + line[15:] for line in SBER_JOURNAL]  # the real lines with the stamp swapped
    r = fabricmanager.parse("\n".join(lines) + "\n")
    events = r.rows("fabric_event")
    assert len(events) == 6 and r.issues == []
    assert events[2]["ts"] == ts and events[2]["ident"] == "nv-fabricmanager" and events[2]["pid"] == 5219
    assert events[3]["event"] == "configured" and events[3]["truncated"] is True


def test_derived_short_precise_takes_the_year_of_the_status() -> None:
    text = fixture_text("fabricmanager", "sber-590-running-clean-pager-cut.txt")
    text = text.replace("Mar 03 18:39:35 tpgds", "Mar 03 18:39:35.482113 tpgds")
    events = fabricmanager.parse(text).rows("fabric_event")
    assert events[2]["ts"] == "2026-03-03T18:39:35.482113" and events[0]["ts"] == "2026-03-03T18:39:05"


def test_derived_srun_prefix_crlf_and_pager_line() -> None:
    text = fixture_text("fabricmanager", "bottlerocket-kk-142-nvl5-guid-fmlog-ellipsis-cut.txt")
    text = "".join(f"0: {line}\r\n" for line in text.splitlines()) + "lines 1-16/16 (END)\r\n"
    r = fabricmanager.parse(text)
    assert r.issues == []
    [row] = r.rows("service_state")
    assert row["host"] == "0" and row["main_pid"] == 29850
    assert [e["host"] for e in r.rows("fabric_event")] == ["0", "0", "0"]


def test_derived_kernel_sxid_lines_in_the_capture() -> None:
    kernel = fixture_text("dmesg", "sber-nvswitch3-sxid-22013-nonfatal-3lines.txt")
    text = fixture_text("fabricmanager", "sber-590-running-clean-pager-cut.txt") + kernel
    assert parsers.detect_kind(text) == "fabricmanager"
    r = fabricmanager.parse(text)
    sxid = [e for e in r.rows("fabric_event") if e["event"] == "sxid"]
    assert [(e["line"], e["sxid"], e["pci"], e["device"]) for e in sxid] == [
        (19, 22013, "0000:08:00.0", "nvidia-nvswitch3"),
        (20, 22013, "0000:08:00.0", "nvidia-nvswitch3"),
        (21, 22013, "0000:08:00.0", "nvidia-nvswitch3"),
    ]
    assert (sxid[0]["sxid_fatal"], sxid[0]["port"], sxid[0]["severity"], sxid[0]["ts_text"]) == (
        False,
        60,
        "warning",
        "117.984502",
    )


NVL5_TWO_UNITS = """\
* nvidia-fabricmanager.service - NVIDIA fabric manager service
     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)
     Active: active (running) since Wed 2025-06-04 10:00:02 UTC; 1h ago
   Main PID: 4100 (nv-fabricmanage)
Jun 04 10:00:01 b200-node nvidia-fabricmanager-start.sh[4001]: Detected NVL5 system
Jun 04 10:00:02 b200-node nv-fabricmanager[4100]: Successfully configured all the available NVSwitches to route GPU NVLink traffic.

* nvlsm.service - NVIDIA NVLink Subnet Manager
     Loaded: loaded (/lib/systemd/system/nvlsm.service; enabled; vendor preset: enabled)
     Active: failed (Result: exit-code) since Wed 2025-06-04 11:02:40 UTC; 2min ago
   Main PID: 4050 (code=exited, status=1/FAILURE)
Jun 04 11:02:40 b200-node nvlsm[4050]: fatal: port GUID 0xdeadbeef not found
"""


def test_synthetic_nvl5_fabricmanager_and_nvlsm_units() -> None:
    r = fabricmanager.parse(NVL5_TWO_UNITS)
    fm, sm = r.rows("service_state")
    assert (fm["unit"], fm["platform"], fm["fabric_configured"], fm["active_state"]) == (
        "nvidia-fabricmanager.service",
        "NVL5",
        True,
        "active",
    )
    assert (sm["unit"], sm["active_state"], sm["result"], sm["main_exit"]) == (
        "nvlsm.service",
        "failed",
        "exit-code",
        "code=exited, status=1/FAILURE",
    )
    assert sm["last_error"] == "fatal: port GUID 0xdeadbeef not found"
    assert [(e["unit"], e["ts"]) for e in r.rows("fabric_event")][-1] == (
        "nvlsm.service",
        "2025-06-04T11:02:40",
    )


def test_synthetic_old_fm_log_stamp_with_version_and_an_unknown_line() -> None:
    text = (
        "[Mon Jan  1 12:00:00 2024] [INFO] [tid 5] Fabric Manager version 535.54.03 is running with the "
        "following configuration options\n"
        "[Mon Jan  1 12:00:01 2024] [WARNING] [tid 5] NVLink link 7 training failed\n"
        "\n"
        "garbage 42 here\n"
    )
    r = fabricmanager.parse(text)
    first, second = r.rows("fabric_event")
    assert (first["ts"], first["event"], second["severity"]) == ("2024-01-01T12:00:00", "version", "warning")
    [row] = r.rows("service_state")
    assert (row["unit"], row["version"], row["source"]) == (None, "535.54.03", "other")
    assert [(i.line_no, i.line) for i in r.issues] == [(4, "garbage 42 here")]


def test_garbage_error_says_what_was_expected() -> None:
    with pytest.raises(ParseError, match="no systemctl status, journal line.*saw|first line: 'hello there'"):
        fabricmanager.parse("hello there\nnothing else\n")
