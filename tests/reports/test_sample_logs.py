"""The sample bundles' nccl-tests logs are physically possible: every column of a result row agrees.

For each side (out-of-place, in-place) of a row: algbw = size / time and, for all_reduce over n ranks,
busbw = algbw * 2(n-1)/n (nccl-tests' PERFORMANCE.md), within the rounding of the printed cells.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers import nccl_tests
from tests.conftest import SAMPLES


def _nccl_logs() -> list[Path]:
    logs = []
    for path in sorted(SAMPLES.glob("*/bundle/**/*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if nccl_tests.detect(text) >= 85:
            logs.append(path)
    return logs


LOGS = _nccl_logs()


def _close(printed: float, expected: float, rel: float = 2e-3, absolute: float = 0.011) -> bool:
    return abs(printed - expected) <= absolute + rel * abs(expected)


def test_the_samples_have_nccl_logs() -> None:
    assert len(LOGS) >= 28, "nccl-slow-node carries 28 pairwise all_reduce logs"


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_result_rows_are_consistent(path: Path) -> None:
    result = nccl_tests.parse(path.read_text(encoding="utf-8"))
    run = result.rows("nccl_run")[0]
    assert run["collective"] in (None, "all_reduce"), f"extend this test for {run['collective']}"
    n = run["n_ranks"]
    assert n and n > 1
    factor = 2 * (n - 1) / n
    rows = result.rows("nccl_result")
    assert rows
    for row in rows:
        for side in ("oop", "ip"):
            time_us, algbw, busbw = (row[f"{side}_{c}"] for c in ("time_us", "algbw_gbps", "busbw_gbps"))
            where = f"{path.name}:{row['line']} {side}"
            assert _close(algbw, row["size_bytes"] / time_us / 1e3), f"{where}: algbw {algbw} != size / time"
            assert _close(busbw, algbw * factor), f"{where}: busbw {busbw} != algbw {algbw} x 2({n}-1)/{n}"
