"""nccl-tests variants: launcher prefixes, several tests in one log, failed runs, excerpts without a banner,
NCCL Channel/Ring lines (the nccl_transport table), old layouts, and the travel noise of pastes.

Real fixtures: tests/fixtures/nccl-tests/*.txt (see its PROVENANCE.md).  Tests marked "derived" take a real
fixture and add one kind of noise (a prefix, CRLF, ...) to it; they say so.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import parsers
from parsers import ParseError, nccl_tests
from parsers._base import ParseResult
from tests.conftest import fixture_text

A3 = "a3mega-h100-2node-allreduce.txt"
EKS = "eks-blueprints-p5-2node-mpirun-prefixed.txt"


def parsed(name: str) -> ParseResult:
    return nccl_tests.parse(fixture_text("nccl-tests", name))


def values(result: ParseResult, table: str, *cols: str) -> list[tuple[Any, ...]]:
    return [tuple(row[c] for c in cols) for row in result.rows(table)]


def a3_reference() -> ParseResult:
    r = parsed(A3)
    assert r.issues == []
    return r


def same_tables(a: ParseResult, b: ParseResult, skip: tuple[str, ...] = ()) -> None:
    """Every table equal, line numbers included (derived variants keep line numbers)."""
    for table in nccl_tests.SCHEMA:
        left = [{k: v for k, v in row.items() if k not in skip} for row in a.rows(table)]
        right = [{k: v for k, v in row.items() if k not in skip} for row in b.rows(table)]
        assert left == right, table


# --- launcher prefixes ----------------------------------------------------------------------------------


def test_srun_label_prefix_real_rccl_capture() -> None:
    r = parsed("rccl-1490-srun-label-allgather.txt")
    rows = r.rows("nccl_result")
    assert [row["size_bytes"] for row in rows] == [65536, 131072, 262144, 524288, 1048576, 2097152]
    first = rows[0]
    assert (first["count"], first["dtype"], first["redop"], first["root"]) == (512, "float", "none", -1)
    assert (first["oop_time_us"], first["oop_algbw_gbps"], first["oop_busbw_gbps"], first["oop_wrong"]) == (
        107.5, 0.61, 0.59, 0,
    )  # fmt: skip
    assert rows[-2]["ip_time_us"] == 1304.0 and rows[-2]["line"] == 8
    # the last row is cut in the paste: its 12 complete cells kept, the cut said with its line and raw line
    assert (rows[-1]["ip_busbw_gbps"], rows[-1]["ip_wrong"]) == (0.03, None)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (9, "result row cut after 12 complete columns: the cells after them are empty")
    ]
    assert r.issues[0].line.startswith(" 0:      2097152")
    run = r.rows("nccl_run")[0]
    assert run["truncated"] is True and run["n_results"] == 6


@pytest.mark.parametrize(
    "prefix",
    ["0: ", "  12: ", "[1,0]<stdout>:", "[pod/nccl-worker-0/main] ", "ip-10-1-2-3: ", "node001: "],
    ids=["srun-l", "srun-l-wide", "mpirun", "kubectl", "pdsh-ip", "pdsh-node"],
)
def test_launcher_prefix_on_every_line_derived(prefix: str) -> None:
    # derived: the real a3mega log with a launcher prefix added to every line
    ref = a3_reference()
    text = "".join(prefix + line + "\n" for line in fixture_text("nccl-tests", A3).splitlines())
    r = nccl_tests.parse(text)
    assert r.issues == []
    same_tables(ref, r)
    assert parsers.detect_kind(text) == "nccl-tests"


def test_pdsh_prefix_names_the_host_of_untagged_lines_derived() -> None:
    # derived: lines of the real nccl-473 failure with a pdsh host tag
    real = fixture_text("nccl-tests", "nccl-473-failed-run-system-error.txt").splitlines()
    r = nccl_tests.parse("".join(f"node-7: {line}\n" for line in real))
    (event,) = r.rows("nccl_log_event")
    assert (event["host"], event["code"], event["run"]) == ("fastmoe", "SYSTEM_ERROR", 1)
    assert r.rows("nccl_run")[0]["n_ranks"] == 4 and r.issues == []
    # a line that names no host of its own gets the pdsh tag's
    text = "node-7: NCCL WARN NET/OFI fi_getinfo failed\nnode-8: NCCL WARN NET/OFI fi_getinfo failed\n"
    assert values(nccl_tests.parse(text), "nccl_log_event", "host", "code") == [
        ("node-7", "EFA_INIT_FAIL"),
        ("node-8", "EFA_INIT_FAIL"),
    ]


def test_indented_mpirun_prefix_real_doc_paste() -> None:
    r = parsed(EKS)
    assert len(r.rows("nccl_result")) == 32 and r.issues == []
    assert r.rows("nccl_run")[0]["avg_busbw_gbps"] == 79.9352


# --- several tests in one log ------------------------------------------------------------------------------


def test_two_runs_separated_by_a_summary_real() -> None:
    r = parsed("nccl-tests-182-two-runs-after-summary.txt")
    runs = r.rows("nccl_run")
    assert values(r, "nccl_run", "run", "avg_busbw_gbps", "oob_values", "n_results", "truncated") == [
        (1, 1.7535, 0, 3, False),
        (2, 1.6796, 0, 1, False),
    ]
    assert runs[1]["line"] == 10
    assert values(r, "nccl_result", "run", "line", "size_bytes", "oop_time_us", "ip_busbw_gbps") == [
        (1, 1, 134217728, 29770.0, 4.49),
        (1, 2, 134217728, 27666.0, 4.85),
        (1, 3, 268435456, 55270.0, 4.86),
        (2, 10, 268435456, 59440.0, 4.51),
    ]
    assert r.issues == []


def test_concluded_line_names_the_collective_real() -> None:
    r = parsed("rccl-2075-summary-concluded-next-test.txt")
    (run,) = r.rows("nccl_run")
    assert run["collective"] == "alltoall" and run["avg_busbw_gbps"] == 2.38156 and run["n_results"] == 10
    last = r.rows("nccl_result")[-1]
    assert (last["size_bytes"], last["oop_time_us"], last["ip_time_us"], last["oop_wrong"], last["ip_wrong"]) == (
        134217728, 10580.0, 10589.0, 0, None,
    )  # fmt: skip
    assert r.issues == []


def test_banner_separated_tests_are_runs_derived() -> None:
    # derived: two real logs one after the other, as a script running all_reduce_perf then all_gather_perf
    first = "# nccl-tests version 2.13.9 nccl-headers=21803 nccl-library=21803\n"
    first += "# Collective test starting: all_reduce_perf\n" + fixture_text("nccl-tests", A3)
    second = "# Collective test starting: all_gather_perf\n" + fixture_text("nccl-tests", A3)
    r = nccl_tests.parse(first + second)
    n_first = len(first.splitlines())
    assert values(r, "nccl_run", "run", "collective", "tests_version", "line", "n_ranks", "n_results") == [
        (1, "all_reduce", "2.13.9", 3, 16, 31),
        (2, "all_gather", None, n_first + 2, 16, 31),
    ]
    assert {row["run"] for row in r.rows("nccl_rank")} == {1, 2}
    assert [row["run"] for row in r.rows("nccl_result")] == [1] * 31 + [2] * 31
    assert r.rows("nccl_run")[0]["nccl_version"] == "2.18.3" and r.issues == []


def test_same_test_twice_without_banner_derived() -> None:
    # derived: the real a3mega log twice (the same test re-run, output appended to one file)
    text = fixture_text("nccl-tests", A3) * 2
    r = nccl_tests.parse(text)
    assert values(r, "nccl_run", "run", "n_ranks", "n_results", "avg_busbw_gbps") == [
        (1, 16, 31, 70.742),
        (2, 16, 31, 70.742),
    ]


# --- failed runs ------------------------------------------------------------------------------------------


def test_failed_run_records_run_and_reason_real() -> None:
    r = parsed("nccl-473-failed-run-system-error.txt")
    (run,) = r.rows("nccl_run")
    assert (run["n_ranks"], run["n_results"], run["error_code"], run["truncated"]) == (
        4,
        0,
        "SYSTEM_ERROR",
        True,
    )
    assert (run["ngpus"], run["max_bytes"], run["agg_iters"], run["graph"]) == (4, 134217728, None, None)
    assert values(r, "nccl_log_event", "line", "run", "host", "level", "code") == [
        (9, 1, "fastmoe", "ERROR", "SYSTEM_ERROR")
    ]
    assert r.rows("nccl_rank")[3]["gpu_name"] == "GeForce RTX 2080 Ti" and r.issues == []


def test_failed_run_with_shm_error_and_test_failure_lines_real() -> None:
    r = parsed("nccl-tests-166-shm-direct-test-failure.txt")
    assert values(r, "nccl_log_event", "line", "host", "level", "code") == [
        (1, "ubuntu", "WARN", "WARN"),
        (10, "ubuntu", "ERROR", "SYSTEM_ERROR"),
        (11, "ubuntu", "ERROR", "TEST_FAILURE"),
    ]
    assert r.rows("nccl_run")[0]["error_code"] == "SYSTEM_ERROR"
    assert values(r, "nccl_transport", "line", "channel", "src_rank", "dst_rank", "transport", "via")[0] == (
        12, 18, 7, 6, "SHM", "SHM/direct/direct",
    )  # fmt: skip


# --- excerpts without a banner, NCCL lines in the table -----------------------------------------------


def test_rows_only_excerpt_is_detected_and_parsed_real() -> None:
    text = fixture_text("nccl-tests", "mooncake-3484-rows-only.txt")
    assert nccl_tests.detect(text) >= 70 and parsers.detect_kind(text) == "nccl-tests"
    r = nccl_tests.parse(text)
    rows = r.rows("nccl_result")
    assert len(rows) == 12 and rows[-2]["size_bytes"] == 33554432 and rows[-2]["ip_busbw_gbps"] == 300.52
    assert rows[0]["root"] == -1 and rows[0]["oop_wrong"] == 0
    assert (rows[-1]["size_bytes"], rows[-1]["redop"], rows[-1]["oop_time_us"]) == (67108864, "sum", None)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (13, "result row cut after 4 complete columns: the cells after them are empty")
    ]


def test_table_header_with_info_lines_interleaved_real() -> None:
    r = parsed("nccl-1189-h20-info-interleaved-header.txt")
    (run,) = r.rows("nccl_run")
    assert run["n_results"] == 0 and run["truncated"] is True
    # the cut Channel line is said, not dropped
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (13, "Channel/Ring connection line without a readable 'via' (cut?)")
    ]


def test_header_start_excerpt_with_info_lines_in_table_derived() -> None:
    # derived: the real a3mega log from its column header on (a grep'd excerpt), with real NCCL INFO
    # lines (nccl-1189) pushed between the rows
    lines = fixture_text("nccl-tests", A3).splitlines()
    start = next(i for i, line in enumerate(lines) if "out-of-place" in line)
    info = fixture_text("nccl-tests", "nccl-1189-h20-info-interleaved-header.txt").splitlines()[1:6]
    mixed: list[str] = []
    for i, line in enumerate(lines[start:]):
        mixed.append(line)
        if i % 5 == 4 and info:
            mixed.append(info.pop(0))
    text = "\n".join(mixed) + "\n"
    assert parsers.detect_kind(text) == "nccl-tests"
    r = nccl_tests.parse(text)
    ref = {row["size_bytes"]: row for row in a3_reference().rows("nccl_result")}
    rows = r.rows("nccl_result")
    assert len(rows) == 31 and r.issues == []
    for row in rows:
        assert {k: v for k, v in row.items() if k != "line"} == {
            k: v for k, v in ref[row["size_bytes"]].items() if k != "line"
        }
    assert r.rows("nccl_run")[0]["avg_busbw_gbps"] == 70.742


# --- old layouts ----------------------------------------------------------------------------------------


def test_old_broadcast_layout_root_without_redop_real() -> None:
    r = parsed("nccl-tests-82-broadcast-prompt-old-root-error.txt")
    (row,) = r.rows("nccl_result")
    assert (row["size_bytes"], row["count"], row["dtype"], row["redop"], row["root"]) == (
        8,
        2,
        "float",
        None,
        0,
    )
    assert (row["oop_time_us"], row["oop_busbw_gbps"], row["oop_error"], row["oop_wrong"]) == (
        45.82,
        0.0,
        None,
        None,
    )
    assert row["ip_time_us"] == 38.17 and row["extra"] is None
    (run,) = r.rows("nccl_run")
    assert (run["collective"], run["nccl_version"], run["iters"], run["check"]) == (
        "broadcast",
        "2.9.6",
        100,
        0,
    )
    assert run["hosts"] == "v100-gpu-1,v100-gpu-5"
    assert values(r, "nccl_log_event", "host", "code") == [("v100-gpu-1", "WARN"), ("v100-gpu-5", "WARN")]
    assert r.issues == []


def test_extra_trailing_columns_kept_derived() -> None:
    # derived: a real a3mega row with a timestamp column a patched nccl-tests prints after the sides
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong  stamp"
    row = "  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0  12:00:01"
    r = nccl_tests.parse(f"{header}\n{row}\n")
    (res,) = r.rows("nccl_result")
    assert json.loads(res["extra"]) == {"stamp": "12:00:01"} and res["ip_busbw_gbps"] == 337.35


# --- NCCL Channel / Ring lines: nccl_transport ----------------------------------------------------------


def test_transport_aws_libfabric_and_p2p_ipc_real() -> None:
    r = parsed("nccl-527-aws-libfabric-channels.txt")
    rows = r.rows("nccl_transport")
    assert len(rows) == 12
    assert rows[0] == {
        "line": 2, "run": 1, "host": "ip-10-216-178-255", "channel": 3, "conn": 0, "src_rank": 19,
        "src_dev": "201d0", "dst_rank": 26, "dst_dev": "201c0", "direction": "send",
        "transport": "NET/OFI/0", "via": "NET/AWS Libfabric/0/GDRDMA", "prefix": None,
    }  # fmt: skip
    assert values(r, "nccl_transport", "channel", "conn", "direction", "transport", "via")[5] == (
        1, None, None, "P2P/IPC", "P2P/IPC/read",
    )  # fmt: skip
    assert r.rows("nccl_run")[0]["net_transport"] == "ofi-efa"
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (14, "Channel/Ring connection line without a readable 'via' (cut?)")
    ]


def test_transport_cumem_and_shared_with_timestamp_lines_real() -> None:
    r = parsed("aws-ofi-nccl-715-cloudwatch-cumem.txt")
    assert values(
        r,
        "nccl_transport",
        "line",
        "host",
        "channel",
        "conn",
        "src_rank",
        "dst_rank",
        "direction",
        "transport",
    ) == [
        (2, "algo-1", 4, 1, 14, 2, "receive", "NET/OFI/1"),
        (6, "algo-1", 4, 1, 6, 10, "send", "NET/OFI/1"),
        (10, "algo-1", 5, 1, 14, 2, "receive", "NET/OFI/1"),
        (12, "algo-1", 0, 1, 2, 6, None, "P2P/CUMEM"),
        (16, "algo-1", 5, 1, 6, 10, "send", "NET/OFI/1"),
        (20, "algo-1", 4, 1, 15, 3, "receive", "NET/OFI/1"),
    ]
    assert r.rows("nccl_transport")[1]["via"] == "NET/AWS Libfabric/1(2)/GDRDMA/Shared" and r.issues == []


def test_transport_direct_pointer_and_shared_memory_real() -> None:
    r = parsed("nccl-644-direct-pointer-shared-memory.txt")
    got = values(r, "nccl_transport", "src_rank", "src_dev", "dst_rank", "transport")
    assert got[0] == (0, "4000", 1, "P2P/direct") and got[4] == (2, "8000", 1, "SHM")
    assert len(got) == 14 and r.issues == []


def test_transport_ring_lines_without_devices_real() -> None:
    r = parsed("nccl-398-ring-lines-socket.txt")
    got = values(
        r,
        "nccl_transport",
        "line",
        "host",
        "channel",
        "src_rank",
        "src_dev",
        "dst_rank",
        "direction",
        "transport",
    )
    assert len(got) == 17 and got[0] == (2, "ip-172-31-0-112", 0, 3, "3", 2, None, "P2P/IPC")
    assert got[11] == (13, "ip-172-31-13-129", 0, 15, None, 0, "send", "NET/Socket/0")
    assert got[13][2] == 1 and r.rows("nccl_run")[0]["net_transport"] == "socket" and r.issues == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "ip-10-0-0-1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
            ("ip-10-0-0-1", 0, 0, 0, "0", 1, "1", None, "P2P/IPC"),
        ),
        (
            "ip-10-0-0-1:1234:1300 [7] NCCL INFO Channel 00/02 : 7[7] -> 8[0] [send] via NET/OFI/0/GDRDMA",
            ("ip-10-0-0-1", 0, 2, 7, "7", 8, "0", "send", "NET/OFI/0"),
        ),
        (
            "h:1:2 [1] NCCL INFO Channel 01/0 : 9[1] -> 1[1] [receive] via NET/Socket/1",
            ("h", 1, 0, 9, "1", 1, "1", "receive", "NET/Socket/1"),
        ),
    ],
    ids=["p2p-ipc", "net-ofi", "net-socket"],
)
def test_transport_line_forms(line: str, expected: tuple[Any, ...]) -> None:
    cols = ("host", "channel", "conn", "src_rank", "src_dev", "dst_rank", "dst_dev", "direction", "transport")
    assert values(nccl_tests.parse(line + "\n"), "nccl_transport", *cols) == [expected]


# --- travel noise: CRLF, tabs, prompts, fences, annotations, elisions ---------------------------------


def _lines() -> list[str]:
    return fixture_text("nccl-tests", A3).splitlines()


@pytest.mark.parametrize(
    "mangle",
    [
        lambda ls: "\r\n".join(ls) + "\r\n",
        lambda ls: "\n".join(line.replace("    ", "\t") for line in ls) + "\n",
        lambda ls: "\n".join(line + "   " for line in ls) + "\n",
        lambda ls: "\n".join(line.lstrip() for line in ls) + "\n",
        lambda ls: "\n".join(ls[:20] + ["<-----"[:0] + ls[20] + "   <----- slow?"] + ls[21:]) + "\n",
        lambda ls: "```\n" + "\n".join(ls) + "\n```\n",
    ],
    ids=["crlf", "tabs", "trailing-spaces", "no-indentation", "annotation", "fences"],
)
def test_noise_keeps_values_derived(mangle: Any) -> None:
    # derived: the real a3mega log with one kind of paste noise
    ref = {row["size_bytes"]: row for row in a3_reference().rows("nccl_result")}
    r = nccl_tests.parse(mangle(_lines()))
    assert r.issues == []
    rows = r.rows("nccl_result")
    assert len(rows) == 31
    for row in rows:
        assert {k: v for k, v in row.items() if k != "line"} == {
            k: v for k, v in ref[row["size_bytes"]].items() if k != "line"
        }
    run = r.rows("nccl_run")[0]
    assert run["avg_busbw_gbps"] == 70.742 and run["n_ranks"] == 16


def test_prompt_job_control_elisions_and_blank_lines_derived() -> None:
    # derived: the real a3mega log run at a prompt, stopped and resumed, with an author's elision
    lines = _lines()
    text = "\n".join(
        ["ubuntu@ip-10-0-0-1:~$ mpirun -np 16 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1", ""]
        + lines[:25] + ["...", "", ""] + lines[25:30] + ["^Z", "[1]+  Stopped                 mpirun -np 16"]
        + lines[30:] + ["$ echo done"]
    ) + "\n"  # fmt: skip
    r = nccl_tests.parse(text)
    assert r.issues == []
    run = r.rows("nccl_run")[0]
    assert run["collective"] == "all_reduce" and run["avg_busbw_gbps"] == 70.742
    assert len(r.rows("nccl_result")) == 31 and len(r.rows("nccl_run")) == 1


def test_backtick_glued_to_header_derived() -> None:
    lines = _lines()
    lines[0] = "```" + lines[0]
    lines[-1] = lines[-1] + "```"
    r = nccl_tests.parse("\n".join(lines) + "\n")
    run = r.rows("nccl_run")[0]
    assert run["nthread"] == 1 and run["max_bytes"] == 8589934592 and r.issues == []


def test_cut_last_line_is_an_issue_derived() -> None:
    lines = _lines()
    last_row = max(i for i, line in enumerate(lines) if line.strip().startswith("8589934592"))
    text = "\n".join(lines[: last_row + 1])[:-30]
    r = nccl_tests.parse(text)
    # the file ends inside the 9th cell: that cell is left out, the 8 before it kept
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (last_row + 1, "result row cut after 8 complete columns: the cells after them are empty")
    ]
    assert r.rows("nccl_run")[0]["truncated"] is True and len(r.rows("nccl_result")) == 31
    assert (
        r.rows("nccl_result")[-1]["oop_busbw_gbps"] == 338.82
        and r.rows("nccl_result")[-1]["oop_wrong"] is None
    )


def test_mangled_row_and_rank_like_lines_are_issues() -> None:
    header = fixture_text("nccl-tests", A3).splitlines()[0]
    text = f"{header}\n#  Rank  0 Group  0 Pid\n  1048576  16384  garbled\n"
    r = nccl_tests.parse(text)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (2, "line looks like a result or rank line but does not parse"),
        (3, "line looks like a result or rank line but does not parse"),
    ]


def test_parse_error_says_what_was_expected_and_seen() -> None:
    with pytest.raises(ParseError, match=r"expected nccl-tests output .* first line seen: 'hello world'"):
        nccl_tests.parse("hello world\nnothing here\n")


def test_command_names_the_collective() -> None:
    text = "\n".join(_lines()[1:]) + "\n"  # no banner naming the test
    r = nccl_tests.parse(text, command="mpirun -np 16 /opt/nccl-tests/build/reduce_scatter_perf -b 8")
    assert r.rows("nccl_run")[0]["collective"] == "reduce_scatter"


def test_bracket_rank_tag_before_rank_lines_real() -> None:
    r = parsed("nccl-1453-bracket-rank-prefix.txt")
    (run,) = r.rows("nccl_run")
    assert run["n_ranks"] == 14 and run["hosts"] == "h100clust-worker-1,h100clust-worker-32"
    rank = r.rows("nccl_rank")[7]
    assert (rank["line"], rank["rank"], rank["pid"], rank["host"], rank["device"], rank["bus_id"]) == (
        9, 8, 496763, "h100clust-worker-32", 0, "0xa4",
    )  # fmt: skip
    assert r.issues == []


def test_bracket_rank_tag_before_rows_derived() -> None:
    # derived: the real a3mega log with the "[0] " tag of nccl-1453 on every line
    text = "".join(f"[0] {line}\n" for line in fixture_text("nccl-tests", A3).splitlines())
    r = nccl_tests.parse(text)
    same_tables(a3_reference(), r)


def test_kubectl_tag_names_the_pod_of_untagged_lines_derived() -> None:
    text = "[pod/nccl-worker-0/main] NCCL WARN NET/OFI fi_getinfo failed\n" * 2
    assert (
        values(nccl_tests.parse(text), "nccl_log_event", "host", "code")
        == [("nccl-worker-0", "EFA_INIT_FAIL")] * 2
    )
