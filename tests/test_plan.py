"""The remediation plan (analyze --plan) on the sample scenarios and on generated clusters.

What is held: the action follows the evidence (the Xid catalog's buckets, the ECC and row-remap guidance,
GPUs the driver lost, the node common to slow pairs), a cluster-wide cause is one fix, configuration is
fix-config; the guardrails (every disruptive action on a critical finding, evidence first, reboot before
replace, stale evidence, a node without GPU state, waves); the history (a fault back after a reboot in an
earlier boot of the bundle or an earlier snapshot of a history store is a replace, repeated a loop); the
HyperPod request bodies (at most 25 ids, exactly the matching nodes' ids), the Slurm hostlists and EKS
labels; the JSON schema (docs/plan.schema.json) and the section in every report.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import hostlist
import jsonschema
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.judge.settings import load_settings
from analyzer.model.plan import DISRUPTIVE, Plan
from analyzer.model.report_data import ReportData
from analyzer.pipeline import analyze
from analyzer.plan.build import build, options
from reports.plan_json import document
from tests.conftest import FIXTURES, ROOT, SAMPLES

SCHEMA = json.loads((ROOT / "docs" / "plan.schema.json").read_text(encoding="utf-8"))
COLLECTED = datetime(2026, 12, 1, 8, tzinfo=timezone.utc)  # every sample's and generated node's collected_at
SOON = COLLECTED + timedelta(hours=2)
XID79 = (FIXTURES / "dmesg" / "gpud-870-dmesg-decode-iso-comma-xid79.txt").read_text()


def _plan(data: ReportData, as_of: datetime = SOON, **kw: Any) -> Plan:
    plan = build(data, options(load_settings(), as_of=as_of, **kw), kw.pop("history", None))
    jsonschema.Draft202012Validator(SCHEMA).validate(document(plan))
    _guardrails(data, plan)
    return plan


def _guardrails(data: ReportData, plan: Plan) -> None:
    """What holds of every plan: a disruptive action rests on a critical finding of its node that asks
    for it, starts by collecting the node's bundle, has a wave; no node without GPU state takes one."""
    assert data.verdict is not None
    blind = {r["node"] for r in data.verdict.not_examined if r["what"].startswith("GPU state")}
    for a in plan.actions:
        if not a.disruptive:
            continue
        assert any(f.severity == "critical" and f.action in DISRUPTIVE for f in a.findings), a.node
        assert a.steps[0].startswith(f"Collect a bundle of {a.node} first"), a.steps
        assert a.wave is not None and a.node not in blind
    cluster_rules = {c.rule for c in plan.cluster_actions}
    assert not any(c.action in DISRUPTIVE for c in plan.cluster_actions)
    for c in data.verdict.cluster_wide:  # a cluster-wide cause is never an action on each of its nodes
        for a in plan.actions:
            assert not (c["rule"] in cluster_rules and any(f.rule == c["rule"] for f in a.findings)), a.node


def _analyze(*paths: Path) -> ReportData:
    return analyze(list(paths), load_settings(), jobs=2)


@pytest.fixture(scope="module")
def samples() -> dict[str, ReportData]:
    return {s: _analyze(SAMPLES / s / "bundle") for s in ("xid-ecc-3node", "nccl-slow-node", "fsx-saturated")}


def _generator() -> Any:
    """A private copy of benchmarks/generate.py (its fault plan and log size are changed per test)."""
    spec = importlib.util.spec_from_file_location("_plan_generate", ROOT / "benchmarks" / "generate.py")
    gen = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    gen.DMESG_BYTES = 20_000  # the noise lines do not matter here; the planted faults are the real lines
    return gen


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReportData, dict[str, Any]]:
    out = tmp_path_factory.mktemp("mixed") / "cluster"
    key = _generator().generate(out, 16, "mixed", 0)
    return _analyze(out), key


