"""nvidia-smi -q: the variant families of issue 11 (padding, lossless extra, lost indentation, excerpts,
remap/retired pages, Fabric, MIG, virtualisation, error values), on real fixtures where one exists.

Labels: "real" = a fixture as published; "derived" = a real fixture changed in the test (the change is
named); "synthetic" = text written here (no public example was found).
"""

from __future__ import annotations

import json
import re

import pytest

import parsers
from parsers import nvidia_smi_q
from parsers._base import CollectorError, ParseError
from tests.conftest import fixture_files, fixture_text

KIND = "nvidia-smi-q"


def parse(name: str):
    return nvidia_smi_q.parse(fixture_text(KIND, name))


def extra(row: dict) -> dict:
    return json.loads(row["extra"]) if row["extra"] else {}


# --- real fixtures -------------------------------------------------------------------------------


def test_real_580_55_column_keys_passthrough_processes() -> None:
    r = parse("helium-580-rtx3090ti-55col-passthrough-processes.txt")
    (g,) = r.rows("gpu")
    assert not r.issues
    assert (g["pci"], g["name"], g["driver_version"], g["cuda_version"]) == (
        "0000:05:00.0",
        "NVIDIA GeForce RTX 3090 Ti",
        "580.142",
        "13.0",
    )
    assert g["virtualization_mode"] == "Pass-Through" and g["host_vgpu_mode"] is None
    assert g["module_id"] == 1  # 580 prints it under "Platform Info"
    assert g["power_draw_w"] == 24.78  # "Average Power Draw" (no plain "Power Draw" on 580)
    assert g["temp_c"] == 45.0 and g["temp_shutdown_c"] == 97.0 and g["memory_total_mib"] == 24564.0
    assert g["pcie_gen_current"] == 1 and g["pcie_gen_max"] == 4 and g["performance_state"] == "P8"
    assert g["bank_remap_max"] == 192 and g["remap_pending"] is False and g["mig_mode"] is None
    x = extra(g)
    assert x["Processes/Process ID"] == "2203"  # 42-column keys inside a 55-column dump
    assert x["Processes/Process ID/Name"] == "/app/llama-server"
    assert x["Processes/Process ID/Used GPU Memory"] == "22686 MiB"
    assert x["Clocks Event Reasons Counters/SW Power Capping"] == "85032867 us"
    assert x["Display Mode"] == "Requested functionality has been deprecated"
    assert x["Fabric/Health/Partition Assigned"] == "N/A" and x["Capabilities/EGM"] == "disabled"
    assert x["Temperature/GPU Current Temp"] == "45 C"  # the printed value beside temp_c
    assert "Product Name" not in x  # held verbatim in the name column
    assert g["error_values"] is None


def test_real_510_remap_pending_with_elisions() -> None:
    r = parse("ml-engineering-510-a100-remap-pending-elided.txt")
    (g,) = r.rows("gpu")
    assert not r.issues
    assert g["pci"] == "0000:10:1c.0" and g["name"] == "NVIDIA A100-SXM4-80GB" and g["attached_gpus"] == 8
    assert g["remap_pending"] is True and g["remap_failure"] is False
    assert g["remapped_rows_correctable"] == 1 and g["remapped_rows_uncorrectable"] == 0
    assert (g["bank_remap_max"], g["bank_remap_high"], g["bank_remap_partial"]) == (639, 1, 0)
    assert (g["bank_remap_low"], g["bank_remap_none"]) == (0, 0)
    assert g["dram_corrected_volatile"] == 177 and g["ecc_uncorrected_aggregate"] == 0
    assert g["remap_line"] == 25 and g["retired_line"] == 21
    assert g["retired_pages_sbe"] is None and g["retired_pages_pending"] is None  # N/A on Ampere
    assert extra(g)["Remapped Rows/Bank Remap Availability Histogram/Max"] == "639 bank(s)"


def test_real_partial_display_unknown_error_and_annotation() -> None:
    r = parse("uce-runbook-550-d-ecc-rowremap-unknown-error-pending.txt")
    (g,) = r.rows("gpu")
    assert not r.issues
    assert g["pci"] == "0000:52:00.0" and g["line"] == 10 and g["driver_version"] == "550.90.07"
    assert g["ecc_mode"] == "Unknown Error" and g["error_values"] == "Unknown Error"
    assert g["ecc_uncorrected_volatile"] is None and g["sram_uncorrected_aggregate"] is None  # all N/A
    assert g["remap_pending"] is True  # "Yes   <===": the annotation is cut
    assert g["remapped_rows_uncorrectable"] == 1 and g["bank_remap_max"] == 2559 and g["remap_line"] == 35
    assert g["name"] is None and g["temp_c"] is None  # -d ECC,ROW_REMAPPER prints nothing else
    assert extra(g)["ECC Errors/Aggregate Uncorrectable SRAM Sources/SRAM L2"] == "N/A"


