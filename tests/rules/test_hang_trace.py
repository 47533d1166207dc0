"""A job that hung because of one sick node, traced from any rank's dump, log or RAS report to that node and
its evidence (nccl.collective.hung); a desync and a slow-but-alive rank told apart; incomplete dump sets.

The cluster: three p5 nodes, ranks 0-1 on p5-node-01, 2-3 on p5-node-02, 4-5 on p5-node-03.  p5-node-02's
kernel log is the real gpud #870 capture (tests/fixtures/dmesg/gpud-870-dmesg-decode-iso-comma-xid79.txt):
``2025-05-27T04:18:56 ... Xid (PCI:0000:04:00): 79, GPU has fallen off the bus``.  The flight-recorder dumps
are written in each test from the documented layout (tests/fr_dumps.py): every rank completed SeqNum 808
and enqueued 809 at 04:19:36 UTC (40 s after the Xid); the ranks on the sick GPU never started it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from analyzer.judge.findings import Severity
from analyzer.model.verdict import compute
from tests.conftest import FIXTURES
from tests.fr_dumps import dump, entry, jit_pickle
from tests.rules.helpers import Result, analyze, fixture, write_node

XID79 = fixture("dmesg", "gpud-870-dmesg-decode-iso-comma-xid79.txt")
QUIET = fixture("dmesg", "returnn-1486-reltime-aer-no-xid.txt")
SMI = fixture("nvidia-smi-q", "jp-simulator-8xh100-565-complete.txt")
HANG_AT = 1748319576.0  # 2025-05-27T04:19:36Z: SeqNum 809 enqueued, 40 s after p5-node-02's Xid 79
NODES = {"p5-node-01": (0, 1), "p5-node-02": (2, 3), "p5-node-03": (4, 5)}
RANKS = "[0, 1, 2, 3, 4, 5]"


def cluster(
    tmp_path: Path, *, dmesg: dict[str, str] | None = None, hostnames: dict[str, str] | None = None
) -> Path:
    root = tmp_path / "cluster"
    root.mkdir()
    for node in NODES:
        text = (dmesg or {}).get(node, XID79 if node == "p5-node-02" else QUIET)
        host = (hostnames or {}).get(node, node)
        write_node(
            root, node, {"cmd/dmesg.txt": ("dmesg", text), "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", SMI)},
            meta={"hostname": host, "instance_type": "p5.48xlarge"},
        )  # fmt: skip
    return root


def rank_dump(rank: int, *, stuck: str | None = None, extra: list[dict] | None = None) -> bytes:  # type: ignore[type-arg]
    """Rank's dump: SeqNum 806-808 completed, 809 started (waiting), or ``stuck``: scheduled / absent."""
    entries = [entry(s, created=HANG_AT - (809 - s) * 2) for s in (806, 807, 808)]
    if stuck != "never enqueued":
        entries.append(
            entry(809, created=HANG_AT, state="scheduled" if stuck == "never started" else "started")
        )
    entries += extra or []
    return jit_pickle(dump(entries, ranks=RANKS))


def hang(res: Result) -> list:  # type: ignore[type-arg]
    return res.of("nccl.collective.hung")


def add_dumps_to_nodes(root: Path) -> None:
    """Each rank's flight-recorder dump in its node's extra/ (as collector.sh --add puts it); the ranks of
    p5-node-02 never started the collective."""
    for node, ranks in NODES.items():
        (root / node / "extra").mkdir()
        for r in ranks:
            stuck = "never started" if node == "p5-node-02" else None
            (root / node / "extra" / f"nccl_trace_rank_{r}").write_bytes(rank_dump(r, stuck=stuck))


def test_dumps_added_to_each_node_trace_the_hang_to_the_node_with_the_xid(tmp_path: Path) -> None:
    """collector.sh --add puts each rank's dump in its node's extra/: the dumps alone name the node."""
    root = cluster(tmp_path)
    add_dumps_to_nodes(root)
    res = analyze(root)
    (found,) = hang(res)
    assert found.severity == Severity.CRITICAL and found.node == "p5-node-02"
    p = found.params
    assert (p["collective"], p["seq_num"], p["process_group"]) == ("all_reduce", 809, "PG 0 (default_pg)")
    assert p["began"] == "2025-05-27T04:19:36Z" and p["ranks_with_dumps"] == [0, 1, 2, 3, 4, 5]
    assert [(s["rank"], s["why"], s["node"]) for s in p["suspects"]] == [
        (2, "never started", "p5-node-02"),
        (3, "never started", "p5-node-02"),
    ]
    assert (
        "p5-node-02's bundle shows before the hang began: Xid 79 at 2025-05-27T04:18:56Z (40 s before)"
        in (found.message)
    )
    assert found.route.owner == "node-hardware"
    assert found.evidence[0].file == "p5-node-02/cmd/dmesg.txt" and "Xid" in (found.evidence[0].text or "")
    assert any("entry 4: nccl:all_reduce SeqNum 809" in (e.text or "") for e in found.evidence)
    # the verdict: the suspect node with its own evidence first
    verdict = compute(res.findings, list(res.outcomes.values()), [{"node": n} for n in NODES])
    assert verdict.worst_nodes[0].node == "p5-node-02"


