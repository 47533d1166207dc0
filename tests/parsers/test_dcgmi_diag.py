"""Tests for parsers.dcgmi_diag on the real fixtures in tests/fixtures/dcgmi-diag/."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import dcgmi_diag

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dcgmi-diag"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def rows(text: str) -> list[dict]:
    return dcgmi_diag.parse(text).rows("dcgm_test")


def keyed(text: str) -> dict[tuple[str, int | None], dict]:
    return {(r["test"], r["gpu"]): r for r in rows(text)}


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "dcgmi-diag"


@pytest.mark.parametrize("name", ALL)
def test_rows_have_schema_columns(name: str) -> None:
    names = [c.name for c in dcgmi_diag.SCHEMA["dcgm_test"]]
    for row in rows(load(name)):
        assert list(row) == names


def test_442_complete_one_gpu_all_pass() -> None:
    result = dcgmi_diag.parse(load("dcgm-124-442-r2-1gpu-pass-complete.txt"))
    assert result.issues == []
    got = [(r["category"], r["test"], r["gpu"], r["result"], r["line"]) for r in result.rows("dcgm_test")]
    assert got == [
        ("Deployment", "software", None, "pass", 10),
        ("Deployment", "software", 0, "pass", 11),
        ("Hardware", "memory", None, "pass", 13),
        ("Hardware", "memory", 0, "pass", 14),
        ("Integration", "pcie", None, "pass", 16),
        ("Integration", "pcie", 0, "pass", 17),
    ]
    first = result.rows("dcgm_test")[0]
    assert (first["dcgm_version"], first["driver_version"]) == ("4.4.2", "580.105.08")


def test_246_pcie_fail_all_with_wrapped_warning() -> None:
    result = dcgmi_diag.parse(load("dcgm-49-r2-pcie-nvlink-down-wrapped.txt"))
    assert result.issues == []
    (row,) = result.rows("dcgm_test")
    assert (row["category"], row["test"], row["gpu"], row["result"], row["line"]) == (
        "Integration",
        "PCIe",
        None,
        "fail",
        2,
    )
    msg = row["message"]
    # mid-word cuts ("fie|ld", "curren|tly", "diagno|stic") glued back, "GPU 0GPU 0's" de-duplicated
    assert msg.startswith("GPU 0's NvLink link 0 is currently down Run a field diagnostic on the GPU., ")
    assert "GPU 0GPU" not in msg and "fie ld" not in msg
    assert msg.count("is currently down") == 5 and "NvLink link 4 is currently down" in msg
    assert row["dcgm_version"] is None  # fragment without Metadata


def test_docs_400_indented_four_gpus() -> None:
    result = dcgmi_diag.parse(load("dcgm-docs-400-r3-4gpu-indented.txt"))
    assert result.issues == []
    got = result.rows("dcgm_test")
    assert len(got) == 35  # 7 tests x (overall + 4 GPUs)
    assert {r["result"] for r in got} == {"pass"}
    assert [r["test"] for r in got if r["gpu"] is None] == [
        "software",
        "memory",
        "diagnostic",
        "pcie",
        "memory_bandwidth",
        "targeted_stress",
        "targeted_power",
    ]
    stress = [r for r in got if r["category"] == "Stress" and r["gpu"] == 3]
    assert [r["test"] for r in stress] == ["memory_bandwidth", "targeted_stress", "targeted_power"]
    assert got[-1]["line"] == 47 and got[-1]["driver_version"] == "550.90.07"
    assert got[0]["dcgm_version"] == "4.0.0"


def test_json_42_software_fail() -> None:
    result = dcgmi_diag.parse(load("gb10-423-r1-json-software-fail-testfixture.txt"))
    assert result.issues == []
    gpu0, summary = result.rows("dcgm_test")
    assert (gpu0["category"], gpu0["test"], gpu0["gpu"], gpu0["result"]) == (
        "Deployment",
        "software",
        0,
        "fail",
    )
    assert gpu0["message"].startswith("Persistence Mode: Persistence mode for GPU 0 is disabled.")
    assert (summary["gpu"], summary["result"]) == (None, "fail")
    assert "SRAM Threshold checking was skipped" in summary["message"]
    assert (gpu0["dcgm_version"], gpu0["driver_version"]) == ("4.2.3", "580.82.09")
    assert (gpu0["line"], summary["line"]) == (18, 36)


def test_mid_table_fragment_per_gpu_split() -> None:
    result = dcgmi_diag.parse(load("go-dcgm-52-midtable-fail-wrapped.txt"))
    got = keyed(load("go-dcgm-52-midtable-fail-wrapped.txt"))
    assert set(got) == {("GPU Memory", 1), ("GPU Memory", 0), ("Diagnostic", None), ("Targeted Stress", None)}
    assert got[("GPU Memory", 1)]["result"] == "pass"
    assert got[("GPU Memory", 1)]["message"] == "GPU 1 Allocated 15568304202 bytes (98.3%)"
    gpu0 = got[("GPU Memory", 0)]
    assert gpu0["result"] == "fail" and gpu0["line"] == 4
    assert "Reset GPU. Restart DCGM. Rerun diagnostics. Unable to create CUDA context" in gpu0["message"]
    assert got[("Diagnostic", None)]["message"].endswith("Restart DCGM. Rerun diagnostics.")
    stress = got[("Targeted Stress", None)]
    assert (stress["category"], stress["result"], stress["line"], stress["message"]) == (
        "Stress",
        "fail",
        17,
        None,
    )
    # the first line continues an Info cell whose start was cut from the excerpt
    assert [i.line_no for i in result.issues] == [1]


DCGM_4X_WARN = """\
Executing in Pod nvidia-dcgm-abcde on Host 10.0.7.139
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 4.2.3                                          |
| Driver Version Detected   | 570.148.08                                     |
|-----  Deployment  --------+------------------------------------------------|
| software                  | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
| Warning: GPU1             | Persistence Mode: Persistence mode for GPU 1 i |
|                           | s disabled.                                    |
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | Skip                                           |
|                           | GPU0: Skip                                     |
|                           | GPU1: Not Run                                  |
"""


def test_synthetic_4x_entity_warning_rows() -> None:
    got = keyed(DCGM_4X_WARN)
    assert got[("software", None)]["result"] == "fail" and got[("software", None)]["message"] is None
    assert got[("software", 1)]["message"] == "Persistence Mode: Persistence mode for GPU 1 is disabled."
    assert got[("software", 0)]["message"] is None
    assert got[("memory", 1)]["result"] == "not_run" and got[("memory", 0)]["result"] == "skip"
    assert got[("memory", 0)]["driver_version"] == "570.148.08"


DCGM_3X_SPLIT = """\
> +-----  Stress  ------------+------------------------------------------------+
> | SM Stress                 | Pass - GPUs: 0, 2, 3                           |
> |                           | Warn - GPU: 1                                  |
> | Warning                   | GPU 1 Thermal violations totaling 12.5 seconds |
> | Targeted Power            | Skip - All                                     |
> | Memory Bandwidth          | Flaky - All                                    |
"""


def test_synthetic_3x_gpu_lists_warn_skip_and_a_mangled_row() -> None:
    result = dcgmi_diag.parse(DCGM_3X_SPLIT)
    got = {(r["test"], r["gpu"]): r["result"] for r in result.rows("dcgm_test")}
    assert got == {
        ("SM Stress", 0): "pass",
        ("SM Stress", 2): "pass",
        ("SM Stress", 3): "pass",
        ("SM Stress", 1): "warn",
        ("Targeted Power", None): "skip",
    }
    warned = [r for r in result.rows("dcgm_test") if r["gpu"] == 1][0]
    assert warned["message"] == "GPU 1 Thermal violations totaling 12.5 seconds"
    assert [(i.line_no, "Flaky" in i.line) for i in result.issues] == [(6, True)]


DCGM_3X_JSON = """\
{
  "DCGM GPU Diagnostic" : {
    "test_categories" : [
      { "category" : "Deployment",
        "tests" : [ { "name" : "Denylist", "results" : [ { "status" : "Pass" } ] } ] },
      { "category" : "Hardware",
        "tests" : [ { "name" : "GPU Memory", "results" : [
            { "gpu_ids" : "0", "status" : "Fail", "warnings" : "GPU 0GPU 0 memory error" },
            { "gpu_ids" : "1", "status" : "Pass", "info" : "Allocated 1 bytes" } ] } ] }
    ],
    "version" : "3.1.7"
  }
}
"""


def test_synthetic_3x_json_gpu_ids() -> None:
    got = keyed(DCGM_3X_JSON)
    assert got[("Denylist", None)]["result"] == "pass"
    assert got[("GPU Memory", 0)]["message"] == "GPU 0 memory error"
    assert got[("GPU Memory", 1)]["message"] == "Allocated 1 bytes"
    assert got[("GPU Memory", 0)]["dcgm_version"] == "3.1.7" and got[("GPU Memory", 0)]["line"] == 8


def attributes(name: str) -> dict[tuple[str, str, str], list[str]]:
    out: dict[tuple[str, str, str], list[str]] = {}
    for a in dcgmi_diag.parse(load(name)).rows("dcgm_attribute"):
        out.setdefault((a["entity"], a["section"], a["key"]), []).append(a["value"])
    return out


def test_attribute_table_metadata_results_and_messages() -> None:
    got = attributes("go-dcgm-52-midtable-fail-wrapped.txt")
    assert got[("1", "Hardware", "GPU Memory")] == ["Pass - GPU: 1"]
    assert got[("0", "Hardware", "GPU Memory")] == ["Fail - GPU: 0"]
    assert got[("0", "Hardware / GPU Memory", "Warning")][0].endswith(
        "'CUDA-capable device(s) is/are busy or unavailable'."
    )
    assert got[("1", "Hardware / GPU Memory", "Info")] == ["GPU 1 Allocated 15568304202 bytes (98.3%)"]
    # a message under a result for all GPUs belongs to the GPU it names
    assert ("0", "Hardware / Diagnostic", "Warning") in got
    assert got[("", "Stress", "Targeted Stress")] == ["Fail - All"]
    meta = attributes("dcgm-253-423-pod-4gpu-cut.txt")
    assert meta[("", "Metadata", "DCGM Version")] == ["4.2.3"]
    assert meta[("", "Metadata", "Driver Version Detected")] == ["570.148.08"]
    assert meta[("3", "Deployment", "software")] == ["GPU3: Pass"]


def test_attribute_json_every_scalar_under_its_key() -> None:
    result = dcgmi_diag.parse(load("gb10-423-r1-json-software-fail-testfixture.txt"))
    by_key = {(a["entity"], a["section"], a["key"]): a for a in result.rows("dcgm_attribute")}
    assert by_key[("0", "Deployment / software", "status")]["value"] == "Fail"
    assert by_key[("0", "Deployment / software", "status")]["line"] == 18
    assert by_key[("0", "Deployment / software", "error_id")]["number"] == 29.0
    assert by_key[("", "Deployment / software / test_summary", "info")]["line"] == 34
    assert by_key[("", "metadata", "version")]["value"] == "4.2.3"
    assert by_key[("", "metadata", "Driver Version Detected")]["value"] == "580.82.09"
    device = by_key[("0", "entity_groups", "device_id")]
    assert (device["value"], device["number"]) == ("2e12", None)  # a PCI device id, not 2x10^12


def test_attribute_json_that_does_not_load_is_read_line_by_line() -> None:
    got = attributes("dcgm-139-r3-json-3x-gpu_id-elided-cut.txt")
    assert got[("0", "Hardware / EUD Test", "status")] == ["Skip"]
