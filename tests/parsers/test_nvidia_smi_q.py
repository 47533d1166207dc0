"""nvidia-smi -q parser on every real sample, plus the error contract."""

from __future__ import annotations

import pytest

import parsers
from parsers import nvidia_smi_q
from tests.conftest import fixture_files, fixture_text


def gpus(name: str) -> list[dict]:
    return nvidia_smi_q.parse(fixture_text("nvidia-smi-q", name)).rows("gpu")


def test_8x_h100_565_complete() -> None:
    g = gpus("jp-simulator-8xh100-565-complete.txt")
    assert len(g) == 8
    assert [x["pci"][5:7] for x in g] == ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
    assert {x["driver_version"] for x in g} == {"565.57.01"} and g[0]["cuda_version"] == "12.7"
    assert g[0]["temp_c"] == 30.0 and g[0]["max_sm_clock_mhz"] == 1980.0 and g[0]["power_limit_w"] == 700.0
    assert g[0]["pcie_replays"] == 7  # non-zero "Replays Since Reset" on three GPUs
    assert all(x["ecc_uncorrected_volatile"] == 0 and x["ecc_uncorrected_aggregate"] == 0 for x in g)
    assert all(x["fabric_state"] == "Completed" and x["fabric_status"] == "Success" for x in g)
    assert g[0]["remap_pending"] is False and g[0]["remap_failure"] is False
    assert g[0]["throttle_reasons_active"] == "Idle"


def test_h100_545_no_blank_after_banner() -> None:
    (g,) = gpus("della-h100-545-single-no-blank-after-banner.txt")
    assert g["pci"] == "0000:19:00.0" and g["name"] == "NVIDIA H100 80GB HBM3"
    assert g["temp_tlimit_c"] == 54.0 and g["memory_temp_c"] == 41.0
    assert g["pcie_gen_max"] == 5 and g["pcie_width_max"] == 16 and g["power_draw_w"] == 72.02
    assert g["serial"] == "1654123038646" and g["vbios"] == "96.00.74.00.0D"
    assert g["persistence_mode"] == "Enabled" and g["mig_mode"] == "Disabled"


def test_a10_hw_power_brake_active() -> None:
    (g,) = gpus("a10-550-hw-power-brake-active-testfixture.txt")
    assert g["throttle_reasons_active"] == "Idle, HW Slowdown, HW Power Brake Slowdown"
    assert g["temp_slowdown_c"] == 98.0 and g["temp_shutdown_c"] == 101.0 and g["temp_tlimit_c"] is None
    assert g["pcie_gen_current"] == 1 and g["pcie_gen_max"] == 4  # idle gen drop, by design
    assert g["memory_total_mib"] == 23028.0 and g["performance_state"] == "P8"


def test_k80_396_no_cuda_line_odd_domain_truncated() -> None:
    (g,) = gpus("k80-azure-396-odd-domain-truncated.txt")
    assert g["pci"] == "3e3f8e05:00:00.0" and g["cuda_version"] is None and g["driver_version"] == "396.37"
    assert g["name"] == "Tesla K80" and g["persistence_mode"] == "Disabled" and g["temp_c"] is None


def test_legacy_single_double_bit_ecc() -> None:
    text = (
        "GPU 00000000:00:1E.0\n    Product Name : Tesla V100-SXM2-16GB\n    ECC Errors\n        Volatile\n"
        "            Single Bit\n                Device Memory : 3\n                Total : 3\n"
        "            Double Bit\n                Device Memory : 1\n                Total : 1\n"
    )
    (g,) = nvidia_smi_q.parse(text).rows("gpu")
    assert g["ecc_corrected_volatile"] == 3 and g["ecc_uncorrected_volatile"] == 1
    assert g["ecc_volatile_line"] == 9  # first non-zero double-bit counter


@pytest.mark.parametrize("path", fixture_files("nvidia-smi-q"), ids=lambda p: p.name)
def test_detected(path) -> None:
    assert parsers.detect_kind(path.read_text()) == "nvidia-smi-q"
