"""The Xid catalog against NVIDIA's catalog (NV-XID): codes, buckets, severity mapping, actions, decoding."""

from __future__ import annotations

import pytest

from analyzer.judge.findings import Severity
from analyzer.judge.xid_catalog import (
    CATALOG,
    IMMEDIATE,
    INVESTIGATORY,
    NVLINK5_DECODE,
    assess,
    decode_nvlink5,
    xid_entry,
)

C, W, I = Severity.CRITICAL, Severity.WARNING, Severity.INFO  # noqa: E741


def test_every_code_1_to_172_is_in_the_catalog() -> None:
    assert sorted(CATALOG) == list(range(1, 173))
    for c in (106, 107, 108, 142, 152, 153, 166, 170):
        assert "not in" not in xid_entry(c).meaning, c


def test_every_entry_has_a_source_note_and_known_buckets() -> None:
    for entry in CATALOG.values():
        assert entry.source and entry.meaning and entry.cause_class, entry.code
        if entry.immediate is not None:
            assert entry.immediate in IMMEDIATE, entry
        if entry.investigatory is not None:
            assert entry.investigatory in INVESTIGATORY, entry
        if entry.immediate is None:  # 162-172: NVIDIA gives no bucket, the note must say so
            assert "no bucket" in entry.source, entry.code
    for row in NVLINK5_DECODE:
        assert row.immediate in IMMEDIATE and row.investigatory in INVESTIGATORY, row


def test_severity_follows_the_immediate_bucket() -> None:
    expect = {"RESET_GPU": C, "RESTART_BM": C, "CHECK_MECHANICALS": C, "RESTART_APP": W, "IGNORE": I}
    for entry in CATALOG.values():
        if entry.immediate in expect and not (entry.investigatory or "").startswith("WORKFLOW_XID_"):
            want = C if entry.code == 150 else expect[entry.immediate]
            assert entry.severity == want, entry


@pytest.mark.parametrize("code", [56, 57, 61, 122, 123, 124, 125])
def test_unused_on_ampere_is_info_and_says_so(code: int) -> None:
    e = xid_entry(code)
    assert e.unused and e.severity == I
    assert e.action == "not expected on Ampere and later; if seen, contact support"


@pytest.mark.parametrize("code", [38, 44, 92, 157])
def test_ignore_codes_are_info(code: int) -> None:
    assert xid_entry(code).immediate == "IGNORE" and xid_entry(code).severity == I


@pytest.mark.parametrize("code", [150, 155])
def test_reset_gpu_nvlink_codes_are_critical(code: int) -> None:
    assert xid_entry(code).severity == C
    assert xid_entry(code).action.startswith("reset the GPU")


@pytest.mark.parametrize("code", [48, 62, 64, 74, 95, 140])
def test_first_action_is_a_reset_not_a_replacement(code: int) -> None:
    a = assess(code)
    assert a.severity == C and a.action.startswith("reset the GPU"), a
    assert "node reboot" in a.action and "auto-recovery" in a.action
    assert "replace" not in a.action


def test_79_restarts_the_machine_and_54_checks_seating() -> None:
    assert xid_entry(79).immediate == "RESTART_BM" and xid_entry(79).action.startswith("restart the machine")
    assert "replace" not in xid_entry(79).action
    assert xid_entry(54).immediate == "CHECK_MECHANICALS" and "seated" in xid_entry(54).action


def test_48_with_remap_drains_then_resets() -> None:
    assert assess(48, with_remap=True).action.startswith("drain the node's jobs, then reset the GPU")


def test_recurrence_escalates_only_where_the_catalog_says() -> None:
    # reset-class with CONTACT_SUPPORT: replace when it recurs
    assert "replace the node" in assess(62, count=3, repeat=3).action
    assert "replace" not in assess(62, count=2, repeat=3).action
    # reset-class with a software investigation: no replacement
    assert "replace" not in assess(155, count=5, repeat=3).action
    # IGNORE / CONTACT_SUPPORT: info -> warning, contact support
    a = assess(92, count=3, repeat=3)
    assert a.severity == W and a.recurring and "contact support" in a.action and "replace" not in a.action
    # IGNORE / IGNORE: nothing to escalate
    assert assess(63, count=10, repeat=3).severity == I
    # app workflow: info alone, warning when it recurs
    assert assess(13).severity == I and assess(13, count=3, repeat=3).severity == W


