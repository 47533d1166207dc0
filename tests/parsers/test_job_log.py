"""Training job logs (parsers/job_log.py) on real logs: PyTorch's NCCL watchdog across versions and
launchers, NCCL's lines, CUDA errors, torchelastic's failure summary; lines cut or wrapped.

Fixtures: tests/fixtures/job-log/ (PROVENANCE.md: every file a public paste, one derived and said so).
"""

from __future__ import annotations

from typing import Any

import pytest

import parsers
from parsers import job_log
from parsers._base import ParseError, ParseResult
from tests.conftest import fixture_files, fixture_text


def parsed(name: str) -> ParseResult:
    return job_log.parse(fixture_text("job-log", name))


def events(result: ParseResult, kind: str | None = None) -> list[dict[str, Any]]:
    return [e for e in result.rows("job_log_event") if kind is None or e["kind"] == kind]


def pick(rows: list[dict[str, Any]], *keys: str) -> list[tuple[Any, ...]]:
    return [tuple(r[k] for k in keys) for r in rows]


# --- recognised by content, nothing stolen ---------------------------------------------------------------


@pytest.mark.parametrize("path", fixture_files("job-log"), ids=lambda p: p.name)
def test_every_job_log_is_recognised_as_one(path: Any) -> None:
    assert parsers.detect_kind(path.read_text(encoding="utf-8")) == "job-log"


@pytest.mark.parametrize("path", fixture_files("nccl-tests"), ids=lambda p: p.name)
def test_no_nccl_tests_output_or_nccl_log_is_taken_for_a_job_log(path: Any) -> None:
    """nccl-tests' own logs and NCCL-only logs (WARN lines, ``Cuda failure``) stay NCCL logs: the job-log
    detector claims none of them (tests/test_conformance.py checks every kind's fixtures the same way)."""
    assert job_log.detect(path.read_text(encoding="utf-8")) == 0


def test_text_of_another_kind_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="expected a training job's log"):
        job_log.parse("node p5-node-02 was rebooted by ops at 09:00 after the job hung\n")


# --- the watchdog's timeout, version by version -------------------------------------------------------


def test_pytorch_2_6_ranks_seqnum_and_the_default_group() -> None:
    r = parsed("basicsr-737-pg-guid-default-pg.txt")
    timeouts = events(r, "watchdog_timeout")
    assert pick(timeouts, "rank", "op_type", "seq_num", "timeout_ms", "ran_for_ms") == [
        (1, "ALLREDUCE", 808, 600000, 600020),
        (0, "ALLREDUCE", 808, 600000, 600030),
        (2, "ALLREDUCE", 808, 600000, 600061),
    ]
    assert timeouts[0]["time_text"] == "E626 06:24:44.903881913" and timeouts[0]["ts"] is None
    status = events(r, "pg_status")
    assert pick(
        status[:2], "rank", "pg_id", "pg_guid", "pg_name", "seq_num", "last_enqueued", "last_completed"
    ) == [
        (1, "0", "0", "default_pg", 808, 811, 807),
        (0, "0", "0", "default_pg", 808, 811, 807),
    ]


def test_a_cut_status_line_keeps_its_rank_and_group_the_rest_empty_with_an_issue() -> None:
    r = parsed("basicsr-737-pg-guid-default-pg.txt")
    cut = events(r, "pg_status")[-1]
    assert (cut["line"], cut["rank"], cut["pg_name"], cut["message"]) == (
        7,
        2,
        "default_pg",
        "Exception (either",
    )
    assert (cut["seq_num"], cut["last_enqueued"], cut["last_completed"]) == (None, None, None)
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (7, "pg_status line cut: seq_num, last_enqueued, last_completed unknown")
    ]


