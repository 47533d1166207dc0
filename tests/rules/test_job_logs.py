"""Training job logs judged: PyTorch's NCCL watchdog timeouts (nccl.collective.hung, one finding per hung job,
the lagging ranks named first), NCCL's and PyTorch's NCCL errors (nccl.log.errors) and CUDA errors
(gpu.cuda.error), with ranks mapped to hosts and hosts to nodes.

Inputs: the sample cluster xid-ecc-3node copied, a real job log of tests/fixtures/job-log/ put in its
``extra/`` under a Slurm job's name; where a test maps a host to a node, that node's meta.env names the host.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from analyzer.judge.findings import Severity
from tests.conftest import FIXTURES, SAMPLES
from tests.rules.helpers import Result, analyze

JOB = FIXTURES / "job-log"


def cluster(tmp_path: Path, *logs: str, hostnames: dict[str, str] | None = None) -> Path:
    """xid-ecc-3node with ``logs`` in its extra/ (``slurm-48213.err``, then ``slurm-48213-<n>.out``)."""
    root = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", root)
    (root / "extra").mkdir()
    for n, name in enumerate(logs):
        target = "slurm-48213.err" if n == 0 else f"slurm-48213-{n}.out"
        shutil.copy(JOB / name, root / "extra" / target)
    for node, host in (hostnames or {}).items():
        meta = root / node / "meta.env"
        lines = [line for line in meta.read_text().splitlines() if not line.startswith("hostname=")]
        meta.write_text("\n".join([*lines, f"hostname={host}"]) + "\n")
    return root


def hang(res: Result) -> list:  # type: ignore[type-arg]
    return [f for f in res.of("nccl.collective.hung") if f.params["code"] == "WATCHDOG_TIMEOUT"]


def test_a_watchdog_timeout_on_every_rank_is_a_critical_finding_of_the_job(tmp_path: Path) -> None:
    """The held-out case: a slurm-<job>.err in extra/ whose every rank timed out: read (no unread input),
    one critical finding naming the collective, its SeqNum, the timeout and when the hang began."""
    res = analyze(cluster(tmp_path, "basicsr-737-pg-guid-default-pg.txt"))
    (found,) = hang(res)
    assert found.severity == Severity.CRITICAL and found.node is None  # no lag, no host: cluster-wide
    p = found.params
    assert (p["collective"], p["seq_num"], p["timeout_ms"], p["process_group"]) == (
        "ALLREDUCE",
        808,
        600000,
        "PG 0 (default_pg)",
    )
    assert [r["rank"] for r in p["ranks"]] == [1, 0, 2] and p["lagging"] == []
    assert p["began"] == "06-26 06:14:44"  # 06:24:44.173 minus 600.061 s, rank 2's (the earliest start)
    assert "ALLREDUCE SeqNum 808 in PG 0 (default_pg) (timeout 600 s) (job log, extra)" in found.message
    assert found.route.owner == "nccl-network"
    assert found.evidence[0].file == "extra/slurm-48213.err" and found.evidence[0].line == 2
    assert "Watchdog caught collective operation timeout" in (found.evidence[0].text or "")


def test_a_dated_stamp_gives_the_hangs_start_with_its_date_and_zone(tmp_path: Path) -> None:
    (found,) = hang(analyze(cluster(tmp_path, "derived-basicsr-737-containerd-cri.txt")))
    assert found.params["began"] == "2025-06-26 06:14:44 +00:00"


def test_the_rank_that_completed_fewer_collectives_is_named_first(tmp_path: Path) -> None:
    res = analyze(cluster(tmp_path, "derived-basicsr-737-rank2-completed-fewer.txt"))
    (found,) = hang(res)
    assert [(r["rank"], r["last_completed"]) for r in found.params["lagging"]] == [(2, 806)]
    assert found.params["ranks"][0]["rank"] == 2  # the lagging rank first
    assert (
        "stopped first: rank 2 timed out on SeqNum 807 having completed 806, behind the others"
        in found.message
    )
    assert found.evidence[0].line == 6 and found.evidence[1].line == 7  # its watchdog line, its status line
    # the log names no host: the route says to find rank 2's
    assert found.route.owner == "nccl-network" and found.route.action.startswith("rank 2 stopped first")


def test_equal_enqueued_counts_are_no_lag_and_the_lowest_enqueued_is_never_lag(tmp_path: Path) -> None:
    """LlamaFactory #7396: ranks 0 and 3 completed 1579 in PG 1 (enqueued 1582): nobody lags."""
    (found,) = hang(analyze(cluster(tmp_path, "llamafactory-7396-line-numbered-pg1.txt")))
    assert found.params["lagging"] == [] and found.params["process_group"] == "PG 1"
    assert sorted(r["rank"] for r in found.params["ranks"]) == [0, 2, 3, 4]


