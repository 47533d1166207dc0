"""nccl-tests parser on every real sample, NCCL log lines, and the error contract."""

from __future__ import annotations

import pytest

import parsers
from parsers import nccl_tests
from parsers._base import ParseResult
from tests.conftest import fixture_files, fixture_text


def parsed(name: str) -> ParseResult:
    return nccl_tests.parse(fixture_text("nccl-tests", name))


def test_a3mega_two_nodes_new_layout_integer_times() -> None:
    r = parsed("a3mega-h100-2node-allreduce.txt")
    run = r.rows("nccl_run")[0]
    assert (run["nthread"], run["ngpus"], run["min_bytes"], run["max_bytes"]) == (1, 1, 8, 8589934592)
    assert (run["iters"], run["warmup_iters"], run["check"], run["step"]) == (20, 5, 1, "2(factor)")
    assert run["n_ranks"] == 16 and run["n_hosts"] == 2 and run["hosts"] == "ztan-mig-235z,ztan-mig-gq73"
    assert run["avg_busbw_gbps"] == 70.742 and run["oob_values"] == 0 and run["truncated"] is False
    assert run["net_transport"] is None and run["line"] == 1
    ranks = r.rows("nccl_rank")
    assert ranks[10] == {
        "line": 14, "run": 1, "rank": 10, "group": 0, "pid": 6735, "host": "ztan-mig-gq73", "device": 2,
        "bus_id": "0000:0b:00.0", "gpu_name": "NVIDIA H100 80GB HBM3",
    }  # fmt: skip
    rows = r.rows("nccl_result")
    assert len(rows) == 31 and rows[0]["size_bytes"] == 8 and rows[-1]["size_bytes"] == 8589934592
    by_size = {row["size_bytes"]: row for row in rows}
    big = by_size[2147483648]
    assert big["oop_time_us"] == 12646.0 and big["ip_time_us"] == 12641.0  # integers above 10 ms
    assert big["oop_busbw_gbps"] == 318.40 and big["ip_busbw_gbps"] == 318.52
    assert by_size[8589934592]["oop_busbw_gbps"] == 338.82 and by_size[8589934592]["ip_algbw_gbps"] == 179.92
    assert all(row["root"] == -1 and row["oop_wrong"] == 0 and row["ip_error"] is None for row in rows)
    assert rows[0]["dtype"] == "float" and rows[0]["redop"] == "sum"
    assert r.rows("nccl_log_event") == [] and r.issues == []


def test_old_layout_error_column_without_root() -> None:
    r = parsed("aws-ofi-nccl-33-p3dn-2node-old-cols.txt")
    rows = r.rows("nccl_result")
    assert [row["size_bytes"] for row in rows] == [1048576, 2097152, 4194304]
    first = rows[0]
    assert first["root"] is None and first["oop_wrong"] is None
    assert first["oop_error"] == 5e-07 and first["ip_error"] == 5e-07
    assert first["oop_time_us"] == 1035.3 and first["ip_time_us"] == 643.4 and first["ip_busbw_gbps"] == 3.06
    run = r.rows("nccl_run")[0]
    assert run["truncated"] is True and run["nthread"] is None and run["n_ranks"] == 0 and run["line"] == 5


def test_oldest_header_rank_lines_without_group() -> None:
    r = parsed("aws-ofi-nccl-65-p4d-oldest-header.txt")
    run = r.rows("nccl_run")[0]
    assert run["step"] == "2097152(bytes)" and run["min_bytes"] == 33554432 and run["max_bytes"] == 104857600
    assert run["n_ranks"] == 9 and run["hosts"] == "ip-172-31-13-103,ip-172-31-6-104"
    rank = r.rows("nccl_rank")[7]
    assert rank["group"] is None and rank["pid"] == 3695 and rank["bus_id"] == "0xa0"
    assert rank["gpu_name"] == "A100-SXM4-40GB" and rank["device"] == 7
    assert r.rows("nccl_result") == [] and run["truncated"] is True


def test_head_only_sixteen_ranks_no_table() -> None:
    r = parsed("aws-p4d-a100-2node-head-only.txt")
    run = r.rows("nccl_run")[0]
    assert run["max_bytes"] == 9663676416 and run["iters"] == 100 and run["n_hosts"] == 2
    assert run["n_ranks"] == 16 and run["truncated"] is True and r.rows("nccl_result") == []
    assert r.rows("nccl_rank")[15]["host"] == "new-st-gpu-2" and r.rows("nccl_rank")[4]["bus_id"] == "0x90"


def test_mpirun_prefixed_indented_doc_paste() -> None:
    r = parsed("eks-blueprints-p5-2node-mpirun-prefixed.txt")
    rows = r.rows("nccl_result")
    assert len(rows) == 32 and [row["size_bytes"] for row in rows[:2]] == [0, 0]
    assert max(row["ip_busbw_gbps"] for row in rows) == 444.41
    last = rows[-1]
    assert last["size_bytes"] == 2147483648 and last["oop_busbw_gbps"] == 444.31 and last["line"] == 36
    run = r.rows("nccl_run")[0]
    assert run["avg_busbw_gbps"] == 79.9352 and run["oob_values"] == 0 and run["truncated"] is False
    assert r.issues == []


