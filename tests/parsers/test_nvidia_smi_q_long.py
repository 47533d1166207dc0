"""nvidia-smi -q: the power reading that is printed, no GPU record without a GPU header, the dump's top
lines on every GPU, de-indented section headers, and the long table ``gpu_attribute`` (one row per
printed key).

Labels: "real" = a fixture as published; "derived" = a real fixture changed in the test (the change is
named).
"""

from __future__ import annotations

import json

import pytest

from parsers import nvidia_smi_q
from tests.conftest import fixture_files, fixture_text

KIND = "nvidia-smi-q"
P40 = "proxmox-535-p40-host-vgpu-driver-capability.txt"
V100 = "notebook-570-v100-indented-4-average-power-na.txt"


def parse(name: str):
    return nvidia_smi_q.parse(fixture_text(KIND, name))


def attr(result, section: str, key: str, entity: object = ...) -> list[tuple[object, str, float | None]]:
    return [
        (a["entity"], a["value"], a["number"])
        for a in result.rows("gpu_attribute")
        if a["section"] == section and a["key"] == key and (entity is ... or a["entity"] == entity)
    ]


# --- power: whichever reading is printed ------------------------------------------------------------


def test_real_average_power_na_instantaneous_printed() -> None:
    (g,) = parse(V100).rows("gpu")
    assert g["power_draw_w"] == 24.07
    assert g["power_limit_w"] == 250.0


def test_derived_average_printed_instantaneous_na() -> None:
    # derived from the V100 fixture: the GPU's two readings swapped (Average 24.07 W, Instantaneous N/A)
    text = fixture_text(KIND, V100)
    text = text.replace(
        "Average Power Draw                : N/A\n            Instantaneous Power Draw          : 24.07 W",
        "Average Power Draw                : 24.07 W\n            Instantaneous Power Draw          : N/A",
        1,
    )
    assert "Average Power Draw                : 24.07 W" in text
    (g,) = nvidia_smi_q.parse(text).rows("gpu")
    assert g["power_draw_w"] == 24.07


def test_real_both_power_readings_printed_average_wins() -> None:
    (g,) = parse("helium-580-rtx3090ti-55col-passthrough-processes.txt").rows("gpu")
    assert g["power_draw_w"] == 24.78  # Average 24.78 W, Instantaneous 24.74 W


# --- no GPU record without a GPU header; the dump's top lines on every GPU ---------------------------


def test_real_vgpu_driver_capability_is_the_dumps_not_a_gpu() -> None:
    r = parse(P40)
    (g,) = r.rows("gpu")
    assert not r.issues
    assert (g["pci"], g["name"], g["driver_version"], g["cuda_version"], g["timestamp"], g["attached_gpus"]) == (
        "0000:83:00.0", "Tesla P40", "535.129.03", "Not Found", "Mon Nov 20 00:37:23 2023", 1,
    )  # fmt: skip
    assert (g["virtualization_mode"], g["host_vgpu_mode"], g["power_draw_w"]) == (
        "Host VGPU",
        "Non SR-IOV",
        52.5,
    )
    assert json.loads(g["extra"])["vGPU Driver Capability/Heterogenous Multi-vGPU"] == "Supported"
    assert attr(r, "vGPU Driver Capability", "Heterogenous Multi-vGPU") == [(None, "Supported", None)]
    assert attr(r, "vGPU Device Capability", "Fractional Multi-vGPU") == [
        ("0000:83:00.0", "Not Supported", None)
    ]


def test_real_uniformly_indented_dump_one_gpu_with_its_top_lines() -> None:
    r = parse(V100)
    (g,) = r.rows("gpu")
    assert not r.issues
    assert (g["pci"], g["driver_version"], g["cuda_version"], g["timestamp"], g["line"]) == (
        "0001:00:00.0", "570.124.06", "12.8", "Fri Mar 28 16:52:10 2025", 9,
    )  # fmt: skip
    assert (g["driver_version_line"], g["cuda_version_line"]) == (5, 6)
    assert (g["temp_c"], g["memory_total_mib"], g["ecc_corrected_volatile"], g["pcie_width_current"]) == (
        29.0, 16384.0, 0, 16,
    )  # fmt: skip
    assert attr(r, "", "Driver Version") == [(None, "570.124.06", None)]


@pytest.mark.parametrize("pad", ["  ", "\t", "        "])
def test_derived_whole_dump_indented_gives_the_same_gpu(pad: str) -> None:
    # derived from the P40 fixture: every line indented by the same padding (a paste into a doc)
    text = fixture_text(KIND, P40)
    (want,) = nvidia_smi_q.parse(text).rows("gpu")
    shifted = "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))
    r = nvidia_smi_q.parse(shifted)
    (got,) = r.rows("gpu")
    assert not r.issues
    assert {k: v for k, v in got.items() if k != "host"} == {k: v for k, v in want.items() if k != "host"}