def test_real_flush_left_excerpt_reset_required() -> None:
    r = parse("robotwin-535-rtx3090-reset-required-flush-left-excerpt.txt")
    (g,) = r.rows("gpu")
    assert not r.issues
    assert g["pci"] is None and g["line"] == 1
    assert g["reset_required"] == "Yes" and g["reset_recommended"] == "No" and g["performance_state"] == "P0"
    assert g["error_values"] == "System is not in ready state, Unknown Error"
    x = extra(g)
    assert x["Power Draw"] == "Unknown Error" and x["Fan Speed"] == "System is not in ready state"
    assert x["Decoder"] == "Unknown Error" and g["power_draw_w"] is None


def test_real_fabric_grep_excerpt() -> None:
    r = parse("dra-driver-626-fabric-grep-c3-health-unhealthy.txt")
    (g,) = r.rows("gpu")
    assert not r.issues
    assert (g["fabric_state"], g["fabric_status"], g["fabric_health_summary"]) == (
        "Completed",
        "Success",
        "Unhealthy",
    )
    assert g["fabric_clique_id"] == 2 and g["fabric_bandwidth"] == "Full"
    assert g["fabric_cluster_uuid"] == "dc6e40c4-d722-4357-9ba6-5291dd461278"
    assert g["pci"] is None and g["line"] == 2 and g["fabric_line"] == 3


def test_real_vgpu_licence_product_name_is_not_the_gpu_name() -> None:
    (g,) = parse("nrec-docs-vgpu-licensed-product-grep-a2.txt").rows("gpu")
    assert g["name"] is None
    assert g["vgpu_license_product"] == "NVIDIA Virtual Compute Server"
    assert g["vgpu_license_status"] == "Licensed (Expiry: 2023-1-31 11:32:22 GMT)"


def test_real_retired_pages_section_odd_padding() -> None:
    (g,) = parse("ml-engineering-retired-pages-pending-blacklist-section.txt").rows("gpu")
    assert (g["retired_pages_sbe"], g["retired_pages_dbe"], g["retired_pages_pending"]) == (2, 0, "Yes")
    assert g["retired_line"] == 2 and g["pci"] is None


def test_real_ecc_section_alone() -> None:
    (g,) = parse("ml-engineering-ecc-errors-sram-uncorrectable-section.txt").rows("gpu")
    assert g["sram_uncorrected_volatile"] == 1 and g["sram_uncorrected_aggregate"] == 5
    assert g["ecc_uncorrected_volatile"] == 1 and g["ecc_volatile_line"] == 4


def test_real_grep_uuid_one_row_per_gpu() -> None:
    rows = parse("ml-engineering-grep-uuid-8-gpus-prompt.txt").rows("gpu")
    assert len(rows) == 8 and [r["line"] for r in rows] == list(range(2, 10))
    assert rows[0]["uuid"] == "GPU-2b416d09-4537-ecc1-54fd-c6c83a764be9"
    assert rows[7]["uuid"] == "GPU-52c408aa-3982-baa3-f83d-27d047dd7653"


def test_real_565_new_columns() -> None:
    g = parse("jp-simulator-8xh100-565-complete.txt").rows("gpu")
    assert {x["fabric_clique_id"] for x in g} == {0} and g[0]["virtualization_mode"] == "None"
    assert g[0]["mig_mode_pending"] == "Disabled" and g[0]["bank_remap_max"] == 2560
    assert g[0]["timestamp"] == "Thu Nov 14 07:00:14 2024" and g[0]["attached_gpus"] == 8
    assert extra(g[0])["ECC Errors/Aggregate/SRAM Threshold Exceeded"] == "No"


def test_real_a10_passthrough() -> None:
    (g,) = parse("a10-550-hw-power-brake-active-testfixture.txt").rows("gpu")
    assert g["virtualization_mode"] == "Pass-Through" and g["host_vgpu_mode"] is None  # printed N/A
    assert g["bank_remap_max"] == 192 and extra(g)["GPU Virtualization Mode/Host VGPU Mode"] == "N/A"


