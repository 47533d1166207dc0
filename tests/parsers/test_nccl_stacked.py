"""nccl-tests and NCCL logs of issue 23: tags stacked before Open MPI's ``[1,0]<stdout>:``, the source place
of WARN lines, and a result row cut mid-line (real fixtures; the derived ones say so)."""

from __future__ import annotations

import pytest

from parsers import nccl_tests
from parsers._base import ParseResult
from tests.conftest import fixture_text

RAY = "skypilot-rdma-gke-h200-ray-tag-stacked-mpirun.txt"
EKS = "eks-blueprints-p5-2node-mpirun-prefixed.txt"


def parse(name: str) -> ParseResult:
    return nccl_tests.parse(fixture_text("nccl-tests", name))


def test_ray_tag_stacked_on_mpirun_tag_keeps_rows_and_summary() -> None:
    r = parse(RAY)
    run = r.rows("nccl_run")[0]
    assert (run["avg_busbw_gbps"], run["oob_values"], run["truncated"], run["n_results"]) == (
        122.073,
        0,
        False,
        24,
    )
    assert (run["n_ranks"], run["hosts"], run["iters"]) == (16, "nc-d87e1263-head,nc-d87e1263-worker1", 100)
    rows = r.rows("nccl_result")
    assert (rows[0]["size_bytes"], rows[0]["redop"], rows[0]["oop_time_us"]) == (1024, "none", 28.39)
    assert (rows[-1]["size_bytes"], rows[-1]["ip_busbw_gbps"], rows[-1]["line"]) == (8589934592, 332.58, 51)
    assert rows[-1]["prefix"] == "(head, rank=0, pid=3808) [1,0]<stdout>:"
    assert r.issues == []


@pytest.mark.parametrize(
    "tag",  # derived: the eks-blueprints capture (every line "[1,0]<stdout>:") behind a second tag
    ["[pod/nccl-launcher/mpi] ", "0: ", "nccl-test-launcher-abc12 ", "2025-01-01T00:00:00.000Z stdout F "],
)
def test_any_tag_stacked_before_the_mpirun_tag(tag: str) -> None:
    lines = fixture_text("nccl-tests", EKS).splitlines()
    r = nccl_tests.parse("".join(f"{tag}{line.lstrip()}\n" for line in lines))
    run = r.rows("nccl_run")[0]
    assert (run["avg_busbw_gbps"], run["oob_values"], run["n_results"]) == (79.9352, 0, 32)
    assert r.rows("nccl_result")[-1]["ip_busbw_gbps"] == pytest.approx(
        nccl_tests.parse(fixture_text("nccl-tests", EKS)).rows("nccl_result")[-1]["ip_busbw_gbps"]
    )


def test_warn_lines_keep_their_source_place() -> None:
    ev = parse("nccl-398-ofi-warn-socket-fallback.txt").rows("nccl_log_event")
    warns = [e for e in ev if e["level"] == "WARN"]
    assert warns and {e["code_location"] for e in warns} == {"ofi_init:700"}
    ev = parse("nccl-tests-82-broadcast-prompt-old-root-error.txt").rows("nccl_log_event")
    assert [e["code_location"] for e in ev if e["level"] == "WARN"] == ["misc/ibvwrap.cc:63"] * 2
    ev = parse("derived-nccl-398-warn-wallclock-stamp.txt").rows("nccl_log_event")
    warns = [e for e in ev if e["level"] == "WARN"]
    assert warns and all(e["prefix"].startswith("[2026-01-05 08:14:03") for e in warns)
    assert {e["code_location"] for e in warns} == {"ofi_init:700"}


@pytest.mark.parametrize(
    ("line", "where"),
    [  # hand-written in NCCL's wording: the place bracketed, or ending the message
        (
            "node1:123:456 [0] [transport/net_ib.cc:123] NCCL WARN NET/IB : Got completion with error 12",
            "transport/net_ib.cc:123",
        ),
        (
            "node1:123:456 [0] NCCL WARN Call to connect returned Connection refused (misc/socket.cc:484)",
            "misc/socket.cc:484",
        ),
        (
            "[2025-01-01 12:00:00] node1:123:456 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45519> failed : Software caused connection abort",
            "misc/socket.cc:484",
        ),
        ("node1:123:456 [0] NCCL WARN Cuda failure 'out of memory'", None),
    ],
)
def test_source_place_forms(line: str, where: str | None) -> None:
    r = nccl_tests.parse(line + "\n")
    (ev,) = r.rows("nccl_log_event")
    assert (ev["host"], ev["code_location"]) == ("node1", where)


def test_a_cut_last_row_keeps_its_complete_cells() -> None:
    r = parse("rccl-1490-srun-label-allgather.txt")
    cut = r.rows("nccl_result")[-1]
    assert (cut["size_bytes"], cut["oop_time_us"], cut["ip_time_us"], cut["ip_busbw_gbps"]) == (
        2097152,
        70248.0,
        73593.0,
        0.03,
    )
    assert cut["ip_wrong"] is None and cut["oop_wrong"] == 0
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (9, "result row cut after 12 complete columns: the cells after them are empty")
    ]
    r = parse("mooncake-3484-rows-only.txt")
    cut = r.rows("nccl_result")[-1]
    assert (cut["size_bytes"], cut["count"], cut["redop"], cut["oop_time_us"]) == (
        67108864,
        16777216,
        "sum",
        None,
    )


def test_a_row_cut_by_the_end_of_the_file_drops_its_last_cell() -> None:
    # derived: the a3mega capture cut inside a cell of a row, no newline after it
    text = fixture_text("nccl-tests", "a3mega-h100-2node-allreduce.txt")
    lines = text.splitlines()
    no = next(i for i, line in enumerate(lines) if line.split()[:1] == ["8589934592"])
    cut = lines[no][: lines[no].index("338.82") + 3]  # "... 180.71  338"
    r = nccl_tests.parse("\n".join([*lines[:no], cut]))
    row = r.rows("nccl_result")[-1]
    assert (row["size_bytes"], row["oop_time_us"], row["oop_algbw_gbps"], row["oop_busbw_gbps"]) == (
        8589934592, 47535.0, 180.71, None,
    )  # fmt: skip
    assert r.issues[-1].line_no == no + 1 and "cut after 7 complete columns" in r.issues[-1].reason
