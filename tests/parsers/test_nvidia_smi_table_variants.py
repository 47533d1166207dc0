"""nvidia-smi (default table) and nvidia-smi-csv variants: every driver layout from 390 to 610, MIG devices and
processes tables, Hyper-V domains, no banner, mangled blocks, and the travel noise (prefixes, prompts, CRLF).

Real fixtures: tests/fixtures/nvidia-smi/ and tests/fixtures/nvidia-smi-csv/ (see each PROVENANCE.md).  Texts
built here from a real fixture (a prefix added, CRLF, lines cut) are labelled "derived"; texts written here from
scratch are "synthetic".
"""

from __future__ import annotations

import json

import pytest

import parsers
from parsers import ParseError, nvidia_smi, nvidia_smi_csv
from tests.conftest import fixture_text
from tests.derive import srun

KIND = "nvidia-smi"
NCSU = "ncsu-dgx-a100-450-8gpu-mig-pending-odd-process-rows.txt"
WUK = "wuk-a100-450-8gpu-mig-7gpus-one-instance.txt"
KO580 = "ko-a100-580-mig-4-instances-shared-memory-usage.txt"
AZURE = "tw-azure-a100-515-hyperv-domain-1-indented-no-mig-devices.txt"
ARCH396 = "arch-gtx1080ti-396-2line-processes-token-names.txt"
GTX390 = "ubuntu-gtx560ti-390-no-cuda-power-na-process-not-supported-indented.txt"
GTX440 = "gtx1080ti-440-2line-two-processes.txt"
B200 = "sglang-27487-b200-610-kmd-umd-banner-cut.txt"
ALL = [NCSU, WUK, KO580, AZURE, ARCH396, GTX390, GTX440, B200]


def smi(name: str) -> str:
    return fixture_text(KIND, name)


# --- layouts of every driver generation -------------------------------------------------------------


def test_450_dgx_eight_gpus_mig_pending_and_edited_process_rows() -> None:
    r = nvidia_smi.parse(smi(NCSU))  # real: `$ nvidia-smi` prompt first, 3-row blocks
    (summary,) = r.rows("smi_summary")
    assert (summary["line"], summary["driver_version"], summary["cuda_version"]) == (5, "450.102.04", "11.0")
    assert summary["timestamp"] == "Thu Mar 15 10:58:08 2021"
    gpus = r.rows("smi_gpu")
    assert [g["index"] for g in gpus] == list(range(8)) and [g["line"] for g in gpus][:2] == [11, 15]
    assert [g["memory_used_mib"] for g in gpus[:3]] == [400, 5701, 36121]
    assert [g["util_gpu_pct"] for g in gpus[:3]] == [1.0, 12.0, 90.0]
    g7 = gpus[7]
    assert (g7["mig_mode"], g7["mig_pending"], g7["ecc_uncorrected"], g7["util_gpu_pct"]) == (
        "Disabled",
        True,
        None,
        None,
    )
    assert (
        json.loads(g7["extra"])["MIG M."] == "Disabled*"
        and json.loads(g7["extra"])["Volatile Uncorr. ECC"] == "On"
    )
    assert (g7["pci"], g7["bus_id"], g7["disp_a"], g7["persistence_mode"]) == (
        "0000:bd:00.0",
        "00000000:BD:00.0",
        "Off",
        "On",
    )
    assert r.rows("smi_mig") == [] and r.rows("smi_process") == []
    # the author's edited rows under "Processes:" are not process rows: each is reported with its line
    assert [(i.line_no, i.line.split("|")[1].strip()) for i in r.issues] == [
        (59, "running processes found"), (60, "0 App1  1%"), (61, "1 App2  12%"), (62, "2 App3  90%"),
    ]  # fmt: skip