@pytest.fixture(scope="module")
def thirty(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    """30 generated p5 nodes, 27 of them with a GPU fallen off the bus (Xid 79): more than 25 to reboot."""
    gen = _generator()
    gen.plan = lambda nodes, scenario, rng: {"xid79": list(range(27))}
    out = tmp_path_factory.mktemp("thirty") / "cluster"
    gen.generate(out, 30, "healthy", 0)
    return _analyze(out)


def _by_node(plan: Plan) -> dict[str, Any]:
    return {a.node: a for a in plan.actions}


# --- the action follows the evidence ------------------------------------------------------------------


def test_xid_ecc_sample(samples: dict[str, ReportData]) -> None:
    plan = _plan(samples["xid-ecc-3node"])
    nodes = _by_node(plan)
    # GPUs missing from nvidia-smi (a 1-GPU dump on a p5.48xlarge): reboot first; its Xid 109 (RESET_GPU)
    # is lighter and stays a finding of the node
    h100 = nodes["h100-node-04"]
    assert h100.action == "reboot" and h100.held_back is None
    assert {(f.rule, f.action) for f in h100.findings} >= {
        ("gpu.count.low", "reboot"),
        ("gpu.xid", "reset-gpu"),
    }
    # uncorrectable ECC and Xid 48 on GPU 3: NVIDIA's reset (the row remap), a reboot on HyperPod
    p1 = nodes["p5-node-01"]
    assert p1.action == "reset-gpu"
    assert {f.rule for f in p1.findings if f.action == "reset-gpu"} == {"gpu.ecc.uncorrectable", "gpu.xid"}
    assert p1.forms["slurm"] == 'scontrol update node=ip-10-1-0-11 state=fail reason="Action:Reboot"'
    # Xid 45 after 149/145 whose cause is not in the log: warnings, nothing taken down
    assert nodes["p5-node-02"].action == "investigate" and not nodes["p5-node-02"].disruptive
    assert plan.nodes_without_action == ["p5-node-03"]
    # no instance id in these bundles: the nodes are in the Slurm and EKS forms, never in a HyperPod body
    assert plan.hyperpod["BatchRebootClusterNodes"] == []
    assert {m["node"] for m in plan.hyperpod["nodes_without_instance_id"]} == {"h100-node-04", "p5-node-01"}
    assert any("no instance id" in w for w in plan.warnings)
    assert {n for e in plan.eks for n in e["nodes"]} == {"della-k17g3", "ip-10-1-0-11"}
    assert all("note" in e for e in plan.eks)


def test_slow_node_gets_a_deep_health_check(samples: dict[str, ReportData], tmp_path: Path) -> None:
    plan = _plan(samples["nccl-slow-node"])
    assert [(a.node, a.action) for a in plan.actions] == [("p5-node-05", "deep-health-check")]
    assert plan.slurm == [] and plan.eks == []  # HyperPod's deep health checks have no Slurm or EKS form
    # with the instance ids and groups meta.env gives when collected with --imds and a group
    cluster = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "nccl-slow-node" / "bundle", cluster)
    for i, meta in enumerate(sorted(cluster.glob("*/meta.env"))):
        meta.write_text(
            meta.read_text() + f"instance_id=i-{0x5000 + i:017x}\ninstance_group=workers\ncluster=train\n"
        )
    plan = _plan(_analyze(cluster))
    [body] = plan.hyperpod["StartClusterHealthCheck"]
    slow = _by_node(plan)["p5-node-05"]
    assert body == {
        "ClusterName": "train",
        "DeepHealthCheckConfigurations": [
            {"InstanceGroupName": "workers", "InstanceIds": [slow.instance_id],
             "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"]}
        ],
    }  # fmt: skip
    assert plan.hyperpod["nodes_without_instance_id"] == []


def test_a_shared_cause_is_one_fix(samples: dict[str, ReportData]) -> None:
    plan = _plan(samples["fsx-saturated"])
    assert not plan.disruptive
    fixes = {c.rule: c for c in plan.cluster_actions}
    assert fixes["fs.fsx.utilization_sustained"].action == "fix-config"
    assert fixes["fs.nvme.not_mounted"].nodes == ["train-01", "train-02", "train-03", "train-04"]
    # iowait on every node is the saturated file system's symptom: said with its cause, no node action
    assert not any(f.rule == "fs.iowait.high" for a in plan.actions for f in a.findings)
    assert any("fs.iowait.high" in c.why for c in plan.cluster_actions)
    # these bundles hold no kernel log: collect again, said per node
    assert {a.action for a in plan.actions} == {"investigate"}
    assert all("kernel log" in a.why for a in plan.actions)


