"""Tests of parsers/nvidia_smi.py (the default nvidia-smi table) on real captures and one 580 layout."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import nvidia_smi as mod

KIND = "nvidia-smi"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / KIND


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# 91-column 550+ layout with the 580+ "+---+" header separator.  Written from knowledge of the layout
# and checked, line by line, against public 550.107 / 580.65 / 580.126 outputs; the values are made up
# (GPU 1 shows ERR! for temperature and power draw, and 2 volatile uncorrectable ECC errors).
LAYOUT_580 = """\
Tue Aug 19 10:00:00 2025       
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:53:00.0 Off |                    0 |
| N/A   30C    P0            113W /  700W |   74235MiB /  81559MiB |     97%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:64:00.0 Off |                    2 |
| N/A  ERR!    P0            ERR! /  700W |       0MiB /  81559MiB |      0%      Default |
|                                         |                        |             Disabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A         1234567      C   python3                               74226MiB |
+-----------------------------------------------------------------------------------------+
"""


def test_h100_545_narrow_busid() -> None:
    r = mod.parse(fixture("della-h100-545-narrow-busid.txt"))
    (summary,) = r.rows("smi_summary")  # columns added since (timestamp, extra): compare these
    assert {k: summary[k] for k in ("line", "driver_version", "cuda_version", "smi_version")} == {
        "line": 3, "driver_version": "545.23.08", "cuda_version": "12.3", "smi_version": "545.23.08"
    }  # fmt: skip
    (gpu,) = r.rows("smi_gpu")
    gpu = {k: v for k, v in gpu.items() if k not in ("bus_id", "disp_a", "mig_pending", "extra")}
    assert gpu == {
        "line": 9, "index": 0, "name": "NVIDIA H100 80GB HBM3", "pci": "0000:19:00.0",
        "persistence_mode": "On", "fan_pct": None, "temp_c": 33.0, "perf_state": "P0",
        "power_draw_w": 72.0, "power_cap_w": 700.0, "power_line": 10, "memory_used_mib": 2,
        "memory_total_mib": 81559,
        "util_gpu_pct": 0.0, "compute_mode": "Default", "mig_mode": "Disabled", "ecc_uncorrected": 0,
        "errors": None,
    }  # fmt: skip
    assert not r.issues


def test_525_err_fan_glued_to_border() -> None:
    r = mod.parse(fixture("gpud-525-err-fan.txt"))
    assert r.rows("smi_summary")[0]["driver_version"] == "525.125.06"
    assert r.rows("smi_summary")[0]["cuda_version"] == "12.0"
    (gpu,) = r.rows("smi_gpu")
    assert gpu["line"] == 8
    assert gpu["name"] == "NVIDIA GeForce ..."
    assert gpu["persistence_mode"] == "Off"
    assert gpu["fan_pct"] is None and gpu["errors"] == "fan"
    assert (gpu["temp_c"], gpu["perf_state"], gpu["power_draw_w"], gpu["power_cap_w"]) == (
        38.0,
        "P5",
        49.0,
        450.0,
    )
    assert (gpu["memory_used_mib"], gpu["memory_total_mib"]) == (2021, 23028)
    assert gpu["compute_mode"] == "E. Process"
    assert gpu["mig_mode"] == "N/A"
    assert gpu["pci"] == "0000:01:00.0"
    assert not r.issues


def test_580_layout_two_gpus() -> None:
    assert {len(line) for line in LAYOUT_580.splitlines() if line.startswith(("|", "+"))} == {91}
    r = mod.parse(LAYOUT_580)
    assert r.rows("smi_summary")[0]["cuda_version"] == "13.0"
    a, b = r.rows("smi_gpu")
    assert (a["index"], a["pci"], a["power_draw_w"], a["util_gpu_pct"]) == (0, "0000:53:00.0", 113.0, 97.0)
    assert (a["memory_used_mib"], a["memory_total_mib"], a["errors"]) == (74235, 81559, None)
    assert (b["index"], b["line"], b["pci"], b["ecc_uncorrected"]) == (1, 13, "0000:64:00.0", 2)
    assert b["temp_c"] is None and b["power_draw_w"] is None and b["power_cap_w"] == 700.0
    assert b["errors"] == "temp,power"
    assert not r.issues


def test_550_separator_and_paste_artefacts() -> None:
    text = LAYOUT_580.replace(
        "+-----------------------------------------+---", "|-----------------------------------------+---", 1
    )
    text = "".join("    " + line + "\r\n" for line in text.splitlines())  # indented, CRLF
    assert [g["index"] for g in mod.parse(text).rows("smi_gpu")] == [0, 1]


def test_lost_gpu_message_is_an_issue() -> None:
    text = "Unable to determine the device handle for GPU0000:9B:00.0: Unknown Error\n" + LAYOUT_580
    r = mod.parse(text)
    assert len(r.rows("smi_gpu")) == 2
    assert [(i.line_no, i.reason) for i in r.issues] == [(1, "nvidia-smi could not reach a GPU")]


def test_elided_rows_dots_line() -> None:
    lines = LAYOUT_580.splitlines()
    text = "\n".join(lines[:12] + ["..."] + lines[12:])
    assert [g["index"] for g in mod.parse(text).rows("smi_gpu")] == [0, 1]


def test_output_cut_after_processes() -> None:
    text = LAYOUT_580.split("| Processes:")[0]
    assert len(mod.parse(text).rows("smi_gpu")) == 2


@pytest.mark.parametrize(
    "text", [fixture("della-h100-545-narrow-busid.txt"), fixture("gpud-525-err-fan.txt"), LAYOUT_580]
)
def test_detect_kind(text: str) -> None:
    assert mod.detect(text) >= 80
    assert parsers.detect_kind(text) == KIND