def test_450_mig_device_block_and_trailing_program_output() -> None:
    r = nvidia_smi.parse(smi(WUK))  # real: program output after the table is not table data
    assert not r.issues
    gpus = r.rows("smi_gpu")
    assert [g["mig_mode"] for g in gpus] == ["Disabled"] + ["Enabled"] * 7
    assert {g["ecc_uncorrected"] for g in gpus[1:]} == {None} and gpus[0]["ecc_uncorrected"] == 0
    (mig,) = r.rows("smi_mig")
    assert (mig["line"], mig["gpu"], mig["gi_id"], mig["ci_id"], mig["mig_dev"]) == (49, 7, 13, 0, 0)
    assert (mig["memory_used_mib"], mig["memory_total_mib"], mig["bar1_used_mib"], mig["bar1_total_mib"]) == (
        3, 4864, 0, 8191,
    )  # fmt: skip
    assert (mig["sm"], mig["ecc_uncorrected"], mig["ce"], mig["enc"], mig["dec"], mig["ofa"], mig["jpg"]) == (
        14, 0, 1, 0, 0, 0, 0,
    )  # fmt: skip


def test_580_mig_shared_memory_usage_header() -> None:
    r = nvidia_smi.parse(smi(KO580))  # real: 580.126.09, "Shared Memory-Usage" / "Shared BAR1-Usage"
    assert not r.issues
    (s,) = r.rows("smi_summary")
    assert (s["line"], s["driver_version"], s["cuda_version"], s["timestamp"]) == (
        4, "580.126.09", "13.0", "Tue Feb 17 16:58:38 2026",
    )  # fmt: skip
    (g,) = r.rows("smi_gpu")
    assert (g["pci"], g["power_draw_w"], g["power_cap_w"], g["memory_used_mib"], g["mig_mode"]) == (
        "0000:10:1c.0", 43.0, 400.0, 249, "Enabled",
    )  # fmt: skip
    migs = r.rows("smi_mig")
    assert [(m["gi_id"], m["ci_id"], m["mig_dev"], m["sm"]) for m in migs] == [
        (2, 0, 0, 56), (3, 0, 1, 14), (3, 1, 2, 14), (9, 0, 3, 14),
    ]  # fmt: skip
    assert [(m["memory_used_mib"], m["memory_total_mib"], m["bar1_total_mib"]) for m in migs] == [
        (142, 20096, 12211), (71, 9984, 6105), (71, 9984, 6105), (36, 4864, 3052),
    ]  # fmt: skip
    assert json.loads(migs[0]["extra"])["Shared Memory-Usage"] == "142MiB / 20096MiB"


def test_515_hyperv_domain_and_indentation() -> None:
    r = nvidia_smi.parse(smi(AZURE))  # real: every line indented 4 spaces, PCI domain 00000001
    assert not r.issues
    (g,) = r.rows("smi_gpu")
    assert (g["line"], g["name"], g["bus_id"], g["pci"]) == (
        8,
        "NVIDIA A100 80G...",
        "00000001:00:00.0",
        "0001:00:00.0",
    )
    assert (g["temp_c"], g["power_draw_w"], g["memory_total_mib"], g["util_gpu_pct"]) == (
        39.0,
        75.0,
        81920,
        None,
    )


def test_396_two_row_blocks_no_cuda_version_and_old_process_table() -> None:
    r = nvidia_smi.parse(smi(ARCH396))
    assert not r.issues
    (s,) = r.rows("smi_summary")
    assert (s["driver_version"], s["cuda_version"], json.loads(s["extra"])) == (
        "396.45",
        None,
        {"Driver Version": "396.45"},
    )
    (g,) = r.rows("smi_gpu")
    assert (g["fan_pct"], g["temp_c"], g["perf_state"], g["disp_a"], g["mig_mode"], g["mig_pending"]) == (
        0.0, 59.0, "P5", "On", None, None,
    )  # fmt: skip
    procs = r.rows("smi_process")
    assert len(procs) == 7
    assert (procs[0]["line"], procs[0]["gpu"], procs[0]["pid"], procs[0]["type"], procs[0]["gpu_memory_mib"]) == (
        15, 0, 625, "G", 370,
    )  # fmt: skip
    assert (
        procs[4]["process_name"] == "...-token=3E0EB0339C426519FCEB41A77A4FE74E"
        and procs[4]["gpu_memory"] == "75MiB"
    )
    assert {p["gi_id"] for p in procs} == {None}


