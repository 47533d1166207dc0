"""efa-ports parser: ibstat (indentation lost), ibv_devinfo, the collector's sysfs dump; error contract."""

from __future__ import annotations

import json

import pytest

import parsers
from parsers import efa_ports
from tests.conftest import fixture_files, fixture_text


def test_ibstat_with_collapsed_indentation_after_dmesg_lines() -> None:
    result = efa_ports.parse(fixture_text("efa-ports", "amzn-drivers-114-dmesg-ibstat-efa0-indent-lost.txt"))
    [row] = result.rows("efa_port")
    extra = json.loads(row.pop("extra"))
    assert (row.pop("provider"), row.pop("is_efa"), row.pop("host")) == ("efa", True, None)
    assert extra["Port GUID"] == "0x100bf5fffe02e2b0" and extra["State"] == "Active"
    assert extra["Number of ports"] == "1" and extra["CA type"] == ""
    assert [row] == [
        {
            "line": 12, "device": "efa_0", "port": 1, "state": "ACTIVE", "phys_state": "LINK_UP",
            "rate_gbps": 100.0, "link_layer": "Unknown", "source": "ibstat",
            "rcv_errors": None, "xmit_discards": None, "fw_ver": None,
        }
    ]  # fmt: skip
    assert result.issues == []


def test_ibv_devinfo_tab_indented() -> None:
    result = efa_ports.parse(fixture_text("efa-ports", "ibv_devinfo-efa0-rdma-core-884.txt"))
    [row] = result.rows("efa_port")
    assert (row["device"], row["port"], row["state"], row["source"]) == ("efa_0", 1, "ACTIVE", "ibv_devinfo")
    assert row["link_layer"] == "InfiniBand" and row["phys_state"] is None and row["line"] == 10


SYSFS = """\
/sys/class/infiniband/rdmap79s0/ports/1/state: 4: ACTIVE
/sys/class/infiniband/rdmap79s0/ports/1/phys_state: 5: LinkUp
/sys/class/infiniband/rdmap79s0/ports/1/rate: 100 Gb/sec (4X EDR)
/sys/class/infiniband/rdmap80s0/ports/1/state:1: DOWN
/sys/class/infiniband/rdmap80s0/ports/1/phys_state:2: Polling
/sys/class/infiniband/rdmap80s0/ports/1/rate: 0 Gb/sec
"""


def test_collector_sysfs_dump_two_devices() -> None:
    got = efa_ports.parse(SYSFS).rows("efa_port")
    assert [(r["device"], r["state"], r["phys_state"], r["rate_gbps"], r["line"]) for r in got] == [
        ("rdmap79s0", "ACTIVE", "LINK_UP", 100.0, 1),
        ("rdmap80s0", "DOWN", "POLLING", 0.0, 4),
    ]
    assert {r["source"] for r in got} == {"sysfs"}


def test_ibv_devinfo_verbose_rate_from_width_and_speed() -> None:
    text = (
        "hca_id:\trdmap16s27\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_INIT (2)\n"
        "\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
        "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    )
    [row] = efa_ports.parse(text).rows("efa_port")
    assert (row["state"], row["phys_state"], row["rate_gbps"]) == ("INIT", "LINK_UP", 100.0)
    assert set(row) == {c.name for c in efa_ports.SCHEMA["efa_port"]}


@pytest.mark.parametrize("path", fixture_files("efa-ports"), ids=lambda p: p.name)
def test_detected_as_efa_ports(path) -> None:  # type: ignore[no-untyped-def]
    assert parsers.detect_kind(path.read_text(encoding="utf-8")) == "efa-ports"


def test_sysfs_error_counters_and_firmware() -> None:
    """The collector's sysfs dump also carries fw_ver and the port error counters."""
    text = (
        "/sys/class/infiniband/rdmap79s0/fw_ver: 0.0.0.0\n"
        "/sys/class/infiniband/rdmap79s0/ports/1/state: 4: ACTIVE\n"
        "/sys/class/infiniband/rdmap79s0/ports/1/counters/port_rcv_errors: 12\n"
        "/sys/class/infiniband/rdmap79s0/ports/1/counters/port_xmit_discards: 0\n"
    )
    (row,) = efa_ports.parse(text).rows("efa_port")
    assert (row["state"], row["rcv_errors"], row["xmit_discards"], row["fw_ver"]) == (
        "ACTIVE",
        12,
        0,
        "0.0.0.0",
    )


def test_firmware_from_ibv_devinfo_and_empty_in_ibstat() -> None:
    (devinfo,) = efa_ports.parse(fixture_text("efa-ports", "ibv_devinfo-efa0-rdma-core-884.txt")).rows(
        "efa_port"
    )
    assert devinfo["fw_ver"] == "0.0.0.0"
    (ibstat,) = efa_ports.parse(
        fixture_text("efa-ports", "amzn-drivers-114-dmesg-ibstat-efa0-indent-lost.txt")
    ).rows("efa_port")
    assert ibstat["fw_ver"] is None  # "Firmware version: " is empty in that capture
