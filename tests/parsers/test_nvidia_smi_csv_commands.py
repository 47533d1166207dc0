"""nvidia-smi --query-gpu CSV: fields from a command pasted before the rows, and a header hard-wrapped
over several lines.

Labels: "real" = a fixture as published; "derived" = a real fixture changed in the test (the change is
named).
"""

from __future__ import annotations

import json

import pytest

from parsers import nvidia_smi_csv
from tests.conftest import fixture_text

HAMI = "hami-blog-610-rtxpro6000-noheader-command-continued.txt"


def test_real_noheader_fields_from_the_command_broken_over_two_lines() -> None:
    r = nvidia_smi_csv.parse(fixture_text("nvidia-smi-csv", HAMI))
    rows = r.rows("gpu_query")
    assert not r.issues
    assert [(x["index"], x["line"]) for x in rows] == [(i, i + 3) for i in range(8)]
    assert {x["name"] for x in rows} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert json.loads(rows[5]["extra"]) == {"mig_mode_current": "Disabled"}


@pytest.mark.parametrize(
    "typed",
    [
        "$ nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader",
        "# nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader",
        "nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader,nounits",
        "$ /mnt/c/Windows/System32/nvidia-smi.exe --query-gpu=index,uuid,memory.total --format=csv,noheader",
        "user@node01:~$ sudo nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader",
    ],
)
def test_derived_fields_from_the_command_line_before_the_rows(typed: str) -> None:
    # derived from the HAMi fixture's layout: the command on one line in the forms it is pasted in
    text = f"{typed}\n0, GPU-12845128-f0d6-bc49-c86d-696e956dd9b0, 81920 MiB\n1, GPU-93529c47-f654-acb2-ba35-21669750b0d5, 81920\n"
    r = nvidia_smi_csv.parse(text)
    assert not r.issues
    assert [(x["index"], x["uuid"][:12], x["memory_total_mib"], x["line"]) for x in r.rows("gpu_query")] == [
        (0, "GPU-12845128", 81920, 2),
        (1, "GPU-93529c47", 81920, 3),
    ]


def test_a_header_line_after_the_command_wins() -> None:
    text = "$ nvidia-smi --query-gpu=index,temperature.gpu --format=csv\nindex, temperature.gpu\n0, 33\n"
    (row,) = nvidia_smi_csv.parse(text).rows("gpu_query")
    assert (row["index"], row["temp_c"], row["line"]) == (0, 33.0, 3)


@pytest.mark.parametrize(
    ("wrapped", "joined_cells"),
    [
        (
            "index, timestamp, utilization.gpu [%], utilization.memory [%], memory.total [MiB], memory.used\n[MiB], memory.free [MiB]",
            7,
        ),
        (
            "index, timestamp, utilization.gpu [%], utilization.mem\nory [%], memory.total [MiB], memory.used [MiB], memory.free [MiB]",
            7,
        ),
        (
            "index, timestamp, utilization.gpu [%],\nutilization.memory [%], memory.total [MiB],\nmemory.used [MiB], memory.free [MiB]",
            7,
        ),
    ],
)
def test_derived_header_hard_wrapped_by_pdf_extraction(wrapped: str, joined_cells: int) -> None:
    # derived from slurm-v100-timestamp-l5.txt: its header line broken where a PDF's text wraps it
    real = fixture_text("nvidia-smi-csv", "slurm-v100-timestamp-l5.txt")
    header, _, body = real.partition("\n")
    want = nvidia_smi_csv.parse(real).rows("gpu_query")
    assert len(header.split(",")) == joined_cells
    r = nvidia_smi_csv.parse(wrapped + "\n" + body)
    assert not r.issues
    shift = wrapped.count("\n")
    got = r.rows("gpu_query")
    assert [{**x, "line": x["line"] - shift} for x in got] == want
    assert got[0]["util_gpu_pct"] == 99.0 and got[0]["memory_free_mib"] == 1486


def test_a_data_row_is_never_read_as_the_rest_of_a_header() -> None:
    real = fixture_text("nvidia-smi-csv", "slurm-v100-timestamp-l5.txt")
    r = nvidia_smi_csv.parse(real)
    assert not r.issues and len(r.rows("gpu_query")) == 9
