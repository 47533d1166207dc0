"""Tests for parsers.cpu_governor on the real fixtures in tests/fixtures/cpu-governor/."""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import cpu_governor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cpu-governor"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "cpu-governor"


def test_cpupower_intel_pstate_performance() -> None:
    result = cpu_governor.parse(load("cpupower-frequency-info-intel_pstate-performance.txt"))
    assert result.issues == []
    [row] = result.rows("cpu_governor")
    assert {k: row[k] for k in ("line", "cpu", "governor", "driver", "source", "status")} == {
        "line": 1, "cpu": 0, "governor": "performance", "driver": "intel_pstate", "source": "cpupower",
        "status": "ok",
    }  # fmt: skip
    assert (row["hw_min_mhz"], row["hw_max_mhz"], row["boost_active"]) == (800.0, 3900.0, True)


def test_bare_cat_eight_cpus_powersave() -> None:
    result = cpu_governor.parse(load("scaling_governor-cat-8cpus-powersave.txt"))
    rows = result.rows("cpu_governor")
    assert len(rows) == 8 and result.issues == []
    assert {r["governor"] for r in rows} == {"powersave"}
    assert {r["cpu"] for r in rows} == {None}  # the glob order is not the CPU order
    assert [r["line"] for r in rows] == list(range(1, 9))


COLLECTOR = "cpu0 performance\ncpu1 performance\ncpu10 powersave\ncpu2 performance\n"


def test_collector_lines_and_grep_form() -> None:
    assert parsers.detect_kind(COLLECTOR) == "cpu-governor"
    rows = cpu_governor.parse(COLLECTOR).rows("cpu_governor")
    assert [(r["cpu"], r["governor"], r["source"]) for r in rows] == [
        (0, "performance", "sysfs"),
        (1, "performance", "sysfs"),
        (10, "powersave", "sysfs"),
        (2, "performance", "sysfs"),
    ]
    grep = (
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver:intel_pstate\n"
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor:performance\n"
        "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor:powersave\n"
    )
    assert parsers.detect_kind(grep) == "cpu-governor"
    rows = cpu_governor.parse(grep).rows("cpu_governor")
    assert [(r["cpu"], r["governor"], r["driver"]) for r in rows] == [
        (0, "performance", "intel_pstate"),
        (1, "powersave", None),
    ]


def test_cpupower_without_cpufreq_driver() -> None:
    text = (
        "analyzing CPU 0:\n"
        "  no or unknown cpufreq driver is active on this CPU\n"
        "  maximum transition latency: 0.97 ms\n"
    )
    [row] = cpu_governor.parse(text).rows("cpu_governor")
    assert {k: row[k] for k in ("line", "cpu", "governor", "driver", "source", "status")} == {
        "line": 1, "cpu": 0, "governor": None, "driver": None, "source": "cpupower", "status": "no_driver",
    }  # fmt: skip
    assert row["transition_latency"] == "0.97 ms"