def test_the_suspect_node_ranks_first_even_below_another_nodes_critical_count(tmp_path: Path) -> None:
    """p5-node-03's kernel log holds faults of its own that outweigh p5-node-02's Xid 79 and the hang by
    count (two real logs one after the other: the UCE runbook's double-bit ECC Xids and an ext4
    journal abort that remounted the file system read-only), but the hang is traced to p5-node-02, whose
    Xid 79 precedes it: the verdict puts p5-node-02 first."""
    sick = fixture("dmesg", "uce-runbook-xid48-63-94-dbe.txt") + fixture(
        "dmesg", "backintime-2568-dmesg-ext4-aborted-journal-read-only.txt"
    )
    root = cluster(tmp_path, dmesg={"p5-node-03": sick})
    add_dumps_to_nodes(root)
    res = analyze(root)
    (found,) = hang(res)
    assert found.node == "p5-node-02" and found.params["ranks_first"] is True
    verdict = compute(res.findings, list(res.outcomes.values()), [{"node": n} for n in NODES])
    by_node = {r.node: r for r in verdict.worst_nodes}
    counts = {n: (r.critical, r.warning) for n, r in by_node.items()}
    assert counts["p5-node-03"] > counts["p5-node-02"]  # ranked by counts alone, p5-node-03 would lead
    assert [r.node for r in verdict.worst_nodes][:2] == ["p5-node-02", "p5-node-03"]


def test_a_rank_without_a_dump_is_the_suspect_and_the_job_log_names_its_host(tmp_path: Path) -> None:
    """Dumps collected into the cluster's extra/ (no host in them): rank 3 wrote none; the job's log (a real
    Slurm log, its NCCL Init line puts rank 3 on babel-0-31, p5-node-02's hostname) maps it to its node."""
    root = cluster(tmp_path, hostnames={"p5-node-02": "babel-0-31"})
    extra = root / "extra" / "job-48213"
    extra.mkdir(parents=True)
    for r in (0, 1, 2, 4, 5):
        (extra / f"nccl_trace_rank_{r}").write_bytes(rank_dump(r))
    shutil.copy(FIXTURES / "job-log" / "lightning-20434-slurm-nccl-init-rank3.txt", extra / "slurm-48213.err")
    (found,) = hang(analyze(root))
    p = found.params
    assert [(s["rank"], s["why"], s["host"], s["node"]) for s in p["suspects"]] == [
        (3, "no dump", "babel-0-31", "p5-node-02")
    ]
    assert found.node == "p5-node-02" and p["sources"] == ["flight recorder", "job log"]
    assert "dumps from 5 of 6 ranks (rank 3 wrote none)" in found.message
    assert "Xid 79 at 2025-05-27T04:18:56Z (40 s before)" in found.message


