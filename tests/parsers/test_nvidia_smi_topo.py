"""Tests of parsers/nvidia_smi_topo.py (``nvidia-smi topo -m``) on real captures."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import nvidia_smi_topo as mod

KIND = "nvidia-smi-topo"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / KIND
DELLA = "della-h100-nic-legend-empty-cpu-affinity.txt"
DGX = "dgxa100-12mlx5.txt"
P40 = "paddle-p40-old-soc-legend.txt"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def links(result: parsers.ParseResult) -> dict[tuple[str, str], dict]:
    return {(x["device"], x["peer"]): x for x in result.rows("topo_link")}


def devices(result: parsers.ParseResult) -> dict[str, dict]:
    """Rows without the columns added since these tests were written (extra, host)."""
    return {
        d["device"]: {k: v for k, v in d.items() if k not in ("extra", "host")}
        for d in result.rows("topo_device")
    }


def test_della_h100_nic_legend_empty_cpu_affinity() -> None:
    r = mod.parse(fixture(DELLA))
    assert len(r.rows("topo_device")) == 14 and len(r.rows("topo_link")) == 14 * 14
    dev = devices(r)
    assert dev["GPU0"] == {
        "line": 2, "device": "GPU0", "device_type": "gpu", "nic_name": None,
        "cpu_affinity": None, "numa_affinity": "0", "gpu_numa_id": None,
    }  # fmt: skip
    assert (dev["GPU4"]["cpu_affinity"], dev["GPU4"]["numa_affinity"]) == ("1", "1")
    assert dev["NIC0"]["nic_name"] == "mlx5_0" and dev["NIC5"]["nic_name"] == "mlx5_5"
    assert dev["NIC3"]["device_type"] == "nic" and dev["NIC3"]["numa_affinity"] is None
    lk = links(r)
    assert lk[("GPU0", "GPU1")]["link"] == "NV18" and lk[("GPU0", "GPU1")]["nvlinks"] == 18
    assert lk[("GPU3", "NIC2")]["link_class"] == "pcie_switch"
    assert lk[("GPU0", "NIC2")]["link_class"] == "numa"
    assert lk[("NIC5", "NIC5")]["link_class"] == "self" and lk[("NIC5", "NIC5")]["line"] == 15
    gpu_pairs = [x for (d, p), x in lk.items() if d != p and d.startswith("GPU") and p.startswith("GPU")]
    assert len(gpu_pairs) == 56 and {x["nvlinks"] for x in gpu_pairs} == {18}
    assert not r.issues


def test_dgx_a100_named_mlx5_columns() -> None:
    r = mod.parse(fixture(DGX))
    assert len(r.rows("topo_device")) == 20 and len(r.rows("topo_link")) == 400
    dev = devices(r)
    assert (dev["GPU0"]["cpu_affinity"], dev["GPU0"]["numa_affinity"]) == ("48-63,176-191", "3")
    assert [dev[f"GPU{i}"]["numa_affinity"] for i in range(8)] == ["3", "3", "1", "1", "7", "7", "5", "5"]
    assert dev["mlx5_11"] == {
        "line": 21, "device": "mlx5_11", "device_type": "nic", "nic_name": "mlx5_11",
        "cpu_affinity": None, "numa_affinity": None, "gpu_numa_id": None,
    }  # fmt: skip
    lk = links(r)
    assert lk[("GPU0", "GPU7")]["nvlinks"] == 12
    assert lk[("GPU2", "mlx5_2")]["link"] == "PXB"
    assert lk[("GPU2", "mlx5_0")]["link_class"] == "cross_socket"
    assert lk[("mlx5_10", "mlx5_11")]["link"] == "PIX"
    assert not r.issues


def test_p40_old_soc() -> None:
    r = mod.parse(fixture(P40))
    assert len(r.rows("topo_device")) == 9 and len(r.rows("topo_link")) == 81
    dev = devices(r)
    assert dev["GPU7"]["cpu_affinity"] == "0-13" and dev["GPU7"]["numa_affinity"] is None
    lk = links(r)
    assert lk[("GPU0", "mlx5_0")]["link"] == "SOC"
    assert lk[("GPU0", "mlx5_0")]["link_class"] == "cross_socket"
    assert lk[("GPU0", "GPU4")]["link_class"] == "pcie_switch"
    assert not any(x["link_class"] == "nvlink" for x in r.rows("topo_link"))
    assert not r.issues


def test_spaces_instead_of_tabs() -> None:
    """A paste from a rendered page: tabs became spaces, so empty cells vanish."""
    tabbed = mod.parse(fixture(DELLA))
    spaced = mod.parse(fixture(DELLA).expandtabs(8))
    assert spaced.rows("topo_device") == tabbed.rows("topo_device")
    assert spaced.rows("topo_link") == tabbed.rows("topo_link")
    small = (
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      PHB     0-11            N/A\n"
        "GPU1    PHB      X      0-11            N/A\n"
    )
    r = mod.parse(small)
    assert [(d["device"], d["cpu_affinity"], d["numa_affinity"]) for d in r.rows("topo_device")] == [
        ("GPU0", "0-11", None),
        ("GPU1", "0-11", None),
    ]
    assert links(r)[("GPU1", "GPU0")]["link_class"] == "pcie_host"


@pytest.mark.parametrize("name", [DELLA, DGX, P40])
def test_detect_kind(name: str) -> None:
    assert mod.detect(fixture(name)) >= 80
    assert parsers.detect_kind(fixture(name)) == KIND
