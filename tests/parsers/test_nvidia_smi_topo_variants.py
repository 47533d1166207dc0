"""nvidia-smi-topo and nvidia-smi-nvlink variants: tabs or spaces, extra tabs around N/A, many NICs, prompts,
glued affinity cells, several hosts in one file; nvlink -s with elisions and fences, -info / -e / -c / -g lines.

Real fixtures: tests/fixtures/nvidia-smi-topo/ and tests/fixtures/nvidia-smi-nvlink/ (see each PROVENANCE.md).
Texts built here from a real fixture are labelled "derived"; texts written here from scratch are "synthetic".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import parsers
from parsers import nvidia_smi_nvlink, nvidia_smi_topo
from tests.conftest import fixture_text

TOPO = "nvidia-smi-topo"
HAMI = "hami-99-p4-single-gpu-numa-na-extra-tabs.txt"
CLUB2 = "club3090-1229-2x5090-phb-tabs.txt"
CLUB5 = "club3090-46-5gpu-spaces-split-numa.txt"
DEEPEP = "deepep-60-topo-mp-14nics-spaces-prompt-cut.txt"
NCCL = "nccl-1737-h100-conda-prompt-spaces-cut.txt"
DGX = "dgxa100-12mlx5.txt"
GB200 = "k8s-test-infra-371-gb200-s-elided-then-info.txt"


def topo(name: str) -> nvidia_smi_topo.ParseResult:
    return nvidia_smi_topo.parse(fixture_text(TOPO, name))


def devices(result: Any) -> list[tuple[Any, ...]]:
    return [
        (d["device"], d["cpu_affinity"], d["numa_affinity"], d["gpu_numa_id"])
        for d in result.rows("topo_device")
    ]


# --- topo -m ------------------------------------------------------------------------------------------------


def test_extra_tab_before_na_numa_affinity() -> None:
    r = topo(HAMI)  # real: "GPU0\t X \t0-7\t\tN/A\t\tN/A" after a root prompt
    assert not r.issues
    assert devices(r) == [("GPU0", "0-7", None, None)]
    d = r.rows("topo_device")[0]
    assert d["line"] == 3 and json.loads(d["extra"]) == {
        "CPU Affinity": "0-7",
        "NUMA Affinity": "N/A",
        "GPU NUMA ID": "N/A",
    }
    assert [(x["device"], x["peer"], x["link_class"]) for x in r.rows("topo_link")] == [
        ("GPU0", "GPU0", "self")
    ]


def test_two_gpus_tabs_phb() -> None:
    r = topo(CLUB2)
    assert not r.issues and devices(r) == [("GPU0", "0-63", "0", None), ("GPU1", "0-63", "0", None)]
    assert {(x["device"], x["peer"]): x["link_class"] for x in r.rows("topo_link")}[
        ("GPU0", "GPU1")
    ] == "pcie_host"


def test_spaces_two_numa_nodes() -> None:
    r = topo(CLUB5)
    assert not r.issues
    assert devices(r)[:2] == [("GPU0", "8-15,24-31", "1", None), ("GPU1", "0-7,16-23", "0", None)]
    links = {(x["device"], x["peer"]): x for x in r.rows("topo_link")}
    assert (
        len(links) == 25
        and links[("GPU1", "GPU2")]["link"] == "PHB"
        and links[("GPU0", "GPU4")]["link_class"] == "cross_socket"
    )
    assert links[("GPU3", "GPU4")]["line"] == 5


def test_fourteen_nics_topo_mp_misaligned_header() -> None:
    r = topo(DEEPEP)  # real: "NIC11    NIC12", "SYS      SYS", prompt line, cut after GPU3
    assert not r.issues
    assert devices(r) == [(f"GPU{i}", "0-47,96-143", "0", None) for i in range(4)]
    links = {(x["device"], x["peer"]): x["link"] for x in r.rows("topo_link")}
    assert len(links) == 4 * 22
    assert [links[(f"GPU{i}", nic)] for i, nic in ((0, "NIC0"), (1, "NIC1"), (2, "NIC2"), (3, "NIC7"))] == [
        "PIX"
    ] * 4
    assert links[("GPU0", "NIC13")] == "SYS" and links[("GPU0", "GPU4")] == "SYS"


def test_conda_prompt_nv18() -> None:
    r = topo(NCCL)
    assert not r.issues and [d["line"] for d in r.rows("topo_device")] == [3, 4, 5]
    nv = {x["nvlinks"] for x in r.rows("topo_link") if x["link_class"] == "nvlink"}
    assert nv == {18} and devices(r)[0] == ("GPU0", "0-31,64-95", "0", None)


@pytest.mark.parametrize("name", [HAMI, CLUB2, CLUB5, DEEPEP, NCCL])
def test_every_real_topo_is_detected(name: str) -> None:
    assert parsers.detect_kind(fixture_text(TOPO, name)) == TOPO


def test_glued_cpu_list_is_split_when_another_row_shows_it() -> None:
    text = fixture_text(TOPO, DEEPEP).replace(  # derived: GPU2's "0-47,96-143     0" lost its gap
        "SYS     0-47,96-143     0               N/A\nGPU3", "SYS     0-47,96-1430               N/A\nGPU3"
    )
    r = nvidia_smi_topo.parse(text)
    assert not r.issues and devices(r)[2] == ("GPU2", "0-47,96-143", "0", None)


def test_glued_cpu_list_without_reference_is_split_by_its_shape() -> None:
    text = (  # synthetic: every row glued ("0-47" + "0"): no row shows the CPU list alone
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV12    0-470\n"
        "GPU1    NV12     X      0-470\n"
    )
    r = nvidia_smi_topo.parse(text)
    assert not r.issues
    assert devices(r) == [("GPU0", "0-47", "0", None), ("GPU1", "0-47", "0", None)]


def test_derived_every_row_glued_multi_range_spaces() -> None:
    # derived from the DeepEP fixture: every GPU row's "0-47,96-143     0" lost its gap
    text = fixture_text(TOPO, DEEPEP).replace("0-47,96-143     0 ", "0-47,96-1430      ")
    assert "0-47,96-1430" in text
    r = nvidia_smi_topo.parse(text)
    assert not r.issues
    assert {(d[1], d[2]) for d in devices(r) if d[0].startswith("GPU")} == {("0-47,96-143", "0")}


def test_derived_glued_cpu_list_tabs() -> None:
    # derived from the club3090 #1229 fixture (tabs): "0-63\t0\t\tN/A" lost the tab after the CPU list
    text = fixture_text(TOPO, CLUB2).replace("0-63\t0\t", "0-630\t")
    assert "0-630\t" in text
    r = nvidia_smi_topo.parse(text)
    assert not r.issues
    gpus = [x for x in r.rows("topo_device") if x["device_type"] == "gpu"]
    assert [(x["cpu_affinity"], x["numa_affinity"], x["gpu_numa_id"]) for x in gpus] == [
        ("0-63", "0", None)
    ] * 2


def test_glued_cpu_list_of_two_shapes_is_reported() -> None:
    text = (  # synthetic: "0-1112" is "0-111" + NUMA 2 or "0-11" + NUMA 12: both have the shape
        "        GPU0    GPU1    CPU Affinity    NUMA Affinity\nGPU0     X      NV12    0-1112\n"
    )
    r = nvidia_smi_topo.parse(text)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (2, "CPU list '0-1112' may have the NUMA affinity run into it: NUMA affinity unknown"),
    ]
    assert devices(r) == [("GPU0", "0-1112", None, None)]


def test_spaces_collapsed_to_one() -> None:
    text = "\n".join(" ".join(x.split()) for x in fixture_text(TOPO, CLUB5).splitlines())  # derived
    r = nvidia_smi_topo.parse(text)
    assert not r.issues and devices(r) == devices(topo(CLUB5))


def test_pdsh_two_hosts_and_crlf() -> None:
    body = fixture_text(TOPO, CLUB2).splitlines()  # derived
    text = "".join(f"node-a1: {x}\r\n" for x in body) + "".join(f"node-b2: {x}\r\n" for x in body)
    r = nvidia_smi_topo.parse(text)
    assert [(d["host"], d["device"], d["line"]) for d in r.rows("topo_device")] == [
        ("node-a1", "GPU0", 2), ("node-a1", "GPU1", 3), ("node-b2", "GPU0", 15), ("node-b2", "GPU1", 16),
    ]  # fmt: skip
    assert not r.issues


def test_rdmap_nic_columns_and_srun_prefix() -> None:
    text = fixture_text(TOPO, DGX).replace("mlx5_", "rdmap1")  # derived: named EFA-style NIC columns
    r = nvidia_smi_topo.parse("".join(f"3: {x}\n" for x in text.splitlines()))
    nics = [d for d in r.rows("topo_device") if d["device_type"] == "nic"]
    assert len(nics) == 12 and nics[0]["nic_name"] == "rdmap10" and nics[0]["line"] == 10
    assert not r.issues


def test_unknown_affinity_column_is_kept() -> None:
    text = (  # synthetic: a column label this parser has no column for
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\tGPU Affinity\n"
        "GPU0\t X \tNV18\t0-47\t0\t\tN/A\t0-1\n"
        "GPU1\tNV18\t X \t0-47\t0\t\tN/A\t0-1\n"
    )
    r = nvidia_smi_topo.parse(text)
    assert not r.issues and json.loads(r.rows("topo_device")[0]["extra"])["GPU Affinity"] == "0-1"


def test_bad_link_code_row_is_reported() -> None:
    text = fixture_text(TOPO, CLUB5).replace(
        "GPU2    SYS     PHB      X", "GPU2    SYS     P?B      X"
    )  # derived
    r = nvidia_smi_topo.parse(text)
    assert [i.line_no for i in r.issues] == [4] and [d["device"] for d in r.rows("topo_device")] == [
        "GPU0",
        "GPU1",
        "GPU3",
        "GPU4",
    ]


# --- nvlink -----------------------------------------------------------------------------------------------


def test_gb200_status_with_fences_elision_and_info() -> None:
    r = nvidia_smi_nvlink.parse(fixture_text("nvidia-smi-nvlink", GB200))
    assert not r.issues
    status = [x for x in r.rows("nvlink") if x["state"] == "active"]
    assert [(x["gpu"], x["link"]) for x in status] == [(0, i) for i in range(18)] + [(1, 0), (1, 1)]
    assert {x["speed_gbps"] for x in status} == {53.125} and status[0]["line"] == 4
    info = [x for x in r.rows("nvlink") if x["link"] is None]
    assert [(x["gpu"], x["line"], x["state"]) for x in info] == [(0, 31, None), (1, 39, None)]
    assert json.loads(info[0]["extra"]) == {
        "NVLE": "disabled", "Firmware Version: MSE": "14:4:0", "Firmware Version: NETIR": "36:2014:1862",
        "Firmware Version: NETIR UPHY": "7:0:0", "Firmware Version: NETIR CLN": "0:9:0",
        "Firmware Version: NETIR DLN": "0:9:0",
    }  # fmt: skip
    assert parsers.detect_kind(fixture_text("nvidia-smi-nvlink", GB200)) == "nvidia-smi-nvlink"


# SYNTHETIC: `nvidia-smi nvlink -s`, then `-e`, `-c` and `-g 0` lines for the same GPU (layouts as printed by
# nvidia-smi 5xx; values made up).  The counters join the status row of their link.
MIXED = """\
$ nvidia-smi nvlink -s -i 0
GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-00000000-1111-2222-3333-444444444444)
         Link 0: 25.781 GB/s
         Link 1: <inactive>
