"""nccl-tests, loud: a line that looks like data but does not read is kept as printed or said, never dropped.

Every test here is derived: it takes a real fixture of tests/fixtures/nccl-tests/ (see its PROVENANCE.md)
and mangles one field of one line the way a bad paste or an unknown tool would (a letter glued to a number,
an unknown prefix, a cut line), then asserts what the parser keeps and what it reports, at which line.
"""

from __future__ import annotations

import pytest

from parsers import nccl_tests
from parsers._base import ParseResult
from tests.conftest import fixture_text

A3 = "a3mega-h100-2node-allreduce.txt"
OLD = "aws-ofi-nccl-33-p3dn-2node-old-cols.txt"
EKS = "eks-blueprints-p5-2node-mpirun-prefixed.txt"
SRUN = "rccl-1490-srun-label-allgather.txt"
SHM = "nccl-tests-166-shm-direct-test-failure.txt"


def garbled(name: str, no: int, old: str, new: str) -> str:
    """The fixture with the first ``old`` of line ``no`` (1-based) replaced by ``new``."""
    lines = fixture_text("nccl-tests", name).splitlines()
    assert old in lines[no - 1], (name, no, lines[no - 1])
    lines[no - 1] = lines[no - 1].replace(old, new, 1)
    return "\n".join(lines) + "\n"


def parse(name: str, no: int, old: str, new: str) -> ParseResult:
    return nccl_tests.parse(garbled(name, no, old, new))


def issues(r: ParseResult) -> list[tuple[int, str]]:
    return [(i.line_no, i.reason) for i in r.issues]


def test_mangled_header_number_is_an_issue_and_the_other_fields_are_kept() -> None:
    # derived: a3mega line 1, "nThread 1" -> "nThread 1q"
    r = parse(A3, 1, "nThread 1 ", "nThread 1q ")
    assert issues(r) == [(1, "non-numeric nThread header nthread '1q'")]
    run = r.rows("nccl_run")[0]
    assert run["nthread"] is None and run["line"] == 1
    assert (run["ngpus"], run["min_bytes"], run["max_bytes"], run["iters"], run["step"]) == (
        1, 8, 8589934592, 20, "2(factor)",
    )  # fmt: skip


def test_header_line_that_does_not_parse_is_an_issue() -> None:
    # derived: a3mega line 1 cut after "minBytes 8"
    text = fixture_text("nccl-tests", A3).splitlines()
    text[0] = text[0][: text[0].index(" maxBytes")]
    r = nccl_tests.parse("\n".join(text) + "\n")
    assert issues(r) == [(1, "line looks like the nThread header but does not parse")]
    assert len(r.rows("nccl_result")) == 31 and r.rows("nccl_run")[0]["nthread"] is None


def test_mangled_rank_number_is_an_issue_and_the_rank_row_is_kept() -> None:
    # derived: a3mega line 4, "Rank  0" -> "Rank  0q"
    r = parse(A3, 4, "Rank  0 ", "Rank  0q ")
    assert issues(r) == [(4, "non-numeric rank rank '0q'")]
    first = r.rows("nccl_rank")[0]
    assert (first["line"], first["rank"], first["pid"], first["host"], first["device"]) == (
        4, None, 6899, "ztan-mig-235z", 0,
    )  # fmt: skip
    run = r.rows("nccl_run")[0]
    assert run["n_ranks"] == 16 and run["n_hosts"] == 2


def test_unknown_tag_before_a_rank_line_is_an_issue() -> None:
    # derived: nccl-1453 line 2, its "[0] " rank tag mangled to "[0q] "
    r = parse("nccl-1453-bracket-rank-prefix.txt", 2, "[0]", "[0q]")
    assert issues(r) == [(2, "unrecognised text before a rank line: '[0q]'")]
    rank = r.rows("nccl_rank")[0]
    assert (rank["line"], rank["rank"], rank["host"], rank["bus_id"]) == (2, 1, "h100clust-worker-1", "0xae")


def test_mangled_size_in_a_result_row_is_an_issue_not_a_silent_skip() -> None:
    # derived: aws-ofi-nccl-33 (old layout, float error column) line 5, size 1048576 -> 1048576q
    ref = nccl_tests.parse(fixture_text("nccl-tests", OLD))
    r = parse(OLD, 5, "1048576", "1048576q")
    assert issues(r) == [
        (5, "line looks like a result row but does not parse: size '1048576q', count '262144'"),
    ]
    assert [row["line"] for row in r.rows("nccl_result")] == [
        row["line"] for row in ref.rows("nccl_result") if row["line"] != 5
    ]


def test_mangled_size_in_an_old_rooted_row_is_an_issue() -> None:
    # derived: nccl-tests-82 (broadcast, root and no redop) line 17, size 8 -> 8q
    r = parse("nccl-tests-82-broadcast-prompt-old-root-error.txt", 17, "  8 ", "  8q ")
    assert [n for n, _ in issues(r)] == [17]
    assert "looks like a result row" in r.issues[0].reason
    assert 17 not in [row["line"] for row in r.rows("nccl_result")]


