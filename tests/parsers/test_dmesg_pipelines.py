"""Kernel logs from other pipelines (Talos, journal hosts, indented pastes), NVRM lines without an Xid
named for what they are, and the EFA driver's probe lines: on the real fixtures of issue 23."""

from __future__ import annotations

import pytest

from parsers import dmesg
from tests.conftest import fixture_text


def parsed(name: str) -> tuple[list[dict], list[tuple[int, str]]]:
    r = dmesg.parse(fixture_text("dmesg", name))
    return r.rows("kernel_event"), [(i.line_no, i.reason) for i in r.issues]


def test_talos_lines_keep_time_node_and_every_nvrm_line() -> None:
    ev, issues = parsed("derived-vllm-40652-talos-kern-warning-gpu-at-sxid-xid62.txt")
    assert [(e["line"], e["event_type"], e["pci"], e["xid"]) for e in ev] == [
        (1, "gpu_identity", "0000:48:00.0", None),
        (2, "sxid", "0000:aa:00.0", 24007),
        (3, "gpu_identity", None, None),  # "GPU Board Serial Number": an SXid line came between
        (4, "sxid", "0000:aa:00.0", 24007),
        (5, "xid", "0000:48:00.0", 62),
    ]
    assert ev[0]["ts_raw"] == "2026-04-22T21:25:20.458998481Z" and ev[0]["ts"] == "2026-04-22T21:25:20.458998"
    assert ev[4]["ts"] == "2026-04-22T21:25:20.505406"
    assert {e["host"] for e in ev} == {"192.168.11.119"}
    assert ev[0]["message"] == "GPU at PCI:0000:48:00: GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e"
    assert issues == []


@pytest.mark.parametrize(
    ("line", "ts"),
    [  # real lines of NVIDIA/open-gpu-kernel-modules issue #1118 and talos docs, with an NVRM message put in
        ("192.168.11.119: kern: warning: [2026-04-22T21:27:51.28977Z]: ", "2026-04-22T21:27:51.289770"),
        ("k3s-node5.lab: kern:    info: [2023-08-18T13:36:47.292786465Z]: ", "2023-08-18T13:36:47.292786"),
        ("kern:    info: [2024-01-15T19:37:30.689914441Z]: ", "2024-01-15T19:37:30.689914"),
        ("kern:     err: [2026-10-01T16:47:32Z]: ", "2026-10-01T16:47:32"),
    ],
)
def test_talos_prefix_forms(line: str, ts: str) -> None:
    r = dmesg.parse(f"{line}NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x22:0x56:894)\n")
    (ev,) = r.rows("kernel_event")
    assert (ev["event_type"], ev["pci"], ev["ts"]) == ("gpu_init_failed", "0000:41:00.0", ts)


def test_journal_host_kernel_lines_naming_no_gpu_are_events() -> None:
    ev, issues = parsed("ogkm-688-journal-dgx-station-rpcsendmessage-gpu-lost.txt")
    assert [e["event_type"] for e in ev] == ["gsp_rpc_failed"] * 4 + ["gpu_lost"] + ["gsp_rpc_failed"] * 2 + [
        "gpu_lost",
        "gsp_rpc_failed",
    ]
    assert {e["host"] for e in ev} == {"abggdna-DGX-Station-A100"} and {e["pci"] for e in ev} == {None}
    assert ev[4]["message"].startswith("nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus")
    assert ev[0]["ts_raw"] == "Feb 17 08:02:06" and issues == []


def test_lines_naming_no_gpu_take_the_address_of_the_rminitadapter_verdict() -> None:
    ev, _ = parsed("ogkm-1151-journal-fedora-rminitadapter-cannot-attach.txt")
    assert [(e["line"], e["event_type"], e["pci"]) for e in ev][:4] == [
        (1, "gpu_init_failed", "0000:09:00.0"),
        (2, "gpu_init_failed", "0000:09:00.0"),  # osInitNvMapping: *** Cannot attach gpu
        (3, "gpu_init_failed", "0000:09:00.0"),
        (4, "gpu_init_failed", "0000:09:00.0"),
    ]
    assert ev[1]["message"] == "osInitNvMapping: *** Cannot attach gpu"


