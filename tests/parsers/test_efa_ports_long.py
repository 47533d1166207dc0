"""efa-ports: the port_attribute long table (every printed key of ibstat / ibv_devinfo / sysfs under its own
name), link_layer evidence read from a shell loop and from one sysfs link_layer file, rxe/mlx never EFA."""

from __future__ import annotations

import pytest

from parsers import efa_ports
from tests.conftest import FIXTURES

DIR = FIXTURES / "efa-ports"


def parse(name: str) -> efa_ports.ParseResult:
    return efa_ports.parse((DIR / name).read_text())


def test_ibv_devinfo_every_key_is_a_port_attribute() -> None:
    r = parse("ibv_devinfo-efa0-rdma-core-884.txt")
    attrs = r.rows("port_attribute")
    by = {(a["entity"], a["key"]): a for a in attrs}
    assert by[("efa_0", "vendor_id")]["number"] == 0x1D0F
    assert by[("efa_0", "vendor_part_id")]["number"] == 61344.0
    assert by[("efa_0/1", "state")]["value"] == "PORT_ACTIVE (4)"
    assert by[("efa_0/1", "link_layer")]["value"] == "InfiniBand"
    assert {a["source"] for a in attrs} == {"ibv_devinfo"}
    assert [a["line"] for a in attrs] == sorted(a["line"] for a in attrs)


def test_ibv_devinfo_v_flag_lists_join_the_key_they_follow() -> None:
    r = parse("heioy-ibv_devinfo-v-mlx4-port2-polling.txt")
    attrs = r.rows("port_attribute")
    (caps,) = [a for a in attrs if a["key"] == "device_cap_flags"]
    assert caps["entity"] == "mlx4_1" and caps["line"] == 16 and caps["number"] == 0x057E9C76
    assert caps["value"].startswith("0x057e9c76 | BAD_PKEY_CNTR | BAD_QKEY_CNTR | AUTO_PATH_MIG")
    speed = next(a for a in attrs if a["key"] == "active_speed")
    assert (speed["entity"], speed["value"]) == ("mlx4_1/2", "2.5 Gbps (1)")


def test_soft_roce_is_not_efa() -> None:
    r = parse("softroce-rxe-dev-46-ibv_devinfo-rxe0.txt")
    (port,) = r.rows("efa_port")
    assert (port["device"], port["provider"], port["is_efa"]) == ("rxe0", "rxe", False)
    assert any(a["entity"] == "rxe0" and a["key"] == "vendor_id" for a in r.rows("port_attribute"))


def test_shell_loop_link_layer_lines_are_ports() -> None:
    r = parse("dynamo-h100-ib-loop-link-layer-state-mlx5-ethernet-frontend.txt")
    assert not r.issues
    assert [
        (p["device"], p["port"], p["link_layer"], p["state"], p["is_efa"]) for p in r.rows("efa_port")
    ] == [
        ("mlx5_0", 1, "Ethernet", "ACTIVE", False),
        ("mlx5_1", 1, "InfiniBand", "ACTIVE", False),
        ("mlx5_8", 1, "InfiniBand", "ACTIVE", False),
    ]


@pytest.mark.parametrize("word", ["Ethernet", "InfiniBand", "Unspecified"])
def test_one_link_layer_file(word: str) -> None:
    r = efa_ports.parse(f"{word}\n", filename="n1/sys/class/infiniband/rdmap79s0/ports/1/link_layer")
    (port,) = r.rows("efa_port")
    assert (port["device"], port["port"], port["link_layer"], port["is_efa"]) == ("rdmap79s0", 1, word, True)
    assert not r.issues
    anonymous = efa_ports.parse(f"{word}\n")
    assert anonymous.rows("efa_port")[0]["device"] is None
    assert [i.line_no for i in anonymous.issues] == [1]  # device unknown: loud


def test_garbled_loop_line_is_an_issue() -> None:
    text = (DIR / "dynamo-h100-ib-loop-link-layer-state-mlx5-ethernet-frontend.txt").read_text()
    r = efa_ports.parse(text.replace("mlx5_1 InfiniBand 4: ACTIVE", "mlx5_1 Infini#and 4: ACTIVE"))
    assert [i.line_no for i in r.issues] == [2]
    assert [p["device"] for p in r.rows("efa_port")] == ["mlx5_0", "mlx5_8"]