def test_a_cut_watchdog_line_keeps_what_it_printed() -> None:
    """``... Timeout(ms)=600000) ran fo``: the work is known, how long it ran is not."""
    r = parsed("llamafactory-7396-line-numbered-pg1.txt")
    cut = events(r)[-1]
    assert pick([cut], "line", "rank", "seq_num", "op_type", "timeout_ms", "ran_for_ms") == [
        (5, 2, 1580, "ALLREDUCE", 600000, None)
    ]
    assert [(i.line_no, i.reason) for i in r.issues] == [(5, "watchdog_timeout line cut: ran_for_ms unknown")]
    # a log viewer's line numbers are the lines' prefix; the group is PG 1, not the default one
    assert pick(events(r), "prefix")[:2] == [("[80746]",), ("[80747]",)]
    assert pick(events(r, "pg_status"), "rank", "pg_id", "pg_name", "last_completed") == [
        (0, "1", None, 1579),
        (3, "1", None, 1579),
    ]


def test_old_pytorch_without_time_or_rank_prefix_and_1800_s() -> None:
    r = parsed("ofa-271-old-format-1800s-no-timestamps.txt")
    timeouts = events(r, "watchdog_timeout")
    assert pick(timeouts, "pg_rank") == [(1,), (3,), (2,), (6,), (7,)]
    assert {(t["rank"], t["time_text"], t["seq_num"], t["timeout_ms"]) for t in timeouts} == {
        (None, None, 469508, 1800000)
    }
    assert timeouts[0]["ran_for_ms"] == 1802212 and r.issues == []


def test_oldest_pytorch_has_no_seqnum_and_that_is_no_issue() -> None:
    r = parsed("must-7-oldest-no-seqnum-trailing-blanks.txt")
    assert pick(
        events(r, "watchdog_timeout"), "pg_rank", "op_type", "seq_num", "timeout_ms", "ran_for_ms"
    ) == [
        (12, "ALLGATHER", None, 1800000, 1800172),
        (15, "ALLGATHER", None, 1800000, 1800768),
    ]
    assert pick(events(r, "process_group_error"), "line") == [(5,)] and r.issues == []


def test_pytorch_2_6_failure_detected_at_work_sequence_id() -> None:
    r = parsed("nccl-1730-failure-detected-sequence-id-256-ranks.txt")
    (status,) = events(r, "pg_status")
    assert pick([status], "rank", "seq_num", "last_enqueued", "last_completed") == [
        (118, 2398459, 2398578, 2398458)
    ]
    (timeout,) = events(r, "watchdog_timeout")
    assert (timeout["rank"], timeout["timeout_ms"], timeout["ran_for_ms"]) == (118, 1800000, 1800068)


def test_nothing_completed_is_minus_one_and_both_status_spellings_are_read() -> None:
    r = parsed("litgpt-1832-last-completed-minus-one.txt")
    assert pick(events(r, "pg_status"), "line", "rank", "seq_num", "last_enqueued", "last_completed") == [
        (3, 1, 1, 1, -1),
        (4, 1, 1, 1, -1),
        (7, 2, 1, 1, -1),
    ]
    assert events(r, "pg_status")[1]["message"].startswith("Timeout at NCCL work: 1,")


def test_a_group_rank_is_not_the_global_rank_outside_the_default_group() -> None:
    r = parsed("nccl-1610-pipeline-stamp-two-process-groups.txt")
    assert pick(
        events(r, "pg_status"), "rank", "pg_rank", "pg_id", "pg_guid", "seq_num", "last_completed"
    ) == [
        (13, 1, "11", "119", 216, 215),
        (15, 0, "11", "112", 57, 56),
    ]
    # the pipeline's stamp has a date and no zone: its time, not glog's
    first = events(r)[0]
    assert (first["time_text"], first["ts"], first["utc_offset"]) == (
        "2025-02-18 12:54",
        "2025-02-18T12:54:00",
        None,
    )


# --- launchers, wraps, glued lines -------------------------------------------------------------------------


