"""A ranking of causes: one driver install off the fleet is one cause (not driver + CUDA + VBIOS), a node
with a hardware critical outranks one with configuration warnings, a rule firing on every examined node
of an instance type is cluster-wide and ranks nobody.  Built from the real 8xH100 ``nvidia-smi -q``."""

from __future__ import annotations

from pathlib import Path

from analyzer.model.verdict import compute
from tests.rules.helpers import analyze, fixture, write_node

P5 = {"instance_type": "p5.48xlarge"}
Q = "jp-simulator-8xh100-565-complete.txt"


def q(edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    text = fixture("nvidia-smi-q", Q, edit)
    return {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", text)}


#: a configuration warning, one finding per node (host.cpu.governor)
POWERSAVE = {
    "cmd/cpu-governor.txt": (
        "cpu-governor",
        fixture("cpu-governor", "scaling_governor-cat-8cpus-powersave.txt"),
    )
}
OTHER_DRIVER = {
    "Driver Version                            : 565.57.01": "Driver Version                            : 550.90.07",
    "CUDA Version                              : 12.7": "CUDA Version                              : 12.4",
    "VBIOS Version                         : 96.00.74.00.01": "VBIOS Version                         : 96.00.61.00.01",
}
ECC = {"DRAM Uncorrectable            : 0": "DRAM Uncorrectable            : 2"}


def test_one_driver_install_is_one_cause_and_ecc_outranks_it(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i in range(5):
        edit: dict[str, str] = {}
        if i == 3:
            edit.update(OTHER_DRIVER)
        if i == 1:
            edit.update(ECC)
        # every node on powersave: a cluster-wide configuration, ranks nobody
        write_node(root, f"p5-{i}", {**q(edit), **POWERSAVE}, meta=P5)
    res = analyze(root)
    drift = [f for f in res.of("version.drift") if f.node == "p5-3"]
    assert {f.params["component"] for f in drift} >= {"nvidia_driver", "cuda_driver_max", "vbios"}
    assert {f.params["cause"] for f in drift} == {"nvidia driver install"}
    assert len(res.of("host.cpu.governor")) == 5
    nodes = [{"node": f"p5-{i}", "instance_type": "p5.48xlarge"} for i in range(5)]
    v = compute(res.findings, list(res.outcomes.values()), nodes)
    ranked = [(r.node, r.critical, r.warning) for r in v.worst_nodes]
    assert ranked[0][0] == "p5-1" and ranked[0][1] >= 1
    assert ("p5-3", 0, 1) in ranked  # three drifting versions, one install: one warning cause
    assert {r.node for r in v.worst_nodes} == {"p5-1", "p5-3"}  # powersave everywhere ranks no one
    entry = next(c for c in v.cluster_wide if c["rule"] == "host.cpu.governor")
    assert entry["nodes"] == 5


def test_a_rule_on_every_examined_node_of_a_type_is_cluster_wide(tmp_path: Path) -> None:
    """The powersave governor on all three p5 nodes whose governor was read; a fourth node without that
    output (not examined) does not make the finding node-specific."""
    root = tmp_path / "c"
    for i in range(3):
        write_node(root, f"p5-{i}", {**q(), **POWERSAVE}, meta=P5)
    write_node(root, "p5-blind", {}, meta=P5)
    res = analyze(root)
    nodes = [{"node": n, "instance_type": "p5.48xlarge"} for n in ("p5-0", "p5-1", "p5-2", "p5-blind")]
    v = compute(res.findings, list(res.outcomes.values()), nodes)
    assert not any(r.rules == ("host.cpu.governor",) for r in v.worst_nodes)
    assert any(c["rule"] == "host.cpu.governor" for c in v.cluster_wide)


def test_a_rule_on_some_nodes_still_ranks_them(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i in range(4):
        write_node(root, f"p5-{i}", {**q(), **(POWERSAVE if i == 2 else {})}, meta=P5)
    res = analyze(root)
    nodes = [{"node": f"p5-{i}", "instance_type": "p5.48xlarge"} for i in range(4)]
    v = compute(res.findings, list(res.outcomes.values()), nodes)
    assert [(r.node, r.warning) for r in v.worst_nodes] == [("p5-2", 1)]