def test_generated_mixed_cluster(mixed: tuple[ReportData, dict[str, Any]]) -> None:
    data, key = mixed
    plan = _plan(data)
    nodes = _by_node(plan)
    faults = key["faults"]
    assert {n for n in faults["gpu.ecc.uncorrectable"]} == {
        a.node for a in plan.actions if a.action == "reset-gpu"
    }
    assert {n for n in faults["gpu.xid.fallen_off_bus"]} == {
        a.node for a in plan.actions if a.action == "reboot"
    }
    assert [n for n in faults["nccl.pair.slow"]] == [
        a.node for a in plan.actions if a.action == "deep-health-check"
    ]
    for n in faults["fs.iowait.high"]:
        assert n not in nodes or not nodes[n].disruptive
    planted = {
        n
        for rule in ("gpu.ecc.uncorrectable", "gpu.xid.fallen_off_bus", "nccl.pair.slow")
        for n in faults[rule]
    }
    assert {a.node for a in plan.disruptive} == planted  # no healthy node is taken down
    # each request body carries exactly the instance ids of its action's nodes
    ids = {a.node: a.instance_id for a in plan.actions}
    sent = {i for b in plan.hyperpod["BatchRebootClusterNodes"] for i in b["NodeIds"]}
    assert sent == {ids[a.node] for a in plan.disruptive if a.action in ("reboot", "reset-gpu")}
    checked = {i for b in plan.hyperpod["StartClusterHealthCheck"] for c in b["DeepHealthCheckConfigurations"]
               for i in c["InstanceIds"]}  # fmt: skip
    assert checked == {ids[n] for n in faults["nccl.pair.slow"]}
    assert any("<instance-group-name>" in w for w in plan.warnings)  # the generator writes no group
    assert all(b["ClusterName"] == "<cluster-name>" for b in plan.hyperpod["BatchRebootClusterNodes"])
    named = _plan(data, cluster_name="arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef123456")
    assert {b["ClusterName"] for b in named.hyperpod["BatchRebootClusterNodes"]} == {
        named.settings["cluster_name"]
    }


# --- request bodies, hostlists and labels -------------------------------------------------------------


def test_more_than_25_nodes_are_split_into_batches(thirty: ReportData) -> None:
    plan = _plan(thirty, max_share=1.0)
    reboot = [a for a in plan.actions if a.action == "reboot"]
    assert len(reboot) == 27 and len(plan.waves) == 1
    bodies = plan.hyperpod["BatchRebootClusterNodes"]
    assert [len(b["NodeIds"]) for b in bodies] == [25, 2]
    assert sorted(i for b in bodies for i in b["NodeIds"]) == sorted(a.instance_id for a in reboot)
    [slurm] = plan.slurm
    assert set(hostlist.expand_hostlist(slurm["hostlist"])) == {a.hostname for a in reboot}
    assert slurm["command"] == f'scontrol update node={slurm["hostlist"]} state=fail reason="Action:Reboot"'
    [eks] = plan.eks
    assert set(eks["nodes"]) == {f"hyperpod-{a.instance_id}" for a in reboot} and "note" not in eks
    label = "sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReboot"
    assert eks["commands"][-1] == f"kubectl label nodes {' '.join(sorted(eks['nodes']))} {label} --overwrite"
    # one rule on 27 of 30 nodes: said at the top as a cause they may share
    assert any("27 of 30 node(s)" in w and "share" in w for w in plan.warnings)


