"""Tests for parsers.uptime.

No real capture is in the samples collection, so the inputs (tests/fixtures/uptime/ and the strings
below) are hand-written in the exact formats of /proc/uptime, procps ``uptime`` (and ``uptime -p``),
macOS ``uptime`` and /proc/loadavg.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import uptime


def one(text: str) -> dict:
    result = uptime.parse(text)
    assert result.issues == []
    (row,) = result.rows("host_uptime")
    assert sorted(row) == sorted(c.name for c in uptime.SCHEMA["host_uptime"])
    return row


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "uptime"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "uptime"


def test_fixtures() -> None:
    assert one(load("handwritten-proc-uptime.txt"))["uptime_s"] == 350735.47
    row = one(load("handwritten-procps-uptime.txt"))
    assert (row["uptime_s"], row["load1"], row["load5"], row["load15"]) == (350640.0, 0.31, 0.42, 0.40)


def test_proc_uptime() -> None:
    row = one("350735.47 234388.90")  # no trailing newline
    assert (row["uptime_s"], row["idle_s"], row["load1"], row["source"], row["line"]) == (
        350735.47,
        234388.90,
        None,
        "proc_uptime",
        1,
    )


@pytest.mark.parametrize(
    ("text", "uptime_s", "loads"),
    [
        (
            " 10:14:06 up 4 days,  1:24,  2 users,  load average: 0.31, 0.42, 0.40",
            4 * 86400 + 84 * 60,
            (0.31, 0.42, 0.40),
        ),
        (" 09:36:05 up 8 min,  0 user,  load average: 0.06, 0.08, 0.03", 480, (0.06, 0.08, 0.03)),
        (
            " 09:36:05 up 123 days, 17 min,  1 user,  load average: 96.10, 95.02, 90.77",
            123 * 86400 + 1020,
            (96.1, 95.02, 90.77),
        ),
        (" 10:14:06 up  1:24,  load average: 0,31, 0,42, 0,40", 84 * 60, (0.31, 0.42, 0.40)),
        (
            "10:14  up 4 days,  1:24, 2 users, load averages: 1.31 1.42 1.40",
            4 * 86400 + 84 * 60,
            (1.31, 1.42, 1.40),
        ),
        (
            "ip-10-1-71-197:  10:14:06 up 1 day, 3 min,  2 users,  load average: 0.31, 0.42, 0.40",
            86580,
            (0.31, 0.42, 0.40),
        ),
    ],
)
def test_uptime_command(text: str, uptime_s: float, loads: tuple[float, float, float]) -> None:
    row = one(text)
    assert row["uptime_s"] == uptime_s and row["source"] == "uptime"
    assert (row["load1"], row["load5"], row["load15"]) == pytest.approx(loads)


def test_uptime_pretty_and_loadavg() -> None:
    assert one("up 1 week, 2 days, 3 hours, 4 minutes")["uptime_s"] == 7 * 86400 + 2 * 86400 + 3 * 3600 + 240
    row = one("0.31 0.42 0.40 1/2345 67890\n")
    assert (row["uptime_s"], row["load15"], row["source"]) == (None, 0.40, "loadavg")
