"""Straggler rules: one node judged against >= 4 nodes of its instance type (analyzer/judge/peers.py).

Bundles are built from the real nvidia-smi -q dump of an 8 x H100 node (jp-simulator, driver 565) and
real iostat captures; the straggler node's values are edited.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

SMI = "jp-simulator-8xh100-565-complete.txt"
CUR_SM = "        SM                                : 345 MHz"
P5 = {"instance_type": "p5.48xlarge"}
MODULES = [
    importlib.import_module(f"analyzer.judge.rules.straggler.{m}")
    for m in ("gpu_sm_clock", "gpu_power", "gpu_temp", "gpu_ecc_corrected", "gpu_xid_count", "host_iowait")
]


def analyze_stragglers(path: Path) -> Result:
    """Run only the straggler rules (their area may not be listed in analyzer.judge.rules.AREAS yet)."""
    con = connect(None)
    work = path.parent / f"work-{path.name}"
    work.mkdir(exist_ok=True)
    load(con, [path], work, Limits(), jobs=1)
    findings, outcomes = run_rules(con, MODULES)
    return Result(findings, {o.rule: o for o in outcomes}, con)


def _cluster(
    tmp_path: Path,
    texts: list[str],
    kind: str = "nvidia-smi-q",
    extra: dict[str, tuple[str, str]] | None = None,
) -> Path:
    root = tmp_path / "cluster"
    for i, text in enumerate(texts, start=1):
        files = {f"cmd/{kind}.txt": (kind, text), **(extra or {})}
        write_node(root, f"p5-node-{i:02d}", files, meta=P5)
    return root


def _busy(sm: str = "1980") -> str:
    return fixture("nvidia-smi-q", SMI, {CUR_SM: f"        SM                                : {sm} MHz"})


def test_straggler_gpu_sm_clock_fires_on_the_slow_node(tmp_path: Path) -> None:
    slow = _busy().replace(
        "SM                                : 1980 MHz", "SM                                : 1200 MHz", 1
    )
    res = analyze_stragglers(_cluster(tmp_path, [_busy(), _busy(), _busy(), _busy(), slow]))
    (f,) = res.of("straggler.gpu.sm_clock")
    assert (f.node, f.gpu, f.severity.value) == ("p5-node-05", 0, "warning")
    assert f.params["value"] == 1200.0 and f.params["peer_median"] == 1980.0 and f.params["peer_nodes"] == 5
    assert f.params["band_low"] == 1880.0 and f.params["direction"] == "low"
    assert "1200 MHz" in f.message and "1880..2080" in f.message
    # evidence: the Clocks block of GPU 0 (nvidia-smi -q gives one clock_line per GPU)
    assert f.evidence[0].file == "p5-node-05/cmd/nvidia-smi-q.txt" and "MHz" in (f.evidence[0].text or "")


def test_straggler_gpu_sm_clock_needs_four_nodes(tmp_path: Path) -> None:
    """Three nodes are too few to single one out: the rule is not examined (never "within its band"),
    even with one node at 1,200 MHz among two at 1,980."""
    slow = _busy("1200")
    res = analyze_stragglers(_cluster(tmp_path, [_busy(), _busy(), slow]))
    o = res.outcomes["straggler.gpu.sm_clock"]
    assert res.outcome("straggler.gpu.sm_clock") == "skipped"
    assert o.reason == "too few peers: 3 of 4 nodes (p5.48xlarge)"
    assert o.nodes_checked == [] and o.nodes_without_data == ["p5-node-01", "p5-node-02", "p5-node-03"]
    assert res.of("straggler.gpu.sm_clock") == []


def test_a_small_peer_group_is_not_examined_beside_a_judged_one(tmp_path: Path) -> None:
    """Five p5 nodes are judged (the slow one found); two nodes of another type beside them are not
    examined by the rule, with the reason, instead of passing."""
    slow = _busy("1200")
    root = _cluster(tmp_path, [_busy(), _busy(), _busy(), _busy(), slow])
    for name in ("p4d-node-01", "p4d-node-02"):
        write_node(
            root,
            name,
            {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", _busy())},
            meta={"instance_type": "p4d.24xlarge"},
        )
    res = analyze_stragglers(root)
    o = res.outcomes["straggler.gpu.sm_clock"]
    assert [f.node for f in res.of("straggler.gpu.sm_clock")] == ["p5-node-05"]
    assert o.outcome == "fail" and o.reason == "too few peers: 2 of 4 nodes (p4d.24xlarge)"
    assert o.nodes_without_data == ["p4d-node-01", "p4d-node-02"]
    assert o.nodes_checked == [f"p5-node-{i:02d}" for i in range(1, 6)]
    # the same cluster with the slow node healthy: a pass that still names the nodes it did not judge
    (root / "p5-node-05" / "cmd" / "nvidia-smi-q.txt").write_text(_busy())
    (root / "p5-node-05" / "manifest.tsv").unlink()
    res = analyze_stragglers(root)
    o = res.outcomes["straggler.gpu.sm_clock"]
    assert o.outcome == "pass" and o.nodes_without_data == ["p4d-node-01", "p4d-node-02"]
    assert "p4d-node-01" not in o.nodes_checked and o.reason and o.reason.startswith("too few peers")


def test_one_node_of_a_real_sample_passes_no_straggler_rule(tmp_path: Path) -> None:
    """One node of sample_bundles/xid-ecc-3node alone: it has no peer, so no straggler rule passes."""
    import shutil

    from analyzer.judge.rules import load_rules
    from tests.rules.helpers import analyze

    sample = (
        Path(__file__).resolve().parents[2] / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-03"
    )
    shutil.copytree(sample, tmp_path / "alone" / "p5-node-03")
    res = analyze(tmp_path / "alone")
    rules = [m.RULE.id for m in load_rules(include_plugins=False) if m.RULE.id.startswith("straggler.")]
    assert len(rules) == len(MODULES)
    for rule in rules:
        o = res.outcomes[rule]
        assert res.outcome(rule) == "skipped", (rule, o)
        assert "p5-node-03" in o.nodes_without_data and not o.nodes_checked
    assert res.outcomes["straggler.gpu.sm_clock"].reason == "too few peers: 1 of 4 nodes (p5.48xlarge)"


def test_straggler_gpu_temp_and_power_fire(tmp_path: Path) -> None:
    hot = fixture(
        "nvidia-smi-q",
        SMI,
        {"GPU Current Temp                  : 30 C": "GPU Current Temp                  : 79 C"},
    )
    hungry = fixture(
        "nvidia-smi-q",
        SMI,
        {"Power Draw                        : 100.89 W": "Power Draw                        : 450.00 W"},
    )
    base = fixture("nvidia-smi-q", SMI)
    res = analyze_stragglers(_cluster(tmp_path, [base, base, base, hot, hungry]))
    (t,) = res.of("straggler.gpu.temp")
    assert (t.node, t.params["value"], t.params["peer_median"]) == ("p5-node-04", 79.0, 31.0)
    (p,) = res.of("straggler.gpu.power")
    assert (p.node, p.gpu, p.params["value"], p.params["direction"]) == ("p5-node-05", 0, 450.0, "high")


def test_straggler_gpu_ecc_corrected_rate_fires(tmp_path: Path) -> None:
    base = fixture("nvidia-smi-q", SMI)
    bad = base.replace("DRAM Correctable              : 0", "DRAM Correctable              : 5000", 1)
    up = {"cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt"))}
    res = analyze_stragglers(_cluster(tmp_path, [base, base, base, bad], extra=up))
    (f,) = res.of("straggler.gpu.ecc_corrected_rate")
    assert f.node == "p5-node-04" and f.gpu == 0
    assert round(f.params["value"]) == round(5000 / (350735.47 / 86400))


def test_straggler_host_iowait_fires(tmp_path: Path) -> None:
    calm = fixture("iostat", "ssd-blog-comma-decimal-64threads.txt")  # iowait 4.62 %
    waiting = fixture("iostat", "vm-xz-tail6-headless-cpu.txt")  # iowait 41.44 %
    res = analyze_stragglers(_cluster(tmp_path, [calm, calm, calm, calm, waiting], kind="iostat"))
    (f,) = res.of("straggler.host.iowait")
    assert (f.node, f.params["value"], f.params["peer_median"]) == ("p5-node-05", 41.44, 4.62)


def test_healthy_real_samples_raise_no_straggler(tmp_path: Path) -> None:
    base = fixture("nvidia-smi-q", SMI)
    up = {"cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt"))}
    res = analyze_stragglers(_cluster(tmp_path, [base] * 5, extra=up))
    assert res.findings == []
    for rule in (
        "straggler.gpu.sm_clock",
        "straggler.gpu.power",
        "straggler.gpu.temp",
        "straggler.gpu.ecc_corrected_rate",
    ):
        assert res.outcome(rule) == "pass"
    assert res.outcome("straggler.host.iowait") == "skipped"


def test_straggler_gpu_temp_from_query_gpu_csv(tmp_path: Path) -> None:
    """Nodes with only the --query-gpu CSV (real H100 capture, 29 C) are judged from gpu_query."""
    csv = "hpc-h100-595-11cols.txt"
    hot = fixture("nvidia-smi-csv", csv, {"P0, 5, 29, 0 %": "P0, 5, 81, 0 %"})
    base = fixture("nvidia-smi-csv", csv)
    res = analyze_stragglers(_cluster(tmp_path, [base, base, base, hot], kind="nvidia-smi-csv"))
    (f,) = res.of("straggler.gpu.temp")
    assert (f.node, f.gpu, f.params["value"], f.params["peer_median"]) == ("p5-node-04", 0, 81.0, 29.0)
    assert "81" in (f.evidence[0].text or "")


def test_one_clean_node_reads_no_concerns_and_names_the_peer_checks_not_made(tmp_path: Path) -> None:
    """The decision of docs/rules.md: a peer check not examined on a lone node is said (terminal, JSON),
    never as a pass, and does not by itself make the verdict "incomplete": the node's own checks ran on
    its GPU state and kernel log (the healthy node of sample_bundles/xid-ecc-3node)."""
    import json
    import shutil

    from click.testing import CliRunner

    from analyzer.cli import cli

    sample = (
        Path(__file__).resolve().parents[2] / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-03"
    )
    shutil.copytree(sample, tmp_path / "p5-node-03")
    out = tmp_path / "f.json"
    result = CliRunner().invoke(
        cli, ["analyze", str(tmp_path / "p5-node-03"), "--json", str(out)], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["verdict"]["status"] == "no-concerns"
    rules = {r["rule"]: r for r in doc["rules"]}
    for rule in ("straggler.gpu.sm_clock", "version.drift"):
        assert rules[rule]["outcome"] == "skipped" and rules[rule]["reason"].startswith(
            "too few peers: 1 of "
        )
        assert rules[rule]["nodes_without_data"] == ["p5-node-03"]
    assert "within its peers' band" not in result.stdout
    assert "SM clock below same-type peers — too few peers: 1 of 4 nodes (p5.48xlarge)" in result.stdout
