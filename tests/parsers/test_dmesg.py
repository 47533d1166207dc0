"""dmesg parser on every real kernel-log sample, plus the error contract."""

from __future__ import annotations

import pytest

import parsers
from parsers import dmesg
from tests.conftest import fixture_files, fixture_text


def events(name: str) -> list[dict]:
    return dmesg.parse(fixture_text("dmesg", name)).rows("kernel_event")


def test_ctime_xid13_and_109_behind_markdown_quotes() -> None:
    every = events("gpud-readme-dmesg-ctime-xid13-109.txt")
    # line 1 is no Xid: nvidia-peermem's "ERROR detected invalid context" (a catalog signature)
    assert [(e["event_type"], e["signature"]) for e in every[:1]] == [
        ("gpu_stack_error", "peermem_invalid_context")
    ]
    ev = every[1:]
    assert [e["xid"] for e in ev] == [13, 13, 13, 109]
    assert {e["pci"] for e in ev} == {"0000:cb:00.0"}
    assert ev[0]["ts"] == "2024-08-30T11:43:09" and ev[0]["pid"] is None and ev[0]["process"] is None
    assert ev[3]["pid"] == 1797828 and ev[3]["process"] == "pt_main_thread"
    assert "CTX SWITCH TIMEOUT" in ev[3]["message"] and ev[3]["line"] == 5


def test_fallen_off_bus_without_xid_token_joins_continuation_lines() -> None:
    ev = events("nvsentinel-155-fallen-off-bus-multiline.txt")
    fallen = [e for e in ev if e["event_type"] == "fallen_off_bus"]
    assert len(fallen) == 1
    assert fallen[0]["pci"] == "0000:b3:00.0" and fallen[0]["xid"] == 79
    assert fallen[0]["uptime_s"] == pytest.approx(1843.308145)
    assert "not responding to commands" in fallen[0]["message"]
    loaded = [e for e in ev if e["event_type"] == "nvrm_driver_loaded"]
    assert loaded[0]["message"] == "570.158.01"


def test_xid45_caused_by_earlier_xid_in_syslog_form() -> None:
    ev = events("ogkm-1150-xid45-after-149-145-syslog.txt")
    assert len(ev) == 7 and {e["xid"] for e in ev} == {45}
    assert ev[0]["caused_by_xid"] == 149 and ev[1]["caused_by_xid"] == 145
    assert ev[0]["pci"] == "0000:dc:00.0" and ev[0]["process"] == "python3" and ev[0]["ts_raw"] is None


def test_reltime_aer_only_has_no_xid() -> None:
    ev = events("returnn-1486-reltime-aer-no-xid.txt")
    assert ev and all(e["event_type"] == "pcie_aer" for e in ev)
    # each report: the port's "Corrected error received: <source>" line, then the source's Bus Error line
    assert [e["signature"] for e in ev] == ["aer_corrected_received", "aer_bus_error"] * 3
    assert {(e["severity"], e["pci"]) for e in ev} == {("Corrected", "0000:00:03.0")}
    assert (ev[0]["ts_raw"], ev[1]["ts_raw"]) == ("+0.000316", "+0.000005")


def test_nvswitch_sxid_is_not_a_gpu_xid() -> None:
    ev = events("sber-nvswitch3-sxid-22013-nonfatal-3lines.txt")
    assert {e["event_type"] for e in ev} == {"sxid"} and ev[0]["xid"] == 22013
    assert ev[0]["severity"] == "Non-fatal" and ev[0]["pci"] == "0000:08:00.0"


def test_dbe_burst_same_second() -> None:
    ev = events("uce-runbook-xid48-63-94-dbe.txt")
    assert [(e["xid"], e["pci"]) for e in ev] == [
        (48, "0000:52:00.0"),
        (63, "0000:52:00.0"),
        (94, "0000:52:00.0"),
    ]
    assert "double bit error" in ev[0]["message"]


def test_more_event_types() -> None:
    text = (
        "[  10.0] Out of memory: Killed process 4242 (python3) total-vm:1kB\n"
        "[  11.0] INFO: task kworker/1:2:311 blocked for more than 120 seconds.\n"
        "[  12.0] mce: [Hardware Error]: Machine check events logged\n"
        "[  13.0] Uhhuh. NMI received for unknown reason 2d on CPU 0.\n"
        "2024-08-30T11:43:09+0000 ip-10-1-2-3 kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus.\n"
    )
    ev = dmesg.parse(text).rows("kernel_event")
    assert [e["event_type"] for e in ev] == ["oom_kill", "hung_task", "mce", "nmi", "xid"]
    assert ev[0]["pid"] == 4242 and ev[0]["process"] == "python3"
    assert ev[1]["process"] == "kworker/1:2" and ev[1]["pid"] == 311
    assert ev[4]["ts"] == "2024-08-30T11:43:09" and ev[4]["xid"] == 79


@pytest.mark.parametrize("path", fixture_files("dmesg"), ids=lambda p: p.name)
def test_detected_as_dmesg(path) -> None:
    assert parsers.detect_kind(path.read_text()) == "dmesg"
