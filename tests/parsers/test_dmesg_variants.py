"""dmesg parser on every kernel-log variant: stamps (each with its time kept), address spellings,
multi-line NVRM messages, one event per fault, link events, driver banners and OOM wordings.

Real lines come from tests/fixtures/dmesg/ (see PROVENANCE.md there); the inline texts below are
hand-written in the format of a variant for which no real sample was found, and say so."""

from __future__ import annotations

import pytest

from parsers import dmesg
from tests.conftest import fixture_text


def events(name: str) -> list[dict]:
    """The typed events of a fixture (the unclassified ``kernel_error`` lines are tested in
    tests/rules/test_kernel_signatures.py and below)."""
    return [
        e
        for e in dmesg.parse(fixture_text("dmesg", name)).rows("kernel_event")
        if e["event_type"] != "kernel_error"
    ]


def parsed(text: str) -> list[dict]:
    return [e for e in dmesg.parse(text).rows("kernel_event") if e["event_type"] != "kernel_error"]


# --- stamps ------------------------------------------------------------------------------------------


def test_journal_short_with_rsyslog_uptime_inside() -> None:
    ev = events("gpuop-1146-journal-short-rminitadapter-inner-uptime.txt")
    assert [e["event_type"] for e in ev] == ["gpu_init_failed"] * 4
    assert {e["host"] for e in ev} == {"worker4"}  # the journal's host, printed before "kernel:"
    assert {e["pci"] for e in ev} == {"0000:0a:00.0"}
    assert ev[0]["ts_raw"] == "Dec  2 11:49:53" and ev[0]["uptime_s"] == pytest.approx(885.242168)
    assert "RmInitAdapter failed!" in ev[0]["message"] and ev[2]["line"] == 3


def test_journal_short_without_hostname() -> None:
    ev = events("bazzite-4449-journal-nohostname-gsp-heartbeat.txt")
    # every GPU0 line is an event; the two GSP heartbeat timeouts each its own
    assert [(e["line"], e["event_type"], e["gpu_index"]) for e in ev] == [
        (1, "nvrm_message", 0),
        (2, "nvrm_message", 0),
        (3, "gsp_timeout", 0),
        (4, "gsp_timeout", 0),
    ]
    assert all(e["ts_raw"] == "Mar 21 21:42:01" for e in ev)
    # the only probe line (``nvidia 0000:05:00.0: Enabling HDA controller``) comes after: no address guessed
    assert {e["pci"] for e in ev} == {None}
    assert "Heartbeat timed out" in ev[2]["message"] and "GSP RM heartbeat" not in ev[2]["message"]


def test_dmesg_raw_uptime() -> None:
    ev = events("ogkm-789-dmesg-rminitadapter-gsp.txt")
    # "RmInitAdapter: Cannot initialize GSP firmware RM" names no GPU: the verdict right after it does
    assert [(e["line"], e["event_type"], e["pci"]) for e in ev] == [
        (1, "gpu_init_failed", "0000:98:00.0"),
        (2, "gpu_init_failed", "0000:98:00.0"),
        (3, "gpu_init_failed", "0000:98:00.0"),
    ]
    assert ev[1]["ts_raw"] == "903.610907" and ev[1]["uptime_s"] == pytest.approx(903.610907)


def test_dmesg_iso_comma_fraction_with_decode_prefix() -> None:
    ev = events("gpud-870-dmesg-decode-iso-comma-xid79.txt")
    assert len(ev) == 1 and ev[0]["xid"] == 79 and ev[0]["pci"] == "0000:04:00.0"
    assert ev[0]["ts_raw"] == "2025-05-27T04:18:56,089671+00:00"
    assert ev[0]["ts"] == "2025-05-27T04:18:56.089671"


def test_dmesg_iso_offset_is_converted_to_utc() -> None:  # hand-written: dmesg --time-format iso
    ev = parsed(
        "2024-01-05T10:11:12,123456+02:00 NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x22:0x56:894)\n"
    )
    assert ev[0]["ts"] == "2024-01-05T08:11:12.123456" and ev[0]["pci"] == "0000:41:00.0"


def test_journal_short_precise_and_short_iso() -> (
    None
):  # hand-written: journalctl -k -o short-precise / short-iso
    ev = parsed(
        "Jan 05 10:11:12.123456 ip-10-1-2-3 kernel: NVRM: Xid (PCI:0000:18:00): 31, pid=77, name=python, Ch 00000008\n"
        "2024-01-05T10:11:13.654321+0000 ip-10-1-2-3 kernel: NVRM: Xid (PCI:0000:18:00): 43, pid=77, name=python, Ch 00000008\n"
    )
    assert [e["xid"] for e in ev] == [31, 43]
    assert ev[0]["ts_raw"] == "Jan 05 10:11:12.123456" and ev[0]["ts"] is None  # no year printed
    assert ev[1]["ts"] == "2024-01-05T10:11:13.654321"