def test_a_plan_over_the_share_runs_in_waves(thirty: ReportData) -> None:
    plan = _plan(thirty)  # the default: a tenth of the cluster per wave, 3 of 30
    assert [w["count"] for w in plan.waves] == [3] * 9
    assert plan.warnings[0].startswith("This plan takes down 27 of the 30 analysed node(s)")
    seen: list[str] = []
    for wave in plan.waves:
        [body] = wave["hyperpod"]["BatchRebootClusterNodes"]
        assert len(body["NodeIds"]) == 3
        seen += body["NodeIds"]
        assert {a.wave for a in plan.actions if a.instance_id in body["NodeIds"]} == {wave["wave"]}
    assert sorted(seen) == sorted(i for b in plan.hyperpod["BatchRebootClusterNodes"] for i in b["NodeIds"])
    assert len(seen) == len(set(seen)) == 27
    # an instance group is held to the share too: 10 nodes in group a, 20 in group b
    for i, n in enumerate(sorted(thirty.nodes, key=lambda n: n["node"])):
        n["instance_group"] = "a" if i < 10 else "b"
    try:
        grouped = _plan(thirty)
        for wave in grouped.waves:
            members = [a for a in grouped.actions if a.wave == wave["wave"]]
            assert sum(a.instance_group == "a" for a in members) <= 1
            assert sum(a.instance_group == "b" for a in members) <= 2
    finally:
        for n in thirty.nodes:
            n["instance_group"] = None


# --- guardrails ---------------------------------------------------------------------------------------


def test_stale_evidence_takes_no_node_down(samples: dict[str, ReportData]) -> None:
    plan = _plan(samples["xid-ecc-3node"], as_of=COLLECTED + timedelta(days=8))
    assert not plan.disruptive and plan.hyperpod["BatchRebootClusterNodes"] == [] and plan.slurm == []
    held = {a.node: a.held_back for a in plan.actions if a.held_back}
    assert {n: h["action"] for n, h in held.items()} == {"h100-node-04": "reboot", "p5-node-01": "reset-gpu"}
    assert {h["guardrail"] for h in held.values()} == {"stale-evidence"}
    assert any("stale evidence" in w for w in plan.warnings)
    # an age limit set off: the evidence stands
    assert {a.node for a in _plan(samples["xid-ecc-3node"], as_of=COLLECTED + timedelta(days=8),
                                   max_age_hours=None).disruptive} == {"h100-node-04", "p5-node-01"}  # fmt: skip


def test_a_node_whose_gpu_state_was_not_examined_is_investigate(tmp_path: Path) -> None:
    """p5-node-01 keeps its Xid 48 (critical) in dmesg but loses its nvidia-smi output."""
    cluster = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", cluster)
    node = cluster / "p5-node-01"
    for f in node.glob("cmd/nvidia-smi-q.*"):
        f.unlink()
    manifest = node / "manifest.tsv"
    manifest.write_text("".join(r for r in manifest.read_text().splitlines(True) if "nvidia-smi-q" not in r))
    plan = _plan(_analyze(cluster))
    p1 = _by_node(plan)["p5-node-01"]
    assert p1.action == "investigate" and "GPU state was not examined" in p1.why
    assert p1.held_back == {"action": "reset-gpu", "guardrail": "gpu-state-not-examined",
                            "why": "the GPU state was not examined"}  # fmt: skip
    assert "p5-node-01" not in {m["node"] for m in plan.hyperpod["nodes_without_instance_id"]}


def test_an_xid_repeated_in_one_boot_is_reset_first(tmp_path: Path) -> None:
    """p5-node-01's real Xid 48 line three times in one boot (an hour apart): the Xid catalog's recurrence
    points at the hardware (the Xid 48 RMA flow), but no reset is seen between them: reset first."""
    cluster = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", cluster)
    node = cluster / "p5-node-01"
    text = (node / "cmd" / "dmesg.txt").read_text()
    first = text.splitlines(True)[0]
    again = "".join(first.replace("[430954.", f"[{430954 + 3600 * k}.") for k in (1, 2))
    _add_probe(node, "cmd/dmesg.txt", "dmesg", "TZ=UTC dmesg -T", text + again)
    p1 = _by_node(_plan(_analyze(cluster)))["p5-node-01"]
    assert p1.action == "reset-gpu"
    assert p1.held_back is not None and p1.held_back["action"] == "replace"
    assert p1.held_back["guardrail"] == "reboot-first" and "recurred 3 times" in p1.held_back["why"]