def test_ofi_warning_then_socket_fallback() -> None:
    r = parsed("nccl-398-ofi-warn-socket-fallback.txt")
    run = r.rows("nccl_run")[0]
    assert run["net_transport"] == "socket" and run["net_provider"] is None and run["truncated"] is True
    events = r.rows("nccl_log_event")
    assert [(e["line"], e["level"], e["code"]) for e in events] == [
        (1, "WARN", "EFA_INIT_FAIL"),
        (4, "WARN", "EFA_INIT_FAIL"),
        (5, "INFO", "TCP_FALLBACK"),
    ]
    assert {e["host"] for e in events} == {"ip-172-31-0-112"}
    assert events[0]["message"] == "NET/OFI Only EFA provider is supported"


def test_header_with_hash_stripped_by_markdown() -> None:
    r = parsed("nccl-tests-249-g5-hash-stripped-by-markdown.txt")
    run = r.rows("nccl_run")[0]
    assert run["max_bytes"] == 16777216 and run["iters"] == 5 and run["n_ranks"] == 1
    rank = r.rows("nccl_rank")[0]
    assert rank["host"] == "nccl-846b9d30a6bb6b529fb3c170f4809fea-1725464730-worker-0"
    assert rank["gpu_name"] == "NVIDIA A10G" and rank["bus_id"] == "0x00" and rank["pid"] == 127


HEALTHY_EFA_LOG = """\
[1,0]<stdout>:# nccl-tests version 2.13.9 nccl-headers=21803 nccl-library=21803
[1,0]<stdout>:# Collective test starting: all_gather_perf
ip-10-1-2-3:41235:41235 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)
ip-10-1-2-3:41235:41235 [0] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)
ip-10-1-2-3:41235:41235 [0] NCCL INFO Using network AWS Libfabric
ip-10-1-2-3:41235:41235 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
ip-10-1-2-3:41235:41300 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Libfabric/0/GDRDMA
ip-10-1-9-9:51235:51300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/Libfabric/0/GDRDMA
ip-10-1-9-9:51235:51300 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [receive] via NET/Libfabric/0/GDRDMA
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576         16384     float    none      -1    123.4    8.50    7.97    N/A    120.1    8.73    8.18    N/A
ip-10-1-9-9:51235:51301 [0] transport/net.cc:123 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
     2097152         32768     float    none      -1    12x.4    8.50    7.97      0    120.1    8.73    8.18      0
ip-10-1-9-9: Test NCCL failure common.cu:958 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '
[rank8]:[E ProcessGroupNCCL.cpp:1182] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 ms
     4194304         65536     float    none      -1    130.0
"""  # noqa: E501


def test_interleaved_log_lines_codes_and_mangled_rows() -> None:
    r = nccl_tests.parse(HEALTHY_EFA_LOG)
    run = r.rows("nccl_run")[0]
    assert run["collective"] == "all_gather" and run["nccl_version"] == "2.18.3"
    assert run["net_transport"] == "ofi-efa" and run["net_provider"] == "efa"
    codes = [(e["line"], e["host"], e["level"], e["code"]) for e in r.rows("nccl_log_event")]
    assert codes == [
        (4, "ip-10-1-2-3", "INFO", "OFI_EFA"),  # first informative line per host only
        (6, "ip-10-1-2-3", "INFO", "NCCL_VERSION"),
        (8, "ip-10-1-9-9", "INFO", "OFI_EFA"),
        (12, "ip-10-1-9-9", "WARN", "RDMA_REG_FAIL"),
        (14, "ip-10-1-9-9", "ERROR", "SYSTEM_ERROR"),
        (15, None, "ERROR", "WATCHDOG_TIMEOUT"),
    ]
    rows = r.rows("nccl_result")
    assert len(rows) == 2 and rows[0]["oop_wrong"] is None and rows[0]["ip_busbw_gbps"] == 8.18
    assert (rows[1]["size_bytes"], rows[1]["oop_time_us"], rows[1]["oop_algbw_gbps"]) == (
        4194304,
        130.0,
        None,
    )
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (13, "non-numeric oop cell in result row"),
        (16, "result row cut after 6 complete columns: the cells after them are empty"),
    ]
    warn = next(e for e in r.rows("nccl_log_event") if e["level"] == "WARN")
    assert warn["code_location"] == "transport/net.cc:123"


@pytest.mark.parametrize(
    ("line", "transport", "provider", "code"),
    [
        (
            "h:1:1 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm",
            "ofi-tcp",
            "tcp;ofi_rxm",
            "TCP_FALLBACK",
        ),
        ("h:1:1 [0] NCCL INFO NET/OFI Using provider: efa", "ofi-efa", "efa", "OFI_EFA"),
        ("h:1:1 [0] NCCL INFO Using network Socket", "socket", None, "TCP_FALLBACK"),
        ("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>", "ib", None, None),
        ("h:1:1 [0] NCCL WARN NET/OFI fi_getinfo failed", None, None, "EFA_INIT_FAIL"),
    ],
)
def test_transport_from_one_line(
    line: str, transport: str | None, provider: str | None, code: str | None
) -> None:
    r = nccl_tests.parse(line + "\n")
    run = r.rows("nccl_run")[0]
    assert run["net_transport"] == transport and run["net_provider"] == provider
    assert [e["code"] for e in r.rows("nccl_log_event")] == ([code] if code else [])


@pytest.mark.parametrize("path", fixture_files("nccl-tests"), ids=lambda p: p.name)
def test_detected_as_nccl_tests(path) -> None:  # type: ignore[no-untyped-def]
    assert parsers.detect_kind(path.read_text(encoding="utf-8")) == "nccl-tests"