def test_result_row_behind_a_mangled_mpirun_prefix_is_read_and_the_prefix_kept() -> None:
    # derived: eks-blueprints line 5, "[1,0]<stdout>:" -> "[1q,0]<stdout>:" (no launcher pattern takes it off)
    ref = nccl_tests.parse(fixture_text("nccl-tests", EKS))
    r = parse(EKS, 5, "[1,0]", "[1q,0]")
    assert issues(r) == []
    row = next(row for row in r.rows("nccl_result") if row["line"] == 5)
    assert row["prefix"] == "[1q,0]<stdout>:"
    expected = next(row for row in ref.rows("nccl_result") if row["line"] == 5)
    assert expected["prefix"] is None
    assert {k: v for k, v in row.items() if k != "prefix"} == {
        k: v for k, v in expected.items() if k != "prefix"
    }
    assert (row["size_bytes"], row["dtype"], row["redop"], row["root"], row["oop_time_us"]) == (
        0, "float", "sum", -1, 0.13,
    )  # fmt: skip


def test_result_row_behind_a_mangled_srun_label_is_read_and_the_prefix_kept() -> None:
    # derived: rccl-1490 line 4, srun label " 0:" -> " 0q:"
    r = parse(SRUN, 4, " 0:", " 0q:")
    row = next(row for row in r.rows("nccl_result") if row["line"] == 4)
    assert row["prefix"] == "0q:"
    assert (row["size_bytes"], row["count"], row["redop"], row["oop_time_us"], row["ip_busbw_gbps"]) == (
        65536, 512, "none", 107.5, 0.60,
    )  # fmt: skip
    assert (
        len(r.rows("nccl_result")) == 6
    )  # the cut last row keeps its complete cells, as in the clean fixture
    assert issues(r) == [(9, "result row cut after 12 complete columns: the cells after them are empty")]


def test_nccl_warn_with_a_mangled_pid_is_kept_and_reported() -> None:
    # derived: nccl-tests-166 line 1, "ubuntu:9621:9685" -> "ubuntu:9621q:9685"
    ref = nccl_tests.parse(fixture_text("nccl-tests", SHM))
    r = parse(SHM, 1, "9621:", "9621q:")
    assert issues(r) == [(1, "NCCL log line with a non-numeric pid, tid or device: 'ubuntu:9621q:9685 [0]'")]
    assert r.rows("nccl_log_event") == ref.rows("nccl_log_event")
    first = r.rows("nccl_log_event")[0]
    assert (first["line"], first["host"], first["level"]) == (1, "ubuntu", "WARN")


def test_channel_line_with_a_mangled_pid_is_kept_and_reported() -> None:
    # derived: nccl-tests-166 line 12, "ubuntu:39964:40051" -> "ubuntu:39964q:40051"
    ref = nccl_tests.parse(fixture_text("nccl-tests", SHM))
    r = parse(SHM, 12, "39964:", "39964q:")
    assert [n for n, _ in issues(r)] == [12]
    assert r.rows("nccl_transport") == ref.rows("nccl_transport")
    row = next(t for t in r.rows("nccl_transport") if t["line"] == 12)
    assert (row["host"], row["channel"], row["src_rank"], row["dst_rank"], row["transport"]) == (
        "ubuntu", 18, 7, 6, "SHM",
    )  # fmt: skip


def test_channel_line_with_a_mangled_channel_number_is_an_issue() -> None:
    # derived: nccl-tests-166 line 12, "Channel 18 :" -> "Channel 18q :"
    r = parse(SHM, 12, "Channel 18 ", "Channel 18q ")
    assert issues(r) == [(12, "Channel/Ring connection line does not parse")]
    assert 12 not in [t["line"] for t in r.rows("nccl_transport")]


@pytest.mark.parametrize(
    ("no", "old", "new", "reason"),
    [
        (56, "70.742", "70.742q", "non-numeric Avg bus bandwidth '70.742q'"),
        (55, ": 0 OK", ": 0q OK", "non-numeric Out of bounds values '0q'"),
    ],
    ids=["avg-busbw", "oob"],
)
def test_mangled_summary_number_is_an_issue(no: int, old: str, new: str, reason: str) -> None:
    # derived: a3mega summary lines
    r = parse(A3, no, old, new)
    assert issues(r) == [(no, reason)]


def test_clean_fixtures_keep_no_prefix_and_give_no_new_issue() -> None:
    # the real a3mega, eks (mpirun-prefixed) and srun-labelled logs: the prefixes are launchers' and go
    for name in (A3, EKS, SRUN):
        r = nccl_tests.parse(fixture_text("nccl-tests", name))
        assert all(row["prefix"] is None for row in r.rows("nccl_result")), name
    assert nccl_tests.parse(fixture_text("nccl-tests", A3)).issues == []


def test_row_shape_needs_numbers_a_dtype_and_a_redop_or_root() -> None:
    assert nccl_tests._row_at("#       size         count      type   redop    root     time") is None
    assert nccl_tests._row_at("RuntimeError: expected float but got half") is None
    assert nccl_tests._row_at("x: 1 2 float banana 3") is None
    assert nccl_tests._row_at("host-7:  1024  256  bfloat16  max  -1  1.0") == (
        "host-7:", "1024  256  bfloat16  max  -1  1.0",
    )  # fmt: skip
