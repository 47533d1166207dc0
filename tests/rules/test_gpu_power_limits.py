"""gpu.power.limit_lowered and gpu.clocks.app_lowered on real nvidia-smi outputs (issue 31, point 3).

The held-out case: a node whose 8 H100s were capped at 350 W against their 700 W default (and 700 W on
its peers) passed every GPU check.  Built from the real 8xH100 ``nvidia-smi -q`` (and the derived copy
of it capped at 350 W, tests/fixtures/nvidia-smi-q/PROVENANCE.md), the real 525 H800 dump of the old
layout, the real 595 dump whose enforced limit sits below its requested one, the real plain table of a
della H100 (a cap, no default: the peers alone), and real CSVs.  Edits made in a test are named.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.model.verdict import compute
from tests.rules.helpers import Result, analyze, fixture, write_node

P5 = {"instance_type": "p5.48xlarge"}
POWER = "gpu.power.limit_lowered"
CLOCKS = "gpu.clocks.app_lowered"
Q = "jp-simulator-8xh100-565-complete.txt"
CAPPED = "derived-jp-simulator-8xh100-565-power-limit-350w.txt"
MIXED = "derived-jp-simulator-8xh100-565-brake-pl-ac-mixed.txt"
H800 = "zh-notes-525-h800-power-readings-enforced.txt"
TABLE = "della-h100-545-narrow-busid.txt"


def q(name: str = Q, edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", name, edit))}


def table(cap: str = "700W") -> dict[str, tuple[str, str]]:
    """The real della H100 plain table; its cap edited where asked (``72W / 700W`` -> ``72W / 350W``)."""
    edit = {"72W / 700W": f"72W / {cap}"} if cap != "700W" else None
    return {"cmd/nvidia-smi.txt": ("nvidia-smi", fixture("nvidia-smi", TABLE, edit))}


def csv(name: str, edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/nvidia-smi-query-gpu.txt": ("nvidia-smi-csv", fixture("nvidia-smi-csv", name, edit))}


def cluster(root: Path, nodes: dict[str, dict[str, tuple[str, str]]]) -> Result:
    for node, files in nodes.items():
        write_node(root, node, files, meta=P5)
    return analyze(root)


def test_held_out_node_capped_at_half_power_is_caught_and_ranked(tmp_path: Path) -> None:
    """Every GPU at 350 W, default 700 W, four healthy peers at 700 W: a warning naming both values, and
    the capped node is the one node ranked."""
    res = cluster(tmp_path / "c", {**{f"p5-{i}": q() for i in range(4)}, "p5-capped": q(CAPPED)})
    (f,) = res.of(POWER)
    assert f.node == "p5-capped" and f.severity.value == "warning"
    assert f.params["cause"] == "set" and f.params["gpus"] == list(range(8))
    assert "GPUs 0, 1, 2, 3, 4, 5, 6, 7: power limit 350 W, default 700 W" in f.message
    assert f.params["values"] == ["350 W of 700 W"] and f.params["basis"] == "default"
    assert "nvidia-smi -pl" in f.route.action and f.route.owner == "node-hardware"
    # evidence: the Current Power Limit and Default Power Limit lines of the dump
    texts = [e.text for e in f.evidence]
    assert any(t and "Current Power Limit" in t and "350.00 W" in t for t in texts), texts
    assert any(t and "Default Power Limit" in t and "700.00 W" in t for t in texts), texts
    o = res.outcomes[POWER]
    assert o.outcome == "fail" and set(o.nodes_checked) == {"p5-0", "p5-1", "p5-2", "p5-3", "p5-capped"}
    nodes = [{"node": n, "instance_type": "p5.48xlarge"} for n in o.nodes_checked]
    v = compute(res.findings, list(res.outcomes.values()), nodes)
    assert [r.node for r in v.worst_nodes] == ["p5-capped"]
    assert res.outcome(CLOCKS) == "pass"


def test_healthy_real_dumps_give_no_finding(tmp_path: Path) -> None:
    """Every real dump that prints power readings, at its default limit and clocks: both rules pass."""
    names = [
        Q,
        H800,
        "della-h100-545-single-no-blank-after-banner.txt",
        "a10-550-hw-power-brake-active-testfixture.txt",
        "helium-580-rtx3090ti-55col-passthrough-processes.txt",
        "notebook-570-v100-indented-4-average-power-na.txt",
        "proxmox-535-p40-host-vgpu-driver-capability.txt",
    ]
    nodes = {f"n{i}": q(name) for i, name in enumerate(names)}
    nodes["csv"] = csv("llama-bench-notes-580-rtx3090-power-limit-at-default.txt")
    res = cluster(tmp_path / "c", nodes)
    assert res.of(POWER) == [] and res.outcome(POWER) == "pass"
    assert set(res.outcomes[POWER].nodes_checked) == set(nodes)
    assert res.of(CLOCKS) == [] and res.outcome(CLOCKS) == "pass"
    # the GeForce dump prints its applications clocks N/A, the CSV has none: not examined for clocks
    assert set(res.outcomes[CLOCKS].nodes_checked) == set(nodes) - {"n4", "csv"}


def test_mixed_per_gpu_brake_pl_and_ac(tmp_path: Path) -> None:
    """One node: GPUs 0, 1 held at 350 W under a 700 W request (a brake), GPU 2 set to 500 W (-pl), GPU 3
    at 1410 MHz graphics applications clock (-ac): one finding per cause, each naming its GPUs."""
    res = cluster(tmp_path / "c", {"mixed": q(MIXED)})
    by_cause = {f.params["cause"]: f for f in res.of(POWER)}
    assert set(by_cause) == {"enforced", "set"}
    brake, pl = by_cause["enforced"], by_cause["set"]
    assert brake.params["gpus"] == [0, 1]
    assert "power limit 350 W, requested 700 W, default 700 W" in brake.message
    assert "power brake or a system power cap" in brake.message and "BMC" in brake.route.action
    assert pl.params["gpus"] == [2] and "GPU 2: power limit 500 W, default 700 W" in pl.message
    (ac,) = res.of(CLOCKS)
    assert ac.params["gpus"] == [3] and ac.params["cause"] == "set"
    assert "graphics applications clock 1410 MHz, default 1980 MHz" in ac.message
    assert any(e.text and "1410 MHz" in e.text for e in ac.evidence)
    assert "nvidia-smi -rac" in ac.route.action


def test_real_595_enforced_below_requested_is_a_brake(tmp_path: Path) -> None:
    """stackhpc/ansible-slurm-appliance#975: Current 500 W, Requested 700 W, Default 700 W, as printed."""
    res = cluster(tmp_path / "c", {"capped": q("stackhpc-975-595-d-power-current-below-requested.txt")})
    (f,) = res.of(POWER)
    assert f.params["cause"] == "enforced" and f.params["limit_w"] == 500.0
    assert "power limit 500 W, requested 700 W, default 700 W" in f.message
    assert {e.line for e in f.evidence} >= {13, 14, 15}  # Current, Requested and Default lines


