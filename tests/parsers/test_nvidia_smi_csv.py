"""Tests of parsers/nvidia_smi_csv.py on real captures and on one synthetic remapped-rows sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import parsers
from parsers import nvidia_smi_csv as mod

KIND = "nvidia-smi-csv"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / KIND


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_h100_595_eleven_columns() -> None:
    r = mod.parse(fixture("hpc-h100-595-11cols.txt"))
    (row,) = r.rows("gpu_query")
    assert row["line"] == 2
    assert row["index"] == 0
    assert row["name"] == "NVIDIA H100 80GB HBM3"
    assert row["driver_version"] == "595.71.05"
    assert row["pstate"] == "P0"
    assert row["pcie_gen_current"] == 5
    assert row["temp_c"] == 29.0
    assert (row["util_gpu_pct"], row["util_memory_pct"]) == (0.0, 0.0)
    assert (row["memory_total_mib"], row["memory_free_mib"], row["memory_used_mib"]) == (81559, 81081, 0)
    assert row["uuid"] is None and row["power_draw_w"] is None
    assert json.loads(row["extra"]) == {}
    assert not r.issues
    assert set(row) == {c.name for c in mod.SCHEMA["gpu_query"]}


def test_v100_loop_with_timestamps() -> None:
    r = mod.parse(fixture("slurm-v100-timestamp-l5.txt"))
    rows = r.rows("gpu_query")
    assert len(rows) == 9
    assert [x["line"] for x in rows] == list(range(2, 11))
    assert rows[0]["timestamp"] == "2020-11-12T13:48:11.412"
    assert rows[-1]["timestamp"] == "2020-11-12T13:48:51.437"
    assert [x["util_gpu_pct"] for x in rows] == [99.0, 99.0, 99.0, 98.0, 100.0, 32.0, 98.0, 100.0, 99.0]
    assert rows[5]["util_memory_pct"] == 33.0
    assert {x["memory_total_mib"] for x in rows} == {32480}
    assert {(x["memory_used_mib"], x["memory_free_mib"]) for x in rows} == {(30994, 1486)}
    assert not r.issues


# The collector's own query.  SYNTHETIC: no real capture of this field list was found; the values
# follow nvidia-smi's CSV conventions (units in values and headers, [N/A], hex bitmask).
COLLECTOR_QUERY = """\
index, uuid, pci.bus_id, name, serial, temperature.gpu, clocks.current.sm [MHz], clocks.max.sm [MHz], \
clocks_throttle_reasons.active, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, \
pcie.link.width.max, ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total, \
ecc.errors.uncorrected.aggregate.total, retired_pages.pending, power.draw [W], power.limit [W], \
driver_version, persistence_mode, clocks.mem [MHz]
0, GPU-11111111-2222-3333-4444-555555555555, 00000000:53:00.0, NVIDIA H100 80GB HBM3, 1654922000001, \
31, 1980 MHz, 1980 MHz, 0x0000000000000001, 5, 5, 16, 16, 0, 0, 0, [N/A], 592.74 W, 700.00 W, \
550.127.05, Enabled, 2619 MHz
1, GPU-66666666-7777-8888-9999-000000000000, 00000000:64:00.0, NVIDIA H100 80GB HBM3, 1654922000002, \
45, 345 MHz, 1980 MHz, 0x0000000000000004, 1, 5, 8, 16, 12, 3, 7, Yes, 71.20 W, 700.00 W, \
550.127.05, Enabled, [Not Supported]
"""

# SYNTHETIC: no real `--query-remapped-rows` capture exists in shared/real-samples; the layout is the
# nvidia-smi CSV one and pending/failure are given both as Yes/No and as 1/0 to pin the normalisation.
REMAPPED_ROWS = """\
gpu_bus_id, gpu_uuid, remapped_rows.correctable, remapped_rows.uncorrectable, remapped_rows.pending, \
remapped_rows.failure
00000000:53:00.0, GPU-11111111-2222-3333-4444-555555555555, 0, 0, No, No
00000000:64:00.0, GPU-66666666-7777-8888-9999-000000000000, 2, 1, 1, 0
"""


def test_collector_query_all_columns() -> None:
    r = mod.parse(COLLECTOR_QUERY)
    a, b = r.rows("gpu_query")
    assert a["pci"] == "0000:53:00.0" and b["pci"] == "0000:64:00.0"
    assert a["uuid"] == "GPU-11111111-2222-3333-4444-555555555555"
    assert a["serial"] == "1654922000001"
    assert (a["sm_clock_mhz"], a["max_sm_clock_mhz"]) == (1980, 1980)
    assert b["throttle_reasons_active"] == "0x0000000000000004"
    assert (b["pcie_gen_current"], b["pcie_gen_max"], b["pcie_width_current"], b["pcie_width_max"]) == (
        1,
        5,
        8,
        16,
    )
    assert (b["ecc_corrected_volatile"], b["ecc_uncorrected_volatile"], b["ecc_uncorrected_aggregate"]) == (
        12,
        3,
        7,
    )
    assert a["retired_pages_pending"] is None and b["retired_pages_pending"] == "yes"
    assert (a["power_draw_w"], a["power_limit_w"]) == (592.74, 700.0)
    assert a["persistence_mode"] == "Enabled" and a["driver_version"] == "550.127.05"
    assert json.loads(a["extra"]) == {"clocks_mem_mhz": 2619}
    assert json.loads(b["extra"]) == {"clocks_mem_mhz": None}
    assert not r.issues


def test_remapped_rows_file() -> None:
    r = mod.parse(REMAPPED_ROWS)
    a, b = r.rows("gpu_query")
    assert a["pci"] == "0000:53:00.0" and a["uuid"].startswith("GPU-1111")
    assert (a["remapped_rows_correctable"], a["remapped_rows_uncorrectable"]) == (0, 0)
    assert (a["remapped_rows_pending"], a["remapped_rows_failure"]) == ("no", "no")
    assert (b["remapped_rows_correctable"], b["remapped_rows_uncorrectable"]) == (2, 1)
    assert (b["remapped_rows_pending"], b["remapped_rows_failure"]) == ("yes", "no")
    assert a["index"] is None and a["name"] is None


def test_two_blocks_and_new_field_name() -> None:
    text = "index, clocks_event_reasons.active\n0, 0x0000000000000000\n\n" + REMAPPED_ROWS
    rows = mod.parse(text).rows("gpu_query")
    assert len(rows) == 3
    assert rows[0]["throttle_reasons_active"] == "0x0000000000000000"
    assert rows[2]["remapped_rows_pending"] == "yes" and rows[2]["line"] == 6


def test_paste_artefacts() -> None:
    text = "".join("> " + line + "\r\n" for line in fixture("hpc-h100-595-11cols.txt").splitlines())
    (row,) = mod.parse(text).rows("gpu_query")
    assert row["memory_total_mib"] == 81559


@pytest.mark.parametrize(
    "text",
    [
        fixture("hpc-h100-595-11cols.txt"),
        fixture("slurm-v100-timestamp-l5.txt"),
        COLLECTOR_QUERY,
        REMAPPED_ROWS,
    ],
)
def test_detect_kind(text: str) -> None:
    assert mod.detect(text) >= 80
    assert parsers.detect_kind(text) == KIND