def test_390_power_na_and_not_supported_process_row() -> None:
    r = nvidia_smi.parse(smi(GTX390))
    (g,) = r.rows("smi_gpu")
    assert (g["power_draw_w"], g["power_cap_w"], g["util_gpu_pct"], g["disp_a"], g["fan_pct"]) == (
        None,
        None,
        None,
        "N/A",
        40.0,
    )
    assert json.loads(g["extra"])["Pwr:Usage/Cap"] == "N/A / N/A"
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (15, "not a process row (GPU PID Type Process-name Memory)")
    ]


def test_440_processes_and_space_only_separator_line() -> None:
    r = nvidia_smi.parse(smi(GTX440))
    assert not r.issues and r.rows("smi_summary")[0]["timestamp"] == "Sat Feb 15 23:44:41 2020"
    assert [(p["pid"], p["process_name"], p["gpu_memory_mib"]) for p in r.rows("smi_process")] == [
        (1336, "/usr/lib/xorg/Xorg", 49), (1377, "/usr/bin/gnome-shell", 71),
    ]  # fmt: skip


def test_610_kmd_version_banner_and_cut_table() -> None:
    r = nvidia_smi.parse(smi(B200))
    assert not r.issues
    (s,) = r.rows("smi_summary")
    assert (s["smi_version"], s["driver_version"], s["cuda_version"]) == ("610.43.02", "610.43.02", "13.3")
    assert json.loads(s["extra"]) == {"KMD Version": "610.43.02", "CUDA UMD Version": "13.3"}
    assert [(g["index"], g["pci"], g["power_cap_w"], g["memory_total_mib"]) for g in r.rows("smi_gpu")] == [
        (0, "0000:63:00.0", 1000.0, 183359), (1, "0000:68:00.0", 1000.0, 183359),
    ]  # fmt: skip


@pytest.mark.parametrize("name", ALL)
def test_every_real_capture_is_detected(name: str) -> None:
    assert parsers.detect_kind(smi(name)) == KIND


# --- unknown columns, other headers ----------------------------------------------------------------------

# SYNTHETIC: a 91-column block with a fourth header row ("Addressing Mode") and the Windows "Driver-Model"
# cell, values made up.  Nothing is dropped: both land in `extra` under their labels.
WIDER = """\
| NVIDIA-SMI 580.88                 Driver Version: 580.88         CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|                                         |                        |      Addressing Mode |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4090      WDDM  |   0000D9A2:00:00.0  On |                  Off |
|  0%   41C    P8             21W /  450W |    1331MiB /  24564MiB |      2%      Default |
|                                         |                        |                  N/A |
|                                         |                        |                  HMM |
+-----------------------------------------+------------------------+----------------------+
"""


def test_unknown_header_row_and_driver_model_are_kept() -> None:
    r = nvidia_smi.parse(WIDER)
    (g,) = r.rows("smi_gpu")
    extra = json.loads(g["extra"])
    assert extra["Addressing Mode"] == "HMM" and extra["Driver-Model"] == "WDDM"
    assert (g["name"], g["persistence_mode"], g["pci"], g["disp_a"]) == (
        "NVIDIA GeForce RTX 4090",
        None,
        "d9a2:00:00.0",
        "On",
    )
    assert not r.issues


def test_gb10_memory_not_supported_is_null_without_issue() -> None:
    text = WIDER.replace("   1331MiB /  24564MiB ", "Not Supported          ")  # SYNTHETIC (GB10 prints this)
    (g,) = nvidia_smi.parse(text).rows("smi_gpu")
    assert (g["memory_used_mib"], g["memory_total_mib"], json.loads(g["extra"])["Memory-Usage"]) == (
        None,
        None,
        "Not Supported",
    )


# --- excerpts, travel noise, mangled tables ---------------------------------------------------------------


def test_no_banner_no_header_grep_excerpt() -> None:
    lines = smi(WUK).splitlines()  # derived: six rows of two GPUs, no separator between them
    text = "\n".join(lines[8:11] + lines[12:15]) + "\n"
    assert nvidia_smi.detect(text) >= 70
    r = nvidia_smi.parse(text)
    assert [(g["index"], g["line"], g["pci"], g["mig_mode"]) for g in r.rows("smi_gpu")] == [
        (0, 1, "0000:0f:00.0", "Disabled"), (1, 4, "0000:15:00.0", "Enabled"),
    ]  # fmt: skip
    assert r.rows("smi_summary") == [] and not r.issues