def test_dev_kmsg_records() -> None:  # hand-written: cat /dev/kmsg (prio,seq,usec,flags;message)
    ev = parsed(
        "6,1233,5678800,-;mlx5_core 0000:0c:00.0 ens1f0np0: Link up\n"
        "4,1234,5678901,-;NVRM: Xid (PCI:0000:0c:00): 79, pid=0, GPU has fallen off the bus.\n"
        " SUBSYSTEM=pci\n"
        " DEVICE=+pci:0000:0c:00.0\n"
    )
    assert [e["event_type"] for e in ev] == ["link_up", "xid"]
    assert ev[1]["ts_raw"] == "5678901" and ev[1]["uptime_s"] == pytest.approx(5.678901)
    assert "SUBSYSTEM" not in ev[1]["message"]  # the dictionary lines are not message text


def test_bare_nvrm_lines_without_stamp() -> None:
    ev = events("bumblebee-329-kernlog-bare-nvrm-gpu-at-old-xid.txt")
    assert [(e["event_type"], e["xid"]) for e in ev] == [
        ("gpu_identity", None),
        ("xid", 16),
        ("xid", 16),
        ("xid", 8),
    ]
    assert {e["pci"] for e in ev} == {"0000:01:00.0"} and all(e["ts_raw"] is None for e in ev)


def test_every_stamped_line_keeps_its_stamp() -> None:
    for name in (
        "gpuop-1146-journal-short-rminitadapter-inner-uptime.txt",
        "bazzite-4449-journal-nohostname-gsp-heartbeat.txt",
        "gpud-870-dmesg-decode-iso-comma-xid79.txt",
        "reportportal-203-dmesg-memcg-oom-killed.txt",
        "ltp-1080-syslog-memcg-oom-kill-process-old.txt",
        "coreos-2374-dmesg-bond-link-status-up.txt",
        "gpud-1209-journal-mlx5-port-link-active.txt",
        "amzn-308-dmesg-efa-driver-v2.6.0g.txt",
        "cachyos-1019-journal-open-banner-610.txt",
    ):
        assert all(e["ts_raw"] for e in events(name)), name


# --- addresses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "pci", "event_type"),
    [
        ("NVRM: GPU 0000:18:00.0: RmInitAdapter failed! (0x25:0x65:1234)", "0000:18:00.0", "gpu_init_failed"),
        ("NVRM: GPU 18:00.0: RmInitAdapter failed! (0x25:0x65:1234)", "0000:18:00.0", "gpu_init_failed"),
        (
            "NVRM: GPU at 0000:01:00.0: GPU-1a2b3c4d-0000-1111-2222-333344445555",
            "0000:01:00.0",
            "gpu_identity",
        ),
        (
            "NVRM: GPU at PCI:0000:01:00: GPU-1a2b3c4d-0000-1111-2222-333344445555",
            "0000:01:00.0",
            "gpu_identity",
        ),
        (
            "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:c1:00 (printing 1 of every 30).  "
            "The GPU likely needs to be reset.",
            "0000:c1:00.0",
            "gsp_rpc_failed",
        ),
        ("NVRM: GPU 0000:41:00.0: Device is currently unavailable", "0000:41:00.0", "nvrm_message"),
    ],
)
def test_nvrm_lines_naming_a_gpu(
    line: str, pci: str, event_type: str
) -> None:  # hand-written, driver's wording
    ev = parsed(f"[  100.000001] {line}\n")
    assert len(ev) == 1 and ev[0]["event_type"] == event_type and ev[0]["pci"] == pci


def test_xid_with_mig_suffix_and_without_domain() -> None:  # hand-written: MIG-mode Xid lines
    ev = parsed(
        "[ 10.5] NVRM: Xid (PCI:0000:b7:00 GPU-I:13): 31, pid=2219866, name=python, Ch 00000004, intr 00000000\n"
        "[ 10.6] NVRM: Xid (PCI:0000:b7:00 GPU-I:13 GPU-CI:00): 43, pid=2219866, name=python, Ch 00000004\n"
        "[ 10.7] NVRM: Xid (b7:00): 13, Graphics Exception\n"
    )
    assert [(e["xid"], e["pci"], e["process"]) for e in ev] == [
        (31, "0000:b7:00.0", "python"),
        (43, "0000:b7:00.0", "python"),
        (13, "0000:b7:00.0", None),
    ]