_KV = re.compile(r"^(\s*)(\S[^:]*?)\s*: (.*)$")


@pytest.mark.parametrize("path", fixture_files(KIND), ids=lambda p: p.name)
def test_lossless_every_printed_value_is_kept(path) -> None:
    """Every "key : value" printed in a fixture is in a str column or in extra (as printed)."""
    result = nvidia_smi_q.parse(path.read_text())
    kept: set[str] = set()
    for row in result.rows("gpu"):
        kept |= {v for k, v in row.items() if isinstance(v, str) and k != "extra"}
        for v in extra(row).values():
            kept |= set(v) if isinstance(v, list) else {v}
    for line in path.read_text().splitlines():
        m = _KV.match(line.replace("<===", "").rstrip())
        if m and not line.lstrip().startswith(("$", "#")):
            assert m.group(3).strip() in kept, line


# --- derived from real fixtures ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "della-h100-545-single-no-blank-after-banner.txt",
        "jp-simulator-8xh100-565-complete.txt",
        "a10-550-hw-power-brake-active-testfixture.txt",
        "helium-580-rtx3090ti-55col-passthrough-processes.txt",
    ],
)
def test_derived_lost_indentation_gives_the_same_columns(name: str) -> None:
    """Derived: every line flush left (leading spaces removed)."""
    text = fixture_text(KIND, name)
    want = nvidia_smi_q.parse(text).rows("gpu")
    got = nvidia_smi_q.parse("\n".join(line.lstrip() for line in text.splitlines())).rows("gpu")
    assert len(got) == len(want)
    for a, b in zip(want, got, strict=True):
        assert {k: v for k, v in a.items() if k != "extra"} == {k: v for k, v in b.items() if k != "extra"}
        assert extra(b)["PCI/GPU Link Info/Link Width/Max"] == "16x"


def test_derived_tabs_crlf_and_srun_prefix() -> None:
    """Derived: jp 8x H100 with `srun -l` rank tags, CRLF and tab indentation."""
    text = fixture_text(KIND, "jp-simulator-8xh100-565-complete.txt")
    text = "".join(f"0: {line.replace('    ', chr(9))}\r\n" for line in text.splitlines())
    r = nvidia_smi_q.parse(text)
    rows = r.rows("gpu")
    assert len(rows) == 8 and not r.issues
    assert rows[0]["host"] == "0" and rows[0]["pcie_replays"] == 7 and rows[0]["temp_c"] == 30.0
    assert rows[7]["pci"] == "0000:db:00.0" and rows[7]["fabric_state"] == "Completed"


def test_derived_two_pdsh_hosts() -> None:
    """Derived: two nodes' dumps through pdsh (`host: ` tags), concatenated."""
    a = fixture_text(KIND, "della-h100-545-single-no-blank-after-banner.txt")
    b = fixture_text(KIND, "a10-550-hw-power-brake-active-testfixture.txt")
    text = "".join(f"ip-10-0-0-1: {x}\n" for x in a.splitlines()) + "".join(
        f"ip-10-0-0-2: {x}\n" for x in b.splitlines()
    )
    rows = nvidia_smi_q.parse(text).rows("gpu")
    assert [(r["host"], r["name"]) for r in rows] == [
        ("ip-10-0-0-1", "NVIDIA H100 80GB HBM3"),
        ("ip-10-0-0-2", "NVIDIA A10"),
    ]
    assert rows[1]["driver_version"] == "550.127.05"


def test_derived_grep_fabric_excerpt_of_two_gpus() -> None:
    """Derived: the #626 Fabric excerpt twice, as `grep -A` prints two GPUs' blocks (`--` between)."""
    one = fixture_text(KIND, "dra-driver-626-fabric-grep-c3-health-unhealthy.txt")
    body = "".join(line + "\n" for line in one.splitlines()[1:] if line != "--")
    rows = nvidia_smi_q.parse(body + "--\n" + body.replace("Unhealthy", "Healthy")).rows("gpu")
    assert [r["fabric_health_summary"] for r in rows] == ["Unhealthy", "Healthy"]
    rows = nvidia_smi_q.parse(body + body).rows("gpu")  # no separator: the repeated section splits
    assert len(rows) == 2 and rows[1]["line"] == 9