def test_a_cut_dump_and_dumps_of_two_incidents_are_told_apart(tmp_path: Path) -> None:
    root = cluster(tmp_path)
    extra = root / "extra"
    extra.mkdir()
    for r in range(6):
        data = rank_dump(r, stuck="never enqueued" if r == 4 else None)
        (extra / f"nccl_trace_rank_{r}").write_bytes(data[: len(data) // 3] if r == 5 else data)
    later = extra / "restart"
    later.mkdir()
    res = analyze(root)
    (found,) = hang(res)
    p = found.params
    assert [(s["rank"], s["why"]) for s in p["suspects"]] == [(5, "cut dump"), (4, "never enqueued")]
    assert "dumps from 5 of 6 ranks (rank 5: cut)" in found.message
    assert (
        "rank 4 on p5-node-03 never enqueued SeqNum 809" not in found.message
    )  # no host: the dump is cluster-wide
    assert "rank 4 never enqueued SeqNum 809: its dump's last collective is SeqNum 808" in found.message
    # a second incident of the same job, an hour later, in the same folder: a finding of its own
    for r in range(6):
        later_entries = [entry(s, created=HANG_AT + 3600 + s) for s in (1, 2)]
        if r != 1:
            later_entries.append(entry(3, created=HANG_AT + 3610, state="started"))
        (extra / f"job2_rank_{r}").write_bytes(jit_pickle(dump(later_entries, ranks=RANKS)))
    shutil.rmtree(later)
    two = hang(analyze(root))
    assert sorted((f.params["seq_num"], f.params["began"]) for f in two) == [
        (3, "2025-05-27T05:19:46Z"),
        (809, "2025-05-27T04:19:36Z"),
    ]


def test_a_desync_is_said_as_such_and_the_odd_rank_named(tmp_path: Path) -> None:
    """Rank 0 issued an all_reduce of other sizes at SeqNum 809 (one collective the others never call)."""
    root = cluster(tmp_path, dmesg={"p5-node-02": QUIET})
    extra = root / "extra"
    extra.mkdir()
    for r in range(6):
        entries = [entry(s, created=HANG_AT - 10 + s - 806) for s in (806, 807, 808)]
        entries.append(entry(809, created=HANG_AT, state="started", size=20 if r == 0 else 1024))
        (extra / f"nccl_trace_rank_{r}").write_bytes(jit_pickle(dump(entries, ranks=RANKS)))
    (found,) = hang(analyze(root))
    assert found.params["desync"] == [
        "SeqNum 809: rank 0 issued nccl:all_reduce [[20]] where 5 rank(s) issued nccl:all_reduce [[1024]]"
    ]
    assert "a desync, not a slow rank" in found.message
    assert [(s["rank"], s["why"]) for s in found.params["suspects"]] == [(0, "desync")]


def test_a_ras_report_names_the_dead_process_and_an_alive_rank_behind(tmp_path: Path) -> None:
    """NCCL's user-guide sample: process 3487984 on 172.16.64.213 declared DEAD (p5-node-03's address);
    nccl #1911's report: ranks 12 and 13 launched one AllGather MORE (ahead, not behind: no suspect)."""
    root = cluster(tmp_path, hostnames={"p5-node-03": "ip-172-16-64-213"})
    (root / "extra").mkdir()
    shutil.copy(FIXTURES / "nccl-ras" / "nccl-docs-2.30-dead-process.txt", root / "extra" / "ras-1.txt")
    shutil.copy(
        FIXTURES / "nccl-ras" / "nccl-1911-mismatch-allgather-counts.txt", root / "extra" / "ras-2.txt"
    )
    (found,) = hang(analyze(root))
    suspects = [(s["rank"], s["pid"], s["why"], s["node"]) for s in found.params["suspects"]]
    assert suspects == [(None, 3487984, "dead", "p5-node-03"), (21, None, "missing", None)]
    assert found.node == "p5-node-03"
    assert "p5-node-03's bundle shows no fault before the hang began" in found.message


def test_a_rank_behind_in_ras_is_alive_but_behind(tmp_path: Path) -> None:
    """The #1911 report read the other way round: 30 ranks at 640, the two listed at 639 are behind."""
    root = cluster(tmp_path, hostnames={"p5-node-01": "ip-10-137-190-124"})
    (root / "extra").mkdir()
    text = fixture(
        "nccl-ras", "nccl-1911-mismatch-allgather-counts.txt", {"up to operation 641": "up to operation 639"}
    )
    (root / "extra" / "ras.txt").write_text(text)
    (found,) = hang(analyze(root))
    assert [(s["rank"], s["why"], s["node"]) for s in found.params["suspects"]] == [
        (12, "behind", "p5-node-01"),
        (13, "behind", "p5-node-01"),
    ]
    assert "alive but behind (NCCL RAS)" in found.message


def test_without_hang_evidence_the_rule_passes_or_is_skipped(tmp_path: Path) -> None:
    root = cluster(tmp_path)
    assert analyze(root).outcome("nccl.collective.hung") == "skipped"
    (root / "extra").mkdir()
    shutil.copy(FIXTURES / "nccl-ras" / "nccl-1730-healthy-256-ranks.txt", root / "extra" / "ras.txt")
    assert analyze(root).outcome("nccl.collective.hung") == "pass"


def test_a_libfabric_error_naming_its_peer_counts_against_the_peer_not_the_printer(tmp_path: Path) -> None:
    """The real aws-ofi-nccl #346 lines: libfabric on ip-172-31-69-127 (p5-node-01's hostname, pid 451707 by
    its NCCL line) failed with ``Peer host id: i-0ce6d3d57139f053c``, p5-node-02's instance id.  The hang
    (dumps written 30 s after the line) is traced to p5-node-02, whose own kernel log is quiet: the accusation
    is its evidence; p5-node-01, which printed it, is named only as the printer."""
    root = cluster(tmp_path, dmesg={"p5-node-02": QUIET}, hostnames={"p5-node-01": "ip-172-31-69-127"})
    meta = root / "p5-node-02" / "meta.env"
    meta.write_text(meta.read_text() + "instance_id=i-0ce6d3d57139f053c\n")
    at = 1708520807 + 30  # the libfabric line's epoch second, plus 30 s
    for node, ranks in NODES.items():
        (root / node / "extra").mkdir()
        for r in ranks:
            entries = [entry(s, created=at - (809 - s) * 2) for s in (806, 807, 808)]
            entries.append(entry(809, created=at, state="scheduled" if node == "p5-node-02" else "started"))
            (root / node / "extra" / f"nccl_trace_rank_{r}").write_bytes(
                jit_pickle(dump(entries, ranks=RANKS))
            )
    log = FIXTURES / "job-log" / "aws-ofi-nccl-346-libfabric-peer-host-id.txt"
    shutil.copy(log, root / "p5-node-01" / "extra" / "slurm-1.err")
    (found,) = hang(analyze(root))
    assert found.node == "p5-node-02"
    assert (
        "p5-node-02's bundle shows before the hang began: named as the remote peer (i-0ce6d3d57139f053c) by "
        "ip-172-31-69-127 at 2024-02-21T13:06:47Z (30 s before)" in found.message
    )
    assert [(e.file, e.line) for e in found.evidence[:2]] == [
        ("p5-node-01/extra/slurm-1.err", 2),
        ("p5-node-01/extra/slurm-1.err", 3),
    ]
    assert "p5-node-01's bundle shows" not in found.message


def test_a_ras_report_printed_inside_a_job_log_is_read_as_ras(tmp_path: Path) -> None:
    """NVIDIA/nccl#1730's job log prints the ncclras report (healthy: 256 ranks RUNNING, OK) before rank
    118's watchdog lines: the job log gives the RAS rows too.  The same log with NVIDIA/nccl#1762's report in
    its place (processes on 10.4.109.13, p5-node-02's address, INCOMPLETE: rank 1 missing), the two real
    texts joined in the test as a job's stderr holds a report before the watchdog lines: RAS's missing
    ranks are suspects of the hang, on p5-node-02."""
    log = fixture("job-log", "nccl-1730-failure-detected-sequence-id-256-ranks.txt")
    (tmp_path / "healthy").mkdir()
    root = cluster(tmp_path / "healthy")
    (root / "extra" / "job-1").mkdir(parents=True)
    (root / "extra" / "job-1" / "slurm-1.err").write_text(log)
    res = analyze(root)
    report = res.con.execute(
        "SELECT source_file, line, nccl_version, nodes, processes FROM ras_report"
    ).fetchall()
    assert report == [("extra/job-1/slurm-1.err", 2, "2.26.2", 32, 256)]
    assert res.con.execute("SELECT status, errors, ranks_in_group FROM ras_comm").fetchall() == [
        ("RUNNING", "OK", 256)
    ]
    assert res.con.execute("SELECT count(*) FROM ras_peer").fetchone() == (0,)
    assert all("NCCL RAS" not in f.params["sources"] for f in hang(res))

    pytorch = log[log.index("[rank118]") :]
    report = fixture("nccl-ras", "nccl-1762-outlier-node-incomplete-cut.txt")
    (tmp_path / "missing").mkdir()
    root = cluster(tmp_path / "missing", hostnames={"p5-node-02": "ip-10-4-109-13"})
    (root / "extra" / "job-1").mkdir(parents=True)
    (root / "extra" / "job-1" / "slurm-1.err").write_text(report + "\n" + pytorch)
    found = [f for f in hang(analyze(root)) if "NCCL RAS" in f.params["sources"]]
    assert len(found) == 1
    suspects = [(s["rank"], s["why"], s["host"], s["node"]) for s in found[0].params["suspects"]]
    assert (1, "missing", "10.4.109.13", "p5-node-02") in suspects
    assert found[0].node == "p5-node-02"
    assert any(e.file == "extra/job-1/slurm-1.err" for e in found[0].evidence)