def test_srun_prefix_and_crlf_keep_line_numbers() -> None:
    text = srun(smi(KO580)).replace("\n", "\r\n")  # derived
    r = nvidia_smi.parse(text)
    assert not r.issues and r.rows("smi_gpu")[0]["line"] == 10 and len(r.rows("smi_mig")) == 4


def test_fences_tabs_and_annotation() -> None:
    lines = ["```", *smi(WUK).replace("    ", "\t").splitlines(), "```"]  # derived
    lines[14] += "   <----- this one"
    r = nvidia_smi.parse("\n".join(lines))
    assert len(r.rows("smi_gpu")) == 8 and r.rows("smi_gpu")[1]["line"] == 14 and not r.issues


def test_two_hosts_in_one_pdsh_file() -> None:
    body = smi(WUK).splitlines()[:-2]  # derived: pdsh output of two nodes
    text = "".join(f"ip-10-1-2-3: {x}\n" for x in body) + "".join(f"ip-10-1-2-4: {x}\n" for x in body)
    r = nvidia_smi.parse(text)
    assert len(r.rows("smi_summary")) == 2 and len(r.rows("smi_gpu")) == 16 and len(r.rows("smi_mig")) == 2


def test_mangled_block_is_reported_line_by_line() -> None:
    lines = smi(WUK).splitlines()  # derived: GPU 0's second row lost its last cell
    lines[9] = "| N/A   36C    P0    61W / 400W |      0MiB / 40537MiB"
    r = nvidia_smi.parse("\n".join(lines))
    assert [g["index"] for g in r.rows("smi_gpu")] == list(range(1, 8))
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (9, "not a GPU block of the nvidia-smi table"),
        (10, "not a GPU block of the nvidia-smi table"),
        (11, "not a GPU block of the nvidia-smi table"),
    ]


def test_unreadable_cell_names_the_cell() -> None:
    text = smi(KO580).replace("|     249MiB /  40960MiB |", "|     249MiB of 40960MiB |")  # derived
    r = nvidia_smi.parse(text)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (11, "unreadable 'Memory-Usage' cell: '249MiB of 40960MiB'")
    ]
    assert r.rows("smi_gpu")[0]["memory_used_mib"] is None and r.rows("smi_gpu")[0]["temp_c"] == 40.0


def test_no_table_at_all_says_what_was_expected() -> None:
    with pytest.raises(ParseError, match=r"expected an nvidia-smi banner .* saw 'Mon Jan  1 00:00:00 2024'"):
        nvidia_smi.parse("Mon Jan  1 00:00:00 2024\nsomething else\n")


# --- nvidia-smi-csv through clean_lines --------------------------------------------------------------------


def test_csv_prompt_srun_prefix_and_crlf() -> None:
    text = "$ nvidia-smi --query-gpu=index,timestamp --format=csv -l 5\n" + fixture_text(
        "nvidia-smi-csv", "slurm-v100-timestamp-l5.txt"
    )  # derived
    r = nvidia_smi_csv.parse(srun(text).replace("\n", "\r\n"))
    rows = r.rows("gpu_query")
    assert len(rows) == 9 and not r.issues
    assert (rows[0]["line"], rows[0]["timestamp"], rows[0]["util_gpu_pct"]) == (
        3,
        "2020-11-12T13:48:11.412",
        99.0,
    )


def test_csv_data_before_the_header_is_reported() -> None:
    real = fixture_text("nvidia-smi-csv", "hpc-h100-595-11cols.txt")  # derived: a stray data line first
    text = "0, NVIDIA H100 80GB HBM3, 595.71.05\n" + real
    r = nvidia_smi_csv.parse(text)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (1, "line before the CSV header line: columns unknown")
    ]
    (row,) = r.rows("gpu_query")
    assert (row["line"], row["name"], row["memory_total_mib"], row["pcie_gen_current"]) == (
        3,
        "NVIDIA H100 80GB HBM3",
        81559,
        5,
    )
