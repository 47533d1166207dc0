"""Power limits and applications clocks from every form nvidia-smi prints them in (issue 31, point 3).

``nvidia-smi -q`` names the two limits differently before and after the 530 drivers ("Power Limit" /
"Enforced Power Limit", then "Requested Power Limit" / "Current Power Limit"); the parser gives them one
name each (``power_requested_limit_w``, ``power_enforced_limit_w``).  The CSV has them as ``power.limit`` and
``enforced.power.limit``.  A value printed N/A, [N/A], [Not Supported] or [Unknown Error] is unknown (null),
never 0.

Labels: "real" = a fixture as published; "derived" = a real fixture changed in the test (the change is
named).
"""

from __future__ import annotations

from parsers import nvidia_smi_csv, nvidia_smi_q
from tests.conftest import fixture_text

POWER = (
    "power_limit_w",
    "power_requested_limit_w",
    "power_enforced_limit_w",
    "power_default_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
)
CLOCKS = (
    "app_clock_graphics_mhz",
    "app_clock_memory_mhz",
    "default_app_clock_graphics_mhz",
    "default_app_clock_memory_mhz",
)


def q_rows(name: str, edit: dict[str, str] | None = None) -> list[dict]:
    text = fixture_text("nvidia-smi-q", name)
    for old, new in (edit or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    result = nvidia_smi_q.parse(text)
    assert not result.issues, result.issues
    return result.rows("gpu")


def test_real_old_layout_power_limit_and_enforced_limit() -> None:
    """525: "Power Readings" with Power Limit (requested) and Enforced Power Limit."""
    (g,) = q_rows("zh-notes-525-h800-power-readings-enforced.txt")
    assert [g[c] for c in POWER] == [700.0, 700.0, 700.0, 700.0, 200.0, 700.0]
    assert [g[c] for c in CLOCKS] == [1980.0, 2619.0, 1980.0, 2619.0]


def test_derived_old_layout_brake_keeps_requested_and_enforced_apart() -> None:
    """The 525 dump with its Enforced Power Limit lowered (a power brake): requested stays 700 W."""
    (g,) = q_rows(
        "zh-notes-525-h800-power-readings-enforced.txt",
        {"Enforced Power Limit              : 700.00 W": "Enforced Power Limit              : 350.00 W"},
    )
    assert (g["power_requested_limit_w"], g["power_enforced_limit_w"], g["power_default_limit_w"]) == (
        700.0,
        350.0,
        700.0,
    )


def test_real_new_layout_current_below_requested() -> None:
    """595 ``-q -d power``: Current Power Limit (enforced) 500 W below the Requested 700 W."""
    (g,) = q_rows("stackhpc-975-595-d-power-current-below-requested.txt")
    assert [g[c] for c in POWER] == [500.0, 700.0, 500.0, 700.0, 200.0, 700.0]
    assert [g[c] for c in CLOCKS] == [None] * 4  # the section is not printed with -d power


def test_real_565_gpu_readings_not_the_module_readings() -> None:
    """The Module Power Readings (all N/A) follow the GPU's: they never overwrite or fill a GPU column."""
    rows = q_rows("jp-simulator-8xh100-565-complete.txt")
    assert len(rows) == 8
    assert {tuple(g[c] for c in POWER + CLOCKS) for g in rows} == {
        (700.0, 700.0, 700.0, 700.0, 200.0, 700.0, 1980.0, 2619.0, 1980.0, 2619.0)
    }


def test_real_applications_clocks_na_are_unknown() -> None:
    """580 GeForce: Applications Clocks printed N/A are null, not 0; the power limits are read."""
    (g,) = q_rows("helium-580-rtx3090ti-55col-passthrough-processes.txt")
    assert [g[c] for c in CLOCKS] == [None] * 4
    assert g["power_default_limit_w"] == 450.0


def test_derived_mixed_per_gpu() -> None:
    rows = {g["pci"]: g for g in q_rows("derived-jp-simulator-8xh100-565-brake-pl-ac-mixed.txt")}
    brake, pl, ac = rows["0000:18:00.0"], rows["0000:3a:00.0"], rows["0000:5d:00.0"]
    assert (brake["power_enforced_limit_w"], brake["power_requested_limit_w"]) == (350.0, 700.0)
    assert (pl["power_enforced_limit_w"], pl["power_requested_limit_w"]) == (500.0, 500.0)
    assert (ac["app_clock_graphics_mhz"], ac["default_app_clock_graphics_mhz"]) == (1410.0, 1980.0)


def test_derived_not_available_values_are_null_not_zero() -> None:
    """The 525 dump with its limits printed N/A, [N/A], [Not Supported] and Unknown Error."""
    edit = {
        "Power Limit                       : 700.00 W": "Power Limit                       : N/A",
        "Default Power Limit               : 700.00 W": "Default Power Limit               : [Not Supported]",
        "Enforced Power Limit              : 700.00 W": "Enforced Power Limit              : [N/A]",
        "Min Power Limit                   : 200.00 W": "Min Power Limit                   : Unknown Error",
    }
    (g,) = q_rows("zh-notes-525-h800-power-readings-enforced.txt", edit)
    assert [g[c] for c in POWER[:5]] == [None] * 5
    assert g["power_max_limit_w"] == 700.0
    assert g["error_values"] == "Unknown Error"


def test_real_csv_limits_with_units_in_values() -> None:
    (row,) = nvidia_smi_csv.parse(
        fixture_text("nvidia-smi-csv", "llama-bench-notes-580-rtx3090-power-limit-at-default.txt")
    ).rows("gpu_query")
    assert (row["power_limit_w"], row["power_default_limit_w"], row["power_max_limit_w"]) == (
        350.0,
        350.0,
        350.0,
    )
    assert row["power_enforced_limit_w"] is None


def test_real_csv_unknown_error_default_is_null() -> None:
    r = nvidia_smi_csv.parse(
        fixture_text("nvidia-smi-csv", "mindminer-627-442-rtx2080ti-default-limit-unknown-error.txt")
    )
    (row,) = r.rows("gpu_query")
    assert (row["name"], row["power_limit_w"], row["power_default_limit_w"]) == (
        "GeForce RTX 2080 Ti",
        210.0,
        None,
    )


def test_derived_csv_every_new_field_and_alias() -> None:
    """The 3090 query with the collector's new fields (canonical names and the short aliases), one GPU
    capped by ``-pl 250`` under a 350 W default and its applications clocks lowered with ``-ac``."""
    command = (
        "nvidia-smi --query-gpu=index,power.limit,enforced.power.limit,power.default_limit,power.min_limit,"
        "power.max_limit,clocks.applications.gr,clocks.applications.mem,clocks.default_applications.gr,"
        "clocks.default_applications.mem --format=csv,noheader"
    )
    text = "0, 250.00 W, 250.00 W, 350.00 W, 100.00 W, 350.00 W, 1395 MHz, 9751 MHz, 1695 MHz, 9751 MHz\n"
    text += "1, [N/A], [Not Supported], N/A, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n"
    r = nvidia_smi_csv.parse(text, command=command)
    assert not r.issues
    a, b = r.rows("gpu_query")
    assert [a[c] for c in POWER if c != "power_requested_limit_w"] == [250.0, 250.0, 350.0, 100.0, 350.0]
    assert [a[c] for c in CLOCKS] == [1395, 9751, 1695, 9751]
    assert [b[c] for c in POWER + CLOCKS if c != "power_requested_limit_w"] == [None] * 9