def test_terminal_wrapped_lines_are_read_with_their_next_line() -> None:
    """A host-tagged multi-node log whose lines the terminal wrapped after ``timeout: `` and ``detected``."""
    r = parsed("milabench-269-host-tag-wrapped-lines.txt")
    assert pick(events(r, "watchdog_timeout"), "line", "rank", "op_type", "seq_num", "ran_for_ms") == [
        (2, 14, "REDUCE", 2070, 600034),
        (4, 12, "REDUCE", 2070, 600036),
        (6, 11, "REDUCE", 2070, 600036),
        (8, 15, "REDUCE", 2070, 600040),
    ]
    (status,) = events(r, "pg_status")
    assert (status["rank"], status["pg_name"], status["seq_num"], status["last_completed"]) == (
        12,
        "default_pg",
        2070,
        2069,
    )
    assert "detected by watchdog at work: 2070" in status["message"]
    assert {e["prefix"] for e in events(r)} == {"dinov2-giant-nodes.cn-d004 [stderr]"} and r.issues == []


def test_lines_wrapped_inside_a_word_and_a_paste_cut_at_its_start() -> None:
    r = parsed("open-r1-620-wrapped-mid-word.txt")
    timeouts = events(r, "watchdog_timeout")
    assert pick(timeouts, "line", "rank", "pg_rank", "op_type", "numel_out", "timeout_ms") == [
        (1, None, 1, "BROADCAST", 112, 1800000),
        (3, 2, 2, "BROADCAST", 112, 1800000),
        (5, 3, 3, "BROADCAST", 112, 1800000),
        (7, 6, 6, "BROADCAST", 112, 1800000),
        (9, 5, 5, "BROADCAST", 112, 1800000),
    ]
    assert timeouts[0]["time_text"] is None and timeouts[0]["prefix"] == "` ProcessGroupNCCL.cpp:629]"


def test_a_watchdog_line_glued_to_a_progress_bar() -> None:
    r = parsed("pytorch-118369-tqdm-glued-deepspeed-groups.txt")
    timeouts = events(r, "watchdog_timeout")
    assert pick(timeouts, "pg_rank", "seq_num") == [
        (0, 96120),
        (0, 96117),
        (0, 96125),
        (0, 96125),
        (7, 64088),
    ]
    assert timeouts[0]["prefix"].startswith("Epoch 0:   6%|") and timeouts[0]["ran_for_ms"] == 25624887
    assert {t["pg_id"] for t in timeouts} == {None}  # no group named: these works are never compared


def test_ray_workers_and_the_watchdogs_exit_repeating_the_timeout() -> None:
    r = parsed("vllm-6042-ray-worker-timeout-at.txt")
    assert {(e["pid"], e["rank"]) for e in events(r)} == {(4009, 1)}
    assert events(r)[0]["prefix"] == "[36m(RayWorkerWrapper pid=4009)"
    exit_line = events(r, "process_group_error")[-1]
    assert exit_line["message"].startswith("Process group watchdog thread terminated with exception")
    assert (exit_line["op_type"], exit_line["seq_num"], exit_line["ran_for_ms"]) == ("GATHER", 158046, 600027)
    (status,) = events(r, "pg_status")
    assert (status["pg_id"], status["seq_num"], status["last_completed"]) == ("1", 158046, 158045)


def test_the_heartbeat_monitor_and_an_empty_guid() -> None:
    r = parsed("fuser-3055-heartbeat-monitor-empty-guid.txt")
    hangs = events(r, "watchdog_hang")
    assert pick(hangs, "level", "pg_id", "pg_guid", "pg_rank", "ran_for_ms") == [
        ("E", "4", None, 2, 10000),
        ("F", "6", None, 0, None),
        ("F", "3", None, 1, None),
    ]


def test_srun_labels_before_the_rank_prefix() -> None:
    r = parsed("derived-litgpt-1832-srun-label.txt")
    assert {(e["task"], e["prefix"]) for e in events(r)} == {(0, "0:")}
    assert pick(events(r, "pg_status"), "rank", "seq_num", "last_completed") == [
        (1, 1, -1),
        (1, 1, -1),
        (2, 1, -1),
    ]