def test_derived_concatenated_dumps_each_gpu_has_its_own_top_lines() -> None:
    # derived: the P40 dump, then the V100 dump (two nodes' dumps in one file)
    text = fixture_text(KIND, P40) + fixture_text(KIND, V100)
    gpus = nvidia_smi_q.parse(text).rows("gpu")
    assert [(g["pci"], g["driver_version"], g["cuda_version"]) for g in gpus] == [
        ("0000:83:00.0", "535.129.03", "Not Found"),
        ("0001:00:00.0", "570.124.06", "12.8"),
    ]


# --- de-indented section headers --------------------------------------------------------------------


def test_derived_section_header_lost_its_indentation() -> None:
    # derived from the P40 fixture: "    Applications Clocks" and "    ECC Errors" pasted flush left
    text = fixture_text(KIND, P40)
    text = text.replace("\n    Applications Clocks\n", "\nApplications Clocks\n").replace(
        "\n    ECC Errors\n", "\nECC Errors\n"
    )
    r = nvidia_smi_q.parse(text)
    (g,) = r.rows("gpu")
    assert not r.issues
    assert attr(r, "Applications Clocks", "Graphics") == [("0000:83:00.0", "1303 MHz", 1303.0)]
    assert attr(r, "Default Applications Clocks", "Graphics") == [("0000:83:00.0", "1303 MHz", 1303.0)]
    assert attr(r, "ECC Errors / Volatile / Single Bit", "Total") == [("0000:83:00.0", "N/A", None)]
    assert g["ecc_volatile_line"] is not None
    assert g["temp_c"] == 69.0  # the sections after it are read as before


# --- the long table -----------------------------------------------------------------------------------


def test_real_long_table_names_every_value() -> None:
    r = parse("della-h100-545-single-no-blank-after-banner.txt")
    pci = r.rows("gpu")[0]["pci"]
    assert (
        attr(r, "GPU Memory Power Readings", "Power Draw", pci)[0][2] == 47.78
    )  # section had a trailing space
    assert attr(r, "FB Memory Usage", "Free", pci)[0][2] is not None
    assert attr(r, "", "Board Part Number", pci)[0][1]
    r = parse(P40)
    assert attr(r, "Applications Clocks", "Memory") == [("0000:83:00.0", "3615 MHz", 3615.0)]
    assert attr(r, "Max Customer Boost Clocks", "Graphics") == [("0000:83:00.0", "1531 MHz", 1531.0)]
    assert attr(r, "Voltage", "Graphics") == [("0000:83:00.0", "N/A", None)]
    assert attr(r, "", "Board ID") == [("0000:83:00.0", "0x8300", 33536.0)]
    assert attr(r, "Clocks Event Reasons", "SW Power Cap") == [("0000:83:00.0", "Active", None)]
    r = parse("helium-580-rtx3090ti-55col-passthrough-processes.txt")
    counters = {
        a["key"]: a["number"]
        for a in r.rows("gpu_attribute")
        if a["section"] == "Clocks Event Reasons Counters"
    }
    assert counters and all(v is not None for v in counters.values())
    (row,) = [
        a
        for a in r.rows("gpu_attribute")
        if a["key"] == "Average Power Draw" and a["section"] == "GPU Power Readings"
    ]
    assert (row["number"], row["unit"]) == (24.78, "W")


def test_real_long_table_one_row_per_gpu_key_eight_gpus() -> None:
    r = parse("jp-simulator-8xh100-565-complete.txt")
    gpus = r.rows("gpu")
    temps = {
        a["entity"]: a["number"]
        for a in r.rows("gpu_attribute")
        if (a["section"], a["key"]) == ("Temperature", "GPU Current Temp")
    }
    assert temps == {g["pci"]: g["temp_c"] for g in gpus} and len(temps) == 8
    lines = [a["line"] for a in r.rows("gpu_attribute")]
    assert lines == sorted(lines)


@pytest.mark.parametrize("path", fixture_files(KIND), ids=lambda p: p.name)
def test_every_value_of_extra_is_in_the_long_table(path) -> None:
    r = nvidia_smi_q.parse(path.read_text(encoding="utf-8"))
    printed: set[tuple[object, str]] = set()
    for a in r.rows("gpu_attribute"):
        path_ = "/".join([*(a["section"].split(" / ") if a["section"] else []), a["key"]])
        printed.add((a["entity"], path_))
        printed.add((None, path_))  # the dump's top lines are kept in each GPU's extra too
    for g in r.rows("gpu"):
        for key in json.loads(g["extra"] or "{}"):
            stripped = "/".join(part.strip() for part in key.split("/"))
            assert (g["pci"], stripped) in printed or (None, stripped) in printed, (path.name, key)