@pytest.mark.parametrize(
    "inside", ["PCI:...", "PCI:xxxx:xx:xx", "GPU-I:13", "some text", "", "PCI:0000:b7:00 and more"]
)
def test_not_an_address_inside_xid_is_an_event_of_the_node_and_said(inside: str) -> None:
    result = dmesg.parse(f"[ 10.5] NVRM: Xid ({inside}): 31, pid=1, name=python, Ch 00000004\n")
    ev = result.rows("kernel_event")
    assert [(e["event_type"], e["xid"], e["pci"], e["gpu_index"], e["process"]) for e in ev] == [
        ("xid", 31, None, None, "python")
    ]
    assert [(i.line_no, "could not be read" in i.reason) for i in result.issues] == [(1, True)]


# --- multi-line messages and one event per fault ----------------------------------------------------


def test_stamped_continuation_lines_repeating_nvrm_belong_to_the_first() -> None:  # hand-written
    ev = parsed(
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "[ 1843.308150] NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "[ 1843.308151] NVRM: fallen off the bus and is not responding to commands.\n"
        "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    )
    assert len(ev) == 1 and ev[0]["event_type"] == "fallen_off_bus" and ev[0]["pci"] == "0000:b3:00.0"
    assert ev[0]["xid"] == 79 and ev[0]["ts_raw"] == "1843.308145" and "not responding" in ev[0]["message"]


def test_xid79_and_fallen_off_bus_text_are_one_event() -> None:  # hand-written in the 535 driver's wording
    ev = parsed(
        "[ 5000.100000] NVRM: GPU at PCI:0000:3b:00: GPU-1a2b3c4d-0000-1111-2222-333344445555\n"
        "[ 5000.100001] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
        "[ 5000.100002] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
        "[ 5000.100100] NVRM: Xid (PCI:0000:5d:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
    )
    fallen = [e for e in ev if e["event_type"] in ("xid", "fallen_off_bus")]
    assert [(e["event_type"], e["pci"], e["line"]) for e in fallen] == [
        ("xid", "0000:3b:00.0", 2),
        ("xid", "0000:5d:00.0", 4),
    ]
    assert fallen[0]["process"] == "python3"


def test_fallen_off_bus_text_then_xid79_keeps_the_xid_line() -> None:  # hand-written
    ev = parsed(
        "[ 10.0] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
        "[ 10.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
    )
    assert [(e["event_type"], e["line"]) for e in ev] == [("xid", 2)]


def test_two_falls_across_a_driver_reload_stay_two() -> None:  # hand-written
    ev = parsed(
        "[ 10.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, GPU has fallen off the bus.\n"
        "[ 20.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
        "[ 30.0] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
    )
    assert [e["event_type"] for e in ev] == ["xid", "nvrm_driver_loaded", "fallen_off_bus"]


# --- driver banners ----------------------------------------------------------------------------------


def test_open_driver_banner_in_journal() -> None:
    ev = events("cachyos-1019-journal-open-banner-610.txt")
    assert [(e["event_type"], e["message"]) for e in ev] == [("nvrm_driver_loaded", "610.57.04")]


@pytest.mark.parametrize(
    ("line", "version"),
    [
        (
            "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024",
            "535.183.01",
        ),
        (
            "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (dvs@x)",
            "550.90.07",
        ),
        ("NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build", "570.86.15"),
    ],
)
def test_driver_banners(line: str, version: str) -> None:  # hand-written in each banner's wording
    ev = parsed(f"[    8.108512] {line}\n")
    assert [(e["event_type"], e["message"]) for e in ev] == [("nvrm_driver_loaded", version)]


def test_efa_driver_load_line_with_version() -> None:
    ev = events("amzn-308-dmesg-efa-driver-v2.6.0g.txt")
    assert [(e["event_type"], e["message"], e["uptime_s"]) for e in ev] == [
        ("efa_driver_loaded", "2.6.0g", pytest.approx(68998.526165)),
        (
            "efa_probe",
            "efa 0000:4f:00.0: Setup irq:1861 name:efa-mgmnt@pci:0000:4f:00.0",
            pytest.approx(68998.638853),
        ),
    ]
    assert ev[1]["pci"] == "0000:4f:00.0"


# --- OOM ---------------------------------------------------------------------------------------------


def test_cgroup_oom_killed_process() -> None:
    ev = events("reportportal-203-dmesg-memcg-oom-killed.txt")
    assert [(e["event_type"], e["pid"], e["process"]) for e in ev] == [("oom_kill", 63214, "uwsgi")]


def test_cgroup_oom_old_kill_process_wording_one_event_per_kill() -> None:
    ev = events("ltp-1080-syslog-memcg-oom-kill-process-old.txt")
    assert [(e["pid"], e["process"], e["line"]) for e in ev] == [
        (42453, "memcg_test_1", 2),
        (42474, "memcg_test_1", 4),
    ]
    assert all(e["event_type"] == "oom_kill" and e["ts_raw"] == "Aug 16 20:29:54" for e in ev)


def test_oom_wording_is_case_insensitive() -> None:  # hand-written
    ev = parsed(
        "[ 1.0] Out of memory: Killed process 4242 (python3) total-vm:1kB\n"
        "[ 2.0] out of memory: Killed process 4243 (python3) total-vm:1kB\n"
        "[ 3.0] Memory cgroup out of memory: Killed process 4244 (pt_main_thread) total-vm:1kB\n"
    )
    assert [e["pid"] for e in ev] == [4242, 4243, 4244] and {e["event_type"] for e in ev} == {"oom_kill"}


# --- link events -------------------------------------------------------------------------------------


def test_bond_link_status_up_lines() -> None:
    ev = events("coreos-2374-dmesg-bond-link-status-up.txt")
    assert [(e["event_type"], e["interface"], e["line"]) for e in ev] == [
        ("link_up", "enp0s20f0", 3),
        ("link_up", "enp0s20f0", 5),
    ]


def test_mlx5_port_link_active_in_journal() -> None:
    ev = events("gpud-1209-journal-mlx5-port-link-active.txt")
    assert [(e["event_type"], e["interface"], e["pci"], e["line"]) for e in ev] == [
        ("link_up", "mlx5_5", "0000:ab:00.0", 4)
    ]
    assert ev[0]["ts_raw"] == "Feb 14 05:03:41"


def test_nic_link_down_up_and_bond_failover() -> None:  # hand-written in each driver's wording
    ev = parsed(
        "[ 100.0] mlx5_core 0000:0c:00.0 ens1f0np0: Link down\n"
        "[ 100.1] ena 0000:00:05.0 eth0: Link is Down\n"
        "[ 100.2] bond0: (slave ens1f0np0): link status definitely down, disabling slave\n"
        "[ 100.3] bond0: link status definitely down for interface eth1, disabling it\n"
        "[ 100.4] bond0: (slave ens1f1np1): making interface the new active one\n"
        "[ 100.5] bond0: making interface eth2 the new active one\n"
        "[ 101.0] mlx5_core 0000:0c:00.0 ens1f0np0: Link up\n"
        "[ 101.1] efa 0000:00:06.0 rdmap0s6: Link is Up\n"
        "[ 101.2] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready\n"
    )
    assert [(e["event_type"], e["interface"]) for e in ev] == [
        ("link_down", "ens1f0np0"),
        ("link_down", "eth0"),
        ("link_down", "ens1f0np0"),
        ("link_down", "eth1"),
        ("bond_failover", "ens1f1np1"),
        ("bond_failover", "eth2"),
        ("link_up", "ens1f0np0"),
        ("link_up", "rdmap0s6"),
    ]
    assert ev[0]["pci"] == "0000:0c:00.0" and ev[1]["pci"] == "0000:00:05.0" and ev[2]["pci"] is None


def test_noise_lines_are_no_events() -> None:
    ev = parsed(
        "[ 1.0] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
        "[ 1.1] nvidia-nvlink: Nvlink Core is being initialized, major device number 239\n"
        "[ 1.2] bond0: Enslaving enp0s20f1 as an active interface with a down link\n"
        "[ 1.3] IPv6: ADDRCONF(NETDEV_UP): eth0: link is not ready\n"
        "[ 1.4] workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us 4 times\n"
    )
    assert ev == []
    # the probe failure is an error line no signature claims: said as an unclassified kernel error
    every = dmesg.parse("[ 1.0] NVRM: The NVIDIA probe routine failed for 1 device(s).\n").rows(
        "kernel_event"
    )
    assert [(e["event_type"], e["severity"], e["device"]) for e in every] == [
        ("kernel_error", "error word", "NVRM")
    ]


def test_a_later_nvrm_line_is_no_continuation() -> None:  # hand-written
    ev = parsed(
        "[ 903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 0\n"
        "[ 960.000001] NVRM: GPU has fallen off the bus.\n"
    )
    assert [(e["event_type"], e["pci"]) for e in ev] == [
        ("gpu_init_failed", "0000:98:00.0"),
        ("fallen_off_bus", None),
    ]