def test_derived_cut_last_line_kept() -> None:
    """Derived: the della dump cut in the middle of a line."""
    text = fixture_text(KIND, "della-h100-545-single-no-blank-after-banner.txt")
    cut = text[: text.index("GPU Current Temp") + 11]
    r = nvidia_smi_q.parse(cut)
    (g,) = r.rows("gpu")
    assert g["temp_c"] is None and g["bank_remap_max"] == 2560
    assert extra(g)["Temperature/GPU Current"] == ""  # the cut line, kept under its section


# --- synthetic (no public example found) ------------------------------------------------------------

MIG = """\
GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-40GB
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG Devices
        MIG Device
            GPU Instance ID               : 1
            Compute Instance ID           : 0
            Device Attributes
                Shared
                    Multiprocessor count  : 42
            ECC Errors
                Volatile
                    SRAM Uncorrectable    : 3
            FB Memory Usage
                Total                     : 19968 MiB
        MIG Device
            GPU Instance ID               : 2
            Compute Instance ID           : 0
            FB Memory Usage
                Total                     : 19968 MiB
    FB Memory Usage
        Total                             : 40960 MiB
    Future Section
        Nested Thing
            New Key                       : 42
"""


def test_synthetic_mig_devices_stay_out_of_gpu_columns() -> None:
    r = nvidia_smi_q.parse(MIG)
    (g,) = r.rows("gpu")
    assert not r.issues
    assert g["mig_mode"] == "Enabled" and g["mig_mode_pending"] == "Enabled" and g["mig_devices"] == 2
    assert g["memory_total_mib"] == 40960.0 and g["sram_uncorrected_volatile"] is None
    x = extra(g)
    assert x["MIG Devices/MIG Device/GPU Instance ID"] == ["1", "2"]
    assert x["MIG Devices/MIG Device/Device Attributes/Shared/Multiprocessor count"] == "42"
    assert x["MIG Devices/MIG Device/ECC Errors/Volatile/SRAM Uncorrectable"] == "3"
    assert x["Future Section/Nested Thing/New Key"] == "42"  # unknown sections kept with their path


def test_synthetic_mig_devices_none() -> None:
    text = "GPU 00000000:07:00.0\n    MIG Mode\n        Current : Disabled\n    MIG Devices : None\n"
    (g,) = nvidia_smi_q.parse(text).rows("gpu")
    assert g["mig_devices"] == 0 and g["mig_mode"] == "Disabled"


def test_synthetic_bracketed_error_values_and_loud_bad_number() -> None:
    text = (
        "GPU 00000000:07:00.0\n"
        "    Temperature\n"
        "        GPU Current Temp                  : [GPU requires reset]\n"
        "    FB Memory Usage\n"
        "        Total                             : [N/A]\n"
        "        Used                              : lots\n"
        "    Retired Pages\n"
        "        Single Bit ECC                    : 1\n"
        "            0x00000000001a2b3c\n"
    )
    r = nvidia_smi_q.parse(text)
    (g,) = r.rows("gpu")
    assert g["temp_c"] is None and g["memory_total_mib"] is None and g["error_values"] == "GPU requires reset"
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (6, "Used: expected a number, got 'lots'"),
        (9, "a line without a key (value or cut line?)"),
    ]
    assert extra(g)["Retired Pages/Single Bit ECC/0x00000000001a2b3c"] == ""


def test_error_contract() -> None:
    with pytest.raises(CollectorError):
        nvidia_smi_q.parse("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    with pytest.raises(ParseError, match="first line seen: 'some'"):
        nvidia_smi_q.parse("some\nrandom\ntext\n")
    with pytest.raises(ParseError, match="no GPU block"):
        nvidia_smi_q.parse("Driver Version                            : 550.90.07\nAttached GPUs : 0\n")


def test_detect_excerpts_and_not_others() -> None:
    assert nvidia_smi_q.detect(fixture_text(KIND, "dra-driver-626-fabric-grep-c3-health-unhealthy.txt")) >= 70
    assert nvidia_smi_q.detect(fixture_text(KIND, "ml-engineering-grep-uuid-8-gpus-prompt.txt")) >= 60
    assert nvidia_smi_q.detect("some\nrandom\ntext\n") == 0
    assert nvidia_smi_q.detect("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n") == 0


@pytest.mark.parametrize("path", fixture_files(KIND), ids=lambda p: p.name)
def test_every_fixture_detected(path) -> None:
    assert parsers.detect_kind(path.read_text()) == KIND
