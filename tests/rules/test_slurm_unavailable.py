"""host.slurm.unavailable on real sinfo outputs (tests/fixtures/sinfo/PROVENANCE.md), each node judged by the
sinfo its own bundle carries (the HyperPod issue report runs sinfo on every node)."""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, fixture, write_node

PARTITIONS = fixture("sinfo", "washu-ris-compute2-sinfo-down-drain-drng-inval.txt")
REASONS = fixture("sinfo", "unige-hpc-3909-sinfo-R-gres-gpu.txt")


def test_down_drained_draining_and_invalid_nodes_are_out_of_service(tmp_path: Path) -> None:
    nodes = ("c2-node-002", "c2-node-001", "c2-gpu-010", "c2-gpu-017", "c2-gpu-013", "login-1")
    for node in nodes:
        write_node(tmp_path / "c", node, {"cmd/sinfo.txt": ("sinfo", PARTITIONS)})
    res = analyze(tmp_path / "c")
    found = {f.node: f for f in res.of("host.slurm.unavailable")}
    assert {n: f.params["states"] for n, f in found.items()} == {
        "c2-node-002": ["drain"],
        "c2-node-001": ["drng"],
        "c2-gpu-010": ["down"],  # down*: not responding
        "c2-gpu-017": ["inval"],
    }
    assert found["c2-node-002"].evidence[0].line == 7  # its 'general*  drain' line (the first partition)
    outcome = res.outcomes["host.slurm.unavailable"]
    assert "c2-gpu-013" in outcome.nodes_checked  # alloc: in service
    assert "login-1" in outcome.nodes_without_data  # its sinfo names it nowhere: not examined, never passed


def test_sinfo_r_gives_the_reason_and_a_node_it_does_not_list_is_in_service(tmp_path: Path) -> None:
    for node in ("gpu030", "gpu012"):
        write_node(tmp_path / "c", node, {"cmd/sinfo.txt": ("sinfo", REASONS)})
    res = analyze(tmp_path / "c")
    (f,) = res.of("host.slurm.unavailable")
    assert f.node == "gpu030" and f.params["reasons"] == ["gres/gpu GRES core s"]
    assert f.params["user"] == "slurm" and f.params["set_at"] == "2025-04-03T15:48:07"
    assert "gpu012" in res.outcomes["host.slurm.unavailable"].nodes_checked  # sinfo -R lists every node out