$ nvidia-smi nvlink -e -c -g 0 -i 0
GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-00000000-1111-2222-3333-444444444444)
         Link 0: Replay Errors: 0
         Link 0: Recovery Errors: 0
         Link 0: CRC Errors: 3
         Link 0, P2P is supported: true
         Link 1: Rx0: 0 KBytes, Tx0: 12 KBytes
         Link 1: something without a key
"""


def test_error_capability_and_counter_lines_join_their_link() -> None:
    r = nvidia_smi_nvlink.parse(MIXED)
    rows = r.rows("nvlink")
    assert [(x["link"], x["state"], x["line"]) for x in rows] == [(0, "active", 3), (1, "inactive", 4)]
    assert json.loads(rows[0]["extra"]) == {
        "Replay Errors": "0", "Recovery Errors": "0", "CRC Errors": "3", "P2P is supported": "true",
    }  # fmt: skip
    assert json.loads(rows[1]["extra"]) == {"Rx0": "0 KBytes", "Tx0": "12 KBytes"}
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (12, "not an NVLink status, error, capability or counter line")
    ]


def test_error_counters_alone_make_link_rows() -> None:
    text = MIXED.split("$ nvidia-smi nvlink -e")[1]  # synthetic: only the -e/-c/-g part
    r = nvidia_smi_nvlink.parse("nvidia-smi nvlink -e" + text)
    rows = r.rows("nvlink")
    assert [(x["link"], x["state"], x["speed_gbps"]) for x in rows] == [(0, None, None), (1, None, None)]
    assert nvidia_smi_nvlink.detect(text) >= 80


def test_nvlink_pdsh_hosts() -> None:
    body = fixture_text("nvidia-smi-nvlink", "azhpc-73-v100-inactive-links.txt").splitlines()  # derived
    text = "".join(f"node-017: {x}\n" for x in body)
    rows = nvidia_smi_nvlink.parse(text).rows("nvlink")
    assert {x["host"] for x in rows} == {"node-017"} and [x["state"] for x in rows].count("inactive") == 2