def test_old_layout_set_and_enforced(tmp_path: Path) -> None:
    """The real 525 dump (Power Limit / Enforced Power Limit) with -pl 350 (both lowered) and with a
    brake (Enforced alone lowered)."""
    pl = {
        "Power Limit                       : 700.00 W": "Power Limit                       : 350.00 W",
        "Enforced Power Limit              : 700.00 W": "Enforced Power Limit              : 350.00 W",
    }
    brake = {"Enforced Power Limit              : 700.00 W": "Enforced Power Limit              : 350.00 W"}
    res = cluster(tmp_path / "c", {"ok": q(H800), "pl": q(H800, pl), "brake": q(H800, brake)})
    causes = {f.node: f.params["cause"] for f in res.of(POWER)}
    assert causes == {"pl": "set", "brake": "enforced"}
    assert "ok" in res.outcomes[POWER].nodes_checked


def test_peers_only_with_four_nodes(tmp_path: Path) -> None:
    """The plain table has a cap and no default: the capped node is held to the other H100 nodes."""
    nodes = {f"t{i}": table() for i in range(3)}
    nodes["t-capped"] = table("350W")
    res = cluster(tmp_path / "c", nodes)
    (f,) = res.of(POWER)
    assert f.node == "t-capped" and f.params["cause"] == "peers" and f.params["basis"] == "peers"
    assert "power limit 350 W, peers' median 700 W" in f.message
    assert f.params["peer_group"] == "p5.48xlarge NVIDIA H100 80GB HBM3" and f.params["peer_nodes"] == 4
    assert any("72W / 350W" in (e.text or "") for e in f.evidence), f.evidence
    assert set(res.outcomes[POWER].nodes_checked) == set(nodes)


def test_peers_only_with_three_nodes_is_not_examined(tmp_path: Path) -> None:
    nodes = {f"t{i}": table() for i in range(2)}
    nodes["t-capped"] = table("350W")
    res = cluster(tmp_path / "c", nodes)
    o = res.outcomes[POWER]
    assert res.of(POWER) == [] and res.outcome(POWER) == "skipped"
    assert o.reason and o.reason.startswith("too few peers: 3 of 4 nodes (p5.48xlarge NVIDIA H100 80GB HBM3")
    assert o.nodes_checked == [] and set(o.nodes_without_data) >= set(nodes)


def test_a_node_with_its_default_is_judged_beside_peerless_nodes(tmp_path: Path) -> None:
    """Two table-only nodes (too few peers) do not stop a -q node from being judged on its default."""
    res = cluster(tmp_path / "c", {"t0": table(), "t1": table("350W"), "q": q(CAPPED)})
    (f,) = res.of(POWER)
    assert f.node == "q"
    o = res.outcomes[POWER]
    assert o.outcome == "fail" and o.nodes_checked == ["q"] and {"t0", "t1"} <= set(o.nodes_without_data)


def test_csv_default_and_unknown_default(tmp_path: Path) -> None:
    """The real RTX 3090 CSV capped by -pl 250 (edited) against its 350 W default; the real RTX 2080 Ti
    CSV whose default prints [Unknown Error]: unknown, so its node is not judged (no peers), never 0."""
    capped = {"350.00 W, 350.00 W, 350.00 W": "250.00 W, 350.00 W, 350.00 W"}
    res = cluster(
        tmp_path / "c",
        {
            "3090": csv("llama-bench-notes-580-rtx3090-power-limit-at-default.txt", capped),
            "2080": csv("mindminer-627-442-rtx2080ti-default-limit-unknown-error.txt"),
        },
    )
    (f,) = res.of(POWER)
    assert f.node == "3090" and "power limit 250 W, default 350 W" in f.message
    o = res.outcomes[POWER]
    assert "2080" not in o.nodes_checked and "2080" in o.nodes_without_data
    assert o.reason and "too few peers: 1 of 4 nodes" in o.reason


def test_limits_not_read_are_not_examined(tmp_path: Path) -> None:
    """The 8xH100 dump with every limit printed N/A: not examined, not passed."""
    text = fixture("nvidia-smi-q", Q)
    for key in ("Current Power Limit", "Requested Power Limit", "Default Power Limit"):
        text = text.replace(f"{key}               : 700.00 W", f"{key}               : N/A")
    res = cluster(tmp_path / "c", {"na": {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", text)}, "ok": q()})
    o = res.outcomes[POWER]
    assert res.of(POWER) == [] and o.nodes_checked == ["ok"] and "na" in o.nodes_without_data