# --- history: an earlier boot of the bundle, earlier snapshots of a store --------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _add_probe(node: Path, rel: str, kind: str, command: str, text: str) -> None:
    """A probe's output and its manifest row, as collector.sh writes them."""
    path = node / rel
    path.write_text(text)
    rows = [r for r in (node / "manifest.tsv").read_text().splitlines(True) if not r.startswith(rel + "\t")]
    rows.append(f"{rel}\t{kind}\t0\t0.10\t{path.stat().st_size}\t{_digest(path)}\t{command}\t-\n")
    (node / "manifest.tsv").write_text("".join(rows))


def _earlier_boots(tmp_path: Path, boots: int, now: bool = True) -> Path:
    """The sample cluster whose p5-node-03 logs the real Xid 79 line in this boot (when ``now``) and, a week
    before each, in ``boots`` earlier boots (cmd/dmesg-boot-N.txt, as a reader lays out journalctl -b -N)."""
    cluster = tmp_path / f"boots-{boots}-{now}"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", cluster)
    node = cluster / "p5-node-03"
    if now:
        _add_probe(node, "cmd/dmesg.txt", "dmesg", "dmesg --decode --time-format iso", XID79)
    else:
        _add_probe(
            node, "cmd/dmesg.txt", "dmesg", "dmesg --decode --time-format iso", XID79.splitlines(True)[0]
        )
    for n in range(1, boots + 1):
        earlier = XID79.replace("2025-05-27", f"2025-05-{27 - 7 * n:02d}")
        _add_probe(node, f"cmd/dmesg-boot-{n}.txt", "dmesg", "-", earlier)
    return cluster


def test_a_fault_back_after_a_reboot_is_a_replace(tmp_path: Path) -> None:
    once = _by_node(_plan(_analyze(_earlier_boots(tmp_path, 0))))["p5-node-03"]
    assert once.action == "reboot" and once.held_back is None  # one fall, no history: reboot first
    back = _plan(_analyze(_earlier_boots(tmp_path, 1)))
    p3 = _by_node(back)["p5-node-03"]
    assert p3.action == "replace" and not p3.loop
    assert p3.history == [{"fault": "gpu.xid.fallen_off_bus", "where": "an earlier boot of this bundle",
                           "boots": [-1], "rebooted_since": True}]  # fmt: skip
    assert "back after a reboot" in p3.why and back.replace_warning in back.warnings
    assert p3.steps[1] == back.replace_warning and p3.forms["hyperpod"] == "BatchReplaceClusterNodes"
    assert p3.forms["slurm"].endswith('reason="Action:Replace"')
    looped = _by_node(_plan(_analyze(_earlier_boots(tmp_path, 2))))["p5-node-03"]
    assert looped.action == "replace" and looped.loop and "reboot loop" in looped.why
    # fallen off twice in this boot: a GPU off the bus answers again only after a reset, so it fell again
    # after one (the Xid catalog's CONTACT_SUPPORT on recurrence)
    cluster = _earlier_boots(tmp_path / "twice", 0)
    _add_probe(cluster / "p5-node-03", "cmd/dmesg.txt", "dmesg", "dmesg --decode --time-format iso",
               XID79 + XID79.splitlines(True)[1].replace("04:18:56", "06:02:11"))  # fmt: skip
    twice = _by_node(_plan(_analyze(cluster)))["p5-node-03"]
    assert twice.action == "replace" and "fell off the bus 2 times in this boot" in twice.why
    # fallen off only before the last reboot, fine since: watched, not taken down
    gone = _by_node(_plan(_analyze(_earlier_boots(tmp_path, 1, now=False))))["p5-node-03"]
    assert gone.action == "monitor" and not gone.disruptive