def test_gpu_by_number_only() -> None:
    ev, issues = parsed("cmpunlocker-4-dmesg-gpu0-tlb-invalidation-failed.txt")
    assert [e["event_type"] for e in ev] == ["mmu_error"] * 7 + ["nvrm_message"]
    assert {(e["gpu_index"], e["pci"]) for e in ev} == {(0, None)}
    assert ev[0]["uptime_s"] == pytest.approx(10.889083) and "TLB invalidation failed" in ev[0]["message"]
    assert issues == []


def test_gpu_number_placed_by_probe_order_is_said() -> None:  # hand-written in the driver's wording
    r = dmesg.parse(
        "[    5.100000] nvidia 0000:18:00.0: enabling device (0000 -> 0002)\n"
        "[    5.200000] nvidia 0000:2a:00.0: enabling device (0000 -> 0002)\n"
        "[   24.302465] NVRM: GPU1 _kgspIsHeartbeatTimedOut: Heartbeat timed out, diff 6070 timeout 5200\n"
        "[   24.402465] NVRM: GPU1 _kgspRpcRecvPoll: GSP RM heartbeat timed out\n"
        "[   24.502465] NVRM: GPU7 _kgspRpcRecvPoll: GSP RM heartbeat timed out\n"
    )
    ev = r.rows("kernel_event")
    assert [(e["gpu_index"], e["pci"]) for e in ev] == [(1, "0000:2a:00.0"), (1, "0000:2a:00.0"), (7, None)]
    assert [i.line_no for i in r.issues] == [3] and "probed" in r.issues[0].reason


def test_identity_lines_and_indented_paste() -> None:
    real, _ = parsed("akash-244-dmesg-T-gpu-at-pci-uuid-serial-xid.txt")
    pasted, issues = parsed("derived-akash-244-dmesg-T-indented-block.txt")
    assert [(e["event_type"], e["pci"], e["xid"], e["ts"]) for e in pasted] == [
        (e["event_type"], e["pci"], e["xid"], e["ts"]) for e in real
    ]
    ident = [e for e in real if e["event_type"] == "gpu_identity"]
    assert [e["pci"] for e in ident] == ["0000:00:05.0", "0000:00:07.0", "0000:00:08.0"]
    assert ident[0]["message"].endswith(
        "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375 GPU Board Serial Number: 1650423013443"
    )
    assert [e["xid"] for e in real if e["event_type"] == "xid"] == [43, 43, 31, 94]
    assert issues == []


def test_efa_probe_lines() -> None:
    ev, _ = parsed("amzn-114-dmesg-efa-setup-irq-ib-registered.txt")
    assert [(e["event_type"], e["pci"], e["interface"]) for e in ev] == [
        ("efa_probe", "0000:00:07.0", "efa_0")
    ]
    ev, _ = parsed("amzn-308-dmesg-efa-driver-v2.6.0g.txt")
    assert [(e["event_type"], e["message"] if e["event_type"] != "efa_probe" else e["pci"]) for e in ev] == [
        ("efa_driver_loaded", "2.6.0g"),
        ("efa_probe", "0000:4f:00.0"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "Fri 2024-08-30 11:43:09 UTC gpu-node-7 kernel: ",  # journalctl -o short-full
        "1725018189.123456 gpu-node-7 kernel: ",  # journalctl -o short-unix
        "[ 1843.308145] gpu-node-7 kernel: ",  # journalctl -o short-monotonic
        "gpu-node-7 kernel: ",  # a grep'd journal, the date cut
    ],
)
def test_journal_output_modes_keep_host(line: str) -> None:  # hand-written in journalctl's formats
    (ev,) = dmesg.parse(f"{line}NVRM: Xid (PCI:0000:cb:00): 79, pid=0, GPU has fallen off the bus.\n").rows(
        "kernel_event"
    )
    assert (ev["xid"], ev["pci"], ev["host"]) == (79, "0000:cb:00.0", "gpu-node-7")
    assert ev["ts"] in (None, "2024-08-30T11:43:09", "2024-08-30T11:43:09.123456")
