"""Tests of parsers/nvidia_smi_nvlink.py (nvidia-smi nvlink -s and dcgmi nvlink --link-status)."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import nvidia_smi_nvlink as mod

KIND = "nvidia-smi-nvlink"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / KIND
A100 = "gpud-a100-nvlink-status.txt"
H100 = "h100-status-i0-18links.txt"
V100 = "azhpc-73-v100-inactive-links.txt"
DCGMI = "dcgmi-nvlink-link-status-all-down.txt"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_a100_eight_gpus_twelve_links() -> None:
    r = mod.parse(fixture(A100))
    rows = r.rows("nvlink")
    assert len(rows) == 96
    assert sorted({x["gpu"] for x in rows}) == list(range(8))
    assert {x["speed_gbps"] for x in rows} == {25.0} and {x["state"] for x in rows} == {"active"}
    assert {x["source"] for x in rows} == {"nvidia-smi"}
    assert rows[0]["uuid"] == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert rows[0]["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    last = rows[-1]  # the file has no trailing newline
    assert (last["gpu"], last["link"], last["line"]) == (7, 11, 104)
    assert not r.issues


def test_h100_eighteen_links() -> None:
    rows = mod.parse(fixture(H100)).rows("nvlink")
    assert [x["link"] for x in rows] == list(range(18))
    assert {x["speed_gbps"] for x in rows} == {26.562}
    assert rows[17]["uuid"] == "GPU-5a10e6e5-95f7-2785-ed63-6f6147f304f7" and rows[17]["gpu"] == 0


def test_v100_inactive_links_and_redacted_uuid() -> None:
    r = mod.parse(fixture(V100))
    rows = r.rows("nvlink")
    assert [(x["link"], x["state"], x["speed_gbps"]) for x in rows] == [
        (0, "active", 25.781),
        (1, "active", 25.781),
        (2, "active", 25.781),
        (3, "inactive", None),
        (4, "active", 25.781),
        (5, "inactive", None),
    ]
    assert {x["gpu"] for x in rows} == {3} and {x["uuid"] for x in rows} == {None}
    assert rows[3]["line"] == 6
    assert not r.issues  # the leading "...." line is skipped


def test_dcgmi_all_down() -> None:
    r = mod.parse(fixture(DCGMI))
    rows = r.rows("nvlink")
    assert len(rows) == 36
    assert {x["state"] for x in rows} == {"down"} and {x["source"] for x in rows} == {"dcgmi"}
    assert [x["link"] for x in rows if x["gpu"] == 1] == list(range(18))
    assert {x["line"] for x in rows if x["gpu"] == 0} == {6}
    assert {x["speed_gbps"] for x in rows} == {None} and {x["nvswitch_id"] for x in rows} == {None}
    assert not r.issues


# SYNTHETIC: the dcgmi layout as printed by DCGM's dcgmi/Nvlink.cpp (gpuId / physicalId entities, one
# letter per link, 4-space indents); links shortened for the test.
DCGMI_WITH_SWITCH = """\
+----------------------+
|  NvLink Link Status  |
+----------------------+
GPUs:
    gpuId 0:
        U U X _
NvSwitches:
    physicalId 8:
        U D U U

Key: Up=U, Down=D, Disabled=X, Not Supported=_
"""


def test_dcgmi_nvswitch_rows() -> None:
    rows = mod.parse(DCGMI_WITH_SWITCH).rows("nvlink")
    assert [(x["gpu"], x["nvswitch_id"], x["link"], x["state"]) for x in rows] == [
        (0, None, 0, "active"),
        (0, None, 1, "active"),
        (0, None, 2, "disabled"),
        (0, None, 3, "not_supported"),
        (None, 8, 0, "active"),
        (None, 8, 1, "down"),
        (None, 8, 2, "active"),
        (None, 8, 3, "active"),
    ]


def test_all_links_inactive_message() -> None:
    text = (
        "GPU 0: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-444444444444)\n"
        "\t NVML: Unable to retrieve NVLink information as all links are inActive\n"
    )
    (row,) = mod.parse(text).rows("nvlink")
    assert (row["gpu"], row["gpu_name"], row["link"], row["state"]) == (0, "NVIDIA H200", None, "inactive")


def test_gpu_headers_without_links_is_an_empty_table() -> None:
    r = mod.parse("GPU 0: NVIDIA L4 (UUID: GPU-00000000-1111-2222-3333-444444444444)\n")
    assert r.tables == {"nvlink": []} and not r.issues


def test_mpirun_prefixes() -> None:
    text = "".join(f"[1,0]<stdout>:{line}\n" for line in fixture(V100).splitlines())
    assert len(mod.parse(text).rows("nvlink")) == 6


@pytest.mark.parametrize("name", [A100, H100, V100, DCGMI])
def test_detect_kind(name: str) -> None:
    assert mod.detect(fixture(name)) >= 80
    assert parsers.detect_kind(fixture(name)) == KIND