def _snapshot(tmp_path: Path, day: int, uptime_s: float) -> Path:
    """p5-node-01 of the sample (uncorrectable ECC and Xid 48 on GPU 3) collected on 2026-12-<day>, up for
    ``uptime_s`` seconds then (/proc/uptime)."""
    node = tmp_path / f"day{day}" / "p5-node-01"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle" / "p5-node-01", node)
    meta = node / "meta.env"
    meta.write_text(
        re.sub(r"collected_at=\S+", f"collected_at=2026-12-{day:02d}T08:00:00Z", meta.read_text())
    )
    _add_probe(node, "cmd/uptime.txt", "uptime", "cat /proc/uptime", f"{uptime_s:.2f} {uptime_s * 90:.2f}\n")
    return node.parent


def _store(tmp_path: Path, *days: tuple[int, float]) -> tuple[Path, Path]:
    db = tmp_path / "history.duckdb"
    paths = [_snapshot(tmp_path, day, up) for day, up in days]
    for p in paths[:-1]:
        result = CliRunner().invoke(cli, ["ingest", str(p), "--db", str(db), "-q"])
        assert result.exit_code == 0, result.output
    return db, paths[-1]


def _plan_cli(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "plan.json"
    result = CliRunner().invoke(cli, ["analyze", *args, "--plan", str(out), "--plan-max-age", "off", "-q"])
    assert result.exit_code in (0, 1), result.output
    doc: dict[str, Any] = json.loads(out.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    return doc


def test_history_store_reboot_then_the_same_fault(tmp_path: Path) -> None:
    # collected on the 1st after 5 days up; on the 2nd after 1 hour up: rebooted in between, the fault is back
    db, latest = _store(tmp_path / "a", (1, 5 * 86400), (2, 3600))
    doc = _plan_cli(tmp_path / "a", str(latest), "--plan-history", str(db))
    [p1] = doc["actions"]
    assert p1["action"] == "replace" and not p1["loop"]
    assert [h["rebooted_since"] for h in p1["history"] if h["where"].startswith("snapshot")] == [True, True]
    # the same two snapshots without a reboot between them (2 days up on the 2nd): the fault persists, no replace
    db, latest = _store(tmp_path / "b", (1, 5 * 86400), (2, 6 * 86400))
    [p1] = _plan_cli(tmp_path / "b", str(latest), "--plan-history", str(db))["actions"]
    assert p1["action"] == "reset-gpu" and {h["rebooted_since"] for h in p1["history"]} == {False}
    # rebooted after the 1st and again after the 2nd, the fault back each time: a reboot loop
    db, latest = _store(tmp_path / "c", (1, 5 * 86400), (2, 3600), (3, 3600))
    doc = _plan_cli(tmp_path / "c", str(latest), "--plan-history", str(db))
    [p1] = doc["actions"]
    assert (
        p1["action"] == "replace"
        and p1["loop"]
        and any("Reboot loop on p5-node-01" in w for w in doc["warnings"])
    )


# --- the command line and the reports -----------------------------------------------------------------


def test_cli_writes_the_plan_into_every_report(tmp_path: Path) -> None:
    md, html, out = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "plan.json"
    args = ["analyze", str(SAMPLES / "xid-ecc-3node" / "bundle"), "--plan", str(out), "--plan-max-age", "off",
            "--md", str(md), "--html", str(html), "--color", "never", "--jobs", "1"]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["schema"] == "hptriage/plan/v1" and doc["settings"]["max_age_hours"] is None
    slurm = 'scontrol update node=della-k17g3 state=fail reason="Action:Reboot"'
    for text in (result.output, md.read_text(), html.read_text().replace("&#34;", '"')):
        assert "Remediation plan" in text and "hptriage is read-only" in text
        assert slurm in text and "p5-node-01" in text and "reset-gpu" in text


def test_plan_options_need_the_plan(tmp_path: Path) -> None:
    sample = str(SAMPLES / "xid-ecc-3node" / "bundle")
    result = CliRunner().invoke(cli, ["analyze", sample, "--plan-max-age", "2h", "-q"])
    assert result.exit_code == 2 and "give --plan FILE" in result.output
    result = CliRunner().invoke(
        cli, ["analyze", sample, "--plan", str(tmp_path / "p.json"), "--plan-max-age", "soon"]
    )
    assert result.exit_code == 2 and "no duration" in result.output
