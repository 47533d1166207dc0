"""dcgmi diag: metadata kept as printed, tables cut without a footer, wrappers and prompts, wrapped
Warning/Info cells split into their own columns, 3.x JSON with gpu_id and elisions.  Real fixtures unless
said "derived"/"synthetic"."""

from __future__ import annotations

import json

import pytest

import parsers
from parsers import ParseError, dcgmi_diag
from tests.conftest import fixture_files, fixture_text


def parse(name: str) -> parsers.ParseResult:
    return dcgmi_diag.parse(fixture_text("dcgmi-diag", name))


@pytest.mark.parametrize("path", fixture_files("dcgmi-diag"), ids=lambda p: p.name)
def test_every_fixture_detected_with_one_run_row(path) -> None:  # type: ignore[no-untyped-def]
    text = path.read_text(encoding="utf-8")
    assert parsers.detect_kind(text) == "dcgmi-diag"
    [run] = dcgmi_diag.parse(text).rows("dcgm_run")
    assert run["tests"] >= 1


def test_kubectl_wrapper_metadata_and_a_row_without_its_closing_bar() -> None:
    r = parse("autopilot-68-335-r3-kubectl-defaulted-cut.txt")
    assert r.issues == []
    rows = r.rows("dcgm_test")
    assert [x["test"] for x in rows] == [
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "Permissions and OS Blocks",
    ]
    assert (rows[-1]["line"], rows[-1]["result"], rows[-1]["result_printed"], rows[-1]["gpu"]) == (
        14,
        "pass",
        "Pass",
        None,
    )
    assert rows[0]["dcgm_version"] == "3.3.5" and rows[0]["driver_version"] == "550.54.15"
    [run] = r.rows("dcgm_run")
    assert (run["line"], run["gpu_device_ids"], run["complete"], run["format"]) == (
        3,
        "20b5,20b5,20b5,20b5",
        False,
        "table",
    )
    assert json.loads(run["metadata"]) == {
        "DCGM Version": "3.3.5",
        "Driver Version Detected": "550.54.15",
        "GPU Device IDs Detected": "20b5,20b5,20b5,20b5",
    }


def test_4x_pod_output_cut_in_the_hardware_section() -> None:
    r = parse("dcgm-253-423-pod-4gpu-cut.txt")
    assert r.issues == []
    got = [(x["category"], x["test"], x["gpu"], x["line"]) for x in r.rows("dcgm_test")]
    assert got == [
        ("Deployment", "software", None, 11),
        ("Deployment", "software", 0, 12),
        ("Deployment", "software", 1, 13),
        ("Deployment", "software", 2, 14),
        ("Deployment", "software", 3, 15),
        ("Hardware", "memory", None, 17),
    ]
    assert r.rows("dcgm_test")[1]["result_printed"] == "GPU0: Pass"
    [run] = r.rows("dcgm_run")
    assert (run["gpu_device_ids"], run["tests"], run["failed"], run["complete"]) == (
        "26b9, 26b9, 26b9, 26b9",
        2,
        0,
        False,
    )


def test_30_no_metadata_prompt_and_a_row_cut_after_its_name() -> None:
    r = parse("dcgm-55-304-r3-prompt-no-metadata-cut.txt")
    assert len(r.rows("dcgm_test")) == 9 and r.rows("dcgm_test")[-1]["test"] == "Inforom"
    assert r.rows("dcgm_test")[0]["dcgm_version"] is None
    assert [(i.line_no, i.line) for i in r.issues] == [(17, "| PCIe")]
    [run] = r.rows("dcgm_run")
    assert (run["command"], run["run_level"], run["metadata"]) == ("dcgmi diag -r 3", "3", None)


def test_bare_command_line_and_prose_before_a_prompt() -> None:
    [run] = parse("dcgm-198-337-r2-bare-command-cut.txt").rows("dcgm_run")
    assert (run["command"], run["run_level"], run["gpu_device_ids"]) == ("dcgmi diag -r 2", "2", "2321,2321")
    r = parse("go-dcgm-52-331-r2-prose-prompt-cut.txt")
    assert r.issues == []  # the author's sentence is not a result
    [run] = r.rows("dcgm_run")
    assert (run["command"], run["run_level"], run["dcgm_version"], run["tests"]) == (
        "dcgmi diag -r 2 -g 7",
        "2",
        "3.3.1",
        8,
    )


def test_wrapped_warning_and_info_cells_in_their_own_columns() -> None:
    r = parse("go-dcgm-52-midtable-fail-wrapped.txt")
    rows = {(x["test"], x["gpu"]): x for x in r.rows("dcgm_test")}
    gpu1, gpu0 = rows[("GPU Memory", 1)], rows[("GPU Memory", 0)]
    assert (gpu1["info"], gpu1["warning"]) == ("GPU 1 Allocated 15568304202 bytes (98.3%)", None)
    assert gpu0["info"] is None and gpu0["warning"] == (
        "GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. Reset GPU. Restart DCGM. "
        "Rerun diagnostics. Unable to create CUDA context: 'CUDA-capable device(s) is/are busy or unavailable'."
    )
    assert gpu0["result_printed"] == "Fail - GPU: 0" and gpu0["message"] == gpu0["warning"]
    [run] = r.rows("dcgm_run")
    assert (run["failed"], run["warned"]) == (3, 0)