def test_a_container_runtimes_stamp_gives_the_date_and_the_zone() -> None:
    r = parsed("derived-basicsr-737-containerd-cri.txt")
    first = events(r)[0]
    assert (first["ts"], first["utc_offset"], first["time_text"]) == (
        "2025-06-26T06:24:44.903881",
        "+00:00",
        "2025-06-26T06:24:44.903881913Z",
    )
    assert first["prefix"] == "2025-06-26T06:24:44.903881913Z stderr F" and first["rank"] == 1
    assert pick(events(r, "watchdog_timeout"), "rank", "seq_num") == [(1, 808), (0, 808), (2, 808)]


# --- ranks to hosts --------------------------------------------------------------------------------------


def test_nccl_init_lines_say_which_host_a_rank_ran_on() -> None:
    r = parsed("lightning-20434-slurm-nccl-init-rank3.txt")
    (rank,) = r.rows("job_log_rank")
    assert pick([rank], "source", "rank", "nranks", "device", "host", "pid", "bus_id") == [
        ("nccl-init", 3, 4, 3, "babel-0-31", 2324239, "e1000")
    ]
    (timeout,) = events(r)
    assert (timeout["rank"], timeout["seq_num"], timeout["op_type"]) == (3, 1, "BROADCAST")
    (summary,) = r.rows("job_log")
    assert (summary["nccl_log_lines"], summary["world_size"], summary["hosts"]) == (9, 4, "babel-0-31")
    # NCCL's lines are an NCCL log as well, for the NCCL rules
    assert r.rows("nccl_run")[0]["nccl_log_lines"] == 9


def test_an_nccl_split_communicator_line() -> None:
    r = parsed("sglang-3836-nccl-split-glued-channel.txt")
    assert pick(r.rows("job_log_rank"), "rank", "nranks", "host", "comm_id") == [
        (2, 16, "deepseek-yanfa", "0x44d8628a425864f9")
    ]
    assert pick(events(r), "rank", "seq_num") == [(4, 5653)]


def test_torchelastic_failures_name_rank_host_and_exit_code() -> None:
    r = parsed("picotron-6-torchelastic-failures.txt")
    exits = events(r, "rank_exit")
    assert pick(exits, "line", "rank", "local_rank", "host", "pid", "exit_code", "ts") == [
        (2, None, None, None, 3437, -6, None),
        (5, 7, 7, "472a4389fceb", 3438, -6, "2025-05-01T11:12:35"),
        (14, 0, 0, "472a4389fceb", 3431, -6, "2025-05-01T11:12:35"),
    ]
    assert exits[2]["message"].startswith("root cause (first observed failure)")
    assert pick(r.rows("job_log_rank"), "source", "rank", "host") == [
        ("torchelastic", 7, "472a4389fceb"),
        ("torchelastic", 0, "472a4389fceb"),
    ]
    assert [(i.line_no, i.reason) for i in r.issues] == [
        (2, "torchelastic failure entry cut at its start: its rank unknown")
    ]


# --- NCCL's lines and CUDA errors ---------------------------------------------------------------------------


def test_nccl_warn_lines_with_their_stamp_and_host_and_pytorchs_cuda_error() -> None:
    r = parsed("pytorch-152780-nccl-warn-cuda-failure-host.txt")
    warns = events(r, "nccl_warn")
    assert pick(warns, "line", "host", "pid", "device", "code", "ts", "utc_offset") == [
        (2, "Amphitrite", 940929, 1, "CUDA_ERROR", "2025-05-04T23:32:59", None),
        (8, "Amphitrite", 940928, 0, "CUDA_ERROR", "2025-05-04T23:32:59", None),
    ]
    (cuda,) = events(r, "cuda_error")
    assert (cuda["line"], cuda["code"], cuda["host"]) == (15, "cudaErrorIllegalAddress", None)
    assert pick(r.rows("nccl_log_event"), "line", "host", "code") == [
        (2, "Amphitrite", "CUDA_ERROR"),
        (8, "Amphitrite", "CUDA_ERROR"),
    ]