def test_works_of_different_process_groups_are_never_compared(tmp_path: Path) -> None:
    """nccl #1610: rank 13 of PG GUID 119 completed 215, rank 15 of PG GUID 112 completed 56: no lag."""
    (found,) = hang(analyze(cluster(tmp_path, "nccl-1610-pipeline-stamp-two-process-groups.txt")))
    assert found.params["lagging"] == []
    assert "also timed out: ALLREDUCE SeqNum 57 (PG 11 GUID 112, 1 rank(s))" in found.message
    assert found.params["began"] == "2025-02-18 12:43:59"  # the pipeline's dated stamp minus 600.045 s


def test_works_of_groups_the_log_does_not_name_are_not_compared(tmp_path: Path) -> None:
    (found,) = hang(analyze(cluster(tmp_path, "pytorch-118369-tqdm-glued-deepspeed-groups.txt")))
    assert found.params["lagging"] == []
    assert "names no process group for some of them: their ranks were not compared" in found.message


def test_a_rank_is_mapped_to_its_host_and_node_by_ncc_init_lines(tmp_path: Path) -> None:
    """Lightning #20434: NCCL's Init line puts rank 3 on babel-0-31, the hostname of p5-node-02."""
    res = analyze(
        cluster(tmp_path, "lightning-20434-slurm-nccl-init-rank3.txt", hostnames={"p5-node-02": "babel-0-31"})
    )
    (found,) = hang(res)
    (rank,) = found.params["ranks"]
    assert (rank["rank"], rank["host"], rank["node"]) == (3, "babel-0-31", "p5-node-02")
    assert "rank 3 on babel-0-31 (p5-node-02)" in found.message
    assert found.params["nodes"] == ["p5-node-02"] and found.node is None  # no lag: not the node's fault
    assert (found.params["collective"], found.params["timeout_ms"]) == ("BROADCAST", 1800000)
    assert "p5-node-02" in res.outcomes["nccl.collective.hung"].nodes_checked


def test_the_heartbeat_monitor_is_a_warning(tmp_path: Path) -> None:
    res = analyze(cluster(tmp_path, "fuser-3055-heartbeat-monitor-empty-guid.txt"))
    (found,) = res.of("nccl.log.errors")
    assert (found.params["code"], found.params["count"], found.severity) == (
        "WATCHDOG_HANG",
        3,
        Severity.WARNING,
    )
    assert found.message.startswith("PyTorch logged WATCHDOG_HANG 3x")


def test_nccl_warn_lines_of_a_job_log_feed_the_nccl_rule_on_their_node(tmp_path: Path) -> None:
    res = analyze(
        cluster(
            tmp_path, "pytorch-152780-nccl-warn-cuda-failure-host.txt", hostnames={"p5-node-03": "amphitrite"}
        )
    )
    (found,) = res.of("nccl.log.errors")
    assert (found.params["code"], found.node, found.params["count"]) == ("CUDA_ERROR", "p5-node-03", 2)
    assert found.severity == Severity.CRITICAL and found.route.owner == "node-hardware"
    # PyTorch's own CUDA error line names no host: the GPU rule's finding is cluster-wide, its rank unknown
    (cuda,) = res.of("gpu.cuda.error")
    assert (cuda.params["code"], cuda.severity, cuda.node) == (
        "cudaErrorIllegalAddress",
        Severity.WARNING,
        None,
    )
    assert "a rank the log does not name" in cuda.message


def test_an_uncorrectable_ecc_error_is_critical_gpu_evidence(tmp_path: Path) -> None:
    res = analyze(cluster(tmp_path, "kohya-1434-uncorrectable-ecc.txt"))
    (found,) = res.of("gpu.cuda.error")
    assert (found.params["code"], found.params["count"], found.params["family"]) == (
        "cudaErrorECCUncorrectable",
        2,
        "gpu_memory",
    )
    assert found.severity == Severity.CRITICAL and found.route.owner == "node-hardware"
    assert found.params["group_ranks"] == [1] and [e.line for e in found.evidence] == [4, 9]
    assert res.outcome("nccl.log.errors") == "pass"  # no NCCL error nor timeout in it


def test_a_job_log_without_errors_passes_both_rules(tmp_path: Path) -> None:
    """picotron #6: torchelastic's summary alone (ranks aborted, no timeout or CUDA error printed)."""
    res = analyze(cluster(tmp_path, "picotron-6-torchelastic-failures.txt"))
    assert res.outcome("nccl.log.errors") == "pass" and res.outcome("gpu.cuda.error") == "pass"


def test_without_a_job_log_the_cuda_rule_is_skipped(tmp_path: Path) -> None:
    root = cluster(tmp_path)
    assert analyze(root).outcome("gpu.cuda.error") == "skipped"