def test_3x_json_with_gpu_id_an_elided_category_and_a_cut_end() -> None:
    r = parse("dcgm-139-r3-json-3x-gpu_id-elided-cut.txt")
    got = [(x["category"], x["test"], x["gpu"], x["result"], x["line"]) for x in r.rows("dcgm_test")]
    assert got == [
        ("Integration", "PCIe", 0, "skip", 17),
        ("Hardware", "GPU Memory", 0, "skip", 33),
        ("Hardware", "Diagnostic", 0, "skip", 43),
        ("Hardware", "EUD Test", 0, "skip", 53),
        ("Stress", "Targeted Stress", 0, "skip", 69),
    ]
    [issue] = r.issues
    assert issue.line_no == 6 and '{"..."}' in issue.line and "does not load" in issue.reason
    [run] = r.rows("dcgm_run")
    assert (run["format"], run["complete"], run["tests"]) == ("json", False, 5)


def test_4x_json_entities_serials_and_error_ids() -> None:
    r = parse("gb10-423-r1-json-software-fail-testfixture.txt")
    gpu0, summary = r.rows("dcgm_test")
    assert (gpu0["error_id"], gpu0["info"], gpu0["result_printed"]) == ("29", None, "Fail")
    assert gpu0["warning"].startswith("Persistence Mode: Persistence mode for GPU 0 is disabled.")
    assert (
        summary["info"].startswith("Error getting the SRAM Threshold Count for GPU 0")
        and summary["warning"] is None
    )
    [run] = r.rows("dcgm_run")
    assert (run["gpu_device_ids"], run["gpu_serials"], run["dcgm_version"], run["complete"]) == (
        "2e12",
        "<<<NOT_SUPPORTED>>>",
        "4.2.3",
        True,
    )
    assert json.loads(run["metadata"]) == {"Driver Version Detected": "580.82.09", "version": "4.2.3"}


def test_complete_table_sees_its_closing_border() -> None:
    [run] = parse("dcgm-docs-400-r3-4gpu-indented.txt").rows("dcgm_run")
    assert (run["complete"], run["tests"], run["gpu_device_ids"]) == (True, 7, "25b6, 25b6, 25b6, 25b6")


def test_derived_srun_prefix_and_crlf() -> None:
    text = fixture_text("dcgmi-diag", "dcgm-253-423-pod-4gpu-cut.txt")
    text = "".join(f"3: {line}\r\n" for line in text.splitlines())
    r = dcgmi_diag.parse(text)
    assert r.issues == [] and len(r.rows("dcgm_test")) == 6
    assert {x["host"] for x in r.rows("dcgm_test")} == {"3"}
    assert r.rows("dcgm_run")[0]["dcgm_version"] == "4.2.3"


SYNTHETIC_3X_FAIL = """\
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.9                                          |
| Driver Version Detected   | 550.90.07                                      |
| GPU Device IDs Detected   | 2330,2330,2330,2330                            |
| GPU Device Serials        | 1650123456789,1650123456790,1650123456791,165  |
|                           | 0123456792                                     |
|-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPUs: 0, 1, 2                           |
|                           | Fail - GPU: 3                                  |
| Warning                   | GPU 3 DBE error count 2 exceeds threshold 0 Ru |
|                           | n a field diagnostic on the GPU.               |
| Info                      | GPU 0 Allocated 84123456789 bytes (98.1%)      |
| EUD                       | Skip - All                                     |
+---------------------------+------------------------------------------------+
"""


def test_synthetic_3x_per_gpu_split_wrapped_warning_and_wrapped_metadata_row() -> None:
    r = dcgmi_diag.parse(SYNTHETIC_3X_FAIL)
    rows = {(x["test"], x["gpu"]): x for x in r.rows("dcgm_test")}
    assert {k: v["result"] for k, v in rows.items()} == {
        ("GPU Memory", 0): "pass",
        ("GPU Memory", 1): "pass",
        ("GPU Memory", 2): "pass",
        ("GPU Memory", 3): "fail",
        ("EUD", None): "skip",
    }
    assert rows[("GPU Memory", 3)]["warning"] == (
        "GPU 3 DBE error count 2 exceeds threshold 0 Run a field diagnostic on the GPU."
    )
    assert rows[("GPU Memory", 0)]["info"] == "GPU 0 Allocated 84123456789 bytes (98.1%)"
    assert rows[("GPU Memory", 0)]["result_printed"] == "Pass - GPUs: 0, 1, 2"
    [run] = r.rows("dcgm_run")
    # the serials row wraps mid-number: the pieces are glued back exactly
    assert run["complete"] is True and run["gpu_serials"] == (
        "1650123456789,1650123456790,1650123456791,1650123456792"
    )
    assert json.loads(run["metadata"])["GPU Device Serials"] == run["gpu_serials"] and r.issues == []


def test_a_table_without_results_says_what_it_saw() -> None:
    text = "\n".join(SYNTHETIC_3X_FAIL.splitlines()[:9]) + "\n"
    with pytest.raises(ParseError, match="without any test result.*DCGM Version"):
        dcgmi_diag.parse(text)