def test_45_alone_restarts_fabric_manager() -> None:
    assert assess(45).severity == I
    solo = assess(45, solo=True)
    assert solo.severity == W and "Fabric Manager" in solo.action


def test_154_takes_the_action_it_names() -> None:
    msg = "GPU recovery action changed from 0x0 (None) to {}"
    assert assess(154, msg.format("0x2 (Node Reboot Required)")).severity == C
    assert assess(154, msg.format("0x1 (GPU Reset Required)")).severity == C
    assert assess(154, msg.format("0x4 (Drain and Reset)")).action.startswith("drain the node's jobs")
    assert assess(154, msg.format("0x3 (Drain P2P)")).severity == W
    assert (
        assess(154, "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)").severity == I
    )


# Real lines as quoted in leptonai/gpud (components/accelerator/nvidia/xid/kmsg_test.go and its xid
# tests); the message is what parsers/dmesg.py keeps after "Xid (PCI:...): <code>, ".
NETIR_V1 = "NETIR_LINK_EVT  Fatal   XC0 i0 Link 15 (0x0215e5c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
RLW_REMAP_V2 = "RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000004 0x00000001 0x00000000 0x00000000)"
RLW_REMAP_FATAL_V2 = "RLW_REMAP Fatal XC0 i0 Link 00 (0x00000004 0x00000040 0x00000000 0x00000000)"
SAW_V2 = "SAW_MVB Fatal XC0 i0 Link 00 (0x00000001 0x00000002 0x00000000 0x00000000)"
RLW_CTRL_V2 = "RLW_CTRL Nonfatal XC0 i0 Link 00 (0x00000003 0x80000000 0x00000000 0x00000000)"


def test_decode_netir_link_down_v1() -> None:
    d = decode_nvlink5(149, NETIR_V1)
    assert d is not None
    assert (d["subcode"], d["format"], d["link"], d["link_down_reason"]) == (
        "NETIR_LINK_EVT",
        "V1 (<R575)",
        15,
        33,
    )
    assert (d["immediate"], d["investigatory"]) == ("RESET_GPU", "INVESTIGATE_PEER_DEVICE")
    assert assess(149, NETIR_V1).severity == C


def test_decode_v2_rows_and_their_buckets() -> None:
    remap = decode_nvlink5(145, RLW_REMAP_V2)
    assert remap is not None and remap["format"] == "V2 (>=R575)" and remap["immediate"] == "XID_154_EVAL"
    assert assess(145, RLW_REMAP_V2).severity == W
    assert assess(145, RLW_REMAP_FATAL_V2).severity == C
    assert decode_nvlink5(144, SAW_V2)["immediate"] == "RESET_GPU"  # type: ignore[index]
    ctrl = assess(145, RLW_CTRL_V2)
    assert ctrl.severity == I and ctrl.immediate == "IGNORE" and ctrl.nvlink["subcode"] == "RLW_CTRL"  # type: ignore[index]


def test_rxpipe_action2_bit_promotes_to_reset() -> None:
    plain = "RLW_RXPIPE Nonfatal XC0 i0 Link 02 (0x00000006 0x00000001)"
    promoted = "RLW_RXPIPE Nonfatal XC0 i0 Link 02 (0x00000086 0x00000001)"  # IntrInfo[7] set (V2)
    assert assess(145, plain).severity == I and assess(145, promoted).severity == C


def test_undecodable_lines_fall_back() -> None:
    assert decode_nvlink5(149, "NETIR Link Interrupt") is None
    assert assess(149, "NETIR Link Interrupt").severity == W
    odd = "NETIR_LINK_EVT Fatal XC0 i0 Link 01 (0x03f005c6 0x00000000)"  # reason 0b111111: not in the table
    d = decode_nvlink5(149, odd)
    assert d is not None and d["immediate"] is None and assess(149, odd).severity == C


def test_unknown_code_is_a_warning_not_in_the_catalog() -> None:
    e = xid_entry(999)
    assert e.severity == W and "not in" in e.meaning and "catalog" in e.meaning