def test_libfabric_errors_name_the_peer_they_accuse_and_the_printer_by_its_pid() -> None:
    """aws-ofi-nccl #346: libfabric's EFA error (no host, pid 451707, epoch seconds) names ``My host id`` and
    ``Peer host id``; the peer is the accused, the host is the printer's, from NCCL's line of the same pid."""
    r = parsed("aws-ofi-nccl-346-libfabric-peer-host-id.txt")
    assert pick(events(r), "line", "kind", "level", "host", "pid", "peer", "ts", "utc_offset") == [
        (2, "fabric_error", "WARN", "ip-172-31-69-127", 451707, "i-0ce6d3d57139f053c", "2024-02-21T13:06:47", "+00:00"),
        (3, "fabric_error", "WARN", "ip-172-31-69-127", 451707, "i-0ce6d3d57139f053c", "2024-02-21T13:06:47", "+00:00"),
    ]  # fmt: skip
    assert events(r)[1]["prefix"] is None and r.issues == []
    assert (
        job_log.accused_peer("My host id: i-0db7083f3fcbebb65") is None
    )  # the printer's own id accuses no one
    # libfabric's warnings that name no peer are no event (a capability the device lacks, aws-ofi-nccl #161)
    other = "libfabric:462:1673041636:efa:core:rxr_info_to_rxr():506<warn> FI_HMEM capability requires RDMA"
    assert job_log._FABRIC.search(other) and job_log.accused_peer(other) is None


def test_a_ras_report_printed_inside_the_log_is_read_as_ras_too() -> None:
    """NVIDIA/nccl#1730: the ncclras report (healthy: 32 nodes, 256 ranks RUNNING, OK) before rank 118's
    watchdog lines: its rows join the RAS tables at the log's line numbers; the watchdog lines stay events."""
    r = parsed("nccl-1730-failure-detected-sequence-id-256-ranks.txt")
    assert pick(r.rows("ras_report"), "line", "nccl_version", "nodes", "processes", "gpus") == [
        (2, "2.26.2", 32, 256, 256)
    ]
    assert pick(r.rows("ras_comm"), "line", "ranks_in_group", "status", "errors") == [
        (17, 256, "RUNNING", "OK")
    ]
    assert r.rows("ras_peer") == [] and r.issues == []
    assert [e["kind"] for e in events(r)][:2] == ["watchdog_timeout", "pg_status"]
    # a log without a RAS report gives no RAS rows
    assert parsed("basicsr-737-pg-guid-default-pg.txt").rows("ras_report") == []


def test_uncorrectable_ecc_in_a_traceback_and_the_watchdogs_exit() -> None:
    r = parsed("kohya-1434-uncorrectable-ecc.txt")
    assert pick(events(r), "line", "kind", "code", "pg_rank") == [
        (4, "cuda_error", "cudaErrorECCUncorrectable", None),
        (9, "cuda_error", "cudaErrorECCUncorrectable", 1),
    ]
    assert events(r)[1]["message"].startswith("NCCL watchdog thread terminated with exception: CUDA error:")


def test_an_illegal_memory_access_glued_to_a_progress_bar() -> None:
    (cuda,) = events(parsed("axolotl-1473-tqdm-glued-illegal-memory-access.txt"))
    assert (cuda["kind"], cuda["code"], cuda["rank"], cuda["line"]) == (
        "cuda_error",
        "cudaErrorIllegalAddress",
        7,
        10,
    )
    assert cuda["prefix"].startswith("94%|") and cuda["prefix"].endswith("40.17s/it]")


def test_every_cuda_error_of_the_catalog_names_a_family() -> None:
    families, errors = job_log.cuda_catalog()
    assert {e.family for e in errors} <= set(families)
    assert {f.severity for f in families.values()} <= {"critical", "warning", "info"}
    assert len({e.number for e in errors}) == len(errors)
